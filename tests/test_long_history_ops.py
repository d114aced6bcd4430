"""Long histories (issue #50): what drops or sends part of a long history costs
what it drops or sends, counted, not timed (timings: the rows of
``benchmarks/long_history_ops.py``).

Histories of thousands of snapshots are written fast by ``longhistory``; the
remotes are real ``git daemon`` s on the loopback interface (``remote_servers``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from remote_servers import has_git_program

from snapshotter import Retention, Snapshotter

NAME = "long-history"
pytestmark = pytest.mark.skipif(not has_git_program("daemon"), reason="git daemon serves the remote here")


class _Written:
    """Bytes this process writes to a server as pkt-lines (wants, haves, ref
    updates; not a pack), counted through dulwich's protocol writer."""

    def __init__(self, patch: pytest.MonkeyPatch) -> None:
        from dulwich import protocol

        self.bytes = 0
        real = protocol.Protocol.write_pkt_line

        def counted(proto: Any, line: bytes | None) -> None:
            self.bytes += len(line or b"")
            real(proto, line)

        patch.setattr(protocol.Protocol, "write_pkt_line", counted)


class _ReadInReceive:
    """Bytes read from the server inside ``replication.receive``: a fetch's pack
    exchange (the refs a v2 server lists before the pack, and the pack)."""

    def __init__(self, patch: pytest.MonkeyPatch) -> None:
        from snapshotter.engine.gitstore import replication, wirebudget

        self.bytes, self.inside = 0, False
        real_take, real_receive = wirebudget.Meter.take, replication.receive

        def take(meter: wirebudget.Meter, count: int) -> None:
            self.bytes += count if self.inside else 0
            real_take(meter, count)

        def receive(*args: Any, **kwargs: Any) -> int:
            self.inside = True
            try:
                return real_receive(*args, **kwargs)
            finally:
                self.inside = False

        patch.setattr(wirebudget.Meter, "take", take)
        patch.setattr(replication, "receive", receive)


class _ObjectReads:
    """Objects read from the store (``StoredObjects.read_raw``)."""

    def __init__(self, patch: pytest.MonkeyPatch) -> None:
        from snapshotter.engine.gitstore import objectstore

        self.count = 0
        real = objectstore.StoredObjects.read_raw

        def read_raw(store: Any, sha: bytes, *args: Any) -> Any:
            self.count += 1
            return real(store, sha, *args)

        patch.setattr(objectstore.StoredObjects, "read_raw", read_raw)


def _elsewhere(ws: Path, home: Path, url: str, count: int) -> None:
    """Another machine's workspace takes ``count`` snapshots and pushes them to ``NAME``."""
    ws.mkdir(exist_ok=True)
    with Snapshotter(ws, home=home, retention=Retention.unlimited()) as other:
        for _ in range(count):
            with open(ws / "a.txt", "a") as handle:
                handle.write("one more line\n")
            other.snapshot("elsewhere")
        other.push(url, name=NAME)


def test_a_fetch_of_a_few_snapshots_tells_the_server_as_much_at_2000_as_at_300(tmp_path: Path, served: str) -> None:
    """A fetch of 5 new snapshots writes as many bytes to the server (its wants
    and haves) with 2,000 snapshots here as with 300: the haves are this
    store's newest snapshots, not all of them (all: 100 KB at 2,000, 5 MB at
    100,000, for 5 snapshots)."""
    import longhistory

    history = longhistory.History(tmp_path / "ws", tmp_path / "home", folders=2, files=5)
    other, other_home = tmp_path / "other", tmp_path / "other-home"
    written: list[int] = []
    for size in (300, 2000):
        history.build(size)
        _elsewhere(other, other_home, served, 5)
        with pytest.MonkeyPatch.context() as patch:
            wire = _Written(patch)
            with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
                got = snap.fetch(served, name=NAME)
            assert len(got.snapshots) == 5
            written.append(wire.bytes)
    assert written[1] <= written[0] + 1024, f"bytes written to the server at 300 and 2,000 snapshots: {written}"


def test_a_fetch_of_a_few_snapshots_reads_as_much_of_its_pack_exchange_at_2000_as_at_300(
    tmp_path: Path, served: str
) -> None:
    """A remote holding this workspace's history (one ref a snapshot) and 5 new
    snapshots from another machine: the fetch's pack exchange (the refs a
    protocol v2 server lists before the pack, and the pack) reads as many bytes
    at 2,000 snapshots as at 300. It asked for every ref the server holds
    (200 KB at 2,000, 1.4 MB at 10,000) before a pack of a few KB; now only the
    refs of the snapshots it fetches. (Which snapshots are new is still read
    from the namespace's whole listing: see docs/performance.md.)"""
    import longhistory

    bare = tmp_path / "remotes" / "shared.git"
    history = longhistory.History(tmp_path / "ws", tmp_path / "home", folders=2, files=5)
    other, other_home = tmp_path / "other", tmp_path / "other-home"
    read: list[int] = []
    for size in (300, 2000):
        history.build(size)
        with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
            longhistory.remote_holds(bare, snap, served, NAME)
        _elsewhere(other, other_home, served, 5)
        with pytest.MonkeyPatch.context() as patch:
            exchange = _ReadInReceive(patch)
            with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
                got = snap.fetch(served, name=NAME)
            assert len(got.snapshots) == 5
            read.append(exchange.bytes)
    assert read[1] <= read[0] + 4096, f"bytes of the pack exchange read at 300 and 2,000 snapshots: {read}"


