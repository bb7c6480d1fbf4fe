"""Plugin: the part of the course a session checks. ``COURSE_ASSIGNMENTS`` (comma-separated assignment names) limits
the shared grading run and the modules that read ``graded_assignments()``; ``COURSE_CHAPTERS`` (comma-separated
chapter numbers or names: ``ch07`` or ``ch07_word_order``) deselects every test whose parameters name another chapter
(a chapter notebook, or a page of the site under chapters/) or a page of the site that is no chapter's, and the background runs over the chapters take only
the chosen ones (``chosen_chapters``). Both are what `make check` sets (tests/make_check.py)."""

import os
from pathlib import Path

from tools.paths import CHAPTERS, assignments


def graded_assignments():
    """Every assignment, or those named in COURSE_ASSIGNMENTS (comma-separated),
    to grade only what you are working on: ``COURSE_ASSIGNMENTS=ex05_positions
    .venv/bin/python -m pytest tests/test_wrong_implementations_lose_points.py -k ex05_positions``."""
    chosen = [a for a in os.environ.get("COURSE_ASSIGNMENTS", "").split(",") if a]
    unknown = set(chosen) - set(assignments())
    if unknown:
        raise ValueError(f"COURSE_ASSIGNMENTS names no assignment called {sorted(unknown)}")
    return chosen or assignments()


def chapter_files():
    return sorted(CHAPTERS.glob("ch*.ipynb"))


def chapter_of(name):
    """"ch07" for "ch07_word_order", "chapters/ch07_word_order" or a path to its notebook; None for anything else."""
    stem = Path(str(name)).name
    return stem[:4] if len(stem) >= 4 and stem.startswith("ch") and stem[2:4].isdigit() else None


def chosen_chapters():
    """The notebooks of the chapters named in COURSE_CHAPTERS (``ch07`` or ``ch07_word_order``), or every chapter.
    A name that matches no chapter is an error that lists the chapters there are."""
    files = chapter_files()
    wanted = [c.strip() for c in os.environ.get("COURSE_CHAPTERS", "").split(",") if c.strip()]
    if not wanted:
        return files
    unknown = [c for c in wanted if chapter_of(c) not in {chapter_of(p) for p in files} or not c.startswith("ch")]
    if unknown:
        raise ValueError(f"COURSE_CHAPTERS names no chapter called {unknown}: expected chNN or a notebook's name among "
                         f"{[p.stem for p in files]}")
    numbers = {chapter_of(c) for c in wanted}
    return [p for p in files if chapter_of(p) in numbers]


def named_chapters(item):
    """The chapters a collected test is about: its parameters that name one (a chapter notebook's path, a site page
    under chapters/), or the notebook nbval runs; a test of a site page that is no chapter's names that page."""
    found = set()
    callspec = getattr(item, "callspec", None)
    for name, value in (callspec.params.items() if callspec else ()):
        if isinstance(value, Path) and value.parent == CHAPTERS or isinstance(value, str) and value.startswith("chapters/"):
            found.add(chapter_of(value))
        elif name == "page":  # a page of the site that is no chapter's: left out with the other chapters
            found.add(f"page {value}")
    path = Path(str(getattr(item, "path", "")))
    if path.suffix == ".ipynb" and path.parent == CHAPTERS:
        found.add(chapter_of(path))
    return found - {None}


def pytest_collection_modifyitems(session, config, items):
    """With COURSE_CHAPTERS, leave out the tests about other chapters (those about no chapter in particular stay)."""
    if not os.environ.get("COURSE_CHAPTERS", "").strip():
        return
    keep = {chapter_of(p) for p in chosen_chapters()}
    selected, deselected = [], []
    for item in items:
        named = named_chapters(item)
        (deselected if named and not named & keep else selected).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected
