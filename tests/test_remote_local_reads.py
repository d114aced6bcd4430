"""What a push or a fetch of a few snapshots reads of this store (issue #50:
push and fetch cost what they send, not the history): the local snapshot refs
it goes through and the bytes of its records (``meta/pushed/``,
``meta/fetched-from/``) are the same at 2,000 snapshots as at 300, counted,
not timed. Before, each read every snapshot ref here and both records whole
(0.14 s and 4 MB at 100,000 snapshots). Thresholds lowered as in
``test_archive_counts``; the remote a real ``git daemon`` on the loopback
interface; ``negotiation.HAVES`` lowered to 16 (the newest 16 snapshots
told the server as haves, looked for among the newest 64): a bound of its
own, 1,024 refs read, which 300 snapshots are under.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from remote_servers import has_git_program
from test_archive_counts import AFTER, BATCH, _remote_holds_the_history_archived

from snapshotter import Retention, Snapshotter
from snapshotter.engine.gitstore import archives, negotiation

NAME = "long-history"
pytestmark = pytest.mark.skipif(not has_git_program("daemon"), reason="git daemon serves the remote here")


class _LocalReads:
    """Snapshot refs this store's ref reader yields (``RefStore.numbered`` of
    ``refs/snapshots``) and bytes read of the push and fetch records."""

    def __init__(self, patch: pytest.MonkeyPatch) -> None:
        from snapshotter.engine.gitstore import refstore
        from snapshotter.engine.gitstore.store import SNAPSHOTS

        self.refs = 0
        self.record_bytes = 0
        real_numbered = refstore.RefStore.numbered
        counter = self

        def numbered(refs: Any, base: bytes, *args: Any, **kwargs: Any) -> Iterator[Any]:
            for item in real_numbered(refs, base, *args, **kwargs):
                if base == SNAPSHOTS:
                    counter.refs += 1
                yield item

        patch.setattr(refstore.RefStore, "numbered", numbered)
        fds: dict[int, str] = {}
        real_open, real_read, real_pread = os.open, os.read, os.pread

        def is_record(fd: int) -> bool:
            parts = Path(fds.get(fd, "")).parts
            return len(parts) > 1 and parts[-2] in ("pushed", "fetched-from")

        def counted_open(path: Any, *args: Any, **kwargs: Any) -> int:
            fd = real_open(path, *args, **kwargs)
            fds[fd] = os.fsdecode(path)
            return fd

        def counted_read(fd: int, size: int) -> bytes:
            data = real_read(fd, size)
            counter.record_bytes += len(data) if is_record(fd) else 0
            return data

        def counted_pread(fd: int, size: int, offset: int) -> bytes:
            data = real_pread(fd, size, offset)
            counter.record_bytes += len(data) if is_record(fd) else 0
            return data

        patch.setattr(os, "open", counted_open)
        patch.setattr(os, "read", counted_read)
        patch.setattr(os, "pread", counted_pread)


def _ten_more(snap: Snapshotter, history: Any, what: str) -> None:
    for n in range(10):
        with open(history.path(0, 0), "a") as handle:
            handle.write(f"{what} {n}\n")
        snap.snapshot(what)


def test_a_push_of_10_reads_as_many_local_refs_and_record_bytes_at_2000_as_at_300(
    tmp_path: Path, served: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A remote holding this workspace's history as archiving pushes leave it,
    and a push after it (the state refs, one archiving step); then 10 new
    snapshots: their push goes through as many of this store's snapshot refs
    and reads as many bytes of its records at 2,000 snapshots as at 300 (it
    read every ref and the ``pushed`` record whole), and sends the 10."""
    import longhistory

    monkeypatch.setattr(archives, "ARCHIVE_AFTER", AFTER, raising=False)
    monkeypatch.setattr(archives, "ARCHIVE_BATCH", BATCH, raising=False)
    monkeypatch.setattr(negotiation, "HAVES", 16)
    bare = tmp_path / "remotes" / "shared.git"
    history = longhistory.History(tmp_path / "ws", tmp_path / "home", folders=2, files=5)
    counts: list[tuple[int, int]] = []
    for size in (300, 2000):
        history.build(size)
        with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
            _remote_holds_the_history_archived(bare, snap, served)
            snap.push(served, name=NAME)
            _ten_more(snap, history, f"to push at {size}")
        with pytest.MonkeyPatch.context() as patch:
            reads = _LocalReads(patch)
            with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
                done = snap.push(served, name=NAME)
        assert done.snapshots_sent == 10
        counts.append((reads.refs, reads.record_bytes))
    (refs, record), (refs_long, record_long) = counts
    assert refs_long <= refs + 64, f"(snapshot refs read, record bytes read) at 300 and 2,000: {counts}"
    assert record_long <= record + 4096, f"(snapshot refs read, record bytes read) at 300 and 2,000: {counts}"


def test_a_fetch_of_10_reads_as_many_local_refs_at_2000_as_at_300(
    tmp_path: Path, served: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remote holds this workspace's history as archiving pushes leave it;
    another machine pushes 10 snapshots there, which a first fetch brings; then
    10 more: their fetch goes through as many of this store's snapshot refs at
    2,000 snapshots as at 300 (it read every one, to know which listed
    snapshots it held), and brings the 10."""
    import longhistory
    from test_long_history_ops import _elsewhere

    monkeypatch.setattr(archives, "ARCHIVE_AFTER", AFTER, raising=False)
    monkeypatch.setattr(archives, "ARCHIVE_BATCH", BATCH, raising=False)
    monkeypatch.setattr(negotiation, "HAVES", 16)
    bare = tmp_path / "remotes" / "shared.git"
    history = longhistory.History(tmp_path / "ws", tmp_path / "home", folders=2, files=5)
    other, other_home = tmp_path / "other", tmp_path / "other-home"
    counts: list[int] = []
    for size in (300, 2000):
        history.build(size)
        with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
            _remote_holds_the_history_archived(bare, snap, served)
            snap.push(served, name=NAME)
            _elsewhere(other, other_home, served, 10)
            snap.fetch(served, name=NAME)
            _ten_more(snap, history, f"pushed at {size}")
            snap.push(served, name=NAME)
        _elsewhere(other, other_home, served, 10)
        with pytest.MonkeyPatch.context() as patch:
            reads = _LocalReads(patch)
            with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
                got = snap.fetch(served, name=NAME)
        assert len(got.snapshots) == 10
        counts.append(reads.refs)
    assert counts[1] <= counts[0] + 64, f"snapshot refs read at 300 and 2,000: {counts}"
