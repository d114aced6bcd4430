"""Whether any call costs more as the history grows (issue #50): a store is
grown to 100, 1,000, 10,000 (and, asked for, 100,000) snapshots of hook-driven
agent work (``tests/longhistory.py``: turns of three sessions, 8 tool calls of
one edit each, 18 snapshots a turn, written straight through the store's own
writers), and at each size every row below is timed; the table gives each
row's fastest of ``--runs`` (the machine is shared: the least disturbed run)
and its ratio to the first size, then the snapshot commits each call parsed,
a count no load disturbs.

    python benchmarks/bench_long_history.py                       # 100, 1,000, 10,000
    python benchmarks/bench_long_history.py --sizes 100 1000 10000 100000 --runs 7
    python benchmarks/bench_long_history.py --json out.json

Rows (each a new ``Snapshotter``, as a CLI call or a hook without its watcher
opens one, but ``snapshot, open store``; retention off so the history stays):

- ``open store``: open and read the base snapshot;
- ``snapshot, new process``: open, one file edited, snapshot;
- ``snapshot, open store``: one Snapshotter kept open, one edit, snapshot;
- ``log -n 20``, ``sessions``, ``stats``: ``list(limit=20)``, ``sessions()``,
  ``store_stats()``;
- ``undo``, ``redo``: a session's undo, then its redo;
- ``turn revert``: ``revert_turn(1)`` of the session's last turn (dry run);
- ``blame``: a file's blame with the default depth;
- ``hook call``: the real ``snapshotter hook claude-code PreToolUse`` command
  with ``SNAPSHOTTER_NO_WATCHER=1`` (a process start included).

With ``--defaults``: what a store with the default settings keeps after a day
(60 turns) and a week of that work (2,000 files), and its size (docs/store.md).

A measurement, not a test: it takes minutes (an hour with 100,000); run it by hand.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import longhistory  # noqa: E402

from snapshotter import Retention, Snapshotter  # noqa: E402
from snapshotter.engine.gitstore import trailers  # noqa: E402

SESSION = "claude-code-aa11"  # the first of the sessions longhistory.History takes turns with
COMMAND = [sys.executable, "-m", "snapshotter"]


def _unlimited_config(scratch: Path) -> Path:
    """A user config that keeps every snapshot, as the rows' ``Retention.unlimited()`` does."""
    path = scratch / "config.toml"
    path.write_text("max_snapshots = 0\nmax_age_days = 0\n")
    return path


