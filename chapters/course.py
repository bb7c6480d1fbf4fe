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

import math
import random

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

#: Where a chapter opened on its own fetches this file: the repository and branch of
#: ``repository:`` in _config.yml (tests/test_launch_buttons.py checks that they agree).
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
        torch.use_deterministic_algorithms(True)
        torch.set_printoptions(precision=4, sci_mode=False, linewidth=100)
    matplotlib.rcParams.update(
        {
            "figure.facecolor": "white",
            "axes.facecolor": "white",
            "savefig.facecolor": "white",
            "figure.dpi": 100,
            "font.size": 10,
            "axes.titlesize": 11,
        }
    )


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
):
    """Draw a 2-D matrix as a heatmap with each value written in its cell.

    Shape: ``matrix`` is (rows, cols). Returns the matplotlib ``Axes``.

    ``fmt`` formats each number (``"{:.0f}"`` for integers, ``"{:.2f}"`` for
    weights). The text colour switches from dark to light on dark cells so
    that every number stays readable.
    """
    values = _as_numpy(matrix)
    if values.ndim != 2:
        raise ValueError(f"heatmap expects a 2-D matrix, got shape {values.shape}")
    if ax is None:
        width = max(2.5, 0.6 * values.shape[1] + 1.2)
        height = max(2.0, 0.5 * values.shape[0] + 1.0)
        _, ax = plt.subplots(figsize=(width, height))
    finite = values[np.isfinite(values)]
    lo = vmin if vmin is not None else (finite.min() if finite.size else 0.0)
    hi = vmax if vmax is not None else (finite.max() if finite.size else 1.0)
    image = ax.imshow(values, cmap=cmap, vmin=lo, vmax=hi, aspect="auto")
    middle = (lo + hi) / 2
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            v = values[i, j]
            text = fmt.format(v) if np.isfinite(v) else ("−∞" if v < 0 else "NaN" if np.isnan(v) else "∞")
            colour = "white" if np.isfinite(v) and v > middle and hi > lo else "black"
            ax.text(j, i, text, ha="center", va="center", color=colour, fontsize=9)
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
