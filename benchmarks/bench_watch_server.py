"""The command line with a watcher running (``snapshotter watch``) beside git, interpreter start included.

    python benchmarks/bench_watch_server.py                      # 20,000 and 100,000 files, 7 runs
    python benchmarks/bench_watch_server.py --sizes 20000 --runs 5 --json out.json

Rows, each a fresh process timed from outside (wall clock of the whole process):

- ``snapshotter snapshot`` (no change) handed to a running ``snapshotter watch``;
- the same command run directly (``SNAPSHOTTER_NO_WATCHER=1``), for reference;
- git's snapshot of the same tree in a bare shadow repository: ``add -A``,
  ``write-tree``, ``commit-tree``, ``update-ref`` (four processes, as in
  ``bench_engine.py``).

The three take turns in every run (the order rotates), so drift on a shared
machine favours none. Figures are medians with the spread (min..max). The
target is at most 0.5x git at 100,000 files. Workspaces are generated as in
``bench_engine.py`` (same seed), the size cap raised explicitly.

With ``--commands`` (issue #51 item 1: at most 0.3x git with a watcher running), the
rows of ``bench_commands.py`` that walk the folder instead, each served by the watcher
and beside git's own command in the same alternation (``bench_commands.pair``):
``snapshot`` with nothing changed and with 10 files changed (``git add -A && git
write-tree``), ``status`` (``git status --porcelain`` against a committed base) and ``diff
--stat`` (``git add -A -N && git diff --stat``, and the bare ``git diff --stat``),
at 100,000 files:

    python benchmarks/bench_watch_server.py --commands --sizes 100000 --runs 11

This is a measurement, not a test: run it by hand on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_commands  # noqa: E402
from bench_engine import GIT_ENV, GitShadow, change, generate  # noqa: E402

CONSOLE_SCRIPT = os.path.join(os.path.dirname(sys.executable), "snapshotter")
COMMAND = [CONSOLE_SCRIPT] if os.path.exists(CONSOLE_SCRIPT) else [sys.executable, "-m", "snapshotter"]


def run(env: dict[str, str], ws: Path, *args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([*COMMAND, *args], cwd=ws, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"snapshotter {' '.join(args)} failed: {done.stderr}")
    return seconds


def spread(times: list[float]) -> str:
    return f"{statistics.median(times):.3f} s ({min(times):.3f}..{max(times):.3f})"


def workspace_and_env(scratch: Path, files: int) -> tuple[Path, list[Path], dict[str, str]]:
    """A generated workspace in ``scratch`` (its files), and the environment every call runs in."""
    ws = scratch / "ws"
    ws.mkdir()
    print(f"generating {files:,} files ...", flush=True)
    paths = generate(ws, files)
    env = dict(
        os.environ,
        SNAPSHOTTER_HOME=str(scratch / "home"),
        SNAPSHOTTER_MAX_WORKSPACE_ENTRIES="0",  # the cap, raised explicitly
        SNAPSHOTTER_CONFIG=str(scratch / "no-user-config.toml"),  # none (a device is refused as a config file)
    )
    env.pop("SNAPSHOTTER_NO_WATCHER", None)
    return ws, paths, env


def measure(files: int, runs: int) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="bw-"))  # short (a long home works too: bench_hooks.py measures one)
    try:
        ws, _, env = workspace_and_env(scratch, files)
        direct_env = dict(env, SNAPSHOTTER_NO_WATCHER="1")
        git = GitShadow(ws, scratch)
        git.reset()
        git.snapshot()
        run(direct_env, ws, "snapshot", "-m", "cold")
        log = scratch / "watch.log"
        watcher = subprocess.Popen(
            [*COMMAND, "watch"], cwd=ws, env=env, stdout=subprocess.PIPE, stderr=log.open("w"), text=True
        )
        try:
            assert watcher.stdout is not None
            ready = watcher.stdout.readline()
            if not ready.startswith("watching "):
                raise SystemExit(f"the watcher did not start: {log.read_text()}")
            run(env, ws, "snapshot")  # its first snapshot walks everything: changes made while nobody watched
            rows: dict[str, list[float]] = {"served": [], "direct": [], "git": []}
            sides = list(rows)
            for i in range(runs):
                for side in sides[i % 3 :] + sides[: i % 3]:
                    if side == "git":
                        start = time.perf_counter()
                        git.snapshot()
                        rows[side].append(time.perf_counter() - start)
                    else:
                        rows[side].append(run(env if side == "served" else direct_env, ws, "snapshot"))
            served = sum("served" in line for line in log.read_text().splitlines())
        finally:
            watcher.send_signal(signal.SIGTERM)
            watcher.wait(timeout=60)
        if served != runs + 1:
            raise SystemExit(f"the watcher served {served} commands, expected {runs + 1}")
        git_median = statistics.median(rows["git"])
        result = {
            "files": files,
            "runs": rows,
            "served_ratio_to_git": statistics.median(rows["served"]) / git_median,
            "direct_ratio_to_git": statistics.median(rows["direct"]) / git_median,
        }
        print(f"{files:,} files, no-change snapshot, {runs} runs, median (min..max):")
        print(f"  CLI `snapshotter snapshot` with a watcher running  {spread(rows['served'])}", end="")
        print(f"  {result['served_ratio_to_git']:.2f}x git (target 0.5x at 100k)")
        print(f"  CLI `snapshotter snapshot` direct                   {spread(rows['direct'])}", end="")
        print(f"  {result['direct_ratio_to_git']:.2f}x git")
        print(f"  git add -A, write-tree, commit-tree, update-ref     {spread(rows['git'])}", flush=True)
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def measure_commands(files: int, runs: int) -> dict[str, Any]:
    """``bench_commands.py``'s walking rows, each ``snapshotter`` call served by a running watcher."""
    scratch = Path(tempfile.mkdtemp(prefix="bw-"))
    try:
        ws, paths, env = workspace_and_env(scratch, files)
        git_env = dict(os.environ, **GIT_ENV)
        shadow = scratch / "shadow.git"
        subprocess.run(["git", "init", "-q", "--bare", str(shadow)], env=git_env, check=True)
        (shadow / "info" / "exclude").write_text(".git\n")
        git_snapshot = bench_commands.git_side(ws, shadow, "snapshot")
        for step in git_snapshot:
            bench_commands.run(step, ws, git_env)
        run(dict(env, SNAPSHOTTER_NO_WATCHER="1"), ws, "snapshot", "-m", "cold")
        log = scratch / "watch.log"
        watcher = subprocess.Popen(
            [*COMMAND, "watch"], cwd=ws, env=env, stdout=subprocess.PIPE, stderr=log.open("w"), text=True
        )
        rng = random.Random(7)
        rows: dict[str, Any] = {}
        try:
            assert watcher.stdout is not None
            if not watcher.stdout.readline().startswith("watching "):
                raise SystemExit(f"the watcher did not start: {log.read_text()}")
            run(env, ws, "snapshot")  # its first snapshot walks everything
            for name, words, shown, side in bench_commands.WALKING:

                def before(changes: bool = name == "snapshot, 10 changed") -> None:
                    if changes:
                        change(paths, 10, rng)

                if name == "status":  # as bench_commands.py: a base 10 files behind, 10 more changed since
                    change(paths, 10, rng)
                    run(env, ws, "snapshot", "-m", "base")
                    for step in bench_commands.git_side(ws, shadow, "base"):  # git's HEAD is the base, as ours is
                        bench_commands.run(step, ws, git_env)
                    change(paths, 10, rng)
                served = _served(log)
                row = bench_commands.pair(words, bench_commands.git_side(ws, shadow, side), runs, ws, env, before)
                if _served(log) - served != runs:
                    raise SystemExit(f"{name}: the watcher served {_served(log) - served} of {runs} calls")
                row["command"] = f"snapshotter {' '.join(words)} (a watcher running)  vs  {shown}"
                rows[name] = row
                bench_commands.say(name, row)
        finally:
            watcher.send_signal(signal.SIGTERM)
            watcher.wait(timeout=60)
        return {"files": files, "runs": runs, "rows": rows, "load_average": os.getloadavg()}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _served(log: Path) -> int:
    return sum("served" in line for line in log.read_text().splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="20000,100000", help="workspace sizes (default 20000,100000)")
    parser.add_argument("--runs", type=int, default=7, help="runs per figure; medians are reported (default 7)")
    parser.add_argument("--json", help="also write every raw time and ratio to this file")
    parser.add_argument("--commands", action="store_true", help="the walking rows of bench_commands.py, served")
    options = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    if options.commands:
        bench_commands.compile_package()
    how = measure_commands if options.commands else measure
    results = [how(int(size), options.runs) for size in options.sizes.split(",")]
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
