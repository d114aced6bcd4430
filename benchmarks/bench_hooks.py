"""What one agent hook call costs (``snapshotter hook claude-code EVENT``), beside git
and a bare interpreter, in one run.

    python benchmarks/bench_hooks.py                       # 10,000 and 100,000 files, 21 calls a row
    python benchmarks/bench_hooks.py --sizes 10000 --runs 11 --json out.json
    python benchmarks/bench_hooks.py --home-bytes 200      # the long home's length (default 150)

Every row is a fresh process timed from outside (wall clock, interpreter start
included), as an agent runs a hook:

- ``hook, watcher``: ``PreToolUse`` and ``PostToolUse`` calls, one tool call's
  edit of one file between them (untimed), handed to the watcher the first hook
  started (``hookclient``); each call brackets a real snapshot;
- ``hook, watcher, long home``: the same, with a snapshot home whose path is
  ``--home-bytes`` long (150: its store's socket path is ~210 bytes, past what
  a socket address holds, so the socket is reached through a short name for
  its folder); its own store and watcher, on the same workspace;
- ``hook, direct``: the same calls with ``SNAPSHOTTER_NO_WATCHER=1``: the call
  records the event itself, as it does without watchdog or on Windows; in a
  store of its own, which no watcher serves;
- ``git no-change snapshot``: ``git add -A`` then ``git write-tree`` on the same
  tree, its index kept between runs (two processes), in a bare shadow
  repository as in ``bench_engine.py``;
- ``python -c pass``: this interpreter starting and doing nothing;
- ``hook, direct, compared`` (with ``--compare-source DIR``, a checkout of
  another revision): the direct calls with that revision's package
  (``PYTHONPATH=DIR``, its own home), so a change's before and after come
  from one run.

The package's bytecode (and the compared one's) is compiled first, as ``pip
install`` does (see ``bench_commands.py``).

The rows take turns within every run (the order rotates), so drift on a shared
machine favours none. Figures are medians and 90th percentiles. Targets
(issues #31, #46): a watcher-served call at most 0.25x git's no-change snapshot
at 100,000 files, with a short home and with a 150-byte one, and at most 3x
``python -c pass`` at any size.

This is a measurement, not a test: run it by hand on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_commands import compile_package  # noqa: E402
from bench_engine import GitShadow  # noqa: E402
from bench_watch_server import workspace_and_env  # noqa: E402

CONSOLE_SCRIPT = os.path.join(os.path.dirname(sys.executable), "snapshotter")
COMMAND = [CONSOLE_SCRIPT] if os.path.exists(CONSOLE_SCRIPT) else [sys.executable, "-m", "snapshotter"]
SIDES = ("hook, watcher", "hook, watcher, long home", "hook, direct", "git no-change snapshot", "python -c pass")


def timed(argv: list[str], env: dict[str, str], cwd: Path, stdin: str = "") -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0 or done.stderr:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr}")
    return seconds


class Session:
    """One Claude Code session's hook calls into ``ws``."""

    def __init__(self, ws: Path, env: dict[str, str], name: str) -> None:
        self.ws, self.env, self.name, self.calls = ws, env, name, 0

    def call(self, event: str, **payload: Any) -> float:
        document = {"session_id": self.name, "cwd": str(self.ws), "hook_event_name": event, **payload}
        return timed([*COMMAND, "hook", "claude-code", event], self.env, self.ws, json.dumps(document))

    def tool_call(self, edited: Path) -> list[float]:
        """One tool call: before, the tool's edit, after."""
        self.calls += 1
        ident = f"toolu_{self.name}_{self.calls}"
        before = self.call("PreToolUse", tool_name="Bash", tool_input={"command": "x"}, tool_use_id=ident)
        with edited.open("a") as handle:
            handle.write(f"edit {self.calls}\n")
        after = self.call("PostToolUse", tool_name="Bash", tool_input={"command": "x"}, tool_use_id=ident)
        return [before, after]


def watcher_up(ws: Path, env: dict[str, str], wait: float = 300.0) -> None:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        done = subprocess.run([*COMMAND, "--json", "hooks", "status"], cwd=ws, env=env, capture_output=True, text=True)
        if done.returncode == 0 and json.loads(done.stdout)["result"]["watcher"]:
            return
        time.sleep(0.5)
    raise SystemExit("no watcher started within the wait: is watchdog installed?")


