"""The rows of ``bench_long_history.py`` for what drops or sends part of a
long history (issue #50: "retention, pins, sessions, forks, push and fetch keep
working at 100,000 snapshots, each at a cost that grows with what it drops or
sends, not with the history"):

- ``retention, oldest 10``: a snapshot whose upkeep pass drops the oldest 10
  snapshots (the age limit set, untimed, between the 10th and 11th oldest;
  the pass's hourly gate reset): the real path each snapshot runs;
- ``pin + unpin``: a snapshot 50 back pinned, then unpinned;
- ``session's listing``: ``list(limit=20, session=...)`` of the newest turn's session;
- ``fork``: ``fork()`` of the newest checkpoint into a new folder (the new
  folder's store and files removed after, untimed);
- ``push 10 new``: 10 snapshots taken (untimed), then ``push()`` (timed
  alone, the store open) to a real ``git daemon`` on the loopback interface
  whose repository holds every other snapshot already;
- ``fetch 10 new``: another workspace pushes 10 snapshots to the same namespace
  (untimed), then ``fetch()`` brings them in.

The remote is made to hold the history the way pushes of it would leave it
(``longhistory.remote_holds``: the newest ``LISTED`` snapshots as refs under
``refs/snapshotter/<name>/snapshots/``, the older ones in this store's chain of
archives, and this store's record of what it pushed), written directly: its
objects come through ``objects/info/alternates`` to the store's, so no
100,000-snapshot first push is timed or waited for. Besides the commits parsed, each row counts bytes no load
disturbs: ``packed-refs`` bytes rewritten, and bytes read from and written to
the server.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import longhistory  # noqa: E402
import remote_servers  # noqa: E402

from snapshotter import Retention, Snapshotter  # noqa: E402
from snapshotter.engine.gitstore import archives, packedrewrite, wirebudget  # noqa: E402
from snapshotter.engine.gitstore.location import store_path_for  # noqa: E402

NAME = "bench-history"
DROPPED = 10
SENT = 10
LISTED = (archives.ARCHIVE_AFTER + archives.ARCHIVE_BATCH) // 2
"""Snapshot refs the remote holds for this store beyond its archives: a store
that keeps pushing holds between ARCHIVE_AFTER - ARCHIVE_BATCH and
ARCHIVE_AFTER of them (1,000 to 2,000); the middle, so a push of 10 archives
nothing."""


class Wire:
    """Bytes read from a server (every read goes through a ``Meter``), bytes
    written to it as pkt-lines (wants, haves, ref updates: not the pack), and
    ``packed-refs`` bytes rewritten: counts no load disturbs."""

    def __init__(self) -> None:
        self.read = self.written = self.rewritten = 0
        self.on = True
        take = wirebudget.Meter.take
        wire = self

        def counted_take(meter: wirebudget.Meter, count: int) -> None:
            wire.read += count * wire.on
            take(meter, count)

        wirebudget.Meter.take = counted_take  # type: ignore[method-assign]
        from dulwich import protocol

        write = protocol.Protocol.write_pkt_line

        def counted_write(proto: Any, line: bytes | None) -> None:
            wire.written += len(line or b"") * wire.on
            write(proto, line)

        protocol.Protocol.write_pkt_line = counted_write  # type: ignore[method-assign]
        rewritten = packedrewrite.rewritten

        def counted_rewritten(*args: Any, **kwargs: Any) -> list[bytes]:
            pieces = rewritten(*args, **kwargs)
            wire.rewritten += sum(len(piece) for piece in pieces) * wire.on
            return pieces

        packedrewrite.rewritten = counted_rewritten  # type: ignore[assignment]

    def snapshot(self) -> tuple[int, int, int]:
        return self.read, self.written, self.rewritten

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Nothing counted: a row's untimed set-up (another machine's push)."""
        self.on = False
        try:
            yield
        finally:
            self.on = True


@contextlib.contextmanager
def serving(scratch: Path) -> Iterator[tuple[str, Path]]:
    """A ``git daemon`` serving an empty bare repository: (its URL, its folder)."""
    base = scratch / "remotes"
    base.mkdir()
    bare = remote_servers.bare_repository(base / "history.git")
    with remote_servers.git_daemon(base) as url:
        yield f"{url}/history.git", bare


