"""Every place the course reaches into nbgrader's, jupyter_client's (and the
libraries under them: nbclient, nbconvert, jupyter_server) internals, in one
list: an upgrade of any of them is a checklist, not a surprise.

Each entry of ``PATCHES`` names the upstream function the course replaces,
wraps, copies or overrides (a private method a subclass of the course
overrides), the version it was written against (requirements.txt pins it),
a fingerprint of that function's source as the installed version has it, and
the course's code that depends on it. tests/test_nbgrader_patches_match_upstream.py
fails, naming the function and what to re-check, when an upstream function no
longer has its fingerprint; when every point of ``recheck`` still holds, take the
new fingerprint it prints (and the new version) into the entry.

The patches that change an upstream object from outside (``nbgrader.api``'s
``get_alembic_version``, the metadata validator, the formgrader) are applied
here, by the functions below; the overrides that are methods of the course's
subclasses stay in their classes (tools/sandbox/kernel.py,
tools/feedback/hide_hidden_tests.py), listed here.

This module imports nothing from the rest of tools/ (it is at the bottom of the
layers, with tools/paths.py and tools/course_settings.py), and imports the
upstream packages only inside the functions that patch them.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import os
from dataclasses import dataclass

NBGRADER = "nbgrader 0.9.6"
JUPYTER_CLIENT = "jupyter_client 8.10.0"
NBCLIENT = "nbclient 0.11.0"
NBCONVERT = "nbconvert 7.17.2"
JUPYTER_SERVER = "jupyter_server 2.21.1"


@dataclass(frozen=True)
class Patch:
    upstream: str  # the upstream function, dotted: module.Class.function
    version: str  # the version whose source ``fingerprint`` is
    fingerprint: str  # upstream_fingerprint(upstream) for that version
    course: str  # the course's code that replaces, wraps, copies or overrides it
    how: str  # "replaced", "wrapped", "copied", "overridden" or "relied on"
    recheck: str  # what to re-check when upstream changed


PATCHES = (
    # -- nbgrader ----------------------------------------------------------------------------------------------
    Patch("nbgrader.api.get_alembic_version", NBGRADER, "40160af67d70e523",
          "tools.nbgrader_patches.alembic_head_in_process", "replaced",
          "it still returns the head of nbgrader's migrations, as `alembic heads` prints it first "
          "(tests/test_make_grade_matches_stock_nbgrader.py compares the two)"),
    Patch("nbgrader.dbutil._temp_alembic_ini", NBGRADER, "cfca4f6e22540be4",
          "tools.nbgrader_patches.alembic_head", "relied on",
          "it still yields the path of an alembic.ini whose script_location is nbgrader's migrations"),
    Patch("nbgrader.nbgraderformat.common.BaseMetadataValidator.validate_cell", NBGRADER, "e5f97f45a9aba510",
          "tools.nbgrader_patches.metadata_schema_checked_once", "replaced",
          "it still skips cells without nbgrader metadata, defers other schema versions to the stock code and "
          "validates with jsonschema.validate(metadata, self.schema): the replacement must give the same verdicts "
          "(tests/test_make_grade_matches_stock_nbgrader.py)"),
    Patch("nbgrader.api.Gradebook.__init__", NBGRADER, "c60c420276e8355e",
          "tools.nbgrader_patches.unsynced_gradebooks", "relied on",
          "the gradebook is still opened with SQLAlchemy's create_engine, so that the course's 'connect' event "
          "reaches its SQLite connections"),
    Patch("nbgrader.preprocessors.saveautogrades.SaveAutoGrades._add_score", NBGRADER, "ee891a8fe3657ce7",
          "tools.nbgrader_patches.needs_manual_grade", "copied",
          "its rule for needs_manual_grade (a manual score, or no automatic score) is still the one "
          "needs_manual_grade copies for make grade's merge of the private gradebooks (tools/grading/run.py)"),
    Patch("nbgrader.apps.api.NbGraderAPI.autograde", NBGRADER, "99d6b171e65d81b5",
          "tools.nbgrader_patches.replace_formgrader_autograde", "replaced",
          "the formgrader's Autograde button still calls NbGraderAPI.autograde(assignment_id, student_id) and "
          "shows its answer ({'success': ..., 'log': ...}); tools/hub/formgrader_guard.py answers in its place"),
    Patch("nbgrader.server_extensions.formgrader.base.BaseHandler.render", NBGRADER, "be17584c70850a3f",
          "tools.nbgrader_patches.add_to_manage_submissions_page", "wrapped",
          "it still renders manage_submissions.tpl to a whole page with </body>, whose script defines "
          "SubmissionUI.prototype.autograde_success and createLogModal (tools/hub/formgrader_guard.py's "
          "AUTOGRADE_ANSWER calls them)"),
    Patch("nbgrader.server_extensions.formgrader.handlers.SubmissionFilesHandler.get", NBGRADER, "ae2fe9699a634702",
          "tools.nbgrader_patches.sandbox_submission_files", "relied on",
          "it still serves a submission's files itself, with JupyterHandler's content_security_policy"),
    Patch("nbgrader.exchange.default.collect.ExchangeCollect._path_to_record", NBGRADER, "2de9d4819a8c2cbd",
          "tools.hub.guarded_collect.GuardedCollect._path_to_record", "overridden",
          "it still turns one inbound folder's name into {'username', 'filename', 'timestamp'} and raises on a "
          "name it cannot read"),
    Patch("nbgrader.exchange.default.collect.ExchangeCollect.init_src", NBGRADER, "24005a6e8bdfd47d",
          "tools.hub.guarded_collect.GuardedCollect.init_src", "wrapped",
          "it still calls _path_to_record for every folder of the inbound exchange and keeps each student's newest "
          "in src_records, which GuardedCollect chooses again; _sort_by_timestamp still sorts newest first"),
    Patch("nbgrader.exchange.default.exchange.Exchange.do_copy", NBGRADER, "0bb2e9133a773bbc",
          "tools.hub.guarded_collect.GuardedCollect.do_copy", "overridden",
          "collect's copy_files still copies each chosen submission with do_copy(src, dest) into a dest that does "
          "not exist yet"),
    # -- jupyter_server ----------------------------------------------------------------------------------------
    Patch("jupyter_server.base.handlers.AuthenticatedHandler.content_security_policy", JUPYTER_SERVER, "d949e7c6f055f2dd",
          "tools.nbgrader_patches.sandbox_submission_files", "wrapped",
          "it is still a property that returns the header's value as a string, to which '; sandbox' can be added"),
    # -- jupyter_client (the sandboxed kernel's overrides) ---------------------------------------------------
    Patch("jupyter_client.channels.AsyncZMQSocketChannel._recv", JUPYTER_CLIENT, "2709bff6f8bc2e8d",
          "tools.sandbox.kernel.GuardedIOPubChannel._recv", "overridden",
          "it still receives one message with the session's deserialisation; the override bounds what a kernel "
          "sends before it is parsed"),
    Patch("jupyter_client.connect.ConnectionFileMixin._make_url", JUPYTER_CLIENT, "d6a9ff6c5ba86a14",
          "tools.sandbox.kernel.PinnedSockets._make_url", "overridden",
          "it is still how a client and a manager build a channel's URL from the connection info"),
    Patch("jupyter_client.client.KernelClient._async_wait_for_ready", JUPYTER_CLIENT, "0d732ad86fea3115",
          "tools.sandbox.kernel.SandboxedKernelClient._async_wait_for_ready", "overridden",
          "wait_for_ready still calls it, with the same meaning of timeout and the same errors"),
    Patch("jupyter_client.manager.KernelManager._async_wait", JUPYTER_CLIENT, "574593dddfda8169",
          "tools.sandbox.kernel.SandboxedKernelManager._async_wait", "overridden",
          "it still polls is_alive every pollinterval until the kernel has ended"),
    Patch("jupyter_client.manager.KernelManager._async_pre_start_kernel", JUPYTER_CLIENT, "0ad304c9143e3bfd",
          "tools.sandbox.kernel.SandboxedKernelManager._async_pre_start_kernel", "overridden",
          "it still returns (cmd, kw) for the provisioner, after writing the connection file"),
    Patch("jupyter_client.manager.KernelManager._async_cleanup_resources", JUPYTER_CLIENT, "452cfe631cd012d2",
          "tools.sandbox.kernel.SandboxedKernelManager._async_cleanup_resources", "overridden",
          "it is still called once a kernel has stopped, to remove its files, and AsyncKernelManager's "
          "cleanup_resources is still this same coroutine (the course's manager binds the name to its override)"),
    Patch("jupyter_client.client.KernelClient.shell_channel", JUPYTER_CLIENT, "08c8d998b00b2d6a",
          "tools.sandbox.kernel.SandboxedKernelClient.dropped", "relied on",
          "the client still keeps its channels in _shell_channel and _iopub_channel, which dropped() reads"),
    # -- nbclient, nbconvert ------------------------------------------------------------------------------------
    Patch("nbclient.client.NotebookClient._update_display_id", NBCLIENT, "5a1528f0abd1ecd0",
          "tools.sandbox.kernel.SandboxedExecute._update_display_id", "overridden",
          "it still rewrites every output shown with that display id (_display_id_map) and nothing else"),
    Patch("nbconvert.exporters.templateexporter.TemplateExporter._create_environment", NBCONVERT, "b64cb98c0ee3eb82",
          "tools.feedback.hide_hidden_tests.FeedbackExporter._create_environment", "overridden",
          "it still returns the Jinja environment every template of the exporter is compiled in"),
    Patch("nbconvert.exporters.html.HTMLExporter.from_notebook_node", NBCONVERT, "3dccafff45cc4e74",
          "tools.feedback.hide_hidden_tests.FeedbackExporter.from_notebook_node", "copied",
          "FeedbackExporter.from_notebook_node is still this function without its last step (BeautifulSoup's "
          "alt texts and tab indices): copy any other change into it"),
)


# -- the fingerprints -----------------------------------------------------------------------------------------

def upstream_source(dotted: str) -> str:
    """The source of an upstream function (with its decorators) as the
    installed package's file has it, found by name in the file: the same
    whether or not the course has patched the live object."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
            break
        except ImportError:
            continue
    else:
        raise LookupError(f"{dotted}: no module of that name can be imported")
    path = module.__file__
    with open(path, encoding="utf-8") as file:
        text = file.read()
    body, node = ast.parse(text).body, None
    for depth, name in enumerate(parts[cut:], start=cut + 1):
        last = depth == len(parts)
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) if last else (ast.ClassDef,)
        found = [n for n in body if isinstance(n, kinds) and n.name == name]
        if not found:
            raise LookupError(f"{dotted}: {'.'.join(parts[:depth - 1])} ({path}) defines no {name!r}")
        node = found[0]  # (a property's getter comes before its setter)
        body = node.body
    lines = text.splitlines(keepends=True)
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return "".join(lines[first - 1:node.end_lineno])


