"""`nbgrader collect` that takes only what a student really handed in.

The exchange's ``inbound/`` folder is writable by every student, by design:
``nbgrader submit`` puts each submission there as a folder
``<student>+<assignment>+<time>+<random>``. Anyone can also make a folder there
by hand. Stock nbgrader 0.9.6 (``ExchangeCollect``) copies the newest folder of
each name with ``shutil.copytree``, which follows symbolic links: a student's
folder whose notebook is a link to ``solutions/<a>/<a>.ipynb`` (or to another
student's notebook in ``submitted/``) is collected as that file's copy. A folder
named after another student is collected under that student's name, with only a
warning in the log.

:class:`GuardedCollect`, which nbgrader_config.py names as the exchange's
collect (``ExchangeFactory.collect``), collects a folder only if it is what
``nbgrader submit`` makes:

- the folder is a real folder (not a link), owned by the student it is named
  after (with ``ExchangeCollect.check_owner``, nbgrader's default; a hub on
  which every user is the same Unix user turns it off);
- everything in it is a folder or a regular file, none a symbolic link, a
  FIFO, a socket or a device; every file has one name (no hard link to
  someone else's file) and, with check_owner, belongs to that student;
- at most MAX_ENTRIES entries, MAX_DEPTH folders deep, and no more bytes than
  nbgrader's ``CourseDirectory.max_dir_size``;
- its name is one nbgrader can read (``<student>+<assignment>+<time>+<random>``):
  stock nbgrader stops the whole collect, for every student, at a name whose
  time it cannot parse.

Any other folder is left out, with a warning that says why, and the student's
newest folder that passes is collected instead (if any): a folder one student
plants under another's name costs the other nothing. The copy then opens every
file without following links and checks again what it opened (type, link
count, owner), so a swap between the check and the copy is refused too.

What this does not change: the time in the folder's name and ``timestamp.txt``
are the student's word, as in stock nbgrader (instructor/protections.md).
"""

from __future__ import annotations

import fnmatch
import os
import pwd
import shutil
import stat
import tempfile
from datetime import datetime

from nbgrader.exchange.default.collect import ExchangeCollect

#: The most entries (files and folders) a submission folder may hold, and how deep it may go.
MAX_ENTRIES = 1000
MAX_DEPTH = 16
_COPY_CHUNK = 1 << 20


class Refused(Exception):
    """A submission folder that is not what ``nbgrader submit`` makes; the message says why."""


def _kind(mode):
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "neither a file nor a folder"


def _user(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


class _Walk:
    """One submission folder, read without following any link: check it (``check``) or copy it (``copy``)."""

    def __init__(self, owner_uid, exclude, include, max_file_bytes, max_total_bytes):
        self.owner_uid = owner_uid  # None: any owner
        self.exclude, self.include = list(exclude or []), list(include or [])
        self.max_file_bytes, self.max_total_bytes = max_file_bytes, max_total_bytes
        self.entries = self.total = 0
        self.skipped = []

    def _owned(self, info, what):
        if self.owner_uid is not None and info.st_uid != self.owner_uid:
            raise Refused(f"{what} belongs to {_user(info.st_uid)}, not to {_user(self.owner_uid)}")

    def open_top(self, path):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as error:
            info = os.lstat(path)
            if not stat.S_ISDIR(info.st_mode):
                raise Refused(f"it is {_kind(info.st_mode)}, not a folder") from None
            raise Refused(f"it cannot be opened ({error.strerror})") from None
        self._owned(os.fstat(fd), "the folder")
        return fd

    def walk(self, fd, where, depth, dest_fd=None):
        """Check (and, with ``dest_fd``, copy) the folder open as ``fd``."""
        if depth > MAX_DEPTH:
            raise Refused(f"{where or 'it'} is more than {MAX_DEPTH} folders deep")
        with os.scandir(fd) as listing:  # read as it goes: a folder of a million names stops at MAX_ENTRIES
            names = []
            for entry in listing:
                self.entries += 1
                if self.entries > MAX_ENTRIES:
                    raise Refused(f"it holds more than {MAX_ENTRIES} files and folders")
                names.append(entry.name)
        for name in sorted(names):
            what = os.path.join(where, name)
            if any(fnmatch.fnmatch(name, glob) for glob in self.exclude):
                continue  # nbgrader's CourseDirectory.ignore: never copied, whatever it is
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                self._owned(info, what)
                child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                try:
                    self._owned(os.fstat(child), what)
                    child_dest = None
                    if dest_fd is not None:
                        os.mkdir(name, 0o755, dir_fd=dest_fd)
                        child_dest = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dest_fd)
                    try:
                        self.walk(child, what, depth + 1, child_dest)
                    finally:
                        if child_dest is not None:
                            os.close(child_dest)
                finally:
                    os.close(child)
            elif stat.S_ISREG(info.st_mode):
                self._file(fd, name, info, what, dest_fd)
            else:
                raise Refused(f"{what} is {_kind(info.st_mode)}")

    def _checked(self, info, what):
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{what} is {_kind(info.st_mode)}")
        if info.st_nlink != 1:
            raise Refused(f"{what} is a hard link ({info.st_nlink} names for one file)")
        self._owned(info, what)

    def _file(self, fd, name, info, what, dest_fd):
        self._checked(info, what)
        if self.include and not any(fnmatch.fnmatch(name, glob) for glob in self.include):
            return  # not collected (CourseDirectory.include), as nbgrader does
        if self.max_file_bytes and info.st_size > self.max_file_bytes:
            self.skipped.append(f"{what} ({info.st_size} bytes, over CourseDirectory.max_file_size)")
            return
        self.total += info.st_size
        if self.max_total_bytes and self.total > self.max_total_bytes:
            raise Refused(f"its files hold more than {self.max_total_bytes} bytes (CourseDirectory.max_dir_size)")
        if dest_fd is None:
            return
        source = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        try:
            opened = os.fstat(source)
            self._checked(opened, what)  # what was opened, not what was looked at before
            if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                raise Refused(f"{what} changed while it was collected")
            target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dest_fd)
            try:
                left = opened.st_size
                while left > 0:
                    chunk = os.read(source, min(_COPY_CHUNK, left))
                    if not chunk:
                        break
                    os.write(target, chunk)
                    left -= len(chunk)
                os.utime(target, ns=(opened.st_atime_ns, opened.st_mtime_ns))
            finally:
                os.close(target)
        finally:
            os.close(source)


