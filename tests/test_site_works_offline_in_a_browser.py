"""Promise: the published site works in a real browser with no internet.

The site that `make book` builds (the session's `book` fixture) is served from
127.0.0.1 and read in headless Chromium, driven by Playwright, with every
request to any other host aborted. Then, for every page of the table of
contents:

- it loads with no console error, no failed local request and no request to
  another host at all: equations, fonts, scripts and figures are the site's own;
- every equation is rendered by MathJax, and no raw TeX is left in the text;
- every figure loads and has alt text that describes it;
- on a phone (390 px) the page is no wider than the screen: only code, tables
  and wide equations scroll sideways, in their own boxes;
- every figure is sharp (drawn at 2x) and legible where it is shown: its smallest text, at the size the page
  draws it on a laptop and on a phone, is at least the site's small print, and every number on a heatmap
  cell contrasts with the cell at least 4.5:1 (each figure records what it draws, chapters/course.py);
  and on a phone no figure is cut off: a wide one shrinks to a readable size and no further, and then
  scrolls sideways in its own box with a scroll cue (its edge fades where more of it waits);
- on a laptop every figure keeps the grid of panels its code lays out (plt.subplots(R, C): R rows of C,
  in order) and its overall title; the contents list in the right-hand sidebar is not cut off;
- on a phone every display equation and block of code either fits the column or scrolls in its own box
  with the scroll cue;
- it stays within budget on a first visit (empty cache): at most 2 MB
  transferred, and ready (equations typeset) within 2 s, timed as the best of
  up to five loads (a page over the budget amid the suite's grading runs is
  timed again once they have finished). Outside CI, a time overrun on a machine busier than it
  has CPUs is reported as a skip with the numbers; CI always holds the budget.

And for the site as a whole: next/previous links and the sidebar reach every
page in order; search finds "softmax" and leads to a chapter; every internal
link and anchor resolves; the launch and download buttons of exercise pages
give the student notebook, never a solution.

Each page's time and size is written to _build/site-report.md and printed at
the end of the run. The local server compresses text as a static host does, so
"transferred" is what a reader downloads; the report also gives the size
unpacked.

Needs Chromium or Google Chrome (tools/site/browser.py: CHROMIUM). Without it the browser tests skip,
saying how to install it; with CI=true they fail instead.
"""

import json
import os
import re
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.error import HTTPError
from urllib.parse import unquote, urldefrag, urljoin, urlsplit
from urllib.request import urlopen

import pytest
import yaml

from tools.site.figure_sizes import legibility
from tools.paths import EXERCISES, ROOT
from tests.plugins.chromium import browser_missing  # noqa: F401  (where it was, for other modules)
from tools.site.browser import offline_context, serve, toc_pages

sys.path.insert(0, str(ROOT / "chapters"))
from course import MIN_CONTRAST, SMALL_PRINT_PX  # noqa: E402  (the figures' promises, stated once)

# `make check` runs this module after a change to a chapter (tests/make_check.py).
MAKE_CHECK = ("chapter",)

sys.path.remove(str(ROOT / "chapters"))

PAGES = toc_pages(yaml.safe_load((ROOT / "_toc.yml").read_text()))
EXERCISE_PAGES = [page for page in PAGES if page.startswith("exercises/")]

MAX_BYTES = 2_000_000  # transferred on a first visit, per page
MAX_SECONDS = 2.0  # from navigation to equations typeset, per page, from localhost
MAX_LOADS = 5  # a page over the time budget is loaded again, up to this many loads in all
REPORT = ROOT / "_build" / "site-report.md"
LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}

# Resolves once MathJax has typeset the page (at once on a page without MathJax).
WAIT_FOR_MATH = "() => (window.MathJax && MathJax.startup ? MathJax.startup.promise : Promise.resolve())"

MEASURE = """async () => {
  await (window.MathJax && MathJax.startup ? MathJax.startup.promise : Promise.resolve());
  const ready = performance.now();
  await document.fonts.ready;
  return {load_ms: performance.getEntriesByType("navigation")[0].loadEventEnd, ready_ms: ready};
}"""

# Every figure, brought to the screen one after the other (figures load lazily, as a reader scrolls:
# tools/site/lazy_images.py) and given up to 10 s to load; then back to the top.
FIGURES = """async () => {
  const figures = [];
  for (const img of document.querySelectorAll("article img")) {
    img.scrollIntoView();
    const deadline = performance.now() + 10000;
    while (!(img.complete && img.naturalWidth > 0) && performance.now() < deadline) {
      await new Promise(resolve => setTimeout(resolve, 20));
    }
    figures.push({src: img.getAttribute("src"), alt: img.getAttribute("alt") || "",
                  complete: img.complete, width: img.naturalWidth});
  }
  window.scrollTo(0, 0);
  return figures;
}"""

