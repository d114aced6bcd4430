"""Pushing in the background: after each snapshot, and on request, never in a turn's way.

One worker thread per Snapshotter, started on first use, with a store of its own
(its own handles and caches: nothing is shared with the calls in the
foreground but the files, which are only ever added to or renamed). Requests
coalesce: snapshots taken while a push runs are sent by the next one, a burst
costs one push after it. A failed push is retried with backoff (1 s doubling
to 60 s) and logged once per failure streak; ``flush`` waits for the worker
to be idle, up to a timeout, or for one more try to have failed, and returns
the last failure, if the last push failed, for the caller's error policy.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

from snapshotter.errors import SnapshotError
from snapshotter.model import PushResult

log = logging.getLogger("snapshotter")
FIRST_RETRY, LAST_RETRY = 1.0, 60.0

PushOnce = Callable[[], PushResult]


class Replicator:
    """The background pusher of one Snapshotter (see the module's docstring)."""

    def __init__(self, push_once: PushOnce) -> None:
        self._push_once = push_once
        self._wake = threading.Condition()
        self._wanted = False
        self._busy = False
        self._stopping = False
        self._waiting: list[Future[PushResult]] = []
        self._thread: threading.Thread | None = None
        self._tries = 0
        """Pushes tried (ended, either way): ``flush`` waits for one after it began."""
        self.failure: SnapshotError | None = None
        """The last push's error, None once one succeeds."""

    def request(self) -> Future[PushResult]:
        """Ask for a push soon; the future holds the result of the push that covers it."""
        handle: Future[PushResult] = Future()
        with self._wake:
            self._wanted = True
            self._waiting.append(handle)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="snapshotter-push", daemon=True)
                self._thread.start()
            self._wake.notify_all()
        return handle

    def flush(self, timeout: float) -> SnapshotError | None:
        """Wait until nothing is wanted or running (up to ``timeout`` s), then stop the
        worker; the failure of the last push, if it failed (or did not finish).
        A worker waiting to retry a failed push retries at once, and once that
        try has failed too the wait ends: a remote that is down would otherwise
        hold ``close()`` for the whole timeout."""
        deadline = time.monotonic() + timeout
        with self._wake:
            tries = self._tries
            self._wake.notify_all()  # out of a retry's backoff: the last try is now
            while (self._wanted or self._busy) and self._thread is not None:
                if self.failure is not None and not self._busy and self._tries > tries:
                    break  # failed, and tried since the flush began: known, reported by the caller
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._wake.wait(left)
            unfinished = (self._wanted or self._busy) and self.failure is None
            self._stopping = True
            self._wake.notify_all()
        if unfinished:
            return SnapshotError(f"a background push did not finish within {timeout:g} s")
        return self.failure

    def _run(self) -> None:
        delay = FIRST_RETRY
        while True:
            with self._wake:
                while not self._wanted and not self._stopping:
                    self._wake.wait()
                if self._stopping and not self._wanted:
                    return
                self._wanted, self._busy = False, True
                waiting, self._waiting = self._waiting, []
            try:
                result = self._push_once()
            except Exception as exc:  # reported through the error policy, never lost, never raised here
                error = exc if isinstance(exc, SnapshotError) else SnapshotError(f"background push failed: {exc}")
                if self.failure is None:
                    log.warning("snapshotter: background push failed (retrying): %s", error)
                self.failure = error
                for handle in waiting:
                    handle.set_exception(error)
                with self._wake:
                    self._tries += 1
                    self._busy = False
                    self._wanted = True  # retried, with backoff, until one works or the worker stops
                    self._wake.notify_all()
                    self._wake.wait(delay)
                    if self._stopping:
                        self._wanted = False
                        return
                delay = min(delay * 2, LAST_RETRY)
                continue
            self.failure = None
            delay = FIRST_RETRY
            for handle in waiting:
                handle.set_result(result)
            with self._wake:
                self._tries += 1
                self._busy = False
                self._wake.notify_all()