class OpsRows:
    """The rows above, on the history ``rows`` (``bench_long_history.Rows``) holds."""

    def __init__(self, rows: Any, scratch: Path, url: str, bare: Path, wire: Wire) -> None:
        self.rows, self.scratch, self.url, self.bare, self.wire = rows, scratch, url, bare, wire
        self.forks = 0
        self.dropped: list[int] = []
        """How many snapshots each retention run dropped."""
        self.other = scratch / "other-ws"
        self.other.mkdir()
        (self.other / "a.txt").write_text("another machine\n")
        self.other_edits = 0

    def sync(self) -> None:
        """At each size, before its rows: the remote holds the whole history."""
        with self.rows._open() as snap:
            longhistory.remote_holds(self.bare, snap, self.url, NAME, listed=LISTED, batch=archives.ARCHIVE_BATCH)
            snap.push(self.url, name=NAME)  # this store's state refs, as its last push left them

    def calls(self) -> dict[str, Callable[[], object]]:
        from bench_long_history import Took

        rows = self.rows
        open_ = rows._open

        def timed(setup: Callable[[], Any], use: Callable[[Any], object], cleanup: Callable[[Any], None]) -> Took:
            made = setup()
            started = time.perf_counter()
            try:
                use(made)
                return Took(time.perf_counter() - started)
            finally:
                cleanup(made)

        def retention() -> object:
            with open_() as snap:
                oldest = snap._engine_ok().catalog.oldest_first()
                firsts = [next(oldest) for _ in range(DROPPED + 1)]
                count = snap.store_stats().snapshots
            cutoff = firsts[DROPPED - 1].created_at + (firsts[DROPPED].created_at - firsts[DROPPED - 1].created_at) / 2
            rows._edit()

            def setup() -> Snapshotter:
                age = datetime.now(timezone.utc) - cutoff
                kept = Retention(max_snapshots=None, max_age=age, max_store_bytes=None, max_undo=1)
                snap = Snapshotter(rows.h.ws, home=rows.h.home, retention=kept)
                snap._engine_ok().catalog.index.current().age_pass = 0.0  # the hourly gate: due now
                return snap

            took = timed(setup, lambda snap: snap.snapshot("bench"), lambda snap: snap.close())
            with open_() as snap:
                left = snap.store_stats().snapshots
            self.dropped.append(count + 1 - left)  # fewer than DROPPED where a session's brackets keep some; printed
            return took

        def pin() -> object:
            with open_() as snap:
                target = snap.list(limit=50)[-1]
                snap.pin(target)
                snap.unpin(target)
            return None

        def fork() -> object:
            self.forks += 1
            dest = self.scratch / f"fork-{self.forks}"

            def cleanup(_: object) -> None:
                store = store_path_for(str(dest), rows.h.home)
                shutil.rmtree(dest, ignore_errors=True)
                shutil.rmtree(store, ignore_errors=True)

            def use(snap: Snapshotter) -> None:
                snap.fork(snap.list(limit=1)[0], dest).close()

            with open_() as snap:
                return timed(lambda: snap, use, cleanup)

        def push() -> object:
            with open_() as snap:
                for _ in range(SENT):
                    rows._edit()
                    snap.snapshot("to push")

            def use(snap: Snapshotter) -> None:
                done = snap.push(self.url, name=NAME)
                if done.snapshots_sent < SENT:  # the warm run sends the snapshots other rows took too
                    raise SystemExit(f"push sent {done.snapshots_sent} snapshots, not {SENT}")

            with open_() as snap:
                return timed(lambda: snap, use, lambda _: None)

        def fetch() -> object:
            with (
                self.wire.paused(),
                Snapshotter(self.other, home=rows.h.home, retention=Retention.unlimited()) as other,
            ):
                for _ in range(SENT):
                    self.other_edits += 1
                    with open(self.other / "a.txt", "a") as handle:
                        handle.write(f"edit {self.other_edits}\n")
                    other.snapshot("elsewhere")
                other.push(self.url, name=NAME)

            def use(snap: Snapshotter) -> None:
                got = snap.fetch(self.url, name=NAME)
                if len(got.snapshots) < SENT:  # (it no longer brings back what retention dropped here)
                    raise SystemExit(f"fetch brought {len(got.snapshots)} snapshots, not {SENT}")

            with open_() as snap:
                return timed(lambda: snap, use, lambda _: None)

        return {
            f"retention, oldest {DROPPED}": retention,
            "pin + unpin": pin,
            "session's listing": lambda: _listing(open_, rows.last),
            "fork": fork,
            f"push {SENT} new (git://)": push,
            f"fetch {SENT} new (git://)": fetch,
        }


def _listing(open_: Callable[[], Snapshotter], session: str) -> object:
    with open_() as snap:
        return snap.list(limit=20, session=session)
