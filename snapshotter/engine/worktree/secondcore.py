"""A second core for a walk or a restore: a forked copy of this process, and when to make one.

Git spreads a walk's ``lstat`` calls and its hashing over threads. Python
threads cannot share that work: each system call hands the GIL back and
forth, and two threads were measured slower than one on 2 cores (a loop
written in C that releases the GIL throughout can: ``preloadthread``). A copy of
the process made by ``fork`` has a GIL of its own, and shares with the
original everything loaded so far (the stat cache, the walk's findings)
without copying it. The copy runs one function, sends its answers through a
pipe, and leaves with ``os._exit``: no program is executed, and nothing of
the original's (buffered output, ``atexit`` handlers, open files) is flushed,
closed or run twice. The original decides what to take from the answers;
a copy that dies, or is killed, only leaves work undone, which the original
then does itself.

A copy is made only where that is safe and pays (``available``): Linux,
two or more cores, the ``second_core`` option on, and no other thread in
the process, since a fork copies only the calling thread, and a lock another
thread held would stay held in the copy for ever.
"""

from __future__ import annotations

import os
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator

from snapshotter.engine.fsutil import USE_CTIME
from snapshotter.engine.worktree.listing import LIST_BY_FD

STOP_WAIT = 2.0
"""Seconds a copy asked to stop has before it is killed."""


def cores() -> int:
    """The cores this process may run on (its affinity where the host tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _supported() -> bool:
    if not sys.platform.startswith("linux") or not hasattr(os, "fork") or not LIST_BY_FD or not USE_CTIME:
        return False
    return cores() >= 2


SUPPORTED = _supported()


def available() -> bool:
    """Whether a copy may be made now (see the module's docstring): no other
    thread, Python's or one a C extension started (counted in ``/proc``)."""
    if not SUPPORTED or threading.active_count() != 1:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


class Copy:
    """A running copy, and the read end of the pipe its answers come through."""

    def __init__(self, pid: int, reader: int) -> None:
        self.pid = pid
        self.reader = reader
        self._partial = b""

    def chunks(self, size: int) -> Iterator[bytes]:
        """What can be read now (without waiting, if the pipe does not block),
        cut to whole records of ``size`` bytes; ``self.done`` is set once the
        copy has closed its end."""
        while True:
            try:
                data = os.read(self.reader, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.done = True
                return
            data = self._partial + data
            whole = len(data) - len(data) % size
            self._partial = data[whole:]
            if whole:
                yield data[:whole]

    def records(self, layout: struct.Struct) -> Iterator[tuple[int | bytes, ...]]:
        """The records that can be read now, unpacked (see ``chunks``)."""
        for chunk in self.chunks(layout.size):
            yield from layout.iter_unpack(chunk)

    done = False

    def stop(self) -> None:
        """End the copy, wherever it is, and reap it. It is asked first, so that
        it removes what it was writing (``Stopped``); killed if it does not end
        within ``STOP_WAIT`` seconds."""
        pid = self.pid
        if pid <= 0:
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + STOP_WAIT
        while not self._ended(os.WNOHANG):
            if time.monotonic() > deadline:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._ended(0)
                return
            time.sleep(0.001)

    def finish(self) -> bool:
        """Wait for the copy to end; whether it ended by returning."""
        return self._ended(0) and self._status == 0

    def _ended(self, options: int) -> bool:
        """Whether the copy has ended (then reaped, its status kept, the pipe closed)."""
        if self.pid <= 0:
            return True
        try:
            pid, status = os.waitpid(self.pid, options)
        except ChildProcessError:
            pid, status = self.pid, -1
        if pid == 0:
            return False
        self.pid = 0
        self._status = status
        os.close(self.reader)
        return True

    _status = -1


def start(job: Callable[[int], None], *, blocking: bool) -> Copy | None:
    """A copy of this process running ``job(fd)``, where ``fd`` is the write end
    of the pipe to the original; None if the fork fails. The original reads
    the pipe ``blocking`` or not."""
    reader, writer = os.pipe()
    # Ctrl-C is held back across the fork: landing in it, it would raise in an
    # at-fork callback (logging's lock), where Python prints and drops it, and
    # the command would go on as if never interrupted; or in the copy before its
    # own handler is set. Once unblocked, a held Ctrl-C is delivered as usual.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        os.close(reader)
        os.close(writer)
        return None
    if pid == 0:  # the copy: never returns
        status = 1
        try:
            os.close(reader)
            signal.signal(signal.SIGINT, _stopped)  # Ctrl-C (the terminal signals the copy too): as when stopped
            signal.signal(signal.SIGTERM, _stopped)
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            job(writer)
            status = 0
        finally:
            os._exit(status)
    signal.pthread_sigmask(signal.SIG_SETMASK, held)
    os.close(writer)
    os.set_blocking(reader, blocking)
    return Copy(pid, reader)


_HELD = frozenset({signal.SIGINT, signal.SIGTERM})


class Stopped(BaseException):
    """Raised in a copy the original stops, or that Ctrl-C reaches: what the copy
    was writing is removed on the way out (a pack builder aborts on any
    exception), and it ends quietly (``os._exit``, no traceback)."""


def _stopped(signum: int, frame: object) -> None:
    """Raise Stopped once: a second signal (Ctrl-C reaches the copy, and then the
    original stops it) then does nothing, so that it cannot raise again in the
    copy's cleanup or in the ``finally`` before ``os._exit``, where it escaped
    into the original's frames the copy shares and printed a traceback. Not
    ``SIG_IGN``: a signal already caught but not yet handled would then raise
    OSError ("ignored due to race condition") in its place."""
    signal.signal(signal.SIGINT, _on_the_way_out)
    signal.signal(signal.SIGTERM, _on_the_way_out)
    raise Stopped


def _on_the_way_out(signum: int, frame: object) -> None:
    """A copy already stopped leaves as it is leaving."""


def send(out: int, data: bytes) -> None:
    """Write all of ``data`` to the pipe: blocks while it is full; EPIPE once the original stopped reading."""
    view = memoryview(data)
    while view:
        view = view[os.write(out, view) :]
