"""Plugin: the ``book`` fixture, the site built once per session (test_book_builds_and_keeps_answers_out.py,
test_site_works_offline_in_a_browser.py and others read it)."""

import pytest

from tools.site.book import build


@pytest.fixture(scope="session")
def book():
    """The site, built into _build/html once per session as `make book` builds it,
    from the chapters' committed outputs: nbval re-executes every chapter in the
    same session and fails if an output differs (tools/site/book.py)."""
    result = build(capture=True, execute=False)
    assert result.returncode == 0, f"the book did not build:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result