class Rows:
    """The timed calls on one history."""

    def __init__(self, history: longhistory.History, scratch: Path) -> None:
        self.h = history
        self.edits = 0
        self.env = dict(
            os.environ,
            SNAPSHOTTER_HOME=str(history.home),
            SNAPSHOTTER_NO_WATCHER="1",
            SNAPSHOTTER_CONFIG=str(_unlimited_config(scratch)),
            SNAPSHOTTER_HOOKS_LOG=str(scratch / "hooks.log"),
        )

    def _open(self) -> Snapshotter:
        return Snapshotter(self.h.ws, home=self.h.home, retention=Retention.unlimited())

    def _edit(self) -> None:
        self.edits += 1
        with open(self.h.path(0, self.edits % self.h.files), "a") as handle:
            handle.write(f"bench edit {self.edits}\n")

    def calls(self, kept: Snapshotter) -> dict[str, Callable[[], object]]:
        def fresh(use: Callable[[Snapshotter], object]) -> Callable[[], object]:
            def run() -> object:
                with self._open() as snap:
                    return use(snap)

            return run

        def snapshot_new() -> object:
            self._edit()
            with self._open() as snap:
                return snap.snapshot("bench")

        def snapshot_kept() -> object:
            self._edit()
            return kept.snapshot("bench")

        def hook() -> object:
            self.edits += 1
            document = {
                "session_id": "bench-hooks",
                "cwd": str(self.h.ws),
                "hook_event_name": "PreToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "x"},
                "tool_use_id": f"toolu_bench_{self.edits}",
            }
            done = subprocess.run(
                [*COMMAND, "hook", "claude-code", "PreToolUse"],
                cwd=self.h.ws,
                env=self.env,
                input=json.dumps(document),
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                raise SystemExit(f"hook failed: {done.stderr}")
            return done

        return {
            "open store": fresh(lambda snap: snap.base()),
            "snapshot, new process": snapshot_new,
            "snapshot, open store": snapshot_kept,
            "log -n 20": fresh(lambda snap: snap.list(limit=20)),
            "sessions": fresh(lambda snap: snap.sessions()),
            "stats": fresh(lambda snap: snap.store_stats()),
            "undo": fresh(lambda snap: snap.in_session(SESSION).undo()),
            "redo": fresh(lambda snap: snap.in_session(SESSION).redo()),
            "turn revert": fresh(lambda snap: snap.in_session(SESSION).revert_turn(1, dry_run=True)),
            "blame": fresh(lambda snap: snap.blame("d00/f000.txt")),
            "hook call": hook,
        }


class Parsed:
    """Snapshot commits parsed in this process: the count that does not depend on the machine's load."""

    def __init__(self) -> None:
        self.count = 0
        real = trailers.parse_snapshot

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return real(*args, **kwargs)

        trailers.parse_snapshot = counted  # type: ignore[assignment]


def measure(sizes: list[int], runs: int) -> tuple[dict[str, dict[int, float]], dict[str, dict[int, int]]]:
    scratch = Path(tempfile.mkdtemp(prefix="bench-history-"))
    table: dict[str, dict[int, float]] = {}
    parsed: dict[str, dict[int, int]] = {}
    counter = Parsed()
    try:
        history = longhistory.History(scratch / "ws", scratch / "home")
        rows = Rows(history, scratch)
        for size in sizes:
            started = time.perf_counter()
            history.build(size)
            print(f"{size:,} snapshots built in {time.perf_counter() - started:.0f} s", flush=True)
            with rows._open() as kept:
                kept.snapshot("warm")  # the first snapshot of a folder walks it whole
                for name, call in rows.calls(kept).items():
                    call()  # warm
                    times = []
                    before = counter.count
                    for _ in range(runs):
                        start = time.perf_counter()
                        call()
                        times.append(time.perf_counter() - start)
                    table.setdefault(name, {})[size] = min(times) * 1000  # the least disturbed run: a shared machine
                    parsed.setdefault(name, {})[size] = (counter.count - before) // runs
                    median = statistics.median(times) * 1000
                    print(
                        f"  {name:<24} {table[name][size]:8.1f} ms (median {median:.1f}), "
                        f"{parsed[name][size]} commits parsed",
                        flush=True,
                    )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return table, parsed


def defaults() -> None:
    """A day and a week of turns, then one snapshot with the default settings."""
    for days in (1, 7):
        scratch = Path(tempfile.mkdtemp(prefix="bench-history-"))
        try:
            history = longhistory.History(scratch / "ws", scratch / "home", folders=20, files=100, days=days - 1 / 24)
            history.build(days * 60 * longhistory.SNAPSHOTS_PER_TURN)
            with Snapshotter(history.ws, home=history.home) as snap:
                with open(history.path(0, 0), "a") as handle:
                    handle.write("the last edit\n")
                snap.snapshot("the end")
                kept = snap.list(limit=None)
                size = snap.store_stats().bytes_on_disk
                compacted = snap.gc().bytes_after
            calls = sum(1 for info in kept if (info.label or "").startswith(("tool:", "tool-done:")))
            made = days * 60 * 2 * longhistory.CALLS_PER_TURN
            print(
                f"{days} day(s): {len(kept):,} snapshots kept, {calls:,} of {made:,} tool-call snapshots, "
                f"store {size / 2**20:.1f} MiB, {compacted / 2**20:.1f} MiB after gc()",
                flush=True,
            )
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--defaults", action="store_true", help="what the default retention keeps of a day and a week")
    args = parser.parse_args()
    if args.defaults:
        defaults()
        return
    table, parsed = measure(sorted(args.sizes), args.runs)
    first = min(args.sizes)
    header = "| call | " + " | ".join(f"{size:,}" for size in sorted(args.sizes)) + " | worst ratio |"
    print("\n" + header + "\n|" + "---|" * (len(args.sizes) + 2))
    for name, cells in table.items():
        worst = max(cells[size] / cells[first] for size in cells)
        shown = " | ".join(
            f"{cells[size]:.1f} ms" + ("" if size == first else f" ({cells[size] / cells[first]:.2f}x)")
            for size in sorted(cells)
        )
        print(f"| {name} | {shown} | {worst:.2f}x |")
    print("\nsnapshot commits parsed a call (a hook call's are in its own process, not counted):")
    for name, counts in parsed.items():
        print(f"  {name:<24} " + "  ".join(f"{counts[size]:>6,}" for size in sorted(counts)))
    if args.json:
        data: dict[str, Any] = {name: {str(k): v for k, v in cells.items()} for name, cells in table.items()}
        args.json.write_text(json.dumps(data, indent=2))


if __name__ == "__main__":
    main()
