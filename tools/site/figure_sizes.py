"""Sphinx extension: a figure never shrinks below the size at which its text is readable.

Every figure of a chapter is one image (chapters/course.py, ``show``) that records, in its PNG text chunk
"Legibility", its smallest text in pixels at its own size and how many image pixels it has per CSS pixel.
The page shows a figure at its own size, or shrunk to fit the column, but no further than where that text
is the site's small print (``course.SMALL_PRINT_PX``): this extension gives every such image a
``min-width`` at that size and the class ``course-figure``. A figure wider than the column at that size
(a multi-panel figure on a phone) then scrolls sideways in its own box, whose edge fades where more of
the figure waits (_static/custom.css); tests/test_site_works_offline_in_a_browser.py checks both.
Loaded from ``_config.yml`` as a local extension.
"""

import json
import math
import re
import struct
import sys
from pathlib import Path

IMG = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
SRC = re.compile(r'\ssrc="([^"]+\.png)"')
STYLE = re.compile(r'\sstyle="([^"]*)"')


def small_print_px():
    chapters = str(Path(__file__).resolve().parents[2] / "chapters")
    sys.path.insert(0, chapters)
    try:
        from course import SMALL_PRINT_PX
    finally:
        sys.path.remove(chapters)
    return SMALL_PRINT_PX


def png_text(data: bytes) -> dict:
    """The text chunks (tEXt) of a PNG, {key: value}, or {} for bytes that are not a PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return {}
    found, at = {}, 8
    while at + 8 <= len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        if data[at + 4:at + 8] == b"tEXt":
            key, _, value = data[at + 8:at + 8 + length].partition(b"\0")
            found[key.decode("latin-1")] = value.decode("latin-1")
        at += 12 + length
    return found


def legibility(data: bytes):
    """The "Legibility" record that chapters/course.py writes into a figure's PNG, as a dict, or None."""
    text = png_text(data).get("Legibility")
    return None if text is None else json.loads(text)


def record(path):
    """The "Legibility" record of the PNG at ``path`` and its width in image pixels, or (None, 0)."""
    data = path.read_bytes()
    found = legibility(data)
    if found is None:
        return None, 0
    (width,) = struct.unpack(">I", data[16:20])
    return found, width


def legible_min_width(found, width, small_print):
    """The narrowest a figure may be drawn, in CSS pixels, for its smallest text to stay ``small_print``."""
    own = width / found["sharpness"]
    if not found.get("min_text_px"):
        return None
    return math.ceil(own * min(1.0, small_print / found["min_text_px"]))


def sized(tag, page, small_print):
    source = SRC.search(tag)
    if not source or "course-figure" in tag:
        return tag
    path = (page.parent / source.group(1)).resolve()
    if not path.is_file():
        return tag
    found, width = record(path)
    if not found:
        return tag
    least = legible_min_width(found, width, small_print)
    if least is None:
        return tag
    style = STYLE.search(tag)
    if style:
        tag = tag.replace(style.group(0), f' style="{style.group(1).rstrip("; ")}; min-width: {least}px;"')
    else:
        tag = tag.replace("<img", f'<img style="min-width: {least}px;"', 1)
    return tag.replace("<img", '<img class="course-figure"', 1) if " class=" not in tag else \
        re.sub(r'\sclass="', ' class="course-figure ', tag, count=1)


def size_figures(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    small_print = small_print_px()
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = IMG.sub(lambda m: sized(m.group(0), page, small_print), text)
        if new != text:
            page.write_text(new, encoding="utf-8")


def setup(app):
    app.connect("build-finished", size_figures)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
