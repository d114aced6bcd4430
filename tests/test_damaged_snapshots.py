"""One damaged object never blocks a store (issue: a truncated old commit made list(),
snapshot() and restore() raise; a damaged newest snapshot blocked all new ones;
upkeep stopped and the store stayed over its limit)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from conftest import loosen, read_tree, write

from snapshotter import Retention, SnapshotError, StoreError


def _truncate(snap, sha: str) -> None:  # type: ignore[no-untyped-def]
    path = Path(snap._engine_ok().store.writer.loose_path(bytes.fromhex(sha)))
    data = path.read_bytes()
    path.chmod(0o600)
    path.write_bytes(data[: len(data) // 2])


def test_a_truncated_old_commit_is_passed_over(ws: Path, make, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    snap = make(retention=Retention.unlimited())
    infos = []
    for i in range(3):
        write(ws, {"a.txt": f"{i}\n"})
        infos.append(snap.snapshot(f"v{i}"))
    _truncate(snap, infos[0].id)
    fresh = make(retention=Retention.unlimited())  # nothing parsed yet in this one
    with caplog.at_level(logging.WARNING, logger="snapshotter"):
        listed = fresh.list(limit=None)
        assert [i.id for i in listed] == [infos[2].id, infos[1].id]
        fresh.list(limit=None)
    assert sum("damaged snapshot" in r.getMessage() for r in caplog.records) == 1  # warned once
    write(ws, {"a.txt": "new\n"})
    newer = fresh.snapshot("after the damage")
    fresh.restore(infos[1].id)
    assert (ws / "a.txt").read_text() == "1\n"
    assert fresh.get(newer.id).message == "after the damage"
    with pytest.raises(StoreError, match="damaged"):
        fresh.get(infos[0].id)
    assert not fresh.verify().ok  # and verify names it


def test_a_damaged_newest_snapshot_does_not_block_new_ones(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "1\n", "b.txt": "b\n"})
    snap = make(retention=Retention.unlimited())
    first = snap.snapshot()
    write(ws, {"a.txt": "2\n"})
    newest = snap.snapshot()
    _truncate(snap, newest.id)
    fresh = make(retention=Retention.unlimited())
    write(ws, {"a.txt": "3\n"})
    third = fresh.snapshot("goes on")
    assert third.files_changed == 1  # compared with the newest snapshot it can read
    fresh.restore(first.id)
    assert read_tree(ws)["a.txt"] == ("file", b"1\n")


def test_a_damaged_newest_tree_does_not_block_new_ones(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "1\n", "sub/b.txt": "b\n"})
    snap = make(retention=Retention.unlimited())
    snap.snapshot()
    write(ws, {"a.txt": "2\n"})
    newest = snap.snapshot()
    loosen(snap)
    _truncate(snap, newest.tree_id)
    fresh = make(retention=Retention.unlimited())
    write(ws, {"a.txt": "3\n"})
    assert fresh.snapshot("goes on").tree_id != newest.tree_id


def test_upkeep_goes_on_past_a_damaged_object_and_the_store_shrinks(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make(retention=Retention.unlimited())
    write(ws, {"keep.txt": "k\n"})
    damaged = snap.snapshot("will be damaged")
    for i in range(6):
        write(ws, {f"big{i}.bin": bytes([i]) * 200_000})
        snap.snapshot(f"big {i}")
        (ws / f"big{i}.bin").unlink()
    last = snap.snapshot("small again")
    _truncate(snap, damaged.id)
    before = snap.store_stats().bytes_on_disk
    capped = make(retention=Retention(max_snapshots=2, max_age=None, max_store_bytes=None))
    pruned = capped.prune()  # compacts: reads every object; the damaged one is left where it is
    assert pruned.bytes_after < before and len(pruned.pruned) >= 5
    assert capped.verify().ok is False and capped.get(last.id).id == last.id
    (ws / "keep.txt").write_text("changed\n")
    capped.restore(last.id)
    assert (ws / "keep.txt").read_text() == "k\n"
    with pytest.raises(SnapshotError):
        capped.restore(damaged.id)
