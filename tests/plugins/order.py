"""Plugin: the order the session runs its tests in. The tests that read the shared grading run go after all the
others, and those of the background modules after them: all those runs start once collection is done and overlap
the rest of the suite. A module that sets RUN_ALONE, and a test marked run_alone, go last of all, once every
background run has been waited for."""

from tests.plugins.background_runs import in_background
from tests.plugins.shared_grading_run import reads_shared_run


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda item: (bool(getattr(getattr(item, "module", None), "RUN_ALONE", False)
                                      or item.get_closest_marker("run_alone")),
                                 in_background(item), reads_shared_run(item)))
