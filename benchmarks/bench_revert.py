"""Reverting a turn and forking a checkpoint, beside git doing the same jobs.

    python benchmarks/bench_revert.py                       # 100,000 files, 3 runs
    python benchmarks/bench_revert.py --sizes 20000 --runs 5

Rows (medians; ratio = snapshotter / git):

- revert a 10-file turn: ``begin_turn``, 10 files changed, ``end_turn``, then 10
  other files changed by "a person"; ``revert_turn()`` undoes the turn's files
  and keeps the person's. git: the same states as commits in a repository of
  its own (``.git`` beside the files, a copy of the workspace), ``git revert
  --no-commit HEAD`` with the person's edits in the work tree.
- fork: ``fork(ref, dest)`` of the newest snapshot into a new folder (a store of
  its own sharing the parent's objects, every file written). git:
  ``git worktree add --detach dest HEAD`` in that repository. Extra disk: what
  the new folder and store add, hard links counted once, as ``du`` counts them.

Workspaces are bench_engine.py's (same seed). A measurement, not a test: run it
by hand on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_engine import GIT_ENV, generate, git_version, quiet_disk  # noqa: E402

from snapshotter import Retention, Snapshotter  # noqa: E402


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], env=GIT_ENV, check=True, capture_output=True, text=True)
    return done.stdout


def edit(paths: list[Path], tag: str) -> None:
    for path in paths:
        with open(path, "a") as handle:
            handle.write(f"# {tag}\n")


def disk_bytes(*roots: Path) -> int:
    """Bytes on disk under ``roots``, each inode once (as ``du`` counts hard links)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                st = os.lstat(os.path.join(folder, name))
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_blocks * 512
    return total


def measure(files: int, runs: int) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="brv-"))
    try:
        ws, repo, home = scratch / "ws", scratch / "repo", scratch / "home"
        ws.mkdir()
        print(f"generating {files:,} files ...", flush=True)
        paths = generate(ws, files)
        shutil.copytree(ws, repo, symlinks=True)
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "base")
        caps = {"max_workspace_entries": max(200_000, 2 * files), "retention": Retention(max_store_bytes=None)}
        snap = Snapshotter(ws, home=home, **caps)  # type: ignore[arg-type]
        snap.snapshot("base")
        rng = random.Random(3)
        rows: dict[str, dict[str, list[float]]] = {"revert_turn": {"snapshotter": [], "git": []}}
        for run in range(runs):
            chosen = [p.relative_to(ws) for p in rng.sample(paths, 20)]
            agent, person = chosen[:10], chosen[10:]  # the person's 10 files are others than the agent's
            time.sleep(1.1)  # both sides settled: the stat cache and git's index
            quiet_disk()
            snap.begin_turn()
            edit([ws / p for p in agent], f"agent {run}")
            snap.end_turn()
            edit([ws / p for p in person], f"person {run}")
            start = time.perf_counter()
            result = snap.revert_turn()
            rows["revert_turn"]["snapshotter"].append(time.perf_counter() - start)
            assert result and len(result.reverted) == len(agent), result
            edit([repo / p for p in agent], f"agent {run}")
            git(repo, "commit", "-q", "-a", "-m", f"turn {run}")
            edit([repo / p for p in person], f"person {run}")
            time.sleep(1.1)
            quiet_disk()
            start = time.perf_counter()
            git(repo, "revert", "--no-commit", "HEAD")
            rows["revert_turn"]["git"].append(time.perf_counter() - start)
            git(repo, "commit", "-q", "-a", "-m", f"revert {run} and the person's edits")
        before = disk_bytes(home, ws)
        fork_seconds, git_seconds, fork_extra, git_extra = [], [], [], []
        newest = snap.list(limit=1)[0]
        for run in range(runs):
            for side in ("snapshotter", "git") if run % 2 == 0 else ("git", "snapshotter"):
                quiet_disk()
                if side == "snapshotter":
                    forks = [scratch / f"fork{k}" for k in range(run + 1)]
                    start = time.perf_counter()
                    snap.fork(newest.id, forks[-1]).close()
                    fork_seconds.append(time.perf_counter() - start)
                    fork_extra.append(disk_bytes(home, ws, *forks) - before)
                    before = disk_bytes(home, ws, *forks)
                else:
                    tree = scratch / f"wt{run}"
                    git_before = disk_bytes(repo)
                    start = time.perf_counter()
                    git(repo, "worktree", "add", "-q", "--detach", str(tree), "HEAD")
                    git_seconds.append(time.perf_counter() - start)
                    git_extra.append(disk_bytes(repo, tree) - git_before)
        snap.close()
        rows["fork"] = {"snapshotter": fork_seconds, "git": git_seconds}
        out: dict[str, Any] = {"files": files, "rows": {}}
        for key, sides in rows.items():
            ours, theirs = statistics.median(sides["snapshotter"]), statistics.median(sides["git"])
            out["rows"][key] = {**sides, "snapshotter_median": ours, "git_median": theirs, "ratio": ours / theirs}
        out["fork_extra_bytes"] = {"snapshotter": statistics.median(fork_extra), "git": statistics.median(git_extra)}
        return out
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_sizes(doc: str, measure: Callable[[int, int], dict[str, Any]], show: Callable[[dict[str, Any]], None]) -> None:
    """The command line these scripts share: ``--sizes``, ``--runs``, ``--json``;
    ``measure(files, runs)`` per size, ``show(result)`` prints its rows."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--sizes", default="100000", help="file counts (default 100000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure; the median is reported (default 3)")
    parser.add_argument("--json", help="also write the raw figures here")
    args = parser.parse_args()
    report: dict[str, Any] = {"git": git_version(), "python": sys.version.split()[0], "results": []}
    for size in (int(s) for s in args.sizes.split(",")):
        result = measure(size, args.runs)
        report["results"].append(result)
        print(f"\n{size:,} files, median of {args.runs} runs")
        show(result)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


def show(result: dict[str, Any]) -> None:
    for key, label in (("revert_turn", "revert a 10-file turn (10 other edits kept)"), ("fork", "fork")):
        row = result["rows"][key]
        print(
            f"  {label:45} snapshotter {row['snapshotter_median']:.3f} s   "
            f"git {row['git_median']:.3f} s   ratio {row['ratio']:.2f}"
        )
    extra = result["fork_extra_bytes"]
    print(
        f"  {'fork: extra disk':45} snapshotter {extra['snapshotter'] / 2**20:.1f} MiB   "
        f"git {extra['git'] / 2**20:.1f} MiB"
    )


if __name__ == "__main__":
    run_sizes(__doc__, measure, show)
