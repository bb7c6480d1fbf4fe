"""Screenshot every page of the built site, as a reader would see it.

Usage: ``python -m tools.site.screenshots [PAGE ...]`` (``make screenshots``, which
builds the book first if _build/html is missing). For every page of _toc.yml
(or only the pages named, e.g. ``chapters/ch01_attention_by_hand``) it saves
four full-page screenshots to _build/screenshots/:

    <page>--laptop-light.png   1280 px wide, light mode
    <page>--laptop-dark.png    1280 px wide, dark mode
    <page>--phone-light.png     390 px wide, light mode
    <page>--phone-dark.png      390 px wide, dark mode

where <page> is the page's path with "/" replaced by "__". The site is
served from 127.0.0.1 and the browser reaches nothing else, as in the
browser tests.
"""

import sys
import time

import yaml
from playwright.sync_api import sync_playwright

from ..paths import BUILD_HTML, ROOT
from .browser import CHROMIUM, HOW_TO_GET_CHROMIUM, launch, offline_context, serve, toc_pages

OUT = ROOT / "_build" / "screenshots"
WIDTHS = {
    "laptop": dict(viewport={"width": 1280, "height": 800}),
    "phone": dict(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True),
}
MODES = ["light", "dark"]
# The theme reads the reader's choice from localStorage before the page is drawn.
SET_MODE = 'localStorage.setItem("mode", "{0}"); localStorage.setItem("theme", "{0}");'
WAIT_FOR_MATH = "window.MathJax && MathJax.startup ? MathJax.startup.promise.then(() => true) : true"


LOAD_EVERY_IMAGE = """async () => {
  for (const img of document.querySelectorAll("img")) {
    img.loading = "eager";
    if (!img.complete) await img.decode().catch(() => null);
  }
}"""


def screenshot(browser, base, page_path, width, mode):
    blocked = []
    context = offline_context(browser, base, blocked, color_scheme=mode, **WIDTHS[width])
    context.add_init_script(SET_MODE.format(mode))
    page = context.new_page()
    page.goto(base + page_path + ".html", wait_until="load")
    page.evaluate(WAIT_FOR_MATH)
    page.evaluate("document.fonts.ready.then(() => true)")
    page.evaluate(LOAD_EVERY_IMAGE)  # figures load lazily, as a reader scrolls (tools/site/lazy_images.py)
    target = OUT / f"{page_path.replace('/', '__')}--{width}-{mode}.png"
    page.screenshot(path=str(target), full_page=True)
    context.close()
    return target, blocked


def main(pages):
    if not CHROMIUM.exists():
        sys.exit(HOW_TO_GET_CHROMIUM)
    if not (BUILD_HTML / "index.html").is_file():
        sys.exit("no site in _build/html: run `make book` first")
    pages = pages or toc_pages(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    OUT.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with serve() as base, sync_playwright() as playwright:
        browser = launch(playwright)
        for page_path in pages:
            for width in WIDTHS:
                for mode in MODES:
                    target, blocked = screenshot(browser, base, page_path, width, mode)
                    note = f"  (blocked: {', '.join(sorted(set(blocked)))})" if blocked else ""
                    print(f"{target.relative_to(ROOT)}{note}")
        browser.close()
    print(f"{len(pages) * len(WIDTHS) * len(MODES)} screenshots in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