def test_a_push_of_10_snapshots_reads_and_sends_as_much_at_2000_as_at_300(tmp_path: Path, served: str) -> None:
    """A remote holding this workspace's history (one ref a snapshot), and 10
    new snapshots here: their push sends the same objects, writes as many
    bytes to the server (its ref updates), reads as many objects of this
    store, and writes 10 lines to its record of what it pushed, at 2,000
    snapshots as at 300 (the record was rewritten whole: 4 MB at 100,000). It read the trees of every snapshot
    the remote held, to leave out what they reach (5,800 objects at 3,000);
    now those of the newest it holds. (The refs the server lists still grow
    with the history: see docs/performance.md.)"""
    import longhistory

    bare = tmp_path / "remotes" / "shared.git"
    history = longhistory.History(tmp_path / "ws", tmp_path / "home", folders=2, files=5)
    counts: list[tuple[int, int, int]] = []
    for size in (300, 2000):
        history.build(size)
        with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
            longhistory.remote_holds(bare, snap, served, NAME)
            snap.push(served, name=NAME)  # this store's base and stacks, as its last push left them
            for n in range(10):
                with open(history.path(0, 0), "a") as handle:
                    handle.write(f"new {n}\n")
                snap.snapshot("to push")
        with pytest.MonkeyPatch.context() as patch:
            wire = _Written(patch)
            reads = _ObjectReads(patch)
            recorded = _Recorded(patch)
            with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
                done = snap.push(served, name=NAME)
            assert done.snapshots_sent == 10
            counts.append((done.objects_sent, wire.bytes, reads.count, recorded.bytes))
    (objects, written, read, _), (objects_long, written_long, read_long, _) = counts
    assert objects_long == objects, counts
    assert written_long <= written + 1024, counts
    assert read_long <= read + 64, counts
    assert all(count[3] <= 10 * 41 + 64 for count in counts), (
        f"(objects sent, bytes written, objects read, bytes of the pushed record written) at 300 and 2,000: {counts}"
    )


class _Recorded:
    """Bytes written to the store's record of what it pushed (``meta/pushed/``):
    whole rewrites and additions."""

    def __init__(self, patch: pytest.MonkeyPatch) -> None:
        from snapshotter.remote import remotes

        self.bytes = 0
        for name in ("_write_text", "_append_text"):
            real = getattr(remotes, name, None)
            if real is not None:
                patch.setattr(remotes, name, self._counting(real))

    def _counting(self, real: Any) -> Any:
        def counted(path: str, text: str) -> None:
            if "pushed" in Path(path).parts:
                self.bytes += len(text)
            real(path, text)

        return counted


def _touching_calls(history: Any) -> dict[str, tuple[int, int]]:
    """(snapshot commits parsed, ``packed-refs`` rewrites) of: the upkeep pass of a
    snapshot whose age limit drops the oldest ~30 snapshots, a pin and unpin of
    one snapshot, and a session's listing of 20, each in a new Snapshotter."""
    from datetime import datetime, timezone

    from test_ref_reading import _Reads

    from snapshotter.engine.gitstore import packedrewrite

    with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
        snap.sessions()  # the history index made (a store's usual state)
        oldest = [info for _, info in zip(range(31), snap._engine_ok().catalog.oldest_first())]
        target = snap.list(limit=50)[-1].id
    cutoff = oldest[29].created_at + (oldest[30].created_at - oldest[29].created_at) / 2
    store_path = Snapshotter(history.ws, home=history.home).store_path
    found: dict[str, tuple[int, int]] = {}
    for name in ("retention", "pin + unpin", "a session's listing"):
        with pytest.MonkeyPatch.context() as patch:
            reads, rewrites = _Reads(store_path, patch), [0]
            real = packedrewrite.rewrite

            def rewrite(*args: Any, counted: list[int] = rewrites, real: Any = real) -> None:
                counted[0] += 1
                real(*args)

            patch.setattr(packedrewrite, "rewrite", rewrite)
            if name == "retention":
                kept = Retention(max_snapshots=None, max_age=datetime.now(timezone.utc) - cutoff, max_store_bytes=None)
                with Snapshotter(history.ws, home=history.home, retention=kept) as snap:
                    with open(history.path(0, 0), "a") as handle:
                        handle.write("an edit\n")
                    snap.snapshot("after a pause")
            with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
                if name == "pin + unpin":
                    snap.unpin(snap.pin(target))
                elif name == "a session's listing":
                    snap.list(limit=20, session="claude-code-aa11")
            found[name] = (reads.commits, rewrites[0])
    return found


def test_retention_pins_and_a_sessions_listing_do_as_much_at_2000_as_at_300(tmp_path: Path) -> None:
    """What retention, a pin and unpin, and a session's listing parse of the
    history is the same at 2,000 snapshots as at 300, and a retention pass
    rewrites ``packed-refs`` at most once for the snapshots' refs, once for
    the stacks and once for each session's undo points
    (``anchors.before_dropping``): what they drop or touch, never the history.
    A guard: nothing here grew before this test either (each rewrite copies
    ``packed-refs`` whole, as git's format needs: see docs/performance.md)."""
    import longhistory

    counts = []
    for size in (300, 2000):
        history = longhistory.History(tmp_path / f"ws{size}", tmp_path / f"home{size}", folders=2, files=5)
        history.build(size)
        counts.append(_touching_calls(history))
    short, long = counts
    for name in short:
        # a few more where the newest turn falls differently (a session's 20 span two of its turns or three)
        assert long[name][0] <= short[name][0] + 64, (name, counts)
        assert long[name][1] <= 2 + 3, (name, counts)  # the refs, the stacks, each of 3 sessions' undo: not a size
    assert short["retention"][1] >= 1, counts  # it dropped something
