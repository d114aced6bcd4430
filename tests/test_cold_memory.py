"""A cold snapshot's memory: what it holds per file, measured by tracemalloc
(allocations, deterministic, not RSS). Issue #20 caps a lone cold snapshot of
100,000 files at 100 MiB above the interpreter; the figures per file here are
what keeps it there (about 1,000 bytes; 1,600 before the prelisting kept
whole stat results, pending files their paths, and the pack an entry tuple)."""

from __future__ import annotations

import os
import random
import tracemalloc
from pathlib import Path

from snapshotter import Snapshotter
from snapshotter.engine.worktree.trust import KnownStat

FILES = 4000
MAX_BYTES_PER_FILE = 1400


def _workspace(root: Path) -> None:
    rng = random.Random(1)
    for i in range(FILES):
        path = root / f"d{i % 40}" / f"s{i % 7}" / f"f{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x = %d\n" % i * rng.randrange(1, 30))


def test_a_cold_snapshot_holds_little_per_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _workspace(ws)
    tracemalloc.start()
    try:
        with Snapshotter(ws, home=tmp_path / "home") as snap:
            info = snap.snapshot("cold")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.files_changed == FILES
    assert peak / FILES < MAX_BYTES_PER_FILE, f"{peak / FILES:.0f} bytes per file"


def test_the_prelisting_keeps_five_numbers_per_file(tmp_path: Path) -> None:
    """The size check's stats stand in for a stat_result with the fields the walk reads."""
    ws = tmp_path / "ws"
    (ws / "a").mkdir(parents=True)
    (ws / "a" / "f.txt").write_bytes(b"hello\n")
    st = os.lstat(ws / "a" / "f.txt")
    known = KnownStat(st)
    assert (known.st_mode, known.st_size, known.st_mtime_ns, known.st_ino) == (
        st.st_mode,
        st.st_size,
        st.st_mtime_ns,
        st.st_ino,
    )
    assert known.st_blocks == getattr(st, "st_blocks", None)
    assert not hasattr(known, "__dict__")
