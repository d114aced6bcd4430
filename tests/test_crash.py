"""Crash safety: a worker doing snapshot, restore, undo, prune, gc and consolidation is killed
with SIGKILL at random moments; after each kill the store must open, keep every
snapshot retention should keep, pass verify (and ``git fsck --strict``), and
restore every snapshot exactly. An interrupted restore is completed by running
it again, or undone from its ``pre-restore`` snapshot.

CI runs a handful of kills; ``python -m pytest tests/test_crash.py --long``
runs 150 (``SNAPSHOTTER_CRASH_KILLS`` sets any number).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import GIT, git
from crash_worker import KEEP

from snapshotter import Retention, SnapshotInfo, Snapshotter

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")

WORKER = Path(__file__).with_name("crash_worker.py")
TMP_PREFIXES = (".snapshotter-tmp-",)


def _kills(request: pytest.FixtureRequest) -> int:
    if os.environ.get("SNAPSHOTTER_CRASH_KILLS"):
        return int(os.environ["SNAPSHOTTER_CRASH_KILLS"])
    return 150 if request.config.getoption("--long") else 6


def _run_and_kill(ws: Path, home: Path, journal: Path, seed: int, rng: random.Random) -> None:
    before = journal.read_text().count("\n") if journal.exists() else 0
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), str(ws), str(home), str(journal), str(seed)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        if rng.random() < 0.2:  # sometimes while it is still starting, creating or opening the store
            time.sleep(rng.uniform(0.0, 0.6))
        else:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and proc.poll() is None:
                if journal.exists() and journal.read_text().count("\n") > before:
                    break
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 1.5))
        if proc.poll() is not None:
            output = proc.stderr.read().decode() if proc.stderr else ""
            raise AssertionError(f"the worker died by itself (worker seed {seed}):\n{output}")
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
        if proc.stderr:
            proc.stderr.close()


def _journal(journal: Path) -> tuple[list[tuple[int, str, str]], list[str]]:
    lines = journal.read_text().splitlines() if journal.exists() else []
    snaps = []
    for line in lines:
        if line.startswith("snap "):
            _, seq, sha, tree = line.split()
            snaps.append((int(seq), sha, tree))
    return snaps, lines


def _check(ws: Path, home: Path, journal: Path, rng: random.Random, restored: set[str]) -> None:
    """Everything promised after a kill. ``restored`` holds the snapshots already
    restored exactly by an earlier check (or made by one): each snapshot is
    restored once after the kill that followed it, plus a sample of older ones,
    so the checks do not grow with the store."""
    snap = Snapshotter(ws, home=home, retention=Retention.unlimited(), lock_timeout=5)
    try:
        present = {info.id: info for info in snap.list()}
        journaled, lines = _journal(journal)
        for seq, sha, tree in journaled:
            if sha in present:
                assert present[sha].tree_id == tree
            else:  # dropped: only retention may do that, keeping KEEP snapshots, the newest among them
                newer = sum(1 for info in present.values() if info.sequence > seq)
                assert len(present) >= KEEP and newer >= 1, f"snapshot {seq} lost with {len(present)} kept"
        verified = snap.verify(full=True)
        assert verified.ok, verified.problems
        if GIT is not None:
            git("--git-dir", snap.store_path, "fsck", "--strict", "--no-dangling", "--no-progress")
            logged = set(git("--git-dir", snap.store_path, "log", "--all", "--format=%H").split())
            assert set(present) <= logged, "git log --all misses a snapshot: its ref is not one git reads"

        last = lines[-1] if lines else ""
        if last.startswith("restore-begin "):  # killed mid-restore
            target_id = last.split()[1]
            before_restore = max((s for s, _, _ in journaled), default=0)
            safety = [
                info for info in present.values() if info.label == "pre-restore" and info.sequence > before_restore
            ]
            if safety and rng.random() < 0.5:
                chosen = max(safety, key=lambda info: info.sequence)  # undo the interrupted restore
            elif target_id in present:
                chosen = present[target_id]  # or complete it by running it again
            else:
                chosen = None
            if chosen is not None:
                _restore_exactly(snap, chosen, restored)

        fresh = [info for info in present.values() if info.id not in restored]
        older = [info for info in present.values() if info.id in restored]
        for info in sorted(fresh + rng.sample(older, min(2, len(older))), key=lambda i: i.sequence):
            _restore_exactly(snap, info, restored)
        leftovers = [os.path.join(d, n) for d, _, names in os.walk(ws) for n in names if n.startswith(TMP_PREFIXES)]
        assert leftovers == [] or all(not os.path.exists(p) for p in leftovers)
    finally:
        snap.close()


def _restore_exactly(snap: Snapshotter, info: SnapshotInfo, restored: set[str]) -> None:
    result = snap.restore(info.id)
    again = snap.snapshot()
    assert again.tree_id == info.tree_id, f"snapshot {info.sequence} did not restore exactly"
    restored.update({info.id, again.id, result.safety_snapshot_id or info.id})


def test_sigkill_at_random_moments_loses_no_completed_snapshot(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "seed.txt").write_text("start\n")
    home = tmp_path / "home"
    journal = tmp_path / "journal"
    seed = int(os.environ.get("SNAPSHOTTER_CRASH_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    kills = _kills(request)
    restored: set[str] = set()
    for round_number in range(kills):
        _run_and_kill(ws, home, journal, seed * 1000 + round_number, rng)
        try:
            _check(ws, home, journal, rng, restored)
        except AssertionError as failure:
            raise AssertionError(f"after kill {round_number + 1} (SNAPSHOTTER_CRASH_SEED={seed}): {failure}") from None
    assert kills


_HOLD_REF_LOCK = """
import sys, time
from snapshotter import Snapshotter
snap = Snapshotter(sys.argv[1], home=sys.argv[2])
engine = snap._engine_ok()
engine.lock.acquire()  # as a writer does, then dies between locking a ref and renaming it
open(sys.argv[3], "w").close()
print("holding", flush=True)
time.sleep(60)
"""


def test_a_ref_lock_left_by_a_killed_writer_is_cleared_by_the_next_one(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    snap = Snapshotter(ws, home=home, retention=Retention.unlimited())
    for i in range(3):
        (ws / "f.txt").write_text(str(i))
        snap.snapshot()
    oldest = snap.list()[-1]
    snap.close()
    stale = Path(snap.store_path, "refs", "snapshots", f"{oldest.sequence:010d}.lock")
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_REF_LOCK, str(ws), str(home), str(stale)], stdout=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"holding"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert stale.exists()
    snap = Snapshotter(ws, home=home, retention=Retention(max_snapshots=2, max_age=None, max_store_bytes=None))
    result = snap.prune()  # needs the oldest ref's lock
    assert [s.id for s in result.pruned] == [oldest.id]
    assert oldest.id not in {s.id for s in snap.list()}
    assert not stale.exists()
    snap.close()