def upstream_fingerprint(dotted: str) -> str:
    """16 hex digits of the SHA-256 of upstream_source(dotted)."""
    return hashlib.sha256(upstream_source(dotted).encode()).hexdigest()[:16]


def changed_upstream(patches=PATCHES) -> list:
    """(patch, the fingerprint found, or the error) for every patch whose upstream function changed or is gone."""
    changed = []
    for patch in patches:
        try:
            found = upstream_fingerprint(patch.upstream)
        except (LookupError, OSError, SyntaxError) as error:
            changed.append((patch, f"{type(error).__name__}: {error}"))
            continue
        if found != patch.fingerprint:
            changed.append((patch, found))
    return changed


# -- nbgrader's gradebook ---------------------------------------------------------------------------------------

def alembic_head_in_process():
    """Let nbgrader read its migrations' head revision in this process.

    nbgrader 0.9.6 stamps every new gradebook with that revision, which
    ``nbgrader.api.get_alembic_version`` gets by running ``alembic heads`` as a
    subprocess: a fresh Python that imports nbgrader again, about 3 s for each
    new gradebook (every throw-away course, every ``make release``). alembic's
    own ScriptDirectory reads the same revision from the same migration scripts
    in a fraction of a second; tests/test_make_grade_matches_stock_nbgrader.py
    checks that both give the same."""
    import nbgrader.api

    nbgrader.api.get_alembic_version = alembic_head


