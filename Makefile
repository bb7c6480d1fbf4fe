# The course's commands. Each one sets up .venv from requirements.txt first
# (only when requirements.txt changed since the last install).
#
#   make book     build the website into _build/html (warnings are errors)
#   make test     run every test: chapters (nbval), book, release, grading
#   make check    after editing an assignment or a chapter: the tests it
#                 needs (ASSIGNMENT=... grades its solution, wrong implementations
#                 and attacks and checks its release; CHAPTER=ch07 re-runs the
#                 chapter, on other CPUs and as in Colab, and checks its page;
#                 `all` for every one; without either, those the change touches
#                 since BASE=main, as git status and git diff show them)
#   make release  regenerate exercises/ (student notebooks) from solutions/
#   make grade    autograde submitted/, write feedback/ and grades.csv
#                 (ASSIGNMENT=..., COURSE=folder, JOBS=workers; SCHEDULER=tcp://host:8786
#                 grades on that Dask cluster: instructor/cluster.md; a submission
#                 unchanged since it was graded is skipped, FORCE=1 grades all)
#   make report   after make grade: what the class understood, per task, as
#                 HTML pages and CSV in reports/ (instructor/report.md;
#                 ASSIGNMENT=..., COURSE=folder)
#   make screenshots  every page at laptop and phone width, light and dark,
#                 into _build/screenshots/ (builds the book first if needed)
#   make hub      a local JupyterHub with the course, to try it as students do
#                 (instructor/hub.md; PORT=8000, IP=127.0.0.1)
#   make hub-clean  archive the hub's term (hub-term/) into hub-backups/, then
#                 remove it: homes, course folder, gradebook, exchange
#   make chapters re-execute the chapter notebooks in place (no timestamps)
#   make clean    remove build output (keeps .venv)
#
# Set-up variables (README): PYTHON=python3.12 creates .venv with another
# Python (3.11 to 3.13); TORCH_INDEX=https://download.pytorch.org/whl/cpu takes
# torch's CPU build.

PYTHON ?= python3
VENV   := .venv
BIN    := $(abspath $(VENV))/bin
STAMP  := $(VENV)/.requirements-installed

# nbgrader starts `alembic` as a subprocess, and the notebooks' kernel must be
# the venv's Python: every recipe runs with the venv first on PATH.
export PATH := $(BIN):$(PATH)
# Keep Jupyter's own files inside the project, not in the user's home.
export JUPYTER_PLATFORM_DIRS := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: venv book test check release grade report hub hub-clean chapters screenshots clean

venv: $(STAMP)

# The Python versions the pinned requirements install and run on (README,
# "Two commands"). The check is written so that any Python, even 2.7, can run it.
PYTHON_CHECK = $(1) -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' \
	2>/dev/null || { v=$$($(1) -c 'import sys; print("Python " + sys.version.split()[0])' \
	2>/dev/null) || v="not found"; echo "make: the course needs Python 3.11, 3.12 or 3.13, \
	not $(1) ($$v): $(2)" >&2; exit 1; }

# TORCH_INDEX=<url>: install torch alone from that package index first (README,
# "Getting a CPU-only PyTorch"); requirements.txt then finds it installed.
TORCH_PIN = $$(grep -o '^torch==[^ ]*' requirements.txt)

$(BIN)/python:
	@$(call PYTHON_CHECK,$(PYTHON),choose another with make PYTHON=/path/to/python3.12)
	$(PYTHON) -m venv $(VENV)

$(STAMP): requirements.txt | $(BIN)/python
	@$(call PYTHON_CHECK,$(BIN)/python,remove $(VENV) and run make again)
	$(if $(TORCH_INDEX),$(BIN)/python -m pip install --disable-pip-version-check \
	  --no-deps --index-url $(TORCH_INDEX) $(TORCH_PIN))
	$(BIN)/python -m pip install --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --disable-pip-version-check --no-deps --no-build-isolation --editable .
	touch $@

book: $(STAMP)
	$(BIN)/python -m tools.site.book

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# What a change to assignments or chapters needs (CONTRIBUTING.md, "Checklists"):
# the test modules that declare MAKE_CHECK, for the assignments and chapters
# named, or else for those the change touches (tests/make_check.py says which);
# the grading run holds only the chosen assignments' submissions.
check: $(STAMP)
	$(BIN)/python -m tests.make_check $(if $(ASSIGNMENT),--assignment $(ASSIGNMENT)) \
	  $(if $(CHAPTER),--chapter $(CHAPTER)) $(if $(BASE),--base $(BASE)) $(PYTEST_ARGS)

release: $(STAMP)
	$(BIN)/python -m tools.assignments.release $(ASSIGNMENT)

grade: $(STAMP)
	$(BIN)/python -m tools.grading --course "$(or $(COURSE),$(CURDIR))" $(if $(JOBS),--jobs $(JOBS)) $(if $(SCHEDULER),--scheduler $(SCHEDULER)) $(if $(FORCE),--all) $(ASSIGNMENT)

report: $(STAMP)
	$(BIN)/python -m tools.report --course "$(or $(COURSE),$(CURDIR))" $(ASSIGNMENT)

hub: $(STAMP)
	$(BIN)/python -m tools.hub $(if $(PORT),--port $(PORT)) $(if $(IP),--ip $(IP))

hub-clean: $(STAMP)
	$(BIN)/python -m tools.hub --clean

chapters: $(STAMP)
	for nb in chapters/*.ipynb; do \
	  $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	    --ExecutePreprocessor.record_timing=False "$$nb" || exit 1; \
	done

screenshots: $(STAMP)
	test -d _build/html || $(MAKE) book
	$(BIN)/python -m tools.site.screenshots $(PAGES)

clean:
	rm -rf _build .pytest_cache
