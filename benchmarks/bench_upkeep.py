"""The slowest snapshots of a long session: where upkeep (consolidation, gc) lands.

    python benchmarks/bench_upkeep.py                        # 100,000 files, 120 snapshots of 10 changed files
    python benchmarks/bench_upkeep.py --files 20000 --snapshots 200

snapshotter runs with its default retention (50 snapshots, 7 days, 500 MiB), so
its automatic upkeep runs whenever loose objects or packs pile up, inside the
``snapshot()`` call that crossed the line, as it would in an agent's turn. The
git side records the same states in a bare shadow repository (``add -A``,
``write-tree``, ``commit-tree``, ``update-ref`` to a ref per snapshot) and runs
``git gc --auto`` after each, as tools that shell out to git do. Reported per
side: the median and the slowest snapshots, and how often upkeep ran.
This is a measurement, not a test: run it by hand on a quiet machine.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import GitShadow, change, generated_workspace  # noqa: E402

from snapshotter import Snapshotter  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--snapshots", type=int, default=120)
    parser.add_argument("--changed", type=int, default=10, help="files changed between snapshots")
    args = parser.parse_args()
    scratch, ws, paths = generated_workspace("snapupkeep-", args.files)
    rng = random.Random(5)
    snap = Snapshotter(ws, home=scratch / "home")  # the default retention, and so the default upkeep
    git = GitShadow(ws, scratch)
    git.reset()
    snap.snapshot("cold")
    git.snapshot()
    ours: list[float] = []
    theirs: list[float] = []
    upkeeps = 0
    for i in range(args.snapshots):
        change(paths, args.changed, rng)
        loose_before = snap.store_stats().loose_objects
        start = time.perf_counter()
        snap.snapshot(f"s{i}")
        ours.append(time.perf_counter() - start)
        upkeeps += snap.store_stats().loose_objects < loose_before  # upkeep packed the loose objects
        start = time.perf_counter()
        git.run("add", "-A")
        tree = git.run("write-tree").strip()
        commit = git.run("commit-tree", tree, "-m", f"s{i}").strip()
        git.run("update-ref", f"refs/snapshots/{i}", commit)
        git.run("gc", "--auto", "--quiet")
        theirs.append(time.perf_counter() - start)
    final = snap.store_stats()
    snap.close()
    print(
        f"\n{args.snapshots} snapshots of {args.files:,} files, {args.changed} changed before each, "
        f"{time.strftime('%Y-%m-%d')}"
    )
    print(f"{'':26} {'snapshotter':>12} {'git':>12}")
    for name, pick in (
        ("median snapshot", statistics.median),
        ("slowest snapshot", max),
        ("total", sum),
    ):
        print(f"{name:26} {pick(ours):>10.2f} s {pick(theirs):>10.2f} s")
    print("3 slowest, snapshotter:", ", ".join(f"{t:.2f} s" for t in sorted(ours)[-3:]))
    print("3 slowest, git:        ", ", ".join(f"{t:.2f} s" for t in sorted(theirs)[-3:]))
    print(
        f"snapshotter: upkeep ran {upkeeps} times; the store ends with {final.loose_objects} loose objects, "
        f"{final.packs} packs, {final.bytes_on_disk / 2**20:.1f} MiB, {final.snapshots} snapshots kept"
    )
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
