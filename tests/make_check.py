"""`make check`: the tests a change to assignments or chapters needs, found rather than listed.

Usage: ``python -m tests.make_check [--assignment NAMES] [--chapter NAMES] [--base REF] [--dry-run] [PYTEST ARGS ...]``
(``make check``, ``make check ASSIGNMENT=ex05_positions``, ``make check CHAPTER=ch07``; ``--dry-run`` says what it
would run and runs nothing).

Which test modules: each module of tests/ says what it checks with a module-level ``MAKE_CHECK``, a tuple of
``"assignment"`` (its tests are about one assignment's promises and follow COURSE_ASSIGNMENTS) and ``"chapter"``
(about a chapter's; they follow COURSE_CHAPTERS, tests/plugins/selection.py). A module added with the attribute is
run without any change here; one without it runs only under `make test`.

Which assignments and chapters: those named (``all`` for every one), or else those the change touches: every path
``git status`` shows (staged, unstaged, untracked) and every path changed since the branch left ``--base`` (by
default ``main``, when there is one) is mapped to its assignment (solutions/<a>/, exercises/<a>/) or chapter
(chapters/chNN_*.ipynb; chapters/course.py is every chapter's). What it chose, and why, is printed first; paths
that belong to neither (tools/, tests/, the book's configuration) are named, since only `make test` covers them.
"""

import argparse
import ast
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.plugins.selection import chapter_files, chapter_of
from tools.paths import ROOT, assignments

KINDS = ("assignment", "chapter")
TESTS = ROOT / "tests"


def declared(path):
    """The kinds a test module's ``MAKE_CHECK`` names (read from its source, without importing it); () if none."""
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "MAKE_CHECK" for t in node.targets):
            try:
                kinds = ast.literal_eval(node.value)
            except ValueError:
                kinds = None
            if not (isinstance(kinds, tuple) and kinds and all(k in KINDS for k in kinds)):
                raise ValueError(f"{path.name}: MAKE_CHECK should be a tuple of {KINDS}, "
                                 f"not {ast.unparse(node.value)}")
            return kinds
    return ()


def modules(kinds):
    """The test modules that declare any of ``kinds``, in name order."""
    return [p for p in sorted(TESTS.glob("test_*.py")) if set(declared(p)) & set(kinds)]


def git(*args):
    result = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return result.stdout if result.returncode == 0 else None


def changed_paths(base):
    """Every path ``git status`` shows, and every path changed between ``base`` and HEAD (where ``base`` exists)."""
    paths = set()
    status = git("status", "--porcelain=v1", "-z", "--untracked-files=all") or ""
    entries = iter(status.split("\0"))
    for entry in entries:
        if not entry:
            continue
        code, path = entry[:2], entry[3:]
        paths.add(path)
        if "R" in code or "C" in code:  # a rename or copy: the next entry is where it came from
            paths.add(next(entries, ""))
    fork = base and git("merge-base", base, "HEAD")
    if fork:
        paths |= set(filter(None, (git("diff", "--name-only", fork.strip(), "HEAD") or "").splitlines()))
    return sorted(p for p in paths if p)


def touched(paths):
    """({assignment: first path}, {chapter: first path}, paths of neither) for the changed ``paths``."""
    known, chapters = set(assignments()), {chapter_of(p): p for p in chapter_files()}
    found_assignments, found_chapters, others = {}, {}, []
    for path in paths:
        parts = Path(path).parts
        if len(parts) >= 2 and parts[0] in ("solutions", "exercises") and parts[1] in known:
            found_assignments.setdefault(parts[1], path)
        elif path == "chapters/course.py":
            for chapter in chapters:
                found_chapters.setdefault(chapter, path)
        elif len(parts) == 2 and parts[0] == "chapters" and chapter_of(parts[1]) in chapters:
            found_chapters.setdefault(chapter_of(parts[1]), path)
        else:
            others.append(path)
    return found_assignments, found_chapters, others


def named(value, every, what):
    """The names in a comma-separated ``value``: ``all`` is ``every``; an unknown name is an error naming those
    there are."""
    names = [v.strip() for v in value.split(",") if v.strip()]
    if names == ["all"]:
        return list(every)
    unknown = [n for n in names if n not in every]
    if unknown:
        raise SystemExit(f"make check: no {what} called {', '.join(unknown)}; expected one of: all, {', '.join(every)}")
    return names


def plan(args):
    """(assignments, chapters, lines saying why): from the names given, or from what the change touches."""
    every_chapter = sorted(chapter_of(p) for p in chapter_files())
    chapter_names = [chapter_of(c) or c for c in args.chapter.split(",")] if args.chapter else []
    if args.assignment or args.chapter:
        chosen_a = named(args.assignment, assignments(), "assignment") if args.assignment else []
        chosen_c = named(",".join(chapter_names), every_chapter, "chapter") if args.chapter else []
        return chosen_a, chosen_c, ["as named"]
    base = args.base if args.base is not None else ("main" if git("rev-parse", "--verify", "-q", "main") else "")
    found_a, found_c, others = touched(changed_paths(base))
    why = [f"what the change touches (git status, and the commits since {base or 'nothing: no base branch'}):"]
    why += [f"  {name}: {path}" for name, path in sorted({**found_a, **found_c}.items())]
    if others:
        shown = ", ".join(others[:8]) + (f" and {len(others) - 8} more" if len(others) > 8 else "")
        why.append(f"  not an assignment's or a chapter's, so only `make test` checks them: {shown}")
    return sorted(found_a), sorted(found_c), why


def command(chosen_a, chosen_c, pytest_args):
    """(environment, pytest's argv) for the chosen assignments and chapters."""
    kinds = (["assignment"] if chosen_a else []) + (["chapter"] if chosen_c else [])
    notebooks = [p for p in chapter_files() if chapter_of(p) in chosen_c]
    paths = [str(p.relative_to(ROOT)) for p in modules(kinds) + notebooks]
    env = {**os.environ, "COURSE_ASSIGNMENTS": ",".join(chosen_a), "COURSE_CHAPTERS": ",".join(chosen_c)}
    return env, [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *pytest_args, *paths]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="make check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignment", default="", help="assignments, comma-separated, or all")
    parser.add_argument("--chapter", default="", help="chapters (chNN or a notebook's name), comma-separated, or all")
    parser.add_argument("--base", default=None, help="the branch the change started from (default: main)")
    parser.add_argument("--dry-run", action="store_true", help="say what would run, and run nothing")
    args, pytest_args = parser.parse_known_args(argv)
    chosen_a, chosen_c, why = plan(args)
    for line in why:
        print(f"make check: {line}")
    if not chosen_a and not chosen_c:
        print("make check: nothing of an assignment or a chapter changed, so there is nothing to check here; name one "
              "(make check ASSIGNMENT=<name> or CHAPTER=chNN, or all) or run make test.")
        return 0
    if chosen_a and chosen_c:
        print("make check: (test_chapter_code_earns_nothing.py checks the chosen assignments only; a chapter's new code "
              "is checked against every assignment by make check CHAPTER=... alone)")
    env, pytest_argv = command(chosen_a, chosen_c, pytest_args)
    print(f"make check: assignments {', '.join(chosen_a) or 'none'}; chapters {', '.join(chosen_c) or 'none'}")
    print("make check: " + " ".join(re.sub(r"^.*/python[\d.]*$", "python", a) for a in pytest_argv), flush=True)
    if args.dry_run:
        return 0
    return subprocess.run(pytest_argv, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
