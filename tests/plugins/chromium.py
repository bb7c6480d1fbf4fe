"""One Chromium for the whole session (``chromium``), driven by Playwright's sync API.

Playwright's sync API runs an event loop in the thread that starts it, and a second
``sync_playwright()`` in the same thread fails while the first is open: every test that
needs a browser (the site's, the class report's) takes this one."""

import os

import pytest

from tools.site.browser import CHROMIUM, HOW_TO_GET_CHROMIUM, launch


def browser_missing():
    """Why the browser tests cannot run here, or None."""
    if not CHROMIUM.exists():
        return HOW_TO_GET_CHROMIUM
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is missing: run `make venv` (requirements.txt pins it)"
    return None


@pytest.fixture(scope="session")
def chromium():
    """The session's browser; skips (fails with CI=true) where there is none."""
    reason = browser_missing()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {reason}")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        yield browser
        browser.close()
