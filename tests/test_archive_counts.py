"""The counting test of the two-round archiving push (docs/remotes.md,
"Archives", step 2 onwards), written ahead of the code it proves: marked xfail
until a push archives. Thresholds lowered (``ARCHIVE_AFTER`` 100,
``ARCHIVE_BATCH`` 50, set on ``archives``, where the next session is to define
them); remotes are real ``git daemon`` s on the loopback interface; git is the
oracle for what the remote holds afterwards.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from remote_servers import GIT, has_git_program
from test_long_history_ops import _Written

from snapshotter import Retention, Snapshotter
from snapshotter.engine.gitstore import archives

NAME = "long-history"
AFTER, BATCH = 100, 50
LISTED = 160
"""Snapshot refs the remote holds for this store after its archives: the setting-up
push archives one batch (110 left), the counted one another (over ``AFTER``)."""
WHEN = 1_765_000_000
STACK = 4
"""Entries each of the store's stacks keeps in the set-up (see ``_remote_holds_the_history_archived``)."""
pytestmark = pytest.mark.skipif(not has_git_program("daemon"), reason="git daemon serves the remote here")


class _ReadFromServer:
    """Bytes read from the server (every metered read: ref listings, advertisements, status)."""

    def __init__(self, patch: pytest.MonkeyPatch) -> None:
        from snapshotter.engine.gitstore import wirebudget

        self.bytes = 0
        real = wirebudget.Meter.take

        def take(meter: wirebudget.Meter, count: int) -> None:
            self.bytes += count
            real(meter, count)

        patch.setattr(wirebudget.Meter, "take", take)


def git(bare: Path, *args: str) -> str:
    assert GIT is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run([GIT, "--git-dir", str(bare), *args], capture_output=True, text=True, env=env).stdout


def _remote_holds_the_history_archived(bare: Path, snap: Snapshotter, url: str) -> None:
    """The remote holds every snapshot of ``snap``'s store under ``NAME`` as
    archiving pushes would have left it (``longhistory.remote_holds``): all but
    the newest ``LISTED`` in a chain of archives of ``BATCH`` each. Each of the
    store's stacks is cut to its newest ``STACK`` entries first: the host refs
    (one an entry of an undo or turns stack, up to ``hoststate.KEPT_ENTRIES`` a
    stack) differ between 300 and 2,000 until both are past that bound, a cost
    of their own (``tests/test_remote_host_state.py``), not this test's."""
    import longhistory

    from snapshotter.remote import hoststate

    store = snap._engine_ok().store
    for stack in [*hoststate.STACKS, *(f"sessions/{s}/{n}" for s in store.sessions() for n in hoststate.STACKS)]:
        store.drop_from_stacks([stack], set(store.stack(stack)[:-STACK]))
    longhistory.remote_holds(bare, snap, url, NAME, listed=LISTED, batch=BATCH, when=WHEN)


def test_an_archiving_push_of_10_reads_and_sends_as_much_at_2000_as_at_300(
    tmp_path: Path, served: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A remote holding this workspace's history in archives and ``LISTED``
    snapshot refs, and 10 new snapshots here: their push, which also archives
    the oldest 50 listed (two rounds), sends 10 snapshots and as many objects,
    reads as many bytes from the server and writes as many at 2,000 as at 300
    (one ref a snapshot: ~283 bytes a snapshot more read, issue #50). git finds
    every snapshot reachable afterwards, the new archive over the old tip, and
    no snapshot ref of an archived snapshot."""
    import longhistory

    monkeypatch.setattr(archives, "ARCHIVE_AFTER", AFTER, raising=False)
    monkeypatch.setattr(archives, "ARCHIVE_BATCH", BATCH, raising=False)
    bare = tmp_path / "remotes" / "shared.git"
    history = longhistory.History(tmp_path / "ws", tmp_path / "home", folders=2, files=5)
    counts: list[tuple[int, int, int, int]] = []
    for size in (300, 2000):
        history.build(size)
        with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
            _remote_holds_the_history_archived(bare, snap, served)
            every = {sha.hex() for _, sha in snap._engine_ok().store.iter_oldest_first()}
            assert every <= set(git(bare, "rev-list", "--all").split())  # the set-up itself is sound
            assert snap.push(served, name=NAME).snapshots_sent == 0  # state refs, and one archiving step
            for n in range(10):
                with open(history.path(0, 0), "a") as handle:
                    handle.write(f"new {n}\n")
                snap.snapshot("to push")
            archive_ref = next(n for n in git(bare, "for-each-ref", "--format=%(refname)").split() if "archive" in n)
            old_tip = git(bare, "rev-parse", archive_ref).strip()
        with pytest.MonkeyPatch.context() as patch:
            written, read = _Written(patch), _ReadFromServer(patch)
            with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
                done = snap.push(served, name=NAME)
                every = {sha.hex() for _, sha in snap._engine_ok().store.iter_oldest_first()}
        counts.append((done.snapshots_sent, done.objects_sent, read.bytes, written.bytes))
        new_tip = git(bare, "rev-parse", archive_ref).strip()
        assert new_tip != old_tip and git(bare, "rev-parse", f"{new_tip}^1").strip() == old_tip
        refs = git(bare, "for-each-ref", "--format=%(refname)", f"refs/snapshotter/{NAME}/snapshots/").split()
        assert len(refs) == LISTED - 2 * BATCH + 10, len(refs)
        assert every <= set(git(bare, "rev-list", "--all").split())
        fsck = subprocess.run([str(GIT), "--git-dir", str(bare), "fsck", "--strict", "--no-progress"], check=False)
        assert fsck.returncode == 0
    (sent, objects, read_short, written_short), (sent_long, objects_long, read_long, written_long) = counts
    detail: Any = f"(snapshots, objects sent, bytes read, bytes written) at 300 and 2,000: {counts}"
    assert sent == sent_long == 10, detail
    assert objects_long == objects, detail
    assert read_long <= read_short + 4096, detail
    assert written_long <= written_short + 1024, detail
