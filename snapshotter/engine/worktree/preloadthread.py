"""The preload on a thread: the same verdicts as the forked copy's, with no fork.

A fork shares the process's memory copy-on-write, and each page either side
writes to afterwards is copied then. In a fresh command that cost about 3,800
page faults a no-change walk of 100,000 files; in a process that had made a
snapshot of them first (a library's host, a benchmark) 16,000, and the walk
took 0.13 s instead of 0.10 s. A thread shares the memory outright. It could
not share the work while its loop was Python's (each step needs the GIL the
walk needs: measured 0.14 s), so the whole loop is C's
(``_statmatch.check_folders``), run with the GIL released: each folder opened
(without following a symlink), its own stat compared with its shape, its files
``lstat``ed and compared with their records on the packed bytes, as
``preload._check_from_the_end`` does. The thread first lists the folders it
may check, in Python: those with a shape that is not racy and a packed table
(``StatCache.packed_view``, which hands nothing out: the walk hands the tables
out meanwhile). A folder without a shape, or whose table is a dict, is left to
the walk. A thread is also allowed where a fork is not: in a process that has
other threads.

The verdicts are written to memory both sides read, in the order checked,
and a count of those written is stored after each (``_statmatch.done``):
the walk reads a verdict only below that count. The walk tells the thread how
far it got, and stops it, through the same memory (``_statmatch.tell``).
"""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Callable

from snapshotter.engine.fsutil import DIR_FLAGS
from snapshotter.engine.worktree import preload, secondcore
from snapshotter.engine.worktree.packedfolder import INT64
from snapshotter.engine.worktree.preload import Seen, walk_order
from snapshotter.engine.worktree.statcache import Folder, StatCache

try:
    from snapshotter.engine.worktree import _statmatch
except ImportError:  # not built (no compiler, SNAPSHOTTER_PURE=1, Windows)
    _statmatch = None  # type: ignore[assignment]

_REACHED, _STOP = 0, 1
_CONTROL_BYTES = 4 * 8
_VERDICT = struct.Struct("=qqqQ")
"""Total size or -1: check it yourself; the folder's own mtime_ns, ctime_ns, inode seen."""


_SUPPORTED = _statmatch is not None and hasattr(_statmatch, "check_folders") and secondcore.cores() >= 2


def available() -> bool:
    """Whether the loop was compiled (``setup.py``), on a host with two cores."""
    return _SUPPORTED


Job = tuple[bytes, int, int, int, int, int, int, int, int, int]
"""``check_folders``' job: the folder's path, its place in the walk's order, its shape's
mtime_ns, ctime_ns and inode, its body's index, and where its table lies in that body."""


def folder_jobs(
    cache: StatCache, cutoff: int, stopping: Callable[[], bool]
) -> tuple[list[Job], list[bytes], dict[tuple[int, int], int]] | None:
    """The folders the thread may check, from the far end of the walk's order: those
    with a shape that is not racy and a packed table; with the bodies their tables lie
    in, and where each table's job is (by ``preload._key``). None once ``stopping()``."""
    order = walk_order(cache)
    shapes = cache.shapes
    view = cache.packed_view
    fsencode = os.fsencode
    jobs: list[Job] = []
    bodies: list[bytes] = []
    body_at: dict[int, int] = {}
    index: dict[tuple[int, int], int] = {}
    for place in range(len(order) - 1, -1, -1):
        if not place % 256 and stopping():
            return None
        rel = order[place]
        shape = shapes.get(rel)
        if shape is None or shape[1] >= cutoff:  # no shape: the walk lists it; racy: it lists it again
            continue
        where = view(rel)
        if where is None or not where[4]:
            continue
        body = where[0]
        at = body_at.get(id(body))
        if at is None:
            at = body_at[id(body)] = len(bodies)
            bodies.append(body)
        index[id(body), where[3]] = len(jobs)
        jobs.append((fsencode(rel) if rel else b".", place, shape[0], shape[1], shape[2], at, *where[1:]))
    return jobs, bodies, index


class ThreadPreload:
    """``preload.Preload``'s answers, from ``_statmatch.check_folders`` on a thread."""

    def __init__(self, workspace: str, cache: StatCache, cutoff: int) -> None:
        self._control = bytearray(_CONTROL_BYTES)
        self._verdicts = bytearray()
        self._places: list[int] = []
        self._jobs: dict[tuple[int, int], int] = {}
        self._stopping = False
        self._thread = threading.Thread(
            target=self._run, args=(workspace, cache, cutoff), name="snapshotter-preload", daemon=True
        )
        self._thread.start()

    @classmethod
    def start(cls, workspace: str, cache: StatCache, cutoff: int) -> ThreadPreload | None:
        if not available() or cache.size_hint() < preload.MIN_FILES or cutoff not in INT64:
            return None
        try:
            return cls(workspace, cache, cutoff)
        except RuntimeError:  # no thread can be started now: the walk checks every folder itself
            return None

    def _run(self, workspace: str, cache: StatCache, cutoff: int) -> None:
        try:
            self._check(workspace, cache, cutoff)
        except Exception:  # noqa: BLE001 - a thread's failure only leaves the walk to check every folder itself
            return

    def _check(self, workspace: str, cache: StatCache, cutoff: int) -> None:
        found = folder_jobs(cache, cutoff, lambda: self._stopping)
        if found is None:
            return  # the walk ended first
        jobs, bodies, index = found
        self._places = [job[1] for job in jobs]
        self._verdicts = bytearray(_VERDICT.size * len(jobs))
        self._jobs = index  # last: a verdict is looked up only through it
        root = workspace.rstrip(os.sep) or os.sep
        try:
            fd = os.open(root, DIR_FLAGS)
        except OSError:
            return  # the walk will say why
        try:
            _statmatch.check_folders(fd, jobs, bodies, cutoff, self._control, self._verdicts)
        finally:
            os.close(fd)

    def total(self, table: Folder) -> int | None:
        verdict = self._verdict(table)
        return verdict[0] if verdict is not None else None

    def vouched(self, table: Folder) -> tuple[int, Seen] | None:
        verdict = self._verdict(table)
        return (verdict[0], Seen(*verdict[1:])) if verdict is not None else None

    def relisted(self, table: Folder, own: os.stat_result) -> bool:
        return False  # it lists no folder

    def may_hold(self, place: int) -> bool:
        if preload.WAIT_FOR_COPY:
            self._thread.join()
            return True
        done = _statmatch.done(self._control)
        return bool(done) and place >= self._places[done - 1]

    def reached(self, folders: int) -> None:
        _statmatch.tell(self._control, _REACHED, folders)

    def _verdict(self, table: Folder) -> tuple[int, int, int, int] | None:
        if preload.WAIT_FOR_COPY:
            self._thread.join()
        at = self._jobs.get(preload._key(table))
        if at is None or at >= _statmatch.done(self._control):
            return None
        found: tuple[int, int, int, int] = _VERDICT.unpack_from(self._verdicts, at * _VERDICT.size)
        return found if found[0] >= 0 else None

    def stop(self) -> None:
        self._stopping = True
        _statmatch.tell(self._control, _STOP, 1)
        self._thread.join()
