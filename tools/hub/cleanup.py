"""``make hub-clean`` (``python -m tools.hub --clean``): with the hub stopped,
the term's data archived (``back_up``), then removed (``clean``)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from ..paths import ROOT
from .users import HUB, TERM, HubError, is_root, remove_users

#: Where `make hub-clean` puts its archive of the term (outside _build and hub-term).
BACKUPS = ROOT / "hub-backups"
#: A file in a home larger than this is left out of the archive (and named): a notebook's output could be huge.
BACKUP_FILE_BYTES = 256 * 1024**2


def hub_running():
    """The process id of a JupyterHub that runs from HUB, or None."""
    try:
        pid = int((HUB / "jupyterhub.pid").read_text().strip())
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"jupyterhub" in command else None


def back_up(target_folder=None):
    """Archive the term's data (TERM: every home of the hub, with the
    instructor's course folder, and the exchange) into
    ``BACKUPS/term-<UTC time>.tar.gz``, readable by its owner only; return its
    path. Links are archived as links, never followed; what is neither a
    folder, a regular file nor a link, and files over BACKUP_FILE_BYTES, are
    left out and reported. The archive is read back entirely before this returns."""
    import tarfile

    target_folder = Path(target_folder or BACKUPS)
    target_folder.mkdir(parents=True, exist_ok=True)
    os.chmod(target_folder, 0o700)
    target = target_folder / time.strftime("term-%Y%m%d-%H%M%S.tar.gz", time.gmtime())
    left_out = []

    def keep(info):
        if info.isdir() or info.issym() or (info.isfile() and info.size <= BACKUP_FILE_BYTES):
            return info
        left_out.append(f"{info.name} ({'over 256 MiB' if info.isfile() else 'not a file'})")
        return None

    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as archive:
        folders = [TERM]  # without recursion: a home may hold thousands of nested folders
        while folders:
            folder = folders.pop()
            archive.add(folder, arcname=str(folder.relative_to(TERM.parent)), recursive=False, filter=keep)
            if folder.is_dir() and not folder.is_symlink():
                folders.extend(sorted(folder.iterdir(), reverse=True))
    with tarfile.open(target) as archive:  # it reads back, whole
        members = archive.getmembers()
        for member in members:
            if member.isfile():
                with archive.extractfile(member) as data:
                    while data.read(1 << 20):
                        pass
    return target, len(members), left_out


def clean(out=sys.stdout):
    """``make hub-clean``: with the hub stopped, archive the term's data
    (back_up), then remove it (TERM), the users the hub created if any are
    left, and _build/hub. Return the archive's path."""
    pid = hub_running()
    if pid is not None:
        raise HubError(f"the hub is running (process {pid}): stop it (Ctrl-C in its terminal) before cleaning up")
    if is_root():
        remove_users()
    if not TERM.exists():
        print(f"no term's data in {TERM}: nothing to back up", file=out, flush=True)
        archive = None
    else:
        archive, count, left_out = back_up()
        print(f"the term's data ({TERM}: homes, course folder, gradebook, submissions, feedback, exchange) "
              f"is archived in {archive} ({count} entries; to look inside: tar -tzf {archive})", file=out, flush=True)
        for name in left_out:
            print(f"  left out of the archive: {name}", file=out, flush=True)
        from ..sandbox.bubblewrap import remove_tree

        remove_tree(TERM)
    shutil.rmtree(HUB, ignore_errors=True)
    print(f"removed {TERM} and {HUB}", file=out, flush=True)
    return archive