class GuardedCollect(ExchangeCollect):
    """nbgrader's ExchangeCollect that collects only real submission folders (this module's docstring)."""

    def _walker(self, username):
        owner_uid = None
        if self.check_owner:
            try:
                owner_uid = pwd.getpwnam(username).pw_uid
            except KeyError:
                owner_uid = -1  # no such user: no folder can be theirs
        max_file = 1000 * self.coursedir.max_file_size if self.coursedir.max_file_size else None
        max_dir = 1000 * self.coursedir.max_dir_size if self.coursedir.max_dir_size else None
        return _Walk(owner_uid, self.coursedir.ignore, self.coursedir.include, max_file, max_dir)

    def refusal(self, path, username):
        """Why the folder at ``path`` is not collected for ``username``, or None."""
        if self.check_owner:
            try:
                pwd.getpwnam(username)
            except KeyError:
                return (f"no Unix user {username} exists to own it (on a hub whose users are not Unix users of "
                        "this machine, set c.ExchangeCollect.check_owner = False)")
        walker = self._walker(username)
        try:
            fd = walker.open_top(path)
            try:
                walker.walk(fd, "", 0)
            finally:
                os.close(fd)
        except Refused as reason:
            return str(reason)
        except OSError as error:
            return f"it cannot be read ({error.strerror})"
        return None

    def _path_to_record(self, path):
        try:
            record = super()._path_to_record(path)
        except Exception as error:  # stock nbgrader stops the whole collect here, for every student
            name = os.path.basename(path)
            self.log.warning("Not collecting %s: its name is not <student>+<assignment>+<time>+<random>, as "
                             "nbgrader submit makes it (%s)", path, error)
            record = {"username": name.split("+", 1)[0], "filename": name, "timestamp": datetime.min,
                      "refused": True}
            self._records.append(record)
            return record
        reason = self.refusal(path, record["username"])
        if reason:
            self.log.warning("Not collecting %s for %s: %s. (Only what nbgrader submit makes is collected: "
                             "tools/hub/guarded_collect.py.)", path, record["username"], reason)
            record["refused"] = True
        self._records.append(record)
        return record

    def init_src(self):
        self._records = []
        super().init_src()
        # nbgrader picked each student's newest folder among all of them: pick again among those that passed.
        by_user = {}
        for record in self._sort_by_timestamp([r for r in self._records if not r.get("refused")]):
            chosen = by_user.get(record["username"])
            if chosen is None:
                by_user[record["username"]] = record
            elif (self.before_duedate and self.duedate is not None and chosen["timestamp"] > self.duedate
                  and record["timestamp"] <= self.duedate):
                by_user[record["username"]] = record  # the newest before the due date, as nbgrader's option says
        self.src_records = list(by_user.values())

    def do_copy(self, src, dest, log=None):
        """Copy the submission folder ``src`` to ``dest`` without following links (checked again while copying)."""
        username = os.path.basename(src).rsplit("+", 3)[0]
        walker = self._walker(username)
        parent = os.path.dirname(dest)
        os.makedirs(parent, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".collecting-", dir=parent)
        try:
            fd = walker.open_top(src)
            dest_fd = os.open(staging, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            try:
                walker.walk(fd, "", 0, dest_fd)
            finally:
                os.close(fd)
                os.close(dest_fd)
            os.chmod(staging, 0o755)
            os.rename(staging, dest)
        except (Refused, OSError) as reason:  # changed, or gone, since the check: this student only
            shutil.rmtree(staging, ignore_errors=True)
            self.log.error("Not collecting %s for %s: %s (it changed after it was checked; "
                           "tools/hub/guarded_collect.py)", src, username, reason)
            return
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        for skipped in walker.skipped:
            self.log.warning("Ignoring file too large: %s in %s (see config option CourseDirectory.max_file_size)",
                             skipped, src)
