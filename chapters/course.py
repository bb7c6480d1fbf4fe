"""Shared pieces of the course: the worked example, notebook set-up and figures.

Every chapter imports this module. It sits next to the chapter notebooks, so
``import course`` works wherever a chapter runs from the repository: the book
build, nbval, Binder or a local Jupyter. A chapter opened on its own (Colab, a
downloaded notebook) first fetches this file from the course's repository
(:data:`SOURCE_URL`); then it needs only PyTorch, NumPy and Matplotlib:
:func:`glue` passes numbers to the book when MyST-NB is installed and does
nothing otherwise. The student notebooks in ``exercises/`` stay
self-contained and carry their own copy of the worked example; a test checks
that the copies agree with :func:`worked_example`.
"""

from __future__ import annotations

import io
import json
import math
import random
import struct

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

#: Where a chapter opened on its own fetches this file: the repository and branch of
#: ``repository:`` in _config.yml (tests/test_launch_buttons_open_what_works.py checks that they agree).
SOURCE_URL = "https://raw.githubusercontent.com/attention-by-hand/course/main/chapters/course.py"

#: The four tokens of the worked example, in order.
TOKENS = ["the", "cat", "sat", "down"]

# Tokens as rows: X is (T, d_model) = (4, 6); each weight is (d_model, d_k) = (6, 3).
_X = [
    [0, 0, 1, 0, 0, 1],
    [1, 0, 0, 0, 1, 0],
    [0, 1, 1, 0, 1, 0],
    [0, 0, 0, 1, 1, 0],
]
_W_Q = [
    [0, 0, 1],
    [1, 1, 1],
    [0, 0, 1],
    [0, 1, 0],
    [1, 0, 0],
    [1, 1, 1],
]
_W_K = [
    [1, 1, 0],
    [0, 1, 1],
    [0, 1, 0],
    [0, 1, 0],
    [0, 0, 0],
    [1, 0, 1],
]
_W_V = [
    [0, 0, 0],
    [0, 1, 1],
    [0, 0, 1],
    [0, 1, 0],
    [1, 0, 0],
    [1, 0, 0],
]


def worked_example(dtype=np.float64):
    """Return the worked example as a dict of fresh NumPy arrays.

    Keys and shapes (tokens as rows, the PyTorch convention):

    - ``"X"``: (T, d_model) = (4, 6), one row per token
    - ``"W_q"``, ``"W_k"``, ``"W_v"``: (d_model, d_k) = (6, 3)

    All entries are 0 or 1, so every product a student writes by hand is a
    small integer. The by-hand sheets use the transposes (features as columns).
    """
    return {
        "X": np.array(_X, dtype=dtype),
        "W_q": np.array(_W_Q, dtype=dtype),
        "W_k": np.array(_W_K, dtype=dtype),
        "W_v": np.array(_W_V, dtype=dtype),
    }


def setup(seed: int = 0) -> None:
    """Make a chapter reproducible and its printouts stable.

    Seeds Python, NumPy and (if installed) PyTorch; fixes print options; runs
    PyTorch on one thread so that reductions add up in the same order on every
    machine; and gives figures an opaque white background, which reads well on
    both the light and the dark theme of the book.
    """
    random.seed(seed)
    np.random.seed(seed)
    np.set_printoptions(precision=4, suppress=True, linewidth=100)
    try:
        import torch
    except ImportError:  # chapter 1 works with NumPy alone
        pass
    else:
        torch.manual_seed(seed)
        torch.set_num_threads(1)
        # What torch.use_deterministic_algorithms(True) does to the operations a chapter runs. The public function
        # also sets a flag of PyTorch's compiler, and in torch 2.13 importing the compiler's settings imports the
        # compiler: 0.9 s at the start of every chapter, which never compiles anything.
        switch = getattr(torch._C, "_set_deterministic_algorithms", None)
        if switch is None:
            torch.use_deterministic_algorithms(True)
        else:
            switch(True)
        torch.set_printoptions(precision=4, sci_mode=False, linewidth=100)
    matplotlib.rcParams.update(
        {
            "figure.facecolor": "white",
            "axes.facecolor": "white",
            "savefig.facecolor": "white",
            "figure.dpi": 100,
            "font.size": 12,
            "axes.titlesize": 12,
            "legend.fontsize": 12,
            "xtick.labelsize": 12,
            "ytick.labelsize": 12,
        }
    )
    _show_figures_sharp()


#: Text in a figure, at the size the page draws it, is never smaller than this many CSS pixels: the site's small
#: print, the 14 px of its footer (0.875 of the body's 16 px). Figures use 12 pt text, 16.7 px at their own size,
#: so a figure may be shrunk to 84 % of its size and no more: a panel at most 4.2 in wide on a phone's 358 px
#: column. tests/test_site_works_offline_in_a_browser.py measures every figure on every page, on a laptop and on a phone.
SMALL_PRINT_PX = 14
#: The contrast WCAG 2 asks of normal text (AA): every number written on a heatmap cell has at least this much.
MIN_CONTRAST = 4.5
#: Figures are drawn at twice their size on the page, so that they stay sharp on high-resolution screens.
SHARPNESS = 2


