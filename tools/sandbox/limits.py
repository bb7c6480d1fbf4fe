"""What a submission may hold before anything of it is decoded: counts, not only bytes.

A submission's folder is copied with a byte limit (tools/grading/run.py's
``copy_regular``), but bytes do not bound what they decode to: 24 MiB of empty
JSON lists is 12 million Python lists (3 GiB in nbformat), 100,000 empty code
cells are 100,000 steps for verification and 100,000 results to judge, and
nbgrader's timestamp parser tokenizes a whole ``timestamp.txt`` (1.5 GiB for
24 MiB). ``check_submission`` looks at the copied folder first, with work
bounded by its size and no decoding, and refuses (``SubmissionRefused``, a
reason the instructor reads) what holds more than a submission may:

- a notebook whose JSON could hold more than ``MAX_JSON_VALUES`` values
  (``json_values_at_most``: an upper bound counted on the raw bytes, strings
  left out, without building a single Python object), or with more than
  ``MAX_CELLS`` cells (counted once the value count has bounded the decoding);
- a ``timestamp.txt`` longer than ``MAX_TIMESTAMP_BYTES``.

The course's notebooks have at most 23 cells and 2,100 values, its chapters
with their figures at most 4,200 values; a student who adds cells and keeps
outputs stays far below both limits. At the limit, the worst case measured
(100,000 empty JSON objects) costs 118 MiB to read, validate and write with
nbformat 5.11.1.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

MAX_JSON_VALUES = 200_000
MAX_CELLS = 1_000
MAX_TIMESTAMP_BYTES = 1024
MAX_NOTEBOOK_BYTES = 64 * 1024**2  # (the copy's own limit for a whole submission)

# A JSON string: what it holds cannot add values (its brackets and commas are text). The closing
# quote is optional: a string that never ends runs to the end of the text in one match, where a
# pattern that needs the quote would try again from every later quote (hours for 2 MiB of ``\\"``).
STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)


class SubmissionRefused(ValueError):
    """A submission holds more than a submission may: not graded, with this reason."""


def json_values_at_most(data: bytes) -> int:
    """An upper bound on the number of values (keys included) that JSON
    ``data`` decodes to, from its bytes alone, in time linear in their
    number: with strings left out, every value but a container's first
    follows a comma or a colon, and every first one an opening bracket. (Text
    that is not JSON gets a count too: a decoder stops at its first error, so
    it builds no more than the values before it.)"""
    bare = STRING.sub(b"", data)
    return sum(bare.count(c) for c in (b",", b":", b"[", b"{")) + 1


def read_bounded(fd: int, limit: int) -> bytes:
    """At most ``limit`` + 1 bytes of an open file."""
    chunks, left = [], limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (no link followed), refused past ``limit``."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SubmissionRefused(f"{path.name} is not a regular file")
        data = read_bounded(fd, limit)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise SubmissionRefused(f"{path.name} has more than {limit:,} bytes")
    return data


def check_notebook(path: Path, *, max_values=MAX_JSON_VALUES, max_cells=MAX_CELLS):
    """Refuse a notebook that decodes to more than a submission may hold."""
    data = read_regular(path, MAX_NOTEBOOK_BYTES)
    values = json_values_at_most(data)
    if values > max_values:
        raise SubmissionRefused(f"{path.name} holds up to {values:,} JSON values; a notebook may hold at most "
                                f"{max_values:,} (its bytes are few, what they decode to is not)")
    try:
        nb = json.loads(data)
    except (ValueError, RecursionError):
        return  # not JSON: nbgrader says so, for this submission alone
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if isinstance(cells, list) and len(cells) > max_cells:
        raise SubmissionRefused(f"{path.name} has {len(cells):,} cells; a notebook may have at most {max_cells:,}")


def check_timestamp(path: Path, *, limit=MAX_TIMESTAMP_BYTES):
    """Refuse a timestamp.txt of more than ``limit`` bytes (nbgrader would parse all of it)."""
    try:
        read_regular(path, limit)
    except FileNotFoundError:
        return
    except SubmissionRefused as error:
        raise SubmissionRefused(f"{error}: a submission's timestamp is one line of at most {limit:,} bytes") from None


def check_submission(folder: Path):
    """Refuse a copied submission folder whose notebooks or timestamp hold
    more than a submission may (see the module's docstring)."""
    folder = Path(folder)
    check_timestamp(folder / "timestamp.txt")
    with os.scandir(folder) as entries:
        notebooks = sorted(e.name for e in entries if e.name.endswith(".ipynb") and e.is_file(follow_symlinks=False))
    for name in notebooks:
        check_notebook(folder / name)


# The files a submission's verification may leave for the grader to judge and
# remove (the harness writes one JSON file per step and one per array a probe
# returned: a few hundred for the course's largest assignment).
MAX_RESULT_FILES = 2_000


def tidy_results(results: Path, *, limit=MAX_RESULT_FILES) -> str:
    """Run in the grading worker once a submission's verification has ended:
    bound what the single main process will judge and remove. Folders (the
    harness makes none) are removed here; past ``limit`` entries the whole
    folder is removed here and the reason returned ("" otherwise): that
    submission is then not verified, and the main process has nothing of it
    to read or remove. The listing stops after ``limit`` + 1 entries."""
    from .bubblewrap import remove_tree

    try:
        fd = os.open(results, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return ""  # (no results: judging says why)
    count, folders = 0, []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                count += 1
                if count > limit:
                    break
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.name)
    finally:
        os.close(fd)
    if count > limit:
        remove_tree(results)
        return f"its verification left more than {limit:,} files for the grader: not judged"
    for name in folders:
        remove_tree(Path(results) / name)
    return ""
