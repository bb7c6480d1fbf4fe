"""Sphinx extension: include each script only once per page.

With the pinned Sphinx 7.4, sphinx-thebe and sphinx-togglebutton, the inline
scripts those extensions register while the book is read end up twice in
every page's <head> (once with no file name, once with an empty one, so Sphinx
does not see that they are equal). Declaring ``const THEBE_JS_URL`` a second time is a
JavaScript SyntaxError, so every page logged an error in the browser console
(tests/test_site_works_offline_in_a_browser.py checks there is none). This drops exact duplicates from
the page's scripts, keeping the first of each and the order. Loaded from
``_config.yml`` as a local extension.
"""


def drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen, unique = set(), []
    for script in scripts:
        # An inline script may be registered with filename None or "": the same <script>.
        key = (script.filename or "", script.priority, tuple(sorted(script.attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique


def setup(app):
    # Late, so that scripts other extensions add to this page are seen too.
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