def alembic_head() -> str:
    """The head revision of nbgrader's gradebook migrations (what ``alembic heads`` prints first)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:
        heads = ScriptDirectory.from_config(Config(ini)).get_heads()
    if len(heads) != 1:
        raise RuntimeError(f"nbgrader's gradebook migrations have {len(heads)} heads, expected one: {heads}")
    return heads[0]


def metadata_schema_checked_once():
    """Let nbgrader check its cell-metadata schema once per process, not once per cell.

    nbgrader 0.9.6 validates each cell's ``nbgrader`` metadata with
    ``jsonschema.validate(metadata, schema)``, which first checks the schema
    itself against the JSON Schema meta-schema: 1.5 ms a cell, about 45 cells
    a notebook, several times for every submission graded. This gives the same
    verdict with the same error (the best match, as ``jsonschema.validate``
    raises) from one validator per schema;
    tests/test_make_grade_matches_stock_nbgrader.py compares the two."""
    import jsonschema
    from nbgrader.nbgraderformat import common

    if getattr(common.BaseMetadataValidator.validate_cell, "checks_schema_once", False):
        return
    stock = common.BaseMetadataValidator.validate_cell
    validators = {}

    def validate(metadata, schema, version):
        # Every validator of a schema version reads the same file; the comparison keeps that true.
        if version not in validators or validators[version][0] != schema:
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            validators[version] = (schema, cls(schema))
        error = jsonschema.exceptions.best_match(validators[version][1].iter_errors(metadata))
        if error is not None:
            raise error

    def validate_cell(self, cell):
        if "nbgrader" not in cell.metadata:
            return None
        if cell.metadata["nbgrader"].get("schema_version", 0) != self.schema_version:
            return stock(self, cell)  # (which raises: the schema is too old or too new)
        return validate(cell.metadata["nbgrader"], self.schema, self.schema_version)

    validate_cell.checks_schema_once = True
    validate_cell.stock = stock
    common.BaseMetadataValidator.validate_cell = validate_cell


def unsynced_gradebooks(folder):
    """SQLite databases under ``folder`` are written without waiting for the
    disk (``PRAGMA synchronous=OFF``), in this process. Only for throw-away
    gradebooks (a private copy in a grading worker, a temporary course): a crash
    of the machine could lose their last writes, which are made again. nbgrader
    commits every cell's grade on its own, and each commit waits for the disk
    several times (3 to 20 ms each here)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    prefix = os.path.join(os.path.realpath(folder), "")

    @event.listens_for(Engine, "connect")
    def _no_fsync(dbapi_connection, record):
        try:
            files = [row[2] for row in dbapi_connection.execute("PRAGMA database_list").fetchall()]
        except Exception:  # noqa: BLE001 - not SQLite: nothing to do
            return
        if files and files[0] and os.path.realpath(files[0]).startswith(prefix):
            dbapi_connection.execute("PRAGMA synchronous=OFF")


