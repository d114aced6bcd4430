"""Watch mode: a journal of the paths that changed since the last recorded scan.

A long-lived process that snapshots often need not walk the whole workspace
each time. A :class:`ChangeJournal` keeps a watchdog observer on the workspace
and notes which folders must be listed again and which paths must be walked
again; the walker re-examines only those and reuses everything else from the
previous scan (see ``walker.scan(..., incremental=)``).

The journal is trusted only when it is provably complete. Before every use a
*cookie* (``.snapshotter-tmp-<16 random hex>``, made with ``O_EXCL`` so it is
never a file that was there) is created in the workspace root and the caller
waits until the watcher reports it: events are delivered in order, so every
change made before the cookie is then in the journal. Only the cookies this
journal made are passed over, and removed (while still the file it made): a
file of that name the user made is theirs, and changes to it are changes. The
journal answers "walk everything" instead whenever it may have missed something:

- the watcher is not running yet, has died or was restarted;
- the kernel's event queue overflowed (watchdog logs this; the log record is
  how we learn of it, see :class:`_OverflowSpotter`);
- the cookie could not be written (read-only workspace) or never arrived;
- more paths changed than it is worth tracking one by one.

A folder watchdog could not watch (past the inotify watch limit) would hide
changes for good, so on Linux every folder is checked against the kernel's
list of watches when watching starts, and each new folder when it appears;
one missing turns watch mode off, with a warning.

Epochs make the journal safe against scans that are never recorded (status,
dry runs, failures): :meth:`ChangeJournal.take` returns every change since the
last :meth:`ChangeJournal.ack`, and only a recorded scan acknowledges its epoch.

watchdog is a dependency on Python 3.11 and newer (its 7.1 needs 3.11); on 3.10
watch mode is off and every call walks.
"""

from __future__ import annotations

import collections
import importlib.util
import logging
import os
import re
import secrets
import stat
import sys
import threading
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, cast

from snapshotter.engine.fsutil import unlink_if_same

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

log = logging.getLogger("snapshotter")

MAX_TRACKED_PATHS = 20_000
"""Past this many changed paths a full walk is cheaper than following them."""
COOKIE_TIMEOUT = 2.0
"""Seconds to wait for the watcher to report a cookie before walking everything."""
COOKIE_PREFIX = ".snapshotter-tmp-"
_SPENT_COOKIES = 64  # cookies removed lately, whose events may still come: passed over too


MIN_WATCHDOG = (7, 1)
"""The first watchdog that reports lost events (in its log) and folder mode changes;
it needs Python 3.11."""


def watch_available() -> bool:
    """Whether watch mode can run here: watchdog 7.1 or newer is installed
    (a dependency on Python 3.11+)."""
    if importlib.util.find_spec("watchdog") is None:
        return False
    from importlib import metadata  # here: it loads email, zipfile and more, and a walk without a watcher needs none

    try:
        found = metadata.version("watchdog")
    except metadata.PackageNotFoundError:
        return False
    parts = [int(p) for p in re.findall(r"\d+", found)[:2]]
    return tuple(parts) >= MIN_WATCHDOG


@dataclass(frozen=True)
class Changes:
    """What the walker must look at again; everything else is as last recorded."""

    listed: frozenset[str]
    """Folders (workspace-relative, "" for the root) whose entries must be listed again."""
    deep: frozenset[str]
    """Paths created, deleted or moved: if a folder, its whole subtree is walked again."""

    def __bool__(self) -> bool:
        return bool(self.listed or self.deep)

    def on_the_way(self) -> frozenset[str]:
        """Every folder that holds a changed path, at any depth, and the listed folders."""
        out = set(self.listed)
        for path in self.listed | self.deep:
            while path:
                path = path.rpartition("/")[0]
                if path in out:
                    break
                out.add(path)
        return frozenset(out)


@dataclass
class _Epoch:
    number: int
    listed: set[str]
    deep: set[str]
    complete: bool = True
    fresh: set[str] = field(default_factory=set)
    """Folders created, moved in or made readable: their watches must be checked."""


