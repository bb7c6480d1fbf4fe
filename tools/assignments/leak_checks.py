"""What students must never see of a source notebook (its solution and
hidden-test regions) and what they do see: the tests that nothing leaks into
the book, the release or the feedback read them here."""

from __future__ import annotations

import re

import nbformat


def protected_regions(source_notebook):
    """The regions students must never see, as ``(kind, lines)`` pairs.

    ``kind`` is ``"SOLUTION"`` or ``"HIDDEN TESTS"``; ``lines`` are the
    stripped, non-empty lines between the BEGIN and END markers.
    """
    regions, current = [], None
    for cell in nbformat.read(source_notebook, as_version=4).cells:
        for line in cell.source.splitlines():
            begin = re.search(r"### BEGIN (SOLUTION|HIDDEN TESTS)", line)
            if begin:
                current = (begin.group(1), [])
                regions.append(current)
            elif re.search(r"### END (SOLUTION|HIDDEN TESTS)", line):
                current = None
            elif current is not None and line.strip():
                current[1].append(line.strip())
    return regions


def public_text(source_notebook, cell_types=("code", "markdown", "raw")) -> str:
    """The notebook's text outside its protected regions (of the cells of
    ``cell_types``), one line per line, cells separated by a blank line: what
    students see."""
    kept, inside = [], False
    for cell in nbformat.read(source_notebook, as_version=4).cells:
        if cell.cell_type not in cell_types:
            continue
        for line in cell.source.splitlines():
            if re.search(r"### BEGIN (SOLUTION|HIDDEN TESTS)", line):
                inside = True
            elif re.search(r"### END (SOLUTION|HIDDEN TESTS)", line):
                inside = False
            elif not inside:
                kept.append(line)
        kept.append("")
    return "\n".join(kept)


def public_lines(source_notebook) -> set:
    """The stripped lines of the notebook outside its protected regions: what students see."""
    return {line.strip() for line in public_text(source_notebook).splitlines()}


def gives_nothing_away(line: str, public: set) -> bool:
    """A protected line that the public part also contains (`Q = project(X, W_q)`), or an import."""
    return line in public or re.match(r"(import|from) [\w.]+( import [\w., ]+)?( as \w+)?$", line) is not None


def hidden_lines(source_notebook):
    """Telling lines of the protected regions: long, and not also in the public part."""
    protected = {line for _, lines in protected_regions(source_notebook) for line in lines}
    public = public_lines(source_notebook)
    return sorted(line for line in protected if len(line) > 12 and not gives_nothing_away(line, public))
