"""A SHA-1 computed on a thread of its own while the caller reads, writes or matches.

hashlib lets go of the GIL while it hashes a piece, so a big object's id is
checked (on restore) or computed (on snapshot) on the second core, beside the
inflating, writing or matching that the caller does meanwhile.
"""

from __future__ import annotations

import hashlib
import queue
import threading

_BATCH = 1 << 20


class ThreadedDigest:
    """A SHA-1 computed on a thread of its own, fed in pieces (hashlib lets go
    of the GIL while it hashes, so the caller reads or matches meanwhile)."""

    def __init__(self, header: bytes) -> None:
        self._digest = hashlib.sha1(header)
        self._pieces: queue.Queue[list[bytes | memoryview] | None] = queue.Queue(maxsize=4)
        self._batch: list[bytes | memoryview] = []
        self._batched = 0
        self._thread = threading.Thread(target=self._run, name="snapshotter-sha1", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (batch := self._pieces.get()) is not None:
            for piece in batch:
                self._digest.update(piece)

    def update(self, piece: bytes | memoryview) -> None:
        """Hash ``piece`` (small pieces go to the thread a MiB at a time)."""
        self._batch.append(piece)
        self._batched += len(piece)
        if self._batched >= _BATCH:
            self._pieces.put(self._batch)
            self._batch, self._batched = [], 0

    def digest(self) -> bytes:
        if self._batch:
            self._pieces.put(self._batch)
            self._batch, self._batched = [], 0
        self._pieces.put(None)
        self._thread.join()
        return self._digest.digest()

    def close(self) -> None:
        """Stop the thread (the result is not wanted)."""
        if self._thread.is_alive():
            self._pieces.put(None)
            self._thread.join()
