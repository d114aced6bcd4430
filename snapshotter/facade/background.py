"""Snapshots taken on a background thread, so an agent's turn need not wait.

One worker thread per :class:`~snapshotter.Snapshotter` takes background
snapshots in the order they were asked for. Every other call on that
Snapshotter first waits for them, so a restore, diff or list issued after
``snapshot_async()`` sees its result, exactly as if the snapshot had been
taken in line.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from snapshotter.model import SnapshotInfo

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:  # ``concurrent.futures`` loads with the first background call: a command that reads pays nothing
    from concurrent.futures import Future, ThreadPoolExecutor

log = logging.getLogger("snapshotter")


class SnapshotHandle:
    """A snapshot being taken in the background; ``result()`` waits for it."""

    __slots__ = ("_future",)

    def __init__(self, future: Future[SnapshotInfo | None]) -> None:
        self._future = future

    def done(self) -> bool:
        """True once the snapshot is recorded (or has failed)."""
        return self._future.done()

    def result(self, timeout: float | None = None) -> SnapshotInfo | None:
        """The new snapshot, waiting up to ``timeout`` seconds (None: as long as it takes).

        Raises what ``snapshot()`` would have raised; in ``on_error="warn"``
        mode a failure gives None, as ``snapshot()`` does. Raises
        ``TimeoutError`` if the snapshot is still running after ``timeout``.
        """
        from concurrent.futures import TimeoutError as FutureTimeout

        try:
            return self._future.result(timeout)
        except FutureTimeout:  # a distinct class before Python 3.11
            raise TimeoutError(f"the background snapshot is still running after {timeout} s") from None

    def __repr__(self) -> str:
        return f"SnapshotHandle(done={self.done()})"


def finished(value: SnapshotInfo | None) -> SnapshotHandle:
    """A handle that is already done (a refused request in "warn" mode)."""
    from concurrent.futures import Future

    future: Future[SnapshotInfo | None] = Future()
    future.set_result(value)
    return SnapshotHandle(future)


class Background:
    """The worker thread of one Snapshotter, and the ordering of calls around it."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._last: Future[SnapshotInfo | None] | None = None
        self._local = threading.local()

    def submit(self, take: Callable[[], SnapshotInfo | None]) -> SnapshotHandle:
        from concurrent.futures import ThreadPoolExecutor

        with self._guard:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="snapshotter-background")
            future = self._executor.submit(self._run, take)
            self._last = future
        future.add_done_callback(_report_failure)
        return SnapshotHandle(future)

    def _run(self, take: Callable[[], SnapshotInfo | None]) -> SnapshotInfo | None:
        self._local.inside = True
        return take()

    def wait(self) -> None:
        """Wait until every background snapshot asked for so far is done
        (a no-op on the worker thread itself)."""
        if getattr(self._local, "inside", False):
            return
        last = self._last
        if last is not None and not last.done():
            from concurrent.futures import wait

            wait([last])

    def shutdown(self) -> None:
        with self._guard:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)


def _report_failure(future: Future[SnapshotInfo | None]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("snapshotter: background snapshot failed: %s", future.exception())
