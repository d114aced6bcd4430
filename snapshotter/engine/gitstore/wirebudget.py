"""How much a git server may send, and for how long.

A server chooses how long its answers are: a ref advertisement that never
ends, a pack stream that never ends, a byte every few seconds forever, or
nothing at all. dulwich reads whatever comes (its ref parser keeps every
line), so every read from a server goes through a :class:`Meter`: one per
opened remote, started afresh for each exchange (listing refs, a fetch, a
push). It allows a ref advertisement up to ``ADVERTISEMENT`` bytes, a fetch's
pack up to the ``Budget``'s bytes, and the whole exchange up to its seconds
(a push's, until its pack starts: the upload is as long as what it sends);
each single wait on the connection is cut at the idle timeout or at the
deadline, whichever comes first, so a trickle inside one packet is cut too.
Past any of these the exchange ends with :class:`BudgetExceeded`, one line
naming the limit.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from snapshotter.errors import RemoteError

ADVERTISEMENT = 32 << 20
"""Bytes a server's ref advertisement (and a push's answers) may take: some
300,000 refs; snapshotter's own refs are one per snapshot."""
PIECE = 1 << 16
"""The most one read asks the connection for when the caller reads to the end."""


@dataclass(frozen=True)
class Budget:
    """What one fetch may take from a server: ``max_bytes`` of pack (0: no cap),
    which also caps the size of its objects once inflated; and ``seconds`` for
    the whole exchange (0: none)."""

    max_bytes: int = 4 << 30
    seconds: float = 3600.0


class BudgetExceeded(RemoteError):
    """A server sent more, or for longer, than the exchange allows."""


class Meter:
    """Counts what a server sends in the exchange under way and ends it past its
    allowance or deadline (see the module's docstring)."""

    def __init__(self, where: str, budget: Budget, idle: float) -> None:
        self.where, self.budget, self.idle = where, budget, idle
        self._deadline = math.inf
        self._allowed: float = ADVERTISEMENT
        self._taken = 0
        self._what = "ref advertisement"
        self.begin()

    def begin(self) -> None:
        """A new exchange: a ref advertisement comes first, and the clock starts."""
        seconds = self.budget.seconds
        self._deadline = time.monotonic() + seconds if seconds else math.inf
        self._allowed, self._taken, self._what = ADVERTISEMENT, 0, "ref advertisement"

    def expect_pack(self) -> None:
        """The advertisement is read: what follows is a pack, up to the budget's bytes."""
        self._allowed, self._taken, self._what = self.budget.max_bytes or math.inf, 0, "pack"

    def sending(self) -> None:
        """A push's advertisement is read and its pack about to go: how long the
        upload takes is the size of what the caller sends, so the deadline is
        lifted (each wait still ends at the idle timeout)."""
        self._deadline = math.inf

    def take(self, count: int) -> None:
        """Count ``count`` bytes read; BudgetExceeded past the allowance."""
        self._taken += count
        if self._taken > self._allowed:
            if self._what == "pack":
                raise BudgetExceeded(
                    f"{self.where} sent more than max_fetch_bytes ({self.budget.max_bytes:,} bytes); "
                    "nothing was taken (raise max_fetch_bytes to fetch more)"
                )
            raise BudgetExceeded(
                f"{self.where} sent a ref advertisement of more than {ADVERTISEMENT:,} bytes; nothing was taken"
            )

    def too_large(self, inflated: int) -> BudgetExceeded:
        """The error for a pack whose objects inflate to more than the budget."""
        return BudgetExceeded(
            f"{self.where} sent objects of more than max_fetch_bytes ({self.budget.max_bytes:,} bytes) "
            f"once inflated ({inflated:,} bytes and counting); nothing was taken (raise max_fetch_bytes to fetch more)"
        )

    def wait(self) -> float:
        """Seconds the next wait on the connection may last; BudgetExceeded if the
        exchange is past its deadline."""
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise self._late()
        return min(self.idle, left)

    def _late(self) -> BudgetExceeded:
        return BudgetExceeded(
            f"{self.where} took more than fetch_timeout ({self.budget.seconds:g} s); nothing was taken"
        )

    def failed(self, error: BaseException) -> BaseException:
        """What a failed read means: the deadline if it passed meanwhile (the wait
        was cut for it), else the server's silence if the wait timed out, else the
        error itself."""
        if time.monotonic() >= self._deadline:
            return self._late()
        if isinstance(error, TimeoutError) or type(error).__name__ in ("ReadTimeoutError", "timeout"):
            return RemoteError(f"{self.where} sent nothing for {self.idle:g} s; nothing was taken")
        return error

    def reader(
        self, read_some: Callable[[int], bytes], set_timeout: Callable[[float], object] | None
    ) -> Callable[[int], bytes]:
        """``read(n)`` as dulwich calls it (``n`` bytes unless the stream ends; all
        of it for a negative ``n``), made of ``read_some`` calls (at most one wait
        on the connection each), metered, each wait cut by ``set_timeout``."""

        def read(size: int = -1) -> bytes:
            pieces: list[bytes] = []
            got = 0
            while size is None or size < 0 or got < size:
                limit = PIECE if size is None or size < 0 else size - got
                wait = self.wait()
                if set_timeout is not None:
                    set_timeout(wait)
                try:
                    piece = read_some(limit)
                except Exception as error:  # noqa: BLE001 (a timeout or a reset: which one is said by ``failed``)
                    raised = self.failed(error)
                    if raised is error:
                        raise
                    raise raised from None
                if not piece:
                    break
                self.take(len(piece))
                pieces.append(piece)
                got += len(piece)
            return pieces[0] if len(pieces) == 1 else b"".join(pieces)

        return read