# What the page weighs with every figure loaded: requests, bytes transferred and unpacked.
WEIGHT = """() => {
  const entries = [performance.getEntriesByType("navigation")[0], ...performance.getEntriesByType("resource")];
  return {
    requests: entries.length,
    transferred: entries.reduce((sum, e) => sum + e.transferSize, 0),
    unpacked: entries.reduce((sum, e) => sum + e.decodedBodySize, 0),
  };
}"""

MATH = """() => {
  const math = [...document.querySelectorAll(".math")];
  const result = {
    equations: math.length,
    rendered: document.querySelectorAll("mjx-container").length,
    unrendered: math.filter(e => !e.querySelector("mjx-container")).map(e => e.textContent.trim().slice(0, 80)),
    errors: [...document.querySelectorAll("mjx-merror")].map(e => e.getAttribute("data-mjx-error") || e.textContent),
  };
  // What a reader sees, without code (which may legitimately hold a backslash or a $).
  document.querySelectorAll("pre, code, mjx-container, script, style, textarea").forEach(e => e.remove());
  result.text = document.body.innerText;
  return result;
}"""
# The scroll cue of a box (_static/custom.css): how far its edges fade where more of its content waits, in
# CSS pixels, [start, end]; [0, 0] for a box that shows none.
CUE = """const cue = box => {
  const style = getComputedStyle(box);
  const mask = style.maskImage || style.webkitMaskImage || "none";
  const px = name => parseFloat(style.getPropertyValue(name)) || 0;
  return mask === "none" ? [0, 0] : [px("--cue-start"), px("--cue-end")];
};"""
# Each figure as drawn: its width on the page and its own width in image pixels, its left and right edges,
# and whether a box around it cuts part of it off (a box that hides or scrolls what sticks out of it); if that
# box scrolls, its edges and its scroll cue.
DRAWN_FIGURES = """() => { """ + CUE + """
return [...document.querySelectorAll("article img")].map(img => {
  const r = img.getBoundingClientRect();
  let clipped = false, scroller = null;
  for (let box = img.parentElement; box && box !== document.body; box = box.parentElement) {
    const b = box.getBoundingClientRect(), overflow = getComputedStyle(box).overflowX;
    if (overflow !== "visible" && (r.left < b.left - 1 || r.right > b.right + 1)) {
      if (["auto", "scroll"].includes(overflow) && !clipped && !scroller) {
        scroller = {left: b.left, right: b.right, cue: cue(box)};
      } else {
        clipped = true;
      }
    }
  }
  return {src: img.getAttribute("src"), alt: (img.getAttribute("alt") || "").slice(0, 60), shown: r.width,
          natural: img.naturalWidth, left: r.left, right: r.right, clipped: clipped, scroller: scroller,
          screen: document.documentElement.clientWidth};
});
}"""
# On a phone: every display equation and block of code (or printed output) that is wider than its box, with
# whether its box scrolls and the box's scroll cue at the start.
PHONE_OVERFLOW = """() => { """ + CUE + """
const boxes = [
  ...[...document.querySelectorAll("article mjx-container[display='true']")].map(e => ["equation", e]),
  ...[...document.querySelectorAll("article pre")].map(e => ["code", e]),
];
return boxes.filter(([kind, e]) => e.scrollWidth > e.clientWidth + 1).map(([kind, e]) => ({
  kind: kind,
  text: (kind === "equation" ? e.closest(".math, p, div").textContent : e.textContent).trim().slice(0, 60),
  scrolls: ["auto", "scroll"].includes(getComputedStyle(e).overflowX),
  cue: cue(e),
}));
}"""
# At laptop width: every code cell of the page in order, with the figures it shows (each image's edges on the
# page and its address), to compare with what the notebook's code draws.
CELL_FIGURES = """() => [...document.querySelectorAll("article div.cell")].map(cell =>
  [...cell.querySelectorAll("div.cell_output img")].map(img => {
    const r = img.getBoundingClientRect();
    return {src: img.getAttribute("src"), left: r.left, top: r.top + window.scrollY, width: r.width, height: r.height};
  }))"""
