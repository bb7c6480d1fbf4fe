"""Promise: a chapter shows the figures it means to show, and no other.

A figure is shown with ``course.show(fig)``, which draws it as one image and closes it. A figure that a cell
draws and leaves open (a helper that makes two figures when the cell shows one) is shown anyway by Jupyter's
inline backend at the end of the cell: a phantom figure under the one the text talks about. Every image a
chapter shows carries a record of what showed it (chapters/course.py, ``shown_by`` in the PNG's text chunk
"Legibility"): ``course.show`` for the figures the cells show, "the inline backend" for one left open.

nbval (strict, in `make test`) re-executes every chapter and fails if a cell shows more or fewer outputs than
the committed notebook, so the committed outputs checked here are what the chapters show.
"""

import base64
import json
import sys

import matplotlib
import nbformat
import pytest

from tools.site.figure_sizes import legibility
from tools.paths import CHAPTERS

sys.path.insert(0, str(CHAPTERS))
import course  # noqa: E402

# `make check` runs this module after a change to a chapter (tests/make_check.py).
MAKE_CHECK = ("chapter",)

sys.path.remove(str(CHAPTERS))

matplotlib.use("Agg")


def shown_figures(path):
    """(cell number, first line of the cell, record) for every image a chapter's committed outputs show."""
    notebook = nbformat.read(path, as_version=4)
    for number, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            data = output.get("data", {}).get("image/png")
            if data:
                yield number, cell.source.splitlines()[0], legibility(base64.b64decode(data))


@pytest.mark.parametrize("path", sorted(CHAPTERS.glob("ch*.ipynb")), ids=lambda p: p.stem)
def test_every_figure_a_chapter_shows_is_shown_by_course_show(path):
    strays = [f"cell {number} ({first!r}): shown by {record.get('shown_by', 'an older course.py') if record else 'no record'}"
              for number, first, record in shown_figures(path)
              if not record or record.get("shown_by") != course.SHOWN_BY_COURSE]
    assert not strays, (
        f"{path.name} shows figures that no course.show() call showed (a figure drawn and left open, which "
        f"Jupyter shows at the end of the cell; close it or draw only the one shown): {strays}")


def test_a_figure_left_open_says_so():
    """What the test above relies on: the image Jupyter makes of a figure left open (its PNG formatter, set by
    course.setup) records another origin than course.show's."""
    import matplotlib.pyplot as plt

    fig = course.mask_diagram(4, "causal")
    left_open, _ = course._png(fig)
    plt.close(fig)
    assert legibility(left_open)["shown_by"] != course.SHOWN_BY_COURSE


def test_mask_diagram_draws_only_the_mask_asked_for():
    import matplotlib.pyplot as plt

    plt.close("all")
    fig = course.mask_diagram(4, "padding", padded=2)
    assert plt.get_fignums() == [fig.number]
    plt.close("all")
    with pytest.raises(ValueError, match="'causal' or 'padding', not 'both'"):
        course.mask_diagram(4, "both")