def needs_manual_grade(manual_score, auto_score) -> bool:
    """nbgrader's rule (SaveAutoGrades._add_score): a grade needs a look by
    hand if it already has a manual score or has no automatic one."""
    return manual_score is not None or auto_score is None


# -- the formgrader ---------------------------------------------------------------------------------------------

def replace_formgrader_autograde(answer):
    """The formgrader's Autograde button (``NbGraderAPI.autograde``) calls ``answer`` instead."""
    from nbgrader.apps.api import NbGraderAPI

    NbGraderAPI.autograde = answer


def add_to_manage_submissions_page(html: str):
    """nbgrader's BaseHandler.render, adding ``html`` before ``</body>`` of the
    Manage Submissions page; once per process (nbgrader reads its
    configuration more than once). False if nbgrader has no formgrader here
    (no jupyter_server)."""
    try:
        from nbgrader.server_extensions.formgrader.base import BaseHandler
    except ImportError:
        return False
    if getattr(BaseHandler.render, "course_guard", False):
        return True
    render = BaseHandler.render

    def rendered(self, name, **ns):
        page = render(self, name, **ns)
        if name != "manage_submissions.tpl":
            return page
        end = page.rfind("</body>")
        if end < 0:
            raise ValueError("nbgrader's manage_submissions.tpl has no </body>: the Autograde answer has no place")
        return page[:end] + html + page[end:]

    rendered.course_guard = True
    BaseHandler.render = rendered
    return True


def sandboxed_policy(self):
    """The Content-Security-Policy of a submission's files: Jupyter Server's, plus ``sandbox``."""
    from jupyter_server.base.handlers import JupyterHandler

    return JupyterHandler.content_security_policy.fget(self) + "; sandbox"


def sandbox_submission_files():
    """The formgrader serves a submission's files (SubmissionFilesHandler) with
    ``Content-Security-Policy: sandbox``. False if nbgrader has no formgrader here."""
    try:
        from nbgrader.server_extensions.formgrader.handlers import SubmissionFilesHandler
    except ImportError:
        return False
    SubmissionFilesHandler.content_security_policy = property(sandboxed_policy)
    return True
