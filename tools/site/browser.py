"""Serve the built site on 127.0.0.1 and open it in headless Chromium, offline.

Shared by the browser tests (tests/test_site_works_offline_in_a_browser.py) and ``make screenshots``
(tools/site/screenshots.py). The browser is the system's Chromium (or Google Chrome),
driven by Playwright for Python; no browser is downloaded. Every request to a
host other than the local server is aborted, so a page that needs the internet
shows it.
"""

import contextlib
import functools
import gzip
import mimetypes
import os
import re
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ..paths import BUILD_HTML

#: Where a Chromium-family browser is found: $CHROMIUM if set, else Debian's
#: Chromium (also what GitHub's Ubuntu runners link there), else Google Chrome.
CHROMIUM_CANDIDATES = ["/usr/bin/chromium", "/usr/bin/google-chrome", "/usr/bin/google-chrome-stable"]
CHROMIUM = Path(
    os.environ.get("CHROMIUM")
    or next((p for p in CHROMIUM_CANDIDATES if Path(p).exists()), CHROMIUM_CANDIDATES[0])
)
#: Flags for Chromium as root on a machine with no network but loopback
#: (Playwright adds --headless itself).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
HOW_TO_GET_CHROMIUM = (
    f"the browser tests need Chromium or Google Chrome at {CHROMIUM}: install Debian's with "
    "`apt-get install chromium`, or set CHROMIUM to the browser's path (.ci/run installs one in CI)"
)
#: What a static host compresses (GitHub Pages, Netlify and Read the Docs all do).
COMPRESSED = {".html", ".js", ".css", ".json", ".map", ".svg", ".txt", ".ipynb", ".md", ".xml"}


@functools.lru_cache(maxsize=512)
def _compressed(path, mtime_ns):
    """A file's bytes, gzipped once (a static host keeps them compressed too)."""
    return gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)


class _Handler(SimpleHTTPRequestHandler):
    """A quiet static file handler that gzips text when the browser accepts it,
    as a real static host does, so transferred bytes are what a reader downloads."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = Path(self.translate_path(self.path))
        wants_gzip = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (wants_gzip and path.is_file() and path.suffix in COMPRESSED):
            return super().do_GET()
        body = _compressed(path, path.stat().st_mtime_ns)
        self.send_response(200)
        self.send_header("Content-Type", mimetypes.guess_type(path.name)[0] or "application/octet-stream")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A browser that closes a page mid-download is not an error of the site.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serve(directory=BUILD_HTML):
    """Serve ``directory`` on 127.0.0.1 at a free port; yield the base URL (ends with /)."""
    handler = functools.partial(_Handler, directory=str(directory))
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def launch(playwright):
    """The headless browser at CHROMIUM, started with a fresh profile."""
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


def offline_context(browser, base, blocked=None, **options):
    """A new browser context (empty cache and storage) that only reaches ``base``.

    Every other request is aborted and its URL appended to ``blocked``.
    """
    context = browser.new_context(**options)

    def abort(route):
        if blocked is not None:
            blocked.append(route.request.url)
        route.abort()

    # Only foreign requests are intercepted, so local ones run at full speed: a pattern (unlike a Python function,
    # which Playwright must ask about every request) is matched in the browser's driver.
    context.route(re.compile("^(?!" + re.escape(base) + ")"), abort)
    return context


def toc_pages(toc):
    """Every page of a parsed _toc.yml, in reading order (root first)."""
    pages = [toc["root"]]

    def walk(entries):
        for entry in entries:
            if "file" in entry:
                pages.append(entry["file"])
            walk(entry.get("sections", []))

    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    walk(toc.get("chapters", []))
    return pages