# On a phone: the words of the page's headings that the browser breaks across two lines (a long name in code
# that does not fit the column), each with the heading it is in. A compound may break after its hyphen.
BROKEN_HEADING_WORDS = """() => {
  const broken = [];
  for (const heading of document.querySelectorAll("article :is(h1, h2, h3, h4)")) {
    const walker = document.createTreeWalker(heading, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      // a word, or the part of a compound up to and with its hyphen, after which a line may break
      const node = walker.currentNode, words = /[^\\s\\-\u2010\u2013\u2014]+[\\-\u2010\u2013\u2014]?/g;
      for (let m; (m = words.exec(node.textContent)); ) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (lines.size > 1) broken.push(m[0].slice(0, 40) + " (in: " + heading.textContent.trim().slice(0, 40) + ")");
      }
    }
  }
  return broken;
}"""
# At laptop width: the entries of the page's contents list (the right-hand sidebar) that reach past the window's
# or the sidebar's edge, where their text is cut off.
CLIPPED_CONTENTS = """() => {
  const sidebar = document.querySelector(".bd-sidebar-secondary");
  if (!sidebar || getComputedStyle(sidebar).display === "none") return [];
  const edge = Math.min(document.documentElement.clientWidth, sidebar.getBoundingClientRect().right);
  return [...sidebar.querySelectorAll("nav a")].filter(a => {
    const range = document.createRange();
    range.selectNodeContents(a);
    return range.getBoundingClientRect().right > edge + 1;
  }).map(a => a.textContent.trim().slice(0, 60));
}"""
# At laptop width: display equations and code blocks wider than the column (each then
# needs a horizontal scrollbar), with the start of the widest line of each. A `text`
# block is a transcript of what a program printed, shown as printed.
LAPTOP_OVERFLOW = """() => {
  const wide = e => e.scrollWidth > e.clientWidth + 1;
  const longest = text => text.split("\\n").reduce((a, l) => (l.length > a.length ? l : a), "");
  return {
    math: [...document.querySelectorAll("article mjx-container[display='true']")].filter(wide)
      .map(e => e.closest(".math").textContent.trim().slice(0, 80)),
    code: [...document.querySelectorAll("article div.cell_input pre, article div.highlight pre")]
      .filter(e => !e.closest(".highlight-text")).filter(wide)
      .map(e => longest(e.textContent).slice(0, 100)),
  };
}"""
RAW_TEX = ["\\[", "\\(", "$$", "\\begin{"]

# The page's width, and the text that sticks out past the right edge of the screen
# (outside the boxes that scroll sideways on purpose, and the hidden side panels).
TOO_WIDE = """() => {
  const screen = document.documentElement.clientWidth, out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, parent = node.parentElement;
    if (!node.textContent.trim() || parent.closest(".bd-sidebar-primary, .bd-sidebar-secondary")) continue;
    let box = parent, scrolls = false;
    for (; box && box !== document.body; box = box.parentElement) {
      if (["auto", "scroll", "hidden"].includes(getComputedStyle(box).overflowX)) { scrolls = true; break; }
    }
    const range = document.createRange();
    range.selectNodeContents(node);
    if (!scrolls && range.getBoundingClientRect().right > screen + 1) out.push(node.textContent.trim().slice(0, 60));
  }
  return [document.documentElement.scrollWidth, out];
}"""


@dataclass
class Visit:
    """What one first visit to a page showed: collected once, checked by several tests."""

    page: str
    load_ms: float = 0.0
    ready_ms: float = 0.0
    requests: int = 0
    attempts: int = 1
    busy: float = 0.0  # the machine's load average per CPU while the page was timed
    transferred: int = 0
    unpacked: int = 0
    console_errors: list = field(default_factory=list)
    failed_local: list = field(default_factory=list)
    blocked: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    phone_width: int = 0
    too_wide: list = field(default_factory=list)
    laptop_figures: list = field(default_factory=list)
    phone_figures: list = field(default_factory=list)
    math: dict = field(default_factory=dict)
    laptop_overflow: dict = field(default_factory=dict)
    phone_overflow: list = field(default_factory=list)
    cell_figures: list = field(default_factory=list)
    clipped_contents: list = field(default_factory=list)
    broken_heading_words: list = field(default_factory=list)


@pytest.fixture(scope="session")
def site(book):
    """Base URL (http://127.0.0.1:<port>/) of the built site."""
    with serve() as base:
        yield base


@pytest.fixture(scope="session")
def browser(site, chromium):
    """The session's Chromium (tests/plugins/chromium.py), once the site is served."""
    return chromium


def first_visit(browser, base, page_path):
    visit = Visit(page_path)
    context = offline_context(browser, base, visit.blocked, viewport=LAPTOP)
    page = context.new_page()
    page.on("console", lambda message: message.type == "error" and visit.console_errors.append(message.text))
    page.on("pageerror", lambda error: visit.console_errors.append(str(error)))

    def failed(request):
        if request.url.startswith(base):
            visit.failed_local.append(f"{request.url[len(base):]} ({request.failure})")

    def response(response):
        if response.url.startswith(base) and response.status >= 400:
            visit.failed_local.append(f"{response.url[len(base):]} (HTTP {response.status})")

    page.on("requestfailed", failed)
    page.on("response", response)
    page.goto(base + page_path + ".html", wait_until="load")
    for key, value in page.evaluate(MEASURE).items():
        setattr(visit, key, value)
    visit.figures = page.evaluate(FIGURES)
    for key, value in page.evaluate(WEIGHT).items():
        setattr(visit, key, value)
    visit.laptop_overflow = page.evaluate(LAPTOP_OVERFLOW)
    visit.laptop_figures = page.evaluate(DRAWN_FIGURES)
    visit.cell_figures = page.evaluate(CELL_FIGURES)
    visit.clipped_contents = page.evaluate(CLIPPED_CONTENTS)
    page.set_viewport_size(PHONE)
    visit.phone_width, visit.too_wide = page.evaluate(TOO_WIDE)
    visit.phone_figures = page.evaluate(DRAWN_FIGURES)
    visit.phone_overflow = page.evaluate(PHONE_OVERFLOW)
    visit.broken_heading_words = page.evaluate(BROKEN_HEADING_WORDS)
    visit.math = page.evaluate(MATH)
    context.close()
    return visit