def _relative_luminance(rgb):
    """WCAG 2's relative luminance of an sRGB colour given as three floats in [0, 1]."""
    channel = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * channel[0] + 0.7152 * channel[1] + 0.0722 * channel[2]


def contrast_ratio(first, second):
    """WCAG 2's contrast ratio of two colours (anything matplotlib accepts), from 1 to 21."""
    from matplotlib.colors import to_rgba

    def on_white(colour):
        r, g, b, a = to_rgba(colour)
        return [a * c + (1 - a) for c in (r, g, b)]

    lighter, darker = sorted((_relative_luminance(on_white(first)), _relative_luminance(on_white(second))),
                             reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def text_colour_on(background):
    """Black or white, whichever stands out more on ``background``: always at least 4.58:1."""
    return "black" if contrast_ratio("black", background) >= contrast_ratio("white", background) else "white"


def _cell_colour(image, x, y):
    """The colour of the cell of ``image`` (an AxesImage) under the point (x, y) in data coordinates, or None."""
    values = image.get_array()
    if values is None or values.ndim != 2:
        return None
    rows, cols = values.shape
    left, right, bottom, top = image.get_extent()
    j = math.floor((x - left) / (right - left) * cols)
    i = math.floor((y - top) / (bottom - top) * rows) if image.origin == "upper" else \
        math.floor((y - bottom) / (top - bottom) * rows)
    if not (0 <= i < rows and 0 <= j < cols):
        return None
    return image.to_rgba(np.ma.masked_invalid(np.asarray(values, dtype=float)[i:i + 1, j:j + 1]))[0, 0]


def legibility(artists, dpi):
    """What a reader needs to read a figure, measured on what it draws.

    ``artists``: a Figure or an Axes. Returns ``{"min_text_px": the smallest text, in pixels at the figure's own
    size; "min_contrast": the lowest contrast of a text written on a cell of an image (a heatmap's numbers),
    or None}``.
    """
    from matplotlib.text import Text

    texts = [t for t in artists.findobj(Text) if t.get_visible() and t.get_text().strip()]
    sizes = [t.get_fontsize() * dpi / 72 for t in texts]
    contrasts = []
    axes = artists.axes if hasattr(artists, "axes") and isinstance(artists.axes, list) else [artists]
    for ax in axes:
        images = ax.get_images()
        for text in ax.texts:
            if not (images and text.get_visible() and text.get_text().strip()) or text.get_transform() != ax.transData:
                continue
            cell = _cell_colour(images[-1], *text.get_position())
            if cell is not None:
                contrasts.append(contrast_ratio(text.get_color(), cell))
    return {"min_text_px": round(min(sizes), 2) if sizes else None,
            "min_contrast": round(min(contrasts), 2) if contrasts else None}


def _layout(fig):
    """What the figure draws, for a reader who expects it as its author laid it out: its overall title
    (the suptitle) if it has one, and its panels (each Axes that draws something, colorbars left out) in
    reading order, each as [left, top, right, bottom], fractions of the figure's width and height from its
    top-left corner."""
    panels = []
    for ax in fig.axes:
        if hasattr(ax, "_colorbar") or not ax.get_visible():
            continue
        if not ax.axison and not ax.images and not ax.texts and not ax.patches and not ax.lines:
            continue
        box = ax.get_position()
        panels.append([round(box.x0, 3), round(1 - box.y1, 3), round(box.x1, 3), round(1 - box.y0, 3)])
    panels.sort(key=lambda b: (round(b[1], 2), b[0]))
    title = fig._suptitle.get_text() if fig._suptitle is not None and fig._suptitle.get_visible() else None
    return {"title": title or None, "panels": panels}


def _png(fig, shown_by="the inline backend"):
    """The whole figure as a PNG at SHARPNESS times its size, with a record of what it draws in its text chunk
    "Legibility" (:func:`legibility`, its layout: :func:`_layout`, and what showed it); and its size on the
    page in CSS pixels."""
    from PIL import Image, PngImagePlugin

    record = dict(legibility(fig, fig.dpi), sharpness=SHARPNESS, shown_by=shown_by, **_layout(fig))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=SHARPNESS * fig.dpi, bbox_inches="tight")
    # 256 colours are plenty for a chart, and make a 2x image about as small as a 1x one was.
    image = Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")
    image = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    info = PngImagePlugin.PngInfo()
    info.add_text("Legibility", json.dumps(record, sort_keys=True))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True, pnginfo=info)
    data = buffer.getvalue()
    width, height = struct.unpack(">II", data[16:24])
    return data, {"width": width // SHARPNESS, "height": height // SHARPNESS}


#: What course.show() writes as ``shown_by`` in a figure's record; a figure shown any other way (the inline
#: backend showing a figure that a cell left open) says so (tests/test_chapters_show_only_their_figures.py).
SHOWN_BY_COURSE = "course.show"


def _show_figures_sharp():
    """In IPython (Jupyter, Colab), show every figure as a sharp PNG that records its own legibility."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    from matplotlib.figure import Figure

    plt.switch_backend("module://matplotlib_inline.backend_inline")  # sets IPython's own PNG formatter first
    shell.display_formatter.formatters["image/png"].for_type(Figure, lambda fig: _png(fig))


def show(fig=None):
    """Show a figure as its author drew it: one sharp image (SHARPNESS times its size) with its panels in their
    grid and its overall title, then close it.

    The image records what a reader needs (:func:`legibility`, :func:`_layout`). On the site a figure is shown
    at its drawn size or shrunk to the column down to the size where its smallest text is the site's small
    print, and no further: a wider figure scrolls sideways in its own box, with a shadow at the edge that
    says so (tools/figures.py, _static/custom.css). Draw a figure at most 8 in wide (12 pt text), and it fits
    a laptop's column whole.
    """
    fig = fig or plt.gcf()
    try:
        from IPython.display import display
    except ImportError:
        plt.show()
        return
    data, size = _png(fig, shown_by=SHOWN_BY_COURSE)
    display({"image/png": data}, raw=True, metadata={"image/png": size})
    plt.close(fig)


def short_exp(value, digits=0):
    """A number in short scientific notation, as the text quotes it: 1e-06 -> "1e-6"."""
    return f"{value:.{digits}e}".replace("e-0", "e-")


def below(error, bound):
    """A measured error stated as a bound, after checking it: (1.2e-07, 1e-6) -> "below 1e-6".

    The last digits of a float32 error depend on the CPU's kernels; the bound does not.
    """
    if not error < bound:
        raise AssertionError(f"measured error {error:.3g} is not below the stated bound {bound:g}")
    return f"below {short_exp(bound)}"


def spoken_list(values):
    """Numbers as the text lists them: [90, 91, 92] -> "90, 91 and 92"; [3] -> "3"."""
    words = [f"{v:g}" for v in values]
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " and " + words[-1]


def _as_numpy(matrix):
    """Accept a NumPy array, a nested list or a (detached) torch tensor."""
    if hasattr(matrix, "detach"):
        matrix = matrix.detach().cpu().numpy()
    return np.asarray(matrix, dtype=float)


def heatmap(
    matrix,
    ax=None,
    *,
    title: str = "",
    row_labels=None,
    col_labels=None,
    xlabel: str = "",
    ylabel: str = "",
    fmt: str = "{:.2f}",
    cmap: str = "Blues",
    vmin=None,
    vmax=None,
    colorbar: bool = False,
    fontsize: float = 12,
):
    """Draw a 2-D matrix as a heatmap with each value written in its cell.

    Shape: ``matrix`` is (rows, cols). Returns the matplotlib ``Axes``.

    ``fmt`` formats each number (``"{:.0f}"`` for integers, ``"{:.2f}"`` for
    weights). Each number is black or white, whichever contrasts more with its
    cell (at least 4.58:1, above WCAG's 4.5:1).
    """
    values = _as_numpy(matrix)
    if values.ndim != 2:
        raise ValueError(f"heatmap expects a 2-D matrix, got shape {values.shape}")
    if ax is None:
        width = max(2.5, 0.55 * values.shape[1] + 0.9)
        height = max(2.0, 0.5 * values.shape[0] + 1.0)
        _, ax = plt.subplots(figsize=(width, height))
    finite = values[np.isfinite(values)]
    lo = vmin if vmin is not None else (finite.min() if finite.size else 0.0)
    hi = vmax if vmax is not None else (finite.max() if finite.size else 1.0)
    image = ax.imshow(values, cmap=cmap, vmin=lo, vmax=hi, aspect="auto")
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            v = values[i, j]
            text = fmt.format(v) if np.isfinite(v) else ("−∞" if v < 0 else "NaN" if np.isnan(v) else "∞")
            cell = image.to_rgba(np.ma.masked_invalid(values[i:i + 1, j:j + 1]))[0, 0]
            ax.text(j, i, text, ha="center", va="center", color=text_colour_on(cell), fontsize=fontsize)
    ax.set_xticks(range(values.shape[1]))
    ax.set_yticks(range(values.shape[0]))
    ax.set_xticklabels(col_labels if col_labels is not None else range(values.shape[1]))
    ax.set_yticklabels(row_labels if row_labels is not None else range(values.shape[0]))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def rounded(value, digits, margin=1e-9):
    """``value`` (a number or an array) rounded to ``digits`` decimals, the same on every CPU.

    The last bits of a float depend on the CPU's kernels; rounding removes them,
    unless a value lies within ``margin`` of a rounding boundary (…5 in the next
    decimal), where another machine could round it the other way. Such a value
    raises ``ValueError``: show it with another number of decimals.
    """
    values = np.asarray(value, dtype=float)
    scaled = values * 10.0**digits
    gap = np.abs(scaled - np.floor(scaled) - 0.5) / 10.0**digits
    if np.any(gap < margin):
        raise ValueError(f"{value!r} lies within {margin:g} of a rounding boundary at {digits} decimals")
    result = np.round(values, digits)
    return float(result) if result.ndim == 0 else result


def glue(name, value, display=True):
    """Pass ``value`` to the book's text under ``name`` (MyST-NB's ``glue``).

    Without MyST-NB (a chapter opened in Colab or a plain Jupyter) there is no
    book to paste into: the value is only shown, if ``display`` asks for it.
    """
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        if display:
            from IPython.display import display as show

            show(value)
        return
    myst_glue(name, value, display=display)


def glue_number(name, value, digits):
    """Glue a float for the text, rounded to ``digits`` decimals (see :func:`rounded`).

    Quote it with the same number of decimals: ``{glue:text}`name:.3f``` for ``digits=3``.
    """
    glue(name, rounded(value, digits), display=False)


def vector_text(v):
    """A vector of whole numbers, written as in the text: [1., 1., 2.] -> "(1, 1, 2)"."""
    return "(" + ", ".join(str(int(x)) for x in v) + ")"


def quoted_list(names):
    """Names joined the way a sentence joins them: ["the", "cat"] -> "“the” and “cat”"."""
    quoted = [f"“{n}”" for n in names]
    if len(quoted) == 1:
        return quoted[0]
    return ", ".join(quoted[:-1]) + " and " + quoted[-1]


def fraction_table(matrix, row_labels, col_labels):
    """Print a matrix of exact fractions (or integers) as an aligned table with labels.

    Shape: ``matrix`` is a list of rows, (len(row_labels), len(col_labels)).
    """
    cells = [[str(x) for x in row] for row in matrix]
    width = max(len(c) for c in [*col_labels, *(c for row in cells for c in row)])
    label_width = max(len(r) for r in row_labels)
    print(" " * label_width, *(c.rjust(width) for c in col_labels))
    for label, row in zip(row_labels, cells):
        print(label.rjust(label_width), *(c.rjust(width) for c in row))


def share_of_rows_carrying(grad, share=0.9):
    """The smallest fraction of rows whose squared norms add up to ``share`` of the total.

    Shape: ``grad`` is (..., T), one row per query; returns a float in (0, 1].
    Near 1 when every row contributes alike, small when a few rows carry the gradient.
    """
    squared = grad.detach().pow(2).sum(dim=-1).flatten().double()       # (rows,)
    largest_first = squared.sort(descending=True).values
    rows_needed = int((largest_first.cumsum(0) < share * squared.sum()).sum().item()) + 1
    return rows_needed / squared.numel()


def significant(value, digits):
    """``value`` rounded to ``digits`` significant figures: (1107.6, 2) -> 1100.0, (0.09184, 2) -> 0.092.

    For quantities whose last digits vary between CPUs by more than rounding does
    (a tiny gradient through a saturated softmax): print it with ``:g``.
    """
    if value == 0:
        return 0.0
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


# Diagrams ---------------------------------------------------------------------------------------------------
# Pictures of the idea, drawn from the shapes the chapters compute with. Each diagram is one or more small
# figures (at most 3.5 in wide, so that a phone shows them at full size), laid out in inches: one data unit of
# the axes is one inch of the figure. Show them with show(), like every figure.

#: One colour per role, the same in every diagram: input, query, key, value, score, weight, output.
ROLE_COLOURS = {"x": "#d9d9d9", "q": "#9ecae1", "k": "#fdae6b", "v": "#a1d99b", "s": "#dadaeb", "a": "#bcbddc",
                "z": "#c7e9c0", "w": "#f0f0f0", "masked": "#737373"}


def _canvas(width, height, title):
    """A blank figure of width x height inches whose data coordinates are inches (origin at bottom left)."""
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    ax.set_title(title, y=1.0, pad=-18, fontsize=12)
    return fig, ax


def _grid(ax, x, top, rows, cols, colour, *, cell=0.2, label="", shape="", fill=None):
    """A rows x cols matrix with its top-left corner at (x, top); ``label`` above it, ``shape`` below.
    ``fill``: an optional function (i, j) -> colour or None, for single cells. Returns (x, top, width, height)."""
    from matplotlib.patches import Rectangle

    width, height = cols * cell, rows * cell
    for i in range(rows):
        for j in range(cols):
            colour_ij = (fill(i, j) if fill else None) or colour
            ax.add_patch(Rectangle((x + j * cell, top - (i + 1) * cell), cell, cell, facecolor=colour_ij,
                                   edgecolor="#525252", linewidth=0.5))
    ax.add_patch(Rectangle((x, top - height), width, height, fill=False, edgecolor="#252525", linewidth=1.2))
    if label:
        ax.text(x + width / 2, top + 0.06, label, ha="center", va="bottom", fontsize=12)
    if shape:
        ax.text(x + width / 2, top - height - 0.06, shape, ha="center", va="top", fontsize=11, color="#252525")
    return x, top, width, height


def _arrow(ax, start, end, text="", *, side="right", colour="#252525"):
    """An arrow from ``start`` to ``end`` (inches), with ``text`` beside its middle."""
    ax.annotate("", xy=end, xytext=start,
                arrowprops={"arrowstyle": "-|>", "color": colour, "linewidth": 1.3, "shrinkA": 2, "shrinkB": 2})
    if text:
        mx, my = (start[0] + end[0]) / 2, (start[1] + end[1]) / 2
        offset = {"right": (0.08, 0, "left", "center"), "left": (-0.08, 0, "right", "center"),
                  "above": (0, 0.06, "center", "bottom"), "below": (0, -0.06, "center", "top")}[side]
        ax.text(mx + offset[0], my + offset[1], text, ha=offset[2], va=offset[3], fontsize=11)


def attention_flow_diagram(T, d_model, d_k, d_v):
    """Chapter 1's computation as three pictures: project, score and normalise, mix. Returns three figures."""
    c = 0.2
    figures = []
    # 1. each token's row of X becomes a query, a key and a value
    fig, ax = _canvas(3.4, 4.3, "1. Project: X W = Q, K, V")
    x_left, x_top = 0.15, 2.6
    _grid(ax, x_left, x_top, T, d_model, ROLE_COLOURS["x"], cell=c, label="X", shape=f"({T}, {d_model})",
          fill=lambda i, j: "#969696" if i == 2 else None)
    outputs = [("Q", "q", d_k, 3.5, "#6baed6"), ("K", "k", d_k, 2.2, "#fd8d3c"), ("V", "v", d_v, 0.9, "#74c476")]
    for name, role, width, top, dark in outputs:
        _grid(ax, 2.45, top, T, width, ROLE_COLOURS[role], cell=c, label=name, shape=f"({T}, {width})",
              fill=lambda i, j, dark=dark: dark if i == 2 else None)
        _arrow(ax, (x_left + d_model * c + 0.05, x_top - T * c / 2), (2.4, top - T * c / 2))
        if name == "K":  # its arrow runs almost level: the label goes under it, clear of the line
            ax.text(2.0, top - T * c / 2 - 0.1, f"$W_{name}$", fontsize=11, ha="right", va="top")
        else:
            ax.text(2.0, top - T * c / 2 + 0.12, f"$W_{name}$", fontsize=11, ha="right", va="bottom")
    ax.text(x_left + d_model * c / 2, x_top - T * c - 0.45,
            f"one row per token:\n“{TOKENS[2]}”, row 2\n(from 0), gives\nrow 2 of each", ha="center", va="top",
            fontsize=11)
    figures.append(fig)
    # 2. every query meets every key; each row of scores becomes weights that sum to 1
    fig, ax = _canvas(3.4, 3.9, "2. Score, then normalise each row")
    _grid(ax, 0.2, 3.2, T, d_k, ROLE_COLOURS["q"], cell=c, label="Q", shape=f"({T}, {d_k})",
          fill=lambda i, j: "#6baed6" if i == 2 else None)
    ax.text(0.95, 2.8, "·", fontsize=20, ha="center", va="center")
    _grid(ax, 1.15, 3.2, d_k, T, ROLE_COLOURS["k"], cell=c, label="Kᵀ", shape=f"({d_k}, {T})")
    ax.text(2.2, 2.8, "=", fontsize=16, ha="center", va="center")
    _grid(ax, 2.45, 3.2, T, T, ROLE_COLOURS["s"], cell=c, label="S", shape=f"({T}, {T})",
          fill=lambda i, j: "#9e9ac8" if i == 2 else None)
    _arrow(ax, (2.85, 2.1), (2.85, 1.35), "softmax($S/\\sqrt{d_k}$)\nalong each row", side="left")
    _grid(ax, 2.45, 1.25, T, T, ROLE_COLOURS["a"], cell=c, label="", shape=f"A ({T}, {T})",
          fill=lambda i, j: "#807dba" if i == 2 else None)
    ax.text(2.35, 1.25 - 2.5 * c, "each row\nsums to 1", ha="right", va="center", fontsize=11)
    figures.append(fig)
    # 3. each output row is a weighted average of the value rows
    fig, ax = _canvas(3.4, 2.6, "3. Mix the values: Z = A V")
    _grid(ax, 0.2, 1.75, T, T, ROLE_COLOURS["a"], cell=c, label="A", shape=f"({T}, {T})",
          fill=lambda i, j: "#807dba" if i == 2 else None)
    ax.text(1.15, 1.35, "·", fontsize=20, ha="center", va="center")
    _grid(ax, 1.35, 1.75, T, d_v, ROLE_COLOURS["v"], cell=c, label="V", shape=f"({T}, {d_v})")
    ax.text(2.15, 1.35, "=", fontsize=16, ha="center", va="center")
    _grid(ax, 2.4, 1.75, T, d_v, ROLE_COLOURS["z"], cell=c, label="Z", shape=f"({T}, {d_v})",
          fill=lambda i, j: "#41ab5d" if i == 2 else None)
    ax.text(1.7, 0.25, "row i of Z = the rows of V,\nweighted by row i of A", ha="center", va="center",
            fontsize=11)
    figures.append(fig)
    return figures


def mask_diagram(T, kind, padded=0):
    """One of chapter 4's two masks on a (T, T) grid of scores: ``kind`` "causal" (no key after the query) or
    "padding" (no key that is padding: the last ``padded`` keys). Returns a figure: only the one asked for is
    drawn, so no other is left open for the notebook to show."""
    masks = {"causal": ("Causal mask: no future keys", lambda i, j: j > i),
             "padding": (f"Padding mask: last {padded} keys are padding", lambda i, j: j >= T - padded)}
    if kind not in masks:
        raise ValueError(f"mask_diagram draws the mask 'causal' or 'padding', not {kind!r}")
    title, hidden = masks[kind]
    c = 0.42
    fig, ax = _canvas(3.3, 3.3, title)
    left, top = 0.75, 2.65
    _grid(ax, left, top, T, T, ROLE_COLOURS["a"], cell=c,
          fill=lambda i, j: ROLE_COLOURS["masked"] if hidden(i, j) else None)
    for i in range(T):
        for j in range(T):
            ax.text(left + (j + 0.5) * c, top - (i + 0.5) * c, "−∞" if hidden(i, j) else "s",
                    ha="center", va="center", fontsize=11, color="white" if hidden(i, j) else "black")
        ax.text(left - 0.08, top - (i + 0.5) * c, f"q{i}", ha="right", va="center", fontsize=11)
        ax.text(left + (i + 0.5) * c, top + 0.06, f"k{i}", ha="center", va="bottom", fontsize=11)
    ax.text(left + T * c / 2, top - T * c - 0.1, "−∞ before softmax: weight exactly 0;\n"
            "each row's other weights still sum to 1", ha="center", va="top", fontsize=11)
    return fig


def head_split_diagram(D, H):
    """Chapter 6's split and merge of heads, for one token: D features become H heads of D/H, each head
    attends on its own, and the H outputs are put side by side again. Returns two figures."""
    d = D // H
    palette = ["#9ecae1", "#fdae6b", "#a1d99b", "#bcbddc", "#fc9272", "#c7e9c0", "#dadaeb", "#fdd0a2"]
    head = lambda i, j: palette[(j // d) % len(palette)]  # noqa: E731  (colour of feature j: its head)
    c = min(0.3, 2.8 / D)
    figures = []
    fig, ax = _canvas(3.4, 3.3, "Split: one token, H heads")
    _grid(ax, 0.2, 2.7, 1, D, "white", cell=c, label=f"q of one token, width D = {D}", shape="(B, T, D)", fill=head)
    _arrow(ax, (0.2 + D * c / 2, 2.2), (0.2 + D * c / 2, 1.75), ".view(B, T, H, D/H)\n.transpose(1, 2)", side="right")
    for h in range(H):
        _grid(ax, 0.2 + h * (d * c + 0.2), 1.6, 1, d, palette[h % len(palette)], cell=c)
        ax.text(0.2 + h * (d * c + 0.2) + d * c / 2, 1.6 - c - 0.06, f"head {h}", ha="center", va="top", fontsize=11)
    ax.text(1.7, 0.65, f"(B, H, T, D/H) = (B, {H}, T, {d}):\neach head attends on its own", ha="center",
            va="top", fontsize=11)
    figures.append(fig)
    fig, ax = _canvas(3.4, 3.3, "Merge: heads side by side, then $W_O$")
    for h in range(H):
        _grid(ax, 0.2 + h * (d * c + 0.2), 2.7, 1, d, palette[h % len(palette)], cell=c)
        ax.text(0.2 + h * (d * c + 0.2) + d * c / 2, 2.7 + 0.06, f"z{h}", ha="center", va="bottom", fontsize=11)
    _arrow(ax, (0.2 + D * c / 2, 2.25), (0.2 + D * c / 2, 1.8), ".transpose(1, 2)\n.reshape(B, T, D)", side="right")
    _grid(ax, 0.2, 1.65, 1, D, "white", cell=c, fill=head)
    _arrow(ax, (0.2 + D * c / 2, 1.25), (0.2 + D * c / 2, 0.8), "× $W_O$: mixes the heads", side="right")
    _grid(ax, 0.2, 0.65, 1, D, ROLE_COLOURS["z"], cell=c, shape="output (B, T, D)")
    figures.append(fig)
    return figures


def rotation_diagram(theta, m, n):
    """Chapter 7's RoPE for one pair of features: the query at position m turns by m·theta, the key at n by
    n·theta, both from the same starting direction (same content: q = k before turning); their dot product sees
    only the angle between them, which changes by (n - m)·theta. Returns a figure."""
    from matplotlib.patches import Arc

    fig, ax = _canvas(3.4, 3.9, "RoPE turns each pair by position × θ")
    centre, radius = (1.55, 1.95), 1.15
    ax.add_patch(plt.Circle(centre, radius, fill=False, color="#bdbdbd", linewidth=1))
    base = -0.35  # the direction of both vectors before they turn
    start = (centre[0] + radius * math.cos(base), centre[1] + radius * math.sin(base))
    ax.plot([centre[0], start[0]], [centre[1], start[1]], color="#737373", linewidth=1.2, linestyle=":")
    ax.text(start[0] + 0.08, start[1] - 0.02, "before\nturning", ha="left", va="top", fontsize=11)
    for name, pos, colour, size in [("q", m, "#3182bd", 0.75), ("k", n, "#e6550d", 1.35)]:
        angle = base + pos * theta
        end = (centre[0] + radius * math.cos(angle), centre[1] + radius * math.sin(angle))
        _arrow(ax, centre, end, colour=colour)
        ax.text(end[0] + 0.13 * math.cos(angle), end[1] + 0.13 * math.sin(angle), f"{name} at {pos}",
                ha="left" if math.cos(angle) > 0.3 else "center" if math.cos(angle) > -0.3 else "right",
                va="center", fontsize=11, color="black")
        # how far each has turned from the starting direction: pos × θ
        ax.add_patch(Arc(centre, size, size, theta1=math.degrees(base), theta2=math.degrees(angle), color=colour,
                         linewidth=1.2))
    lo, hi = base + m * theta, base + n * theta
    ax.text(centre[0] + 0.47 * math.cos(base + m * theta / 2), centre[1] + 0.47 * math.sin(base + m * theta / 2),
            f"{m}θ", ha="left", va="center", fontsize=11, color="#08519c")
    mid = (lo + hi) / 2
    ax.text(centre[0] - 0.35 + 0.45 * math.cos(mid), centre[1] + 0.45 * math.sin(mid), f"{n}θ", ha="right",
            va="center", fontsize=11, color="#a63603")
    ax.text(1.7, 0.08, f"q turns {m}θ, k turns {n}θ; the angle between\nthem is ({n} − {m})θ, wherever both sit",
            ha="center", va="bottom", fontsize=11)
    return fig


def induction_diagram(tokens, current):
    """Chapter 8's induction circuit on a token sequence: the first layer's previous-token head writes into each
    position the token before it; at ``current``, the second layer's induction head finds the earlier position whose previous token
    matches, and copies the token there. Returns a figure."""
    T = len(tokens)
    # (as wide as a laptop's column: each token a cell of 0.7 in, so that the arcs one position long read)
    width = 6.4
    c = (width - 0.3) / T
    middle = width / 2
    fig, ax = _canvas(width, 3.6, "Two heads in two layers copy a pattern")
    top = 2.0
    _grid(ax, 0.15, top, 1, T, ROLE_COLOURS["x"], cell=c,
          fill=lambda i, j: "#fdd0a2" if j == current else None)
    for j, token in enumerate(tokens):
        ax.text(0.15 + (j + 0.5) * c, top - c / 2, str(token), ha="center", va="center", fontsize=11)
    earlier = max(j for j in range(current) if tokens[j] == tokens[current])
    target = earlier + 1
    for j in range(1, T):  # layer 0: each position looks one back
        ax.annotate("", xy=(0.15 + (j - 0.5) * c, top - c - 0.03), xytext=(0.15 + (j + 0.5) * c, top - c - 0.03),
                    arrowprops={"arrowstyle": "-|>", "color": "#3182bd", "linewidth": 1.5, "mutation_scale": 12,
                                "connectionstyle": "arc3,rad=-0.9", "shrinkA": 2, "shrinkB": 2})
    ax.text(middle, top - c - 0.6, "first layer: previous-token head\n(each position looks one back)", ha="center",
            va="top", fontsize=11, color="#08519c")
    ax.annotate("", xy=(0.15 + (target + 0.5) * c, top + 0.03), xytext=(0.15 + (current + 0.5) * c, top + 0.03),
                arrowprops={"arrowstyle": "-|>", "color": "#a63603", "linewidth": 1.5,
                            "connectionstyle": "arc3,rad=0.35", "shrinkA": 1, "shrinkB": 1})
    ax.text(middle, top + 0.75, f"second layer: induction head at “{tokens[current]}”\n"
            f"attends after the earlier “{tokens[current]}”, copies “{tokens[target]}”",
            ha="center", va="bottom", fontsize=11, color="#7f2704")
    return fig


def tiles_diagram(T, block):
    """Chapter 9's tiled causal attention: the (T, T) scores in (block, block) tiles, swept one row of tiles at a
    time with a running maximum and sum; tiles above the diagonal are never computed. Returns a figure."""
    n = T // block
    c = 2.3 / T
    fig, ax = _canvas(3.4, 3.7, "Tiles sweep the score matrix")
    left, top = 0.85, 3.05
    from matplotlib.patches import Polygon, Rectangle

    for bi in range(n):
        for bj in range(n):
            skipped, row = bj > bi, bi == n - 2
            colour = "white" if skipped else ("#807dba" if row else ROLE_COLOURS["a"])
            ax.add_patch(Rectangle((left + bj * block * c, top - (bi + 1) * block * c), block * c, block * c,
                                   facecolor=colour, edgecolor="#252525", linewidth=1,
                                   hatch="///" if skipped else None))
            if bi == bj:  # a diagonal tile is computed, and its part above the diagonal masked
                ax.add_patch(Polygon([(left + bj * block * c, top - bi * block * c),
                                      (left + (bj + 1) * block * c, top - bi * block * c),
                                      (left + (bj + 1) * block * c, top - (bi + 1) * block * c)],
                                     facecolor="none", edgecolor="#252525", linewidth=0.8, hatch="...."))
            if row and not skipped:
                ax.text(left + (bj + 0.5) * block * c, top - (bi + 0.5) * block * c, str(bj + 1), ha="center",
                        va="center", fontsize=11, color="white")
    ax.text(left - 0.08, top - (n - 1.5) * block * c, "queries\nblock", ha="right", va="center", fontsize=11)
    ax.text(left + T * c / 2, top + 0.06, f"keys, in blocks of {block}", ha="center", va="bottom", fontsize=11)
    ax.text(left + T * c / 2, top - T * c - 0.08, "numbers: one sweep, with a running\nmax and sum; "
            "hatched: skipped;\ndotted: computed, then masked", ha="center", va="top", fontsize=11)
    return fig


def kv_cache_diagram(steps):
    """Chapter 9's KV cache: at each generation step the new token's key and value are appended, and only its
    query attends over everything cached. Returns a figure."""
    fig, ax = _canvas(3.4, 0.55 * steps + 0.9, "A KV cache grows by one row a step")
    c = 0.2
    for t in range(steps):
        y = 0.55 * (steps - t) + 0.2
        ax.text(0.1, y - c / 2, f"step {t + 1}", ha="left", va="center", fontsize=11)
        _grid(ax, 0.95, y, 1, t + 1, ROLE_COLOURS["k"], cell=c, fill=lambda i, j, t=t: "#e6550d" if j == t else None)
        _grid(ax, 2.05, y, 1, t + 1, ROLE_COLOURS["v"], cell=c, fill=lambda i, j, t=t: "#31a354" if j == t else None)
    ax.text(0.95, 0.55 * steps + 0.35, "keys", ha="left", va="bottom", fontsize=11)
    ax.text(2.05, 0.55 * steps + 0.35, "values", ha="left", va="bottom", fontsize=11)
    ax.text(1.7, 0.1, "dark: the new token's, appended", ha="center", va="bottom", fontsize=11)
    return fig


def _box(ax, x, y, width, height, text, colour):
    """A rounded box centred at (x, y) with ``text`` inside."""
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0.03",
                                facecolor=colour, edgecolor="#252525", linewidth=1))
    ax.text(x, y, text, ha="center", va="center", fontsize=11)


def one_query_diagram(tokens, query):
    """Chapter 2's attention for one query token: its query meets every key (a score each), the softmax turns
    the scores into weights, and the weights mix the values. Returns a figure."""
    T = len(tokens)
    row = 0.42
    fig, ax = _canvas(3.4, row * T + 1.55, f"One query: “{tokens[query]}”")
    top = row * T + 0.8
    _box(ax, 0.45, top - row * T / 2, 0.7, 0.4, f"$q$ {tokens[query]}", ROLE_COLOURS["q"])
    for j, token in enumerate(tokens):
        y = top - (j + 0.5) * row
        _arrow(ax, (0.82, top - row * T / 2), (1.05, y))
        _box(ax, 1.45, y, 0.7, 0.32, f"$k$ {token}", ROLE_COLOURS["k"])
        ax.text(2.05, y, f"→ $a_{j}$", ha="left", va="center", fontsize=11)
        _box(ax, 2.95, y, 0.7, 0.32, f"$v$ {token}", ROLE_COLOURS["v"])
    ax.text(1.45, top + 0.08, "score: $q \\cdot k$", ha="center", va="bottom", fontsize=11)
    ax.text(2.95, top + 0.08, "value", ha="center", va="bottom", fontsize=11)
    ax.text(1.7, 0.1, f"softmax of the scores: weights $a_j$ (sum 1)\n"
            f"output for “{tokens[query]}”: $\\sum_j a_j v_j$", ha="center", va="bottom", fontsize=11)
    return fig


def single_head_diagram(D, d_k, d_v):
    """Chapter 5's single-head module (three projections, no output projection), top to bottom, with the shape
    at every step. Returns a figure."""
    steps = [("x", f"(B, T, {D})", ROLE_COLOURS["x"]),
             ("q, k, v = x W_Q, x W_K, x W_V", f"(B, T, {d_k}), (B, T, {d_k}), (B, T, {d_v})", ROLE_COLOURS["q"]),
             ("weights = softmax(q kᵀ / √d_k)", "(B, T, T), rows sum to 1", ROLE_COLOURS["a"]),
             ("z = weights v: the output", f"(B, T, {d_v})", ROLE_COLOURS["z"])]
    gap = 0.72
    fig, ax = _canvas(3.4, gap * len(steps) + 0.5, "Single-head attention, shape by shape")
    for k, (text, shape, colour) in enumerate(steps):
        y = gap * (len(steps) - k) - 0.1
        _box(ax, 1.7, y, 3.1, 0.44, f"{text}\n{shape}", colour)
        if k:
            _arrow(ax, (1.7, y + gap - 0.24), (1.7, y + 0.25))
    return fig


def latex_matrix(matrix, fmt="{:.0f}"):
    """A matrix as a LaTeX bmatrix, each entry formatted with ``fmt``: [[1, 0], [0, 1]] -> \\begin{bmatrix}..."""
    values = _as_numpy(matrix)
    rows = [" & ".join(fmt.format(v).replace("-", "−") for v in row) for row in values]
    return "\\begin{bmatrix} " + " \\\\ ".join(rows) + " \\end{bmatrix}"


def glue_math(name, latex):
    """Glue a display equation (LaTeX without $$) for the text: ``{glue:math}`` name in a directive."""
    from IPython.display import Math

    glue(name, Math(latex), display=False)