class ChangeJournal:
    """The changes in one workspace since the last recorded scan, from a watchdog observer."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._prefix = root.rstrip(os.sep) + os.sep
        self._lock = threading.Lock()
        self._cookie_seen = threading.Condition(self._lock)
        self._cookies: set[str] = set()
        """The cookies this journal made and is waiting for."""
        self._spent: collections.deque[str] = collections.deque(maxlen=_SPENT_COOKIES)
        self._seen_cookies: set[str] = set()
        self._closed: list[_Epoch] = []
        self._open = _Epoch(1, set(), set(), complete=False)  # nothing is known before the first walk
        self._unverified: set[str] = set()
        """New folders whose watches are not checked yet (see :meth:`_watched_everywhere`)."""
        self._observer: Any = None
        self._stopped = False

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> bool:
        """Start watching; False (logged) if the watcher cannot run here."""
        if not watch_available():
            log.warning(
                "snapshotter: watch=True needs watchdog 7.1 or newer, which needs Python 3.11+ "
                "(installed with snapshotter there); every call walks the folder instead"
            )
            return False
        try:
            from watchdog import events
            from watchdog.observers import Observer
        except ImportError:
            log.warning("snapshotter: watch=True needs watchdog 7.1 or newer; every call walks the folder instead")
            return False
        _OverflowSpotter.install(self)
        # watchdog warns when a folder is re-registered as it is created and moved
        # quickly; that is its own bookkeeping, not something a user can act on.
        warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"watchdog\.observers\.inotify")
        observer = Observer()
        try:
            # Only what changes content, names or modes. Reads (opens, accesses,
            # closes) are never asked for, so the walker's own reading cannot
            # flood the queue; "closed after writing" repeats a modification
            # already reported; a folder's "modified" repeats its entries' own
            # events. Every event costs watchdog's thread time under the GIL.
            wanted = [
                events.FileCreatedEvent,
                events.DirCreatedEvent,
                events.FileDeletedEvent,
                events.DirDeletedEvent,
                events.FileModifiedEvent,
                events.FileMovedEvent,
                events.DirMovedEvent,
                events.FileAttribEvent,
                events.DirAttribEvent,
            ]
            observer.schedule(cast(Any, _Handler(self)), self.root, recursive=True, event_filter=wanted)
            observer.start()
        except Exception as exc:  # e.g. the inotify watch limit: watching is an optimisation, never required
            log.warning("snapshotter: cannot watch %s (%s); every snapshot walks the whole folder", self.root, exc)
            _stop_observer(observer)
            return False
        with self._lock:
            self._observer = observer
            self._open.complete = False
        if not self._watched_everywhere():
            self._give_up("cannot watch every folder (raise fs.inotify.max_user_watches?)")
            return False
        return True

    def stop(self) -> None:
        with self._lock:
            observer, self._observer = self._observer, None
            self._stopped = True
        if observer is not None:
            _stop_observer(observer)

    @property
    def running(self) -> bool:
        observer = self._observer
        return observer is not None and observer.is_alive() and all(e.is_alive() for e in list(observer.emitters))

    # -- what the engine calls ---------------------------------------------------------

    def take(self) -> tuple[int, Changes | None]:
        """Close the current epoch; return its number and every change not yet
        acknowledged, or None if they may be incomplete (walk everything)."""
        arrived = self._cookie_arrives()
        with self._lock:
            epoch = self._open
            if not arrived or not self.running:
                epoch.complete = False
            self._closed.append(epoch)
            self._open = _Epoch(epoch.number + 1, set(), set())
            if self._stopped:
                self._open.complete = False
            for closed in self._closed:  # kept apart: acknowledging an epoch must not drop them
                self._unverified |= closed.fresh
                closed.fresh = set()
            unverified = sorted(self._unverified)
            complete = all(e.complete for e in self._closed)
            listed = set().union(*(e.listed for e in self._closed))
            deep = set().union(*(e.deep for e in self._closed))
        # Checked even before a full walk: the next snapshots will rely on these watches.
        # Without the cookie, watchdog may not have added them yet: check next time.
        if unverified and arrived:
            if not self._watched_everywhere(unverified):
                self._give_up("a new folder could not be watched (raise fs.inotify.max_user_watches?)")
                return epoch.number, None
            with self._lock:
                self._unverified.difference_update(unverified)
        if not complete or (unverified and not arrived) or len(listed) + len(deep) > MAX_TRACKED_PATHS:
            return epoch.number, None
        return epoch.number, Changes(frozenset(listed), frozenset(deep))

    def ack(self, number: int) -> None:
        """A scan that took epoch ``number`` was recorded: forget what it covered."""
        with self._lock:
            self._closed = [e for e in self._closed if e.number > number]

    def invalidate(self) -> None:
        """Something may have been missed: the next scan walks everything."""
        with self._lock:
            self._open.complete = False
            for epoch in self._closed:
                epoch.complete = False
            self._cookie_seen.notify_all()

    # -- what the watcher thread calls ------------------------------------------------

    def note(self, event_type: str, path: str, is_directory: bool) -> None:
        rel = self._relative(path)
        if rel is None:
            return
        if rel == "":
            if event_type in ("deleted", "moved"):
                self.invalidate()  # the workspace itself went away
            # "modified" on the root only says its entries changed, and every such
            # change also arrives as its own event; the cookies cause one each time.
            return
        if rel.startswith(COOKIE_PREFIX) and self._saw_cookie(rel):  # one of ours: never recorded
            return
        if any(part.lower() == ".git" for part in rel.split("/")):
            return  # never recorded; the root's .git/info/exclude is re-read by every scan
        parent = rel.rpartition("/")[0]
        with self._lock:
            epoch = self._open
            if event_type == "modified" and is_directory:
                epoch.listed.add(rel)
            elif event_type in ("modified", "closed") or (event_type == "attrib" and not is_directory):
                epoch.listed.add(parent)
            else:  # created, deleted, moved, a folder's attributes (readability), anything new
                epoch.listed.add(parent)
                epoch.deep.add(rel)
                if is_directory and event_type != "deleted":
                    epoch.fresh.add(rel)

    def _relative(self, path: str) -> str | None:
        if path.rstrip(os.sep) == self.root.rstrip(os.sep):
            return ""
        if not path.startswith(self._prefix):
            return None
        rel = path[len(self._prefix) :]
        return rel.replace(os.sep, "/") if os.sep != "/" else rel

    # -- cookies ------------------------------------------------------------------------

    def _saw_cookie(self, name: str) -> bool:
        """Note an event for ``name`` (in the root); False if it is no cookie of this journal."""
        with self._lock:
            if name in self._cookies:
                self._seen_cookies.add(name)
                self._cookie_seen.notify_all()
                return True
            return name in self._spent

    def _cookie_arrives(self) -> bool:
        """Write a cookie into the workspace and wait until the watcher reports it;
        False if it cannot be written or is late."""
        if not self.running:
            return False
        name = COOKIE_PREFIX + secrets.token_hex(8)
        path = os.path.join(self.root, name)
        with self._lock:
            self._cookies.add(name)
        try:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
                made = os.fstat(fd)
                os.close(fd)
            except OSError:
                return False
            try:
                with self._lock:
                    # also stop waiting once the journal is known to be incomplete anyway
                    self._cookie_seen.wait_for(
                        lambda: name in self._seen_cookies or not self._open.complete, COOKIE_TIMEOUT
                    )
                    return name in self._seen_cookies
            finally:
                unlink_if_same(path, made)  # a file put in its place since is not ours
        finally:
            with self._lock:
                self._cookies.discard(name)
                self._seen_cookies.discard(name)
                self._spent.append(name)

    def _watched_everywhere(self, folders: list[str] | None = None) -> bool:
        """True if every folder (all of them, or ``folders`` and their subfolders) has a watch.

        watchdog adds an inotify watch per folder, also for folders created or
        moved in later, but silently skips one it cannot watch (past the
        ``fs.inotify.max_user_watches`` limit, or a folder it may not read):
        changes there would go unseen. The kernel lists this process's watches
        in ``/proc/self/fdinfo``. Elsewhere the watchers are recursive by nature.
        """
        if not sys.platform.startswith("linux"):
            return True
        watched = _inotify_watches()
        if watched is None:
            return True  # no /proc: nothing to check against
        paths = [self.root] if folders is None else [os.path.join(self.root, *f.split("/")) for f in folders if f]
        stack = list(paths)
        while stack:
            path = stack.pop()
            try:
                st = os.lstat(path)
            except OSError:
                continue  # gone again: nothing to watch
            if not stat.S_ISDIR(st.st_mode):
                continue
            if (_kernel_dev(st.st_dev), st.st_ino) not in watched:
                if not os.access(path, os.R_OK | os.X_OK):
                    continue  # the walker cannot list it either; becoming readable is an event that rechecks it
                return False
            try:  # a folder moved in brings its subfolders, reported by no event of their own
                with os.scandir(path) as listing:
                    stack.extend(e.path for e in listing if e.is_dir(follow_symlinks=False))
            except OSError:
                continue
        return True

    def _give_up(self, why: str) -> None:
        log.warning("snapshotter: %s; watch mode is off for %s and every call walks the whole folder", why, self.root)
        self.invalidate()
        self.stop()


def _kernel_dev(st_dev: int) -> int:
    """``st_dev`` as the kernel prints it in fdinfo (major << 20 | minor)."""
    return (os.major(st_dev) << 20) | os.minor(st_dev)


def _inotify_watches() -> set[tuple[int, int]] | None:
    """(device, inode) of every inotify watch this process holds, or None without /proc."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    watched: set[tuple[int, int]] = set()
    for fd in fds:
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as info:
                for line in info:
                    if line.startswith("inotify wd:"):
                        fields = dict(item.split(":", 1) for item in line.split()[1:4])
                        watched.add((int(fields["sdev"], 16), int(fields["ino"], 16)))
        except (OSError, ValueError, KeyError):
            continue
    return watched