def write_report(visits):
    rows = sorted(visits.values(), key=lambda v: PAGES.index(v.page))
    lines = [
        "# Site report: first visit to each page",
        "",
        f"Served from 127.0.0.1, text compressed as a static host does; empty cache. Budget: "
        f"{MAX_BYTES / 1e6:.1f} MB transferred and {MAX_SECONDS:.1f} s to ready (equations typeset); "
        f"a page over the time budget is loaded again, up to {MAX_LOADS} loads, and its best time is shown.",
        "",
        "| page | load (s) | ready (s) | loads | machine load per CPU | requests | transferred (kB) | unpacked (kB) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for v in rows:
        lines.append(
            f"| {v.page} | {v.load_ms / 1000:.2f} | {v.ready_ms / 1000:.2f} | {v.attempts} | {v.busy:.1f} "
            f"| {v.requests} | {v.transferred / 1000:.0f} | {v.unpacked / 1000:.0f} |"
        )
    slowest = max(rows, key=lambda v: v.ready_ms)
    heaviest = max(rows, key=lambda v: v.transferred)
    lines += [
        "",
        f"Slowest: {slowest.page}, ready in {slowest.ready_ms / 1000:.2f} s. "
        f"Heaviest: {heaviest.page}, {heaviest.transferred / 1000:.0f} kB transferred "
        f"({heaviest.unpacked / 1000:.0f} kB unpacked).",
    ]
    REPORT.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="session")
def visits(browser, site):
    """Every page of the table of contents, each visited in a fresh browser context.

    A page over the time budget is loaded up to four more times and its best
    time counts: a busy machine only ever makes a load slower, so the best of
    five is the fairest measure of the page itself. The machine's load is recorded
    too, for the same reason.
    """
    first_visit(browser, site, PAGES[0])  # warm up the browser, not counted
    result = {}
    for page in PAGES:
        visit = first_visit(browser, site, page)
        while visit.ready_ms > MAX_SECONDS * 1000 and visit.attempts < MAX_LOADS:
            again = first_visit(browser, site, page)
            visit.load_ms, visit.ready_ms = min(visit.load_ms, again.load_ms), min(visit.ready_ms, again.ready_ms)
            visit.attempts += 1
        visit.busy = os.getloadavg()[0] / (os.cpu_count() or 1)
        result[page] = visit
    write_report(result)
    return result


# Each page on its own -------------------------------------------------------


@pytest.mark.parametrize("page", PAGES)
def test_page_loads_without_errors_or_the_internet(visits, page):
    visit = visits[page]
    assert not visit.blocked, f"{page} asked other hosts for {sorted(set(visit.blocked))}"
    assert not visit.failed_local, f"{page}: local requests failed: {visit.failed_local}"
    assert not visit.console_errors, f"{page}: console errors: {visit.console_errors}"


def test_a_request_to_another_host_is_caught(browser, site):
    """What the test above relies on: the browser context of a visit aborts a request to any other host, and names
    it, whether a script or an image asks; the site's own requests pass."""
    blocked = []
    context = offline_context(browser, site, blocked)
    page = context.new_page()
    page.goto(site + PAGES[0] + ".html", wait_until="load")
    answer = page.evaluate("""async () => {
        const image = document.createElement("img");
        const shown = new Promise(done => { image.onload = () => done("shown"); image.onerror = () => done("refused"); });
        image.src = "https://example.org/figure.png";
        document.body.appendChild(image);
        const own = (await fetch("genindex.html")).status;
        const other = await fetch("http://192.0.2.1/data.json").then(() => "answered", () => "refused");
        return [own, other, await shown];
    }""")
    context.close()
    assert answer == [200, "refused", "refused"]
    assert sorted(blocked) == ["http://192.0.2.1/data.json", "https://example.org/figure.png"]


@pytest.mark.parametrize("page", PAGES)
def test_every_equation_is_rendered(visits, page):
    math = visits[page].math
    assert not math["unrendered"], f"{page}: MathJax did not render {math['unrendered'][:3]}"
    assert not math["errors"], f"{page}: MathJax reports errors in equations: {math['errors'][:3]}"
    assert math["rendered"] >= math["equations"]
    leftovers = [
        math["text"][max(0, i - 30) : i + 30]
        for token in RAW_TEX
        for i in [m.start() for m in re.finditer(re.escape(token), math["text"])]
    ]
    assert not leftovers, f"{page}: raw TeX left in the text: {leftovers[:3]}"


