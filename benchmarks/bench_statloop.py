"""The walk's stat loop, compiled and in Python, beside the bare ``lstat`` of the same files (issue #51).

    python benchmarks/bench_statloop.py                  # 100,000 generated files, 9 rounds
    python benchmarks/bench_statloop.py --files 20000 --rounds 5

A no-change walk ``lstat``s every file and compares it with its stat-cache
record (``PackedFolder.all_match``). This times that loop alone, over every
folder of a real stat cache (a snapshot of generated files is taken first), in
three ways each round, in one process, the page cache warm:

- ``compiled``: the C loop (``_statmatch``), if it was built here;
- ``python``: the same loop in Python (``all_match`` given another ``lstat``);
- ``bare lstat``: ``os.stat(name, dir_fd=fd, follow_symlinks=False)`` for each
  file and nothing else, the floor of any Python loop.

Medians and minimums of the CPU time of each round are printed, per file.
This is a measurement, not a test: run it by hand.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from bench_engine import generated_workspace  # noqa: E402

from snapshotter import Snapshotter  # noqa: E402
from snapshotter.engine.fsutil import DIR_FLAGS  # noqa: E402
from snapshotter.engine.worktree import packedfolder, statcache  # noqa: E402
from snapshotter.engine.worktree.packedfolder import PackedFolder  # noqa: E402


def in_python(name: str, **kwargs: Any) -> os.stat_result:
    """``os.stat`` by another name: ``all_match`` runs its Python loop."""
    return os.stat(name, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    scratch, ws, _ = generated_workspace("snapstat-", args.files)
    try:
        with Snapshotter(ws, home=scratch / "home") as snap:
            snap.snapshot("the stat cache")
            cache_path = os.path.join(snap._engine_ok().store.meta_dir, "statcache")
        cache = statcache.load(cache_path)
        folders = [(rel, cache.folder(rel)) for rel in cache.folders]
        tables = [(os.open(ws / rel if rel else ws, DIR_FLAGS), t) for rel, t in folders if type(t) is PackedFolder]
        files = sum(len(t) for _, t in tables)
        cutoff = cache.racy_cutoff()

        def loop(lstat: Callable[..., os.stat_result]) -> None:
            for fd, table in tables:
                if table.all_match(lstat, fd, cutoff) is None:
                    raise RuntimeError("a file changed during the benchmark")

        def bare() -> None:
            for fd, table in tables:
                for name in table.names():
                    os.stat(name, dir_fd=fd, follow_symlinks=False)

        ways: dict[str, Callable[[], None]] = {"python": lambda: loop(in_python), "bare lstat": bare}
        if packedfolder._compiled_all_match is not None:
            ways["compiled"] = lambda: loop(os.stat)
        times: dict[str, list[float]] = {way: [] for way in ways}
        for _ in range(args.rounds):
            for way, run in ways.items():
                began = time.process_time()
                run()
                times[way].append(time.process_time() - began)
        print(f"{files:,} files in {len(tables):,} folders, {args.rounds} rounds (CPU time of each)")
        for way, values in times.items():
            median, least = statistics.median(values), min(values)
            print(f"  {way:<11} median {median:.3f} s ({median / files * 1e6:.2f} us a file), min {least:.3f} s")
        if "compiled" not in ways:
            print("  (the C loop is not built here: no compiler at install, or SNAPSHOTTER_PURE)")
        for fd, _ in tables:
            os.close(fd)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