class _Handler:
    """Feeds watchdog events to a journal (duck-typed: watchdog calls ``dispatch``)."""

    def __init__(self, journal: ChangeJournal) -> None:
        self._journal = journal

    def dispatch(self, event: Any) -> None:
        event_type = event.event_type
        try:
            self._journal.note(event_type, os.fsdecode(event.src_path), event.is_directory)
            dest = getattr(event, "dest_path", "")
            if dest:
                self._journal.note(event_type, os.fsdecode(dest), event.is_directory)
        except Exception:  # never let the watcher thread die silently: distrust the journal instead
            log.debug("snapshotter: watch event failed", exc_info=True)
            self._journal.invalidate()


class _OverflowSpotter(logging.Handler):
    """Learns of lost events from watchdog's log: on Linux it logs (and does not
    otherwise report) an inotify queue overflow. Every live journal is distrusted."""

    _journals: weakref.WeakSet[ChangeJournal] = weakref.WeakSet()
    _installed = False
    _guard = threading.Lock()

    @classmethod
    def install(cls, journal: ChangeJournal) -> None:
        with cls._guard:
            cls._journals.add(journal)
            if not cls._installed:
                logger = logging.getLogger("watchdog.observers")
                logger.addHandler(cls(logging.WARNING))
                if logger.getEffectiveLevel() > logging.WARNING:
                    logger.setLevel(logging.WARNING)  # the overflow record must be created to be seen
                cls._installed = True

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            for journal in list(self._journals):
                journal.invalidate()


def _stop_observer(observer: Any) -> None:
    try:
        observer.stop()
        if observer.is_alive():
            observer.join(timeout=5)
    except Exception:
        log.debug("snapshotter: stopping the watcher failed", exc_info=True)