def test_the_chapters_have_equations(visits):
    """The checks above would pass vacuously if MathJax never ran."""
    chapters = [page for page in PAGES if page.startswith("chapters/")]
    assert chapters
    assert all(visits[page].math["rendered"] > 0 for page in chapters)


def looks_like_a_file_name(alt, src):
    name = file_name(src)
    return alt.strip() in {name, src} or re.fullmatch(r"\S+\.(png|svg|jpe?g|gif)", alt.strip()) is not None


def file_name(src):
    return unquote(urlsplit(src).path).rsplit("/", 1)[-1]


@pytest.mark.parametrize("page", PAGES)
def test_every_figure_loads_and_has_alt_text(visits, page):
    for figure in visits[page].figures:
        assert figure["complete"] and figure["width"] > 0, f"{page}: figure {figure['src']} did not load"
        assert figure["alt"].strip(), f"{page}: figure {figure['src']} has no alt text"
        assert not looks_like_a_file_name(figure["alt"], figure["src"]), (
            f"{page}: the alt text of {figure['src']} is a file name, not a description of the figure"
        )


@pytest.mark.parametrize("page", PAGES)
def test_page_fits_a_phone_screen(visits, page):
    visit = visits[page]
    assert visit.phone_width <= PHONE["width"], (
        f"{page} is {visit.phone_width} px wide on a {PHONE['width']} px phone; sticking out: {visit.too_wide[:5]}"
    )


@pytest.mark.parametrize("page", PAGES)
def test_equations_and_code_fit_the_column_on_a_laptop(visits, page):
    """At 1280 px a reader sees every display equation and every line of code
    without scrolling sideways: a long equation is split over lines, a long
    line of code is wrapped (the column holds about 82 characters of code)."""
    overflow = visits[page].laptop_overflow
    assert not overflow["math"], f"{page}: equations wider than the column at 1280 px: {overflow['math']}"
    if page.startswith("exercises/"):
        return  # written for Jupyter, where a test's message stays on one line; the book shows it scrolling
    assert not overflow["code"], f"{page}: code wider than the column at 1280 px, widest lines: {overflow['code']}"


def legibility_record(url):
    """The record that chapters/course.py writes into every figure it draws (the PNG text chunk "Legibility"):
    its smallest text in pixels at the figure's own size, the lowest contrast of a number on a heatmap cell,
    and how many image pixels it has per CSS pixel. None for an image that carries no record."""
    if url not in _RECORDS:
        data = fetch(url)
        assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{url} is not a PNG"
        _RECORDS[url] = legibility(data)
    return _RECORDS[url]


_RECORDS = {}


def drawn(visit, width):
    return visit.laptop_figures if width == "laptop" else visit.phone_figures


@pytest.mark.parametrize("width", ["laptop", "phone"])
@pytest.mark.parametrize("page", PAGES)
def test_figures_are_sharp_and_their_text_readable(visits, site, page, width):
    """Every figure is drawn at twice its size (sharp on a high-resolution screen), and its smallest text,
    at the size the page shows it, is at least the site's small print: SMALL_PRINT_PX CSS pixels, on a
    1280 px laptop and on a 390 px phone."""
    problems = []
    for figure in drawn(visits[page], width):
        record = legibility_record(urljoin(site + page + ".html", figure["src"]))
        if record is None:
            problems.append(f"{file_name(figure['src'])} ({figure['alt']!r}) carries no legibility record: "
                            "draw it with course.show()")
            continue
        if record["sharpness"] < 2:
            problems.append(f"{figure['alt']!r} is drawn at {record['sharpness']}x, not 2x")
        scale = figure["shown"] / (figure["natural"] / record["sharpness"])
        smallest = record["min_text_px"] * scale
        if smallest < SMALL_PRINT_PX - 0.05:
            problems.append(f"{figure['alt']!r}: smallest text {smallest:.1f} px (drawn at {scale:.0%} of its size)")
    assert not problems, f"{page} at {width} width (small print: {SMALL_PRINT_PX} px): " + "; ".join(problems)


@pytest.mark.parametrize("page", PAGES)
def test_numbers_on_heatmap_cells_have_contrast(visits, site, page):
    """Every number written on a heatmap cell contrasts with that cell at least 4.5:1 (WCAG 2, AA)."""
    weak = []
    for figure in visits[page].laptop_figures:
        record = legibility_record(urljoin(site + page + ".html", figure["src"]))
        if record and record["min_contrast"] is not None and record["min_contrast"] < MIN_CONTRAST:
            weak.append(f"{figure['alt']!r}: {record['min_contrast']:.2f}:1")
    assert not weak, f"{page}: numbers on heatmap cells below {MIN_CONTRAST}:1: {weak}"