def percentile(times: list[float], fraction: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def long_home(scratch: Path, size: int) -> Path:
    """A home folder whose path is ``size`` bytes long."""
    base = str(scratch / "home-")
    if size < len(base) + 1:
        raise SystemExit(f"--home-bytes must be at least {len(base) + 1} here")
    return Path(base + "h" * (size - len(base)))


def measure(files: int, runs: int, home_bytes: int, compared_source: str | None = None) -> dict[str, Any]:
    sides = SIDES[:3] + (("hook, direct, compared",) if compared_source else ()) + SIDES[3:]
    scratch = Path(tempfile.mkdtemp(prefix="bh-"))  # short: the usual home; the long one is made below it
    try:
        ws, paths, env = workspace_and_env(scratch, files)
        env["SNAPSHOTTER_HOOKS_LOG"] = str(scratch / "fallback-hooks.log")
        far = dict(env, SNAPSHOTTER_HOME=str(long_home(scratch, home_bytes)))
        # The direct calls' store is their own: on the watcher's, each found it serving the workspace
        # and its snapshots interleaved with the watcher's (about 100 ms more a call, measured).
        direct_env = dict(env, SNAPSHOTTER_NO_WATCHER="1", SNAPSHOTTER_HOME=str(scratch / "home-direct"))
        served, direct = Session(ws, env, "served"), Session(ws, direct_env, "direct")
        far_served = Session(ws, far, "far")
        compared = None
        if compared_source:
            compared_env = dict(env, SNAPSHOTTER_NO_WATCHER="1", PYTHONPATH=compared_source)
            compared = Session(ws, dict(compared_env, SNAPSHOTTER_HOME=str(scratch / "home-compared")), "compared")
        git = GitShadow(ws, scratch)
        git.reset()
        git.run("add", "-A")
        homes = [env, far, direct_env] + ([compared.env] if compared is not None else [])
        for home_env in homes:  # each store's cold first snapshot (no row measures it), outside a hook's budget
            timed([*COMMAND, "--json", "snapshot", "-m", "cold"], dict(home_env, SNAPSHOTTER_NO_WATCHER="1"), ws)
        sessions = [served, far_served, direct] + ([compared] if compared is not None else [])
        for session in sessions:
            session.call("SessionStart", source="startup")
            session.call("UserPromptSubmit", prompt=f"benchmark the {session.name} path")
        watcher_up(ws, env)
        watcher_up(ws, far)
        for _ in range(3):  # the watcher's first snapshot walks what changed while nobody watched
            served.tool_call(paths[0])
            far_served.tool_call(paths[0])
            direct.tool_call(paths[1])
            if compared is not None:
                compared.tool_call(paths[170])
        rows: dict[str, list[float]] = {side: [] for side in sides}
        for i in range(runs):
            turn = i % len(sides)
            for side in sides[turn:] + sides[:turn]:
                if side == "hook, watcher":
                    rows[side] += served.tool_call(paths[2 + i % 50])
                elif side == "hook, watcher, long home":
                    rows[side] += far_served.tool_call(paths[120 + i % 50])
                elif side == "hook, direct":
                    rows[side] += direct.tool_call(paths[60 + i % 50])
                elif side == "hook, direct, compared" and compared is not None:
                    rows[side] += compared.tool_call(paths[180 + i % 50])
                elif side == "git no-change snapshot":
                    start = time.perf_counter()
                    git.run("add", "-A")
                    git.run("write-tree")
                    rows[side].append(time.perf_counter() - start)
                else:
                    rows[side].append(timed([sys.executable, "-c", "pass"], env, ws))
        for session in sessions:
            session.call("Stop", stop_hook_active=False)
            session.call("SessionEnd", reason="other")
        logs = [scratch / "fallback-hooks.log", *scratch.glob("home*/snapshots/*/snapshotter/hooks.log")]
        failed = [line for log in logs if log.exists() for line in log.read_text().splitlines() if " FAILED " in line]
        if failed:
            raise SystemExit(f"a hook call failed: {failed[-3:]}")
        medians = {side: statistics.median(times) for side, times in rows.items()}
        result = {
            "files": files,
            "runs": rows,
            "median": medians,
            "p90": {side: percentile(times, 0.9) for side, times in rows.items()},
            "home_bytes": home_bytes,
            "watcher_ratio_to_git": medians["hook, watcher"] / medians["git no-change snapshot"],
            "long_home_watcher_ratio_to_git": medians["hook, watcher, long home"] / medians["git no-change snapshot"],
            "watcher_ratio_to_python": medians["hook, watcher"] / medians["python -c pass"],
            "direct_ratio_to_git": medians["hook, direct"] / medians["git no-change snapshot"],
        }
        if compared is not None:
            git_median = medians["git no-change snapshot"]
            result["compared_direct_ratio_to_git"] = medians["hook, direct, compared"] / git_median
            result["compared_source"] = compared_source
        print(f"{files:,} files, {runs} runs (hook rows: {2 * runs} calls), median / p90:")
        for side in sides:
            print(f"  {side:<26} {medians[side] * 1000:8.1f} ms  {result['p90'][side] * 1000:8.1f} ms")
        print(
            f"  watcher call: {result['watcher_ratio_to_git']:.3f}x git no-change (target 0.25x at 100k), "
            f"with a {home_bytes}-byte home: {result['long_home_watcher_ratio_to_git']:.3f}x; "
            f"{result['watcher_ratio_to_python']:.2f}x python -c pass (target 3x); "
            f"direct call: {result['direct_ratio_to_git']:.2f}x git"
            + (f" (compared: {result['compared_direct_ratio_to_git']:.2f}x)" if compared is not None else ""),
            flush=True,
        )
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="workspace sizes (default 10000,100000)")
    parser.add_argument("--runs", type=int, default=21, help="runs per row; each hook run is two calls (default 21)")
    parser.add_argument("--json", help="also write every raw time and ratio to this file")
    parser.add_argument("--home-bytes", type=int, default=150, help="the long home's path length (default 150)")
    parser.add_argument("--compare-source", help="also run direct calls with the package in this folder (PYTHONPATH)")
    options = parser.parse_args()
    if shutil.which("git") is None:
        raise SystemExit("git is needed on PATH for the side-by-side figures")
    compile_package()
    source = str(Path(options.compare_source).resolve()) if options.compare_source else None
    if source:
        compile_package(source)
    results = [measure(int(size), options.runs, options.home_bytes, source) for size in options.sizes.split(",")]
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
