"""Store size after 50 snapshots and gc, beside ``git gc`` of the same history.

    python benchmarks/bench_store.py                  # 20,000 files, 50 snapshots, 1% changed each time

The git side records the same 50 states in a bare shadow repository with the
git binary (``add -A``, ``write-tree``, ``commit-tree``, ``update-ref``), then
runs ``git gc``. Sizes are the bytes of every file in each repository.
This is a measurement, not a test: run it by hand.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import GitShadow, change, generated_workspace  # noqa: E402

from snapshotter import Retention, Snapshotter  # noqa: E402


def size_of(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--snapshots", type=int, default=50)
    parser.add_argument("--changed", type=float, default=0.01, help="fraction of files changed between snapshots")
    args = parser.parse_args()
    scratch, ws, paths = generated_workspace("snapstore-", args.files)
    rng = random.Random(3)
    snap = Snapshotter(ws, home=scratch / "home", retention=Retention.unlimited())
    git = GitShadow(ws, scratch)
    git.reset()
    ours_time = git_time = 0.0
    parent = ""
    for i in range(args.snapshots):
        if i:
            change(paths, max(1, int(args.files * args.changed)), rng)
        start = time.perf_counter()
        snap.snapshot(f"s{i}")
        ours_time += time.perf_counter() - start
        start = time.perf_counter()
        git.run("add", "-A")
        tree = git.run("write-tree").strip()
        commit = git.run("commit-tree", tree, *(["-p", parent] if parent else []), "-m", f"s{i}").strip()
        git.run("update-ref", "refs/heads/main", commit)
        parent = commit
        git_time += time.perf_counter() - start
    ours_before, git_before = size_of(Path(snap.store_path)), size_of(git.dir)
    start = time.perf_counter()
    result = snap.gc()
    ours_gc = time.perf_counter() - start
    start = time.perf_counter()
    git.run("gc", "--quiet")
    git_gc = time.perf_counter() - start
    ours_after, git_after = size_of(Path(snap.store_path)), size_of(git.dir)
    snap.close()
    print(
        f"\n{args.snapshots} snapshots of {args.files:,} files, {args.changed:.0%} changed between them, "
        f"{time.strftime('%Y-%m-%d')}"
    )
    print(f"{'':24} {'snapshotter':>14} {'git':>14} {'ratio':>7}")
    print(f"{'time to record all':24} {ours_time:>12.1f} s {git_time:>12.1f} s {ours_time / git_time:>7.2f}")
    print(
        f"{'store before gc':24} {ours_before / 2**20:>10.1f} MiB {git_before / 2**20:>10.1f} MiB "
        f"{ours_before / git_before:>7.2f}"
    )
    print(f"{'gc time':24} {ours_gc:>12.1f} s {git_gc:>12.1f} s {ours_gc / git_gc:>7.2f}")
    print(
        f"{'store after gc':24} {ours_after / 2**20:>10.1f} MiB {git_after / 2**20:>10.1f} MiB "
        f"{ours_after / git_after:>7.2f}"
    )
    print(f"objects kept {result.objects_kept:,}, removed {result.objects_removed:,}")
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