def cut_off(figure):
    """Why a figure, as drawn, is cut off for a reader, or None: part of it is hidden by a box that does not
    scroll, or sticks out of the screen, or out of a box that scrolls but shows no scroll cue."""
    if figure["clipped"]:
        return "inside a box that clips it"
    box = figure["scroller"] or figure
    if box["left"] < -1 or box["right"] > figure["screen"] + 1:
        return f"{box['left']:.0f} to {box['right']:.0f} px of {figure['screen']} px"
    if figure["scroller"] and not (figure["right"] <= box["right"] + 1 or box["cue"][1] > 0):
        return "in a box that scrolls with no sign that it does (no scroll cue)"
    return None


@pytest.mark.parametrize("page", PAGES)
def test_no_figure_is_cut_off_on_a_phone(visits, page):
    """At 390 px every figure is whole on the screen, or, wider than the column at a readable size (a grid of
    panels), scrolls sideways in its own box whose edge fades where more of it waits (the scroll cue,
    _static/custom.css); none hides behind the screen's edge or in a box that clips it."""
    cut = [f"{f['alt']!r}: {cut_off(f)}" for f in visits[page].phone_figures if cut_off(f)]
    assert not cut, f"{page} on a {PHONE['width']} px phone cuts off figures: {cut}"


@pytest.mark.parametrize("page", PAGES)
def test_wide_equations_and_code_scroll_with_a_cue_on_a_phone(visits, page):
    """At 390 px a display equation or a block of code wider than the column scrolls sideways in its own box,
    and the box shows that it does: its edge fades where more of it waits (the scroll cue, _static/custom.css).
    A reader who sees the line end at the edge would otherwise take it for the whole line."""
    hidden = [f"{box['kind']} {box['text']!r}: "
              + ("cut off, its box does not scroll" if not box["scrolls"] else "scrolls with no scroll cue")
              for box in visits[page].phone_overflow if not (box["scrolls"] and box["cue"][1] > 0)]
    assert not hidden, f"{page} on a {PHONE['width']} px phone: " + "; ".join(hidden)


@pytest.mark.parametrize("page", PAGES)
def test_contents_list_fits_on_a_laptop(visits, page):
    """At 1280 px every entry of the page's contents list (the right-hand sidebar) is whole: a heading with a
    long name in code wraps there instead of running past the window's edge."""
    clipped = visits[page].clipped_contents
    assert not clipped, f"{page} at {LAPTOP['width']} px: contents entries cut off at the edge: {clipped}"


@pytest.mark.parametrize("page", PAGES)
def test_headings_break_between_words_on_a_phone(visits, page):
    """At 390 px a heading wraps between its words, never inside one: a long name in code in a heading
    (ex03's and chapter 6's `nn.MultiheadAttention`) is set small enough to fit the column whole."""
    broken = visits[page].broken_heading_words
    assert not broken, f"{page} on a {PHONE['width']} px phone breaks words of its headings across lines: {broken}"


CHAPTER_PAGES = [page for page in PAGES if page.startswith("chapters/")]
SUBPLOTS = re.compile(r"plt\.subplots\(\s*(\d+)\s*,\s*(\d+)")


def code_cells(page):
    """The code cells of a chapter that the page shows, in order: (source, its grid of panels (rows, columns)
    if it draws one with plt.subplots, whether it gives the figure an overall title)."""
    import nbformat

    notebook = nbformat.read(ROOT / f"{page}.ipynb", as_version=4)
    cells = [cell for cell in notebook.cells
             if cell.cell_type == "code" and "remove-cell" not in cell.metadata.get("tags", [])]
    result = []
    for cell in cells:
        grid = SUBPLOTS.search(cell.source)
        result.append((cell.source, tuple(map(int, grid.groups())) if grid else None, ".suptitle(" in cell.source))
    return result


def panels_on_the_page(images, site, page):
    """Where each panel of a cell's figures is on the page, as [left, top, right, bottom]: the panels an image
    records it draws (course.show), placed on the image's box; an image that records no panels is one panel."""
    boxes = []
    for image in images:
        record = legibility_record(urljoin(site + page + ".html", image["src"])) or {}
        for left, top, right, bottom in record.get("panels") or [[0, 0, 1, 1]]:
            boxes.append([image["left"] + left * image["width"], image["top"] + top * image["height"],
                          image["left"] + right * image["width"], image["top"] + bottom * image["height"]])
    return boxes


