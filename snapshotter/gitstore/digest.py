"""A SHA-1 computed on a thread of its own while the caller reads, writes or matches.

hashlib lets go of the GIL while it hashes a piece, so a big object's id is
checked (on restore) or computed (on snapshot) on the second core, beside the
inflating, writing or matching that the caller does meanwhile.
"""

from __future__ import annotations

import hashlib
import queue
import threading


class ThreadedDigest:
    """A SHA-1 computed on a thread of its own, fed in pieces (hashlib lets go
    of the GIL while it hashes, so the caller reads or matches meanwhile)."""

    def __init__(self, header: bytes) -> None:
        self._digest = hashlib.sha1(header)
        self._pieces: queue.Queue[bytes | memoryview | None] = queue.Queue(maxsize=8)
        self._thread = threading.Thread(target=self._run, name="snapshotter-sha1", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (piece := self._pieces.get()) is not None:
            self._digest.update(piece)

    def update(self, piece: bytes | memoryview) -> None:
        self._pieces.put(piece)

    def digest(self) -> bytes:
        self._pieces.put(None)
        self._thread.join()
        return self._digest.digest()

    def close(self) -> None:
        """Stop the thread (the result is not wanted)."""
        if self._thread.is_alive():
            self._pieces.put(None)
            self._thread.join()
