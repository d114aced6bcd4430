"""Blame of one file through a long history, beside ``git blame`` of the same history.

    python benchmarks/bench_blame.py                      # 5,000 lines, 200 snapshots, 5 runs
    python benchmarks/bench_blame.py --lines 2000 --snapshots 50 --runs 3

A 5,000-line source-like file (and a few other files) is snapshotted 200
times, each snapshot after a small edit of the file (a few lines replaced,
inserted or deleted; one snapshot in five changes another file only). The same
history is replayed as a chain of git commits inside the store (one commit per
snapshot, its tree the snapshot's own: tree ids are git's), so ``git blame``
walks exactly the versions snapshotter walks. Rows, medians of ``--runs``
(min..max), each side's whole command timed from outside:

- ``snapshotter blame FILE`` (a new process: interpreter start, the store
  opened, a scan of the folder, the walk);
- ``Snapshotter.blame(FILE)`` in this process, the store already open;
- ``git blame --porcelain HEAD -- FILE`` on the replayed chain.

The script first checks that both sides give every line the same origin.
This is a measurement, not a test: run it by hand on a quiet machine.
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import GIT_ENV, WORDS  # noqa: E402

from snapshotter import Retention, Snapshotter  # noqa: E402

CONSOLE_SCRIPT = os.path.join(os.path.dirname(sys.executable), "snapshotter")
COMMAND = [CONSOLE_SCRIPT] if os.path.exists(CONSOLE_SCRIPT) else [sys.executable, "-m", "snapshotter"]


def source_line(rng: random.Random) -> str:
    indent = "    " * rng.randint(0, 3)
    return indent + " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))) + "\n"


def build(root: Path, lines: int, snapshots: int, seed: int = 7) -> tuple[Snapshotter, Path]:
    """The workspace, its history, and the file to blame."""
    rng = random.Random(seed)
    ws = root / "ws"
    ws.mkdir()
    body = [source_line(rng) for _ in range(lines)]
    target = ws / "big.py"
    target.write_text("".join(body))
    for k in range(20):
        (ws / f"other{k}.py").write_text("".join(source_line(rng) for _ in range(50)))
    snap = Snapshotter(ws, home=root / "home", max_workspace_entries=0, retention=Retention.unlimited())
    snap.snapshot("start")
    for step in range(snapshots - 1):
        if rng.random() < 0.2:
            (ws / f"other{rng.randrange(20)}.py").write_text("".join(source_line(rng) for _ in range(50)))
        else:
            for _ in range(rng.randint(1, 4)):
                at = rng.randrange(len(body))
                kind = rng.random()
                if kind < 0.5:
                    body[at] = source_line(rng)
                elif kind < 0.8:
                    body[at:at] = [source_line(rng) for _ in range(rng.randint(1, 5))]
                else:
                    del body[at : at + rng.randint(1, 3)]
            target.write_text("".join(body))
        snap.snapshot(f"step {step}")
    return snap, target


def replay(snap: Snapshotter) -> str:
    """The snapshots as a chain of commits in the store: the newest commit's id."""
    parent: str | None = None
    for info in sorted(snap.list(limit=None), key=lambda i: i.sequence):
        args = ["git", "--git-dir", snap.store_path, "commit-tree", info.tree_id, "-m", info.id]
        args += ["-p", parent] if parent else []
        parent = subprocess.run(args, env=GIT_ENV, check=True, capture_output=True, text=True).stdout.strip()
    assert parent is not None
    return parent


def git_origins(store: str, commit: str, path: str, commits: dict[str, str]) -> list[tuple[str, int]]:
    out = subprocess.run(
        ["git", "--git-dir", store, "blame", "--porcelain", commit, "--", path],
        env=GIT_ENV,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = []
    for line in out.splitlines():
        words = line.split(" ")
        if len(words) >= 3 and len(words[0]) == 40 and all(c in "0123456789abcdef" for c in words[0]):
            found.append((commits[words[0]], int(words[1])))
    return found


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def spread(times: list[float]) -> str:
    return f"{statistics.median(times):.3f} s ({min(times):.3f}..{max(times):.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--snapshots", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", help="also write every raw time to this file")
    options = parser.parse_args()
    if shutil.which("git") is None:
        raise SystemExit("git is needed on PATH for the side-by-side figures")
    root = Path(tempfile.mkdtemp(prefix="bb-"))
    try:
        print(f"building {options.snapshots} snapshots of a {options.lines:,}-line file ...", flush=True)
        snap, target = build(root, options.lines, options.snapshots)
        head = replay(snap)
        logged = subprocess.run(
            ["git", "--git-dir", snap.store_path, "log", "--format=%H %s", head],
            env=GIT_ENV,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        commits = dict(row.split(" ", 1) for row in logged.splitlines())  # commit -> the snapshot it replays
        if len(snap.list(limit=None)) != options.snapshots:
            raise SystemExit("retention dropped snapshots: the history is not the one asked for")
        ours = snap.blame("big.py")
        mine = [(run.origin.snapshot_id, run.source_start + k) for run in ours.runs for k in range(run.count)]
        if mine != git_origins(snap.store_path, head, "big.py", commits):
            raise SystemExit("snapshotter's blame and git's disagree: not timed")
        env = dict(os.environ, SNAPSHOTTER_HOME=str(root / "home"), SNAPSHOTTER_NO_WATCHER="1")
        env["SNAPSHOTTER_MAX_WORKSPACE_ENTRIES"] = "0"
        rows: dict[str, list[float]] = {"cli": [], "api": [], "git": []}
        git_argv = ["git", "--git-dir", snap.store_path, "blame", "--porcelain", head, "--", "big.py"]
        for i in range(options.runs):
            for side in ["cli", "api", "git"] if i % 2 == 0 else ["git", "api", "cli"]:
                if side == "cli":
                    rows[side].append(timed([*COMMAND, "blame", "big.py"], target.parent, env))
                elif side == "git":
                    rows[side].append(timed(git_argv, target.parent, GIT_ENV))
                else:
                    start = time.perf_counter()
                    snap.blame("big.py")
                    rows[side].append(time.perf_counter() - start)
        snap.close()
        git_median = statistics.median(rows["git"])
        result: dict[str, Any] = {
            "lines": options.lines,
            "snapshots": options.snapshots,
            "runs": rows,
            "cli_ratio_to_git": statistics.median(rows["cli"]) / git_median,
            "api_ratio_to_git": statistics.median(rows["api"]) / git_median,
        }
        print(f"blame of a {options.lines:,}-line file, {options.snapshots} snapshots, {options.runs} runs:")
        print(f"  snapshotter blame (a new process)   {spread(rows['cli'])}  {result['cli_ratio_to_git']:.2f}x git")
        print(f"  Snapshotter.blame() (store open)    {spread(rows['api'])}  {result['api_ratio_to_git']:.2f}x git")
        print(f"  git blame --porcelain               {spread(rows['git'])}")
        if options.json:
            Path(options.json).write_text(json.dumps(result, indent=2) + "\n")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