def rows_of(boxes):
    """Boxes in reading order, grouped into the rows a reader sees: a box starts a new row when it sits below
    the previous one's middle, or to its left."""
    rows = []
    for box in boxes:
        if rows and box[1] < (rows[-1][-1][1] + rows[-1][-1][3]) / 2 and box[0] >= rows[-1][-1][2] - 1:
            rows[-1].append(box)
        else:
            rows.append([box])
    return rows


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_figures_keep_their_grid_and_title_on_a_laptop(visits, site, page):
    """At 1280 px a figure reads as its author drew it: the panels that a cell's plt.subplots(R, C) lays out sit
    on the page in R rows of C, in their order, and a figure given an overall title (fig.suptitle) shows it."""
    cells = code_cells(page)
    shown = visits[page].cell_figures
    assert len(shown) == len(cells), f"{page} shows {len(shown)} code cells, its notebook has {len(cells)}"
    problems = []
    for (source, grid, titled), images in zip(cells, shown):
        if not images or grid is None:
            continue
        first = source.splitlines()[0][:50]
        rows = [len(row) for row in rows_of(panels_on_the_page(images, site, page))]
        if rows != [grid[1]] * grid[0]:
            problems.append(f"cell {first!r} draws {grid[0]} row(s) of {grid[1]} panels; the page shows rows of {rows}")
        records = [legibility_record(urljoin(site + page + ".html", image["src"])) or {} for image in images]
        if titled and not any(record.get("title") for record in records):
            problems.append(f"cell {first!r} gives its figure a title (suptitle) that the page does not show")
    assert not problems, f"{page} at {LAPTOP['width']} px: " + "; ".join(problems)


@pytest.mark.parametrize("page", PAGES)
def test_page_is_within_size_budget(visits, page):
    visit = visits[page]
    assert visit.transferred <= MAX_BYTES, (
        f"{page} transfers {visit.transferred / 1e6:.2f} MB on a first visit (budget {MAX_BYTES / 1e6:.1f} MB)"
    )


@pytest.mark.run_alone
@pytest.mark.parametrize("page", PAGES)
def test_page_is_within_time_budget(browser, site, visits, page):
    """Timed as the best of up to five loads. The first loads happen amid the
    rest of the suite, whose grading runs keep both CPUs busy; a page over the
    budget there is timed again here, at the end of the suite (run_alone), once
    every background run has finished, when a load measures the page and not
    the machine. Outside CI, on a machine still busier than it has CPUs, an
    overrun is reported as a skip, with the numbers. CI always holds the budget."""
    visit = visits[page]
    if visit.ready_ms > MAX_SECONDS * 1000:
        visit.attempts = 0
        while visit.attempts < MAX_LOADS:
            again = first_visit(browser, site, page)
            visit.load_ms, visit.ready_ms = min(visit.load_ms, again.load_ms), min(visit.ready_ms, again.ready_ms)
            visit.attempts += 1
            if visit.ready_ms <= MAX_SECONDS * 1000:
                break
        visit.busy = os.getloadavg()[0] / (os.cpu_count() or 1)
        write_report(visits)
    seconds = visit.ready_ms / 1000
    if seconds > MAX_SECONDS and visit.busy > 1 and os.environ.get("CI") != "true":
        pytest.skip(
            f"{page} took {seconds:.2f} s (budget {MAX_SECONDS:.1f} s) while the machine was busy "
            f"(load average {visit.busy:.1f} per CPU); see {REPORT.relative_to(ROOT)}"
        )
    assert seconds <= MAX_SECONDS, (
        f"{page} took {seconds:.2f} s to load and typeset (budget {MAX_SECONDS:.1f} s), best of "
        f"{visit.attempts} loads at the end of the suite (load average {visit.busy:.1f} per CPU)"
    )


# Moving around the site -----------------------------------------------------


def page_of(url, base):
    """'chapters/ch01_attention_by_hand' for http://127.0.0.1:<port>/chapters/ch01_attention_by_hand.html"""
    path = urlsplit(url).path[len(urlsplit(base).path) :]
    return path[: -len(".html")] if path.endswith(".html") else path


@pytest.fixture
def tab(browser, site):
    """One browser tab that keeps its cache from page to page, as a reader's does. It follows links, buttons and
    searches, which need no typeset equations: MathJax is left out (it is tested on every page above), so that
    walking the book does not typeset every page again, twice."""
    context = offline_context(browser, site, viewport=LAPTOP)
    context.route(re.compile("^" + re.escape(site + "_static/mathjax/")), lambda route: route.abort())
    page = context.new_page()
    yield page
    context.close()


def test_next_and_previous_links_walk_the_whole_book(tab, site):
    tab.goto(site + PAGES[0] + ".html")
    forward = [page_of(tab.url, site)]
    while tab.locator("a.right-next").count():
        with tab.expect_navigation():
            tab.locator("a.right-next").click()
        forward.append(page_of(tab.url, site))
    assert forward == PAGES, "following 'Next' from the first page does not visit the pages in table-of-contents order"
    backward = [page_of(tab.url, site)]
    while tab.locator("a.left-prev").count():
        with tab.expect_navigation():
            tab.locator("a.left-prev").click()
        backward.append(page_of(tab.url, site))
    assert backward == PAGES[::-1], "following 'Previous' from the last page does not retrace the book"


