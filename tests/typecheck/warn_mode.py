"""Checked by ``mypy --strict`` in ``.ci/run``, never run: what a type checker
reads from the two modes. ``assert_type`` fails the check if a result's type
changes; the ``type: ignore`` lines fail it (as unused) if a mistake were no
longer caught."""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapshotter import RestoreResult, RevertResult, SnapshotInfo, Snapshotter, forgiving

if TYPE_CHECKING:
    from typing_extensions import assert_type


def raising_mode() -> None:
    snap = Snapshotter("/tmp/workspace")
    assert_type(snap.snapshot(), SnapshotInfo)
    assert_type(snap.base(), SnapshotInfo | None)  # None before the first snapshot, in either mode


def warn_mode() -> None:
    snap = forgiving("/tmp/workspace")
    info = snap.snapshot("message", label="x")
    assert_type(info, SnapshotInfo | None)
    assert_type(snap.list(), list[SnapshotInfo] | None)
    assert_type(snap.revert_turn(1), RevertResult | RestoreResult | None)
    assert_type(snap.can_undo(), bool)
    assert_type(snap.workspace, str)
    print(info.id)  # type: ignore[union-attr]  # it may be None: the checker says so
    snap.snapshot(5)  # type: ignore[arg-type]  # the parameters stay checked
    with forgiving("/tmp/workspace") as scoped:
        assert_type(scoped.restore("@", dry_run=True), RestoreResult | None)
