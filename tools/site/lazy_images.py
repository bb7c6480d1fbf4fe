"""Sphinx extension: a page's figures load as the reader reaches them.

The chapters carry many figures (ch01 over a dozen images): a
browser that fetched all of them before the page counts as loaded kept the
first screen waiting for figures far below it. Every ``<img>`` of a built page
gets ``loading="lazy"`` (and ``decoding="async"``), so the browser fetches an
image when it comes near the screen; images already on the first screen load
at once, as before. tests/test_site_works_offline_in_a_browser.py times the first screen, then scrolls
to every figure and checks that each one loads, and weighs the page with all
of them. Loaded from ``_config.yml`` as a local extension.
"""

import re
from pathlib import Path

IMG = re.compile(r"<img(?![^>]*\sloading=)", re.IGNORECASE)


def lazy(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = IMG.sub('<img loading="lazy" decoding="async"', text)
        if new != text:
            page.write_text(new, encoding="utf-8")


def setup(app):
    app.connect("build-finished", lazy)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
