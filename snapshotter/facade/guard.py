"""``guard``: run a block of agent work with automatic rollback.

    with snapshotter.guard("path/to/workspace", verify=tests_pass) as g:
        agent.run()

The workspace is snapshotted on entry. If the block raises, the workspace is
restored to that snapshot and the exception propagates; if ``verify()``
returns false (or raises), it is restored and :class:`RollbackPerformed` is
raised. Only what the snapshot tracks is touched: files created in the block
are removed (whatever the user's own git index says about them), ignored
files such as ``.env`` are kept, and no ``.git`` is ever written.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from snapshotter.errors import RollbackPerformed, SnapshotError

if TYPE_CHECKING:  # annotations only: reading the history makes no restore's values
    from snapshotter.model import RestoreResult, SnapshotInfo

GUARD_LABEL = "guard"


class Guarded(Protocol):
    """What a guard needs of a :class:`~snapshotter.Snapshotter` (which builds guards)."""

    def snapshot(self, message: str = "", *, label: str | None = None) -> SnapshotInfo: ...

    def restore(self, ref: str) -> RestoreResult | None: ...

    def close(self) -> None: ...


class Guard:
    """The handle a ``with guard(...)`` block gets; see the module docstring."""

    def __init__(self, snap: Guarded, verify: Callable[[], object] | None = None, *, owns: bool = False) -> None:
        self.snapshotter = snap
        self.verify = verify
        self.entry: SnapshotInfo | None = None
        self.rolled_back: RestoreResult | None = None
        self._committed = False
        self._owns = owns

    def __enter__(self) -> Guard:
        entry = self.snapshotter.snapshot("guard: entry", label=GUARD_LABEL)
        if entry is None:  # on_error="warn" and the snapshot failed: no safety net, say so
            raise SnapshotError("guard could not snapshot the workspace on entry; nothing was changed")
        self.entry = entry
        return self

    def rollback(self) -> RestoreResult:
        """Restore the entry state now (the state being replaced is saved first)."""
        if self.entry is None:
            raise SnapshotError("guard has not been entered; use it in a with statement")
        result = self.snapshotter.restore(self.entry.id)
        if result is None:
            raise SnapshotError("guard rollback failed; see the warning logged by snapshotter")
        self.rolled_back = result
        return result

    def commit(self) -> SnapshotInfo:
        """Keep the block's changes: no rollback on exit. Returns a snapshot of them."""
        self._committed = True
        return self.snapshotter.snapshot("guard: committed", label=GUARD_LABEL)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        try:
            if self._committed:
                return
            if error is not None:
                self.rollback()
                return  # the block's exception propagates
            if self.verify is not None:
                try:
                    accepted = self.verify()
                except BaseException:
                    self.rollback()
                    raise
                if not accepted:
                    result = self.rollback()
                    raise RollbackPerformed(
                        f"verification failed; the workspace was rolled back to {result.target_id[:12]} "
                        f"({result.written} written, {result.deleted} deleted)"
                    )
        finally:
            if self._owns:
                self.snapshotter.close()