def test_sidebar_reaches_every_page(tab, site):
    tab.goto(site + PAGES[0] + ".html")
    sidebar = tab.locator("nav.bd-docs-nav a.reference")
    hrefs = sidebar.evaluate_all("links => links.map(a => a.href)")
    assert sorted({page_of(href, site) for href in hrefs}) == sorted(PAGES)
    for target in PAGES[1:] + PAGES[:1]:  # click through every page, from the page before it
        hrefs = sidebar.evaluate_all("links => links.map(a => a.href)")
        (index,) = [i for i, href in enumerate(hrefs) if urldefrag(href)[0] == site + target + ".html"]
        with tab.expect_navigation():
            sidebar.nth(index).click()
        assert page_of(tab.url, site) == target


def test_search_finds_softmax_and_leads_to_a_chapter(tab, site):
    tab.goto(site + PAGES[0] + ".html")
    tab.locator("button.search-button__button:visible").first.click()  # opens the theme's search dialog
    box = tab.locator("#pst-search-dialog input[name='q']")
    box.fill("softmax")
    with tab.expect_navigation():
        box.press("Enter")
    assert page_of(tab.url, site) == "search"
    results = tab.locator("#search-results ul.search li a")
    results.first.wait_for(timeout=10_000)
    chapters = [href for href in results.evaluate_all("links => links.map(a => a.href)") if "/chapters/" in href]
    assert chapters, "searching for 'softmax' found no chapter"
    with tab.expect_navigation():
        tab.locator("#search-results ul.search li a[href*='chapters/']").first.click()
    assert page_of(tab.url, site).startswith("chapters/")
    assert "softmax" in tab.locator("article").inner_text().lower()


# Links ----------------------------------------------------------------------


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("id", "name") if tag == "a" else ("id",):
            if attrs.get(name):
                self.ids.add(attrs[name])
        if tag in {"a", "link"} and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag in {"img", "script"} and attrs.get("src"):
            self.links.append(attrs["src"])


def fetch(url):
    with urlopen(url, timeout=10) as response:
        return response.read()


def test_every_internal_link_and_anchor_resolves(site):
    """Crawl the whole site from its first page: every local link must lead to a
    file, and every #anchor to an element with that id."""
    parsed, files, broken, todo = {}, set(), [], [urljoin(site, PAGES[0] + ".html")]
    links, missing = [], set()
    while todo:
        url = todo.pop()
        if url in parsed or url in missing:
            continue
        try:
            html = fetch(url).decode()
        except HTTPError:
            missing.add(url)
            continue
        parser = _Links()
        parser.feed(html)
        parsed[url] = parser
        for href in parser.links:
            target = urljoin(url, href)
            if not target.startswith(site):
                continue  # another host (launch buttons, the repository, papers): not ours to check
            links.append((url, target))
            page, _ = urldefrag(target)
            page = page.split("?", 1)[0]
            if page.endswith(".html") and page not in parsed:
                todo.append(page)
    assert len(parsed) >= len(PAGES)
    for source, target in links:
        page, anchor = urldefrag(target)
        page = page.split("?", 1)[0]
        where = f"{source[len(site):]} -> {target[len(site):]}"
        if page.endswith(".html"):
            if page not in parsed:
                broken.append(f"{where}: no such page")
            elif anchor and unquote(anchor) not in parsed[page].ids:
                broken.append(f"{where}: no element with id {anchor!r}")
        elif page not in files:
            try:
                fetch(page)
                files.add(page)
            except HTTPError as error:
                broken.append(f"{where}: HTTP {error.code}")
    assert not broken, f"{len(broken)} broken links, for example:\n" + "\n".join(sorted(set(broken))[:20])


# Exercises ------------------------------------------------------------------


@pytest.mark.parametrize("page", EXERCISE_PAGES)
def test_exercise_buttons_give_the_student_notebook(tab, site, page):
    name = page.split("/")[1]
    student = f"exercises/{name}/{name}.ipynb"
    tab.goto(site + page + ".html")
    hrefs = tab.locator("a[href]").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert not [h for h in hrefs if "solutions/" in h], f"{page} links to the instructors' solutions/"

    tab.locator(".dropdown-launch-buttons > button.dropdown-toggle").click()
    launch = tab.locator(".dropdown-launch-buttons a")
    launch.first.wait_for()
    launch_hrefs = launch.evaluate_all("links => links.map(a => a.href)")
    assert launch_hrefs, f"{page} has no launch buttons"
    for href in launch_hrefs:
        assert student in unquote(href), f"{page}: launch button {href} does not open {student}"

    tab.keyboard.press("Escape")
    tab.locator(".dropdown-download-buttons > button.dropdown-toggle").click()
    download = tab.locator(".dropdown-download-buttons a[href$='.ipynb']")
    download.first.wait_for()
    (href,) = download.evaluate_all("links => links.map(a => a.href)")
    assert fetch(href) == (EXERCISES / name / f"{name}.ipynb").read_bytes(), (
        f"{page}: the .ipynb download is not the student notebook {student}"
    )
