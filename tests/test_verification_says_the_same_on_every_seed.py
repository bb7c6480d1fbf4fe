"""Promise: verification's verdicts and diagnoses do not depend on the seed it drew.

Verification draws its inputs afresh for every run, so a check that is right on most draws and wrong on some shows
it in one run of many. ``python -m tools.grading.seeds`` verifies an assignment's solution and wrong
implementations under several seeds and reports any seed where the solution loses points or a wrong implementation
is diagnosed otherwise than its file says (CONTRIBUTING.md, "A new hidden test"). Here it is shown to find such a
seed, on a copy of ex01 whose file states a cause its check does not give; on the real ex01 it finds none.
"""

import io
import shutil

import pytest

from tests.plugins.environment import require_sandbox
from tools.paths import ROOT
from tools.grading.seeds import main, stated_cause, sweep

ASSIGNMENT = "ex01_by_hand"


def test_a_diagnosis_that_differs_from_its_file_is_reported_with_its_seed(tmp_path):
    require_sandbox("verification on several seeds")
    for part in ("solutions", "exercises"):
        shutil.copytree(ROOT / part / ASSIGNMENT, tmp_path / part / ASSIGNMENT)
    wrongs = sorted((tmp_path / "solutions" / ASSIGNMENT / "checks" / "wrong_implementations").glob("*.py"))
    misnamed = wrongs[0]
    cause = stated_cause(misnamed)
    misnamed.write_text(misnamed.read_text().replace(f"# cause: {cause}\n", "# cause: a_cause_no_check_gives\n", 1))
    out = io.StringIO()
    problems = sweep(ASSIGNMENT, [7], root=tmp_path, out=out)
    assert len(problems) == 1, problems  # the one misnamed, and nothing else of ex01 on that seed
    said = f"{ASSIGNMENT}/{misnamed.name}: states a_cause_no_check_gives, diagnosed {cause} on test_"
    assert problems[0].startswith(said) and problems[0].endswith(" at seed 7"), problems
    assert f"the solution and {len(wrongs)} wrong implementations on 1 seed(s)" in out.getvalue()


def test_the_command_names_what_it_does_not_know(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["ex99_nothing"])
    assert exit_.value.code == 2
    assert "no assignment ex99_nothing; the assignments are ex01_by_hand" in capsys.readouterr().err
