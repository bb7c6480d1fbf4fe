"""Promise: `make grade` opens each gradebook's database engine once per process, not once per nbgrader Gradebook,
and leaves nothing open on it between two Gradebooks (tools/nbgrader_patches.py, gradebook_engines_reused).

nbgrader 0.9.6 makes a new SQLAlchemy engine every time a Gradebook is opened (about a dozen times per submission),
and every new engine compiles every query again: a quarter of a grading worker's time outside the kernel. The scores
are the same either way (tests/test_make_grade_matches_stock_nbgrader.py compares make grade with stock nbgrader);
this checks the reuse itself, in a Python of its own, since the patch changes nbgrader for its whole process."""

import json
import subprocess
import sys

from tools.paths import ROOT

PROBE = r"""
import json, os, sys
from nbgrader.api import Gradebook
from tools.nbgrader_patches import alembic_head_in_process, gradebook_engines_reused

alembic_head_in_process()  # (a new gradebook would start `alembic heads` otherwise)
folder = sys.argv[1]
urls = [f"sqlite:///{folder}/gradebook-{i}.db" for i in range(6)]
with Gradebook(urls[0]) as gb:  # stock: a new engine per Gradebook
    gb.add_assignment("ex01_by_hand")
    stock = gb.engine
with Gradebook(urls[0]) as gb:
    stock_again = gb.engine
gradebook_engines_reused(keep=4)
gradebook_engines_reused(keep=4)  # once per process: a second call changes nothing
engines, open_after_close = [], []
for _ in range(3):
    with Gradebook(urls[0]) as gb:
        assert gb.find_assignment("ex01_by_hand").name == "ex01_by_hand"
        engines.append(gb.engine)
    open_after_close.append(gb.engine.pool.checkedout())
# Two Gradebooks of one database open at once, as nbgrader's converter and a preprocessor hold them.
with Gradebook(urls[0]) as first, Gradebook(urls[0]) as second:
    first.add_student("one")
    second.add_student("two")
    both = sorted(s.id for s in first.students)
# A child forked from this process forgets the engines it inherited and makes its own.
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    with Gradebook(urls[0]) as gb:
        os.write(write, json.dumps([gb.engine is engines[0], len(gb.students)]).encode())
    os._exit(0)
os.close(write)
child = json.loads(os.read(read, 1000))
os.waitpid(pid, 0)
# Only the last `keep` databases keep their engine.
for url in urls[1:5]:
    with Gradebook(url):
        pass
with Gradebook(urls[0]) as gb:
    evicted = gb.engine is not engines[0]
print(json.dumps({"stock_new_each_time": stock is not stock_again,
                  "reused": all(e is engines[0] for e in engines),
                  "open_after_close": open_after_close, "both": both, "child": child, "evicted": evicted}))
"""


def test_one_engine_serves_every_gradebook_of_a_database(tmp_path):
    proc = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], cwd=ROOT, text=True, capture_output=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert found["stock_new_each_time"], "stock nbgrader made one engine for two Gradebooks: the patch is moot"
    assert found["reused"], "three Gradebooks of one database did not share one engine"
    assert found["open_after_close"] == [0, 0, 0], "a closed Gradebook left a connection open on its database"
    assert found["both"] == ["one", "two"], found["both"]
    assert found["child"] == [False, 2], "a forked child used its parent's engine, or did not read the gradebook"
    assert found["evicted"], "the engine of a database opened 5 databases ago was kept"
