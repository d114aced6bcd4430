"""A second core for the walk's hot loop, as git's ``preload-index`` is.

A no-change snapshot of a big workspace is one ``lstat`` per file, compared
with its stat-cache record (``PackedFolder.all_match``). Git spreads those
calls over threads; Python threads cannot, since each call hands the GIL back
and forth (measured 3x slower on 2 cores). So a forked copy of this process
checks the cache's trusted folders from the far end of the walk's order,
while the walk works from the near end, and sends back which folders matched
whole. The walk takes a folder's verdict if it has arrived when it gets there
and checks the folder itself otherwise, so the two meet in the middle and the
result is the same as checking alone; the copy is stopped when the walk ends.

The copy checks exactly what the walk would: the same packed records and
racy cutoff, files ``lstat``ed relative to the folder opened without following
a symlink, and only in a folder whose own stat still equals its cached shape,
which the walk also requires before it asks (see ``trust``). A verdict is
only "every file matched, this many bytes" or "check it yourself".

It runs only where forking is safe and pays: Linux, two or more cores, a
single-threaded caller (a fork copies no other thread, so their locks could
be held forever in the copy), and a cache of at least ``MIN_FILES`` files.
The copy runs nothing but this module's loop and leaves with ``os._exit``: no
program is executed, and nothing of the parent's (buffers, ``atexit``) runs twice.
"""

from __future__ import annotations

import os
import signal
import struct
import sys
import threading

from snapshotter.fsutil import DIR_FLAGS, NO_FOLLOW, USE_CTIME
from snapshotter.worktree.listing import LIST_BY_FD
from snapshotter.worktree.packedfolder import PackedFolder
from snapshotter.worktree.statcache import Folder, StatCache
from snapshotter.worktree.trust import same_stat

MIN_FILES = 20_000
"""Below this many cached files a fork costs more than the copy saves."""

WAIT_FOR_COPY = False
"""For tests: the walk waits for all the copy's verdicts, so every folder the
copy vouches for is taken on its word (otherwise which side checks which
folder depends on their speeds)."""

_VERDICT = struct.Struct("<QQq")  # the folder's table (see ``_key``); total bytes, or -1: check it yourself
_DECODED = 2**64 - 1  # no place in loaded bytes: a decoded table
_FLUSH_FILES = 2_000  # the copy sends its verdicts after about this many files
_MISMATCH = -1


def _supported() -> bool:
    if not sys.platform.startswith("linux") or not hasattr(os, "fork") or not LIST_BY_FD or not USE_CTIME:
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return cores >= 2


SUPPORTED = _supported()


def walk_order(cache: StatCache) -> list[str]:
    """The folders in the order a walk that finds every folder as its shape
    says visits them (``walker._visit_all``: a stack, subfolders pushed in their
    shape's order); folders without a shape end the walk's way down."""
    shapes = cache.shapes
    order: list[str] = []
    stack = [""]
    while stack:
        rel = stack.pop()
        order.append(rel)
        shape = shapes.get(rel)
        if shape is not None:
            prefix = rel + "/" if rel else ""
            stack.extend(prefix + name for name in shape[5])
    return order


class Preload:
    """The forked copy checking folders from the far end of the walk's order,
    and the verdicts it has sent so far."""

    def __init__(self, pid: int, reader: int) -> None:
        self._pid = pid
        self._reader = reader
        self._totals: dict[tuple[int, int], int] = {}
        self._partial = b""
        self._open = True

    @classmethod
    def start(cls, workspace: str, cache: StatCache, cutoff: int) -> Preload | None:
        """A copy checking ``cache``'s trusted folders of ``workspace``, or None
        where it would not pay or is not safe (see the module's docstring)."""
        if not SUPPORTED or threading.active_count() != 1 or cache.size_hint() < MIN_FILES:
            return None
        reader, writer = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(reader)
            os.close(writer)
            return None
        if pid == 0:  # the copy: never returns
            status = 1
            try:
                os.close(reader)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                _check_from_the_end(workspace, cache, cutoff, writer)
                status = 0
            finally:
                os._exit(status)
        os.close(writer)
        os.set_blocking(reader, WAIT_FOR_COPY)
        return cls(pid, reader)

    def total(self, table: Folder) -> int | None:
        """The total size of the files of ``table`` (a trusted folder's records)
        if the copy found every one as recorded; None if it found one that was
        not, or has not got there yet."""
        key = _key(table)
        if key not in self._totals and self._open:
            self._receive()
        total = self._totals.get(key, _MISMATCH)
        return total if total != _MISMATCH else None

    def _receive(self) -> None:
        while True:
            try:
                data = os.read(self._reader, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:  # the copy is done (or died): no more verdicts
                self._open = False
                return
            data = self._partial + data
            whole = len(data) - len(data) % _VERDICT.size
            self._partial = data[whole:]
            totals = self._totals
            for source, place, total in _VERDICT.iter_unpack(memoryview(data)[:whole]):
                totals[source, place] = total

    def stop(self) -> None:
        """End the copy, wherever it is, and reap it."""
        if self._pid <= 0:
            return
        pid, self._pid = self._pid, 0
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        os.close(self._reader)


def _check_from_the_end(workspace: str, cache: StatCache, cutoff: int, out: int) -> None:
    """The copy's loop: each folder the walk may trust, last visited first."""
    order = walk_order(cache)
    root = workspace.rstrip(os.sep) or os.sep
    shapes = cache.shapes
    lstat = os.stat
    sent: list[bytes] = []
    files = 0
    for rel in reversed(order):
        shape = shapes.get(rel)
        if shape is None or shape[1] >= cutoff:
            continue  # the walk lists it again: no verdict is asked for
        table = cache.folder(rel)
        if not table:
            continue
        try:
            fd = os.open(os.path.join(root, rel) if rel else root, DIR_FLAGS | NO_FOLLOW if rel else DIR_FLAGS)
        except OSError:
            continue
        try:
            if not same_stat(os.fstat(fd), shape[0], shape[1], shape[2]):
                total = None
            elif type(table) is PackedFolder:
                total = table.all_match(lstat, fd, cutoff)
            else:
                total = _all_match(table, fd, cutoff)
        finally:
            os.close(fd)
        sent.append(_VERDICT.pack(*_key(table), _MISMATCH if total is None else total))
        files += len(table)
        if files >= _FLUSH_FILES:
            _send(out, b"".join(sent))
            sent.clear()
            files = 0
    if sent:
        _send(out, b"".join(sent))


def _key(table: Folder) -> tuple[int, int]:
    """What tells a table from every other the walk may ask about, the same in
    both processes: for a packed one, the loaded bytes it views and its place in
    them (the copy makes its own view of them); for a decoded one, its identity.
    Both objects were there before the fork and are held by the cache, so they
    are at the same address in both processes."""
    return table.place if type(table) is PackedFolder else (id(table), _DECODED)


def _all_match(table: Folder, fd: int, cutoff: int) -> int | None:
    """``PackedFolder.all_match`` for a decoded table: the comparisons of
    ``classify``'s hot loop, file by file."""
    total = 0
    try:
        for name, record in table.items():
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not (
                record[2] == st.st_mtime_ns
                and record[2] < cutoff
                and record[1] == st.st_size
                and record[0] == st.st_mode
                and record[4] == st.st_ino
                and record[3] == st.st_ctime_ns
            ):
                return None
            total += record[1]
    except OSError:
        return None
    return total


def _send(out: int, data: bytes) -> None:
    """Write all of ``data``: blocks while the pipe is full; EPIPE once the walk stopped reading."""
    view = memoryview(data)
    while view:
        view = view[os.write(out, view) :]
