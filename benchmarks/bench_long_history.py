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
- ``page, first screen``: ``snapshotter ui``'s server started on a new
  ``Snapshotter`` (in this process, as ``snapshotter ui`` serves), then the
  requests the page's first screen makes over HTTP: the page, its script and
  style, the newest 100 snapshots (``/api/log``) and the sessions;
- ``hook call``: the real ``snapshotter hook claude-code PreToolUse`` command
  with ``SNAPSHOTTER_NO_WATCHER=1`` (a process start included); its
  ``PostToolUse`` follows, not timed, so no call is left open;
- retention, pin and unpin, a session's listing, a fork, a push and a fetch of
  10 new snapshots over a real ``git daemon``: see ``long_history_ops``
  (``--no-remote`` leaves them out).

With ``--chart FILE``: an SVG chart of each row's cost against the history's
length (log scale), beside the table.

With ``--defaults``: what a store with the default settings keeps after a day
(60 turns) and a week of that work (2,000 files), and its size (docs/store.md).

A measurement, not a test: it takes minutes (an hour with 100,000); run it by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import longhistory  # noqa: E402

from snapshotter import Retention, Snapshotter  # noqa: E402
from snapshotter.engine.gitstore import trailers  # noqa: E402

COMMAND = [sys.executable, "-m", "snapshotter"]


def _unlimited_config(scratch: Path) -> Path:
    """A user config that keeps every snapshot, as the rows' ``Retention.unlimited()`` does."""
    path = scratch / "config.toml"
    path.write_text("max_snapshots = 0\nmax_age_days = 0\n")
    return path


@dataclass(frozen=True)
class Took:
    """What a row timed itself (the page's requests, not its server's start and stop)."""

    seconds: float


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

    @property
    def last(self) -> str:
        """The session of the newest turn: undo, redo and a turn's revert read the
        same stretch (its turn, whole) at every size."""
        return self.h.sessions[(self.h.turns - 1) % len(self.h.sessions)]

    def _open(self) -> Snapshotter:
        return Snapshotter(self.h.ws, home=self.h.home, retention=Retention.unlimited())

    def _edit(self) -> None:
        """One edit before a timed snapshot, to a file no turn touches: the
        sessions' undo then never meets it (an edit to a file a turn changed
        made that undo refuse at some sizes and write at others)."""
        self.edits += 1
        with open(self.h.ws / "bench.txt", "a") as handle:
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
            """A PreToolUse call, timed; then its PostToolUse, not timed: a call left
            open would hold every later step for attribution, and the next sizes'
            undo and turn revert read one more opener for each (8 a size)."""
            self.edits += 1
            call = f"toolu_bench_{self.edits}"
            started = time.perf_counter()
            run_hook("PreToolUse", call)
            took = Took(time.perf_counter() - started)
            run_hook("PostToolUse", call)
            return took

        def run_hook(event: str, call: str) -> None:
            document = {
                "session_id": "bench-hooks",
                "cwd": str(self.h.ws),
                "hook_event_name": event,
                "tool_name": "Bash",
                "tool_input": {"command": "x"},
                "tool_use_id": call,
            }
            done = subprocess.run(
                [*COMMAND, "hook", "claude-code", event],
                cwd=self.h.ws,
                env=self.env,
                input=json.dumps(document),
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                raise SystemExit(f"hook failed: {done.stderr}")

        def page() -> object:
            from snapshotter.frontends.cli.cli import Console, run
            from snapshotter.frontends.page import ui_server

            with self._open() as snap:
                serving = ui_server.start(snap, run, Console)
                try:
                    base = f"http://127.0.0.1:{serving.port}"
                    started = time.perf_counter()
                    for path in ("/", "/page.js", "/page.css", "/api/log?limit=100", "/api/sessions"):
                        query = f"{'&' if '?' in path else '?'}token={serving.token}"
                        with urllib.request.urlopen(base + path + query) as answer:
                            answer.read()
                    took = Took(time.perf_counter() - started)
                finally:
                    serving.stop()  # waits for the server's poll (0.5 s): not timed
            return took

        return {
            "open store": fresh(lambda snap: snap.base()),
            "snapshot, new process": snapshot_new,
            "snapshot, open store": snapshot_kept,
            "log -n 20": fresh(lambda snap: snap.list(limit=20)),
            "sessions": fresh(lambda snap: snap.sessions()),
            "stats": fresh(lambda snap: snap.store_stats()),
            "undo": fresh(lambda snap: snap.in_session(self.last).undo()),
            "redo": fresh(lambda snap: snap.in_session(self.last).redo()),
            "turn revert": fresh(lambda snap: snap.in_session(self.last).revert_turn(1, dry_run=True)),
            "blame": fresh(lambda snap: snap.blame("d00/f000.txt")),
            "page, first screen": page,
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


def whole_turns(history: longhistory.History, size: int) -> int:
    """``size``, or the few more snapshots that end the newest turn (a turn the
    builder began is never left open, so undo, redo and a turn's revert read one
    whole turn at every size)."""
    newest = 1  # the builder's first snapshot
    if history.home.exists():
        with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
            found = snap.list(limit=1)
            newest = found[0].sequence if found else 1
    return size + (newest - size) % longhistory.SNAPSHOTS_PER_TURN


def measure(
    sizes: list[int], runs: int, ops: bool = True, only: list[str] | None = None
) -> tuple[dict[str, dict[int, float]], dict[str, dict[int, int]], dict[str, dict[int, tuple[int, int, int]]]]:
    """Each row's fastest run (ms), commits parsed and (the rows of
    ``long_history_ops``) bytes read from and written to the server and
    ``packed-refs`` bytes rewritten, a call, at each size."""
    import long_history_ops

    scratch = Path(tempfile.mkdtemp(prefix="bench-history-"))
    table: dict[str, dict[int, float]] = {}
    parsed: dict[str, dict[int, int]] = {}
    wired: dict[str, dict[int, tuple[int, int, int]]] = {}
    counter = Parsed()
    wire = long_history_ops.Wire()
    try:
        history = longhistory.History(scratch / "ws", scratch / "home")
        rows = Rows(history, scratch)
        with contextlib.ExitStack() as stack:
            extra: long_history_ops.OpsRows | None = None
            if ops:
                url, bare = stack.enter_context(long_history_ops.serving(scratch))
                extra = long_history_ops.OpsRows(rows, scratch, url, bare, wire)
            for size in sizes:
                started = time.perf_counter()
                history.build(whole_turns(history, size))
                print(f"{size:,} snapshots built in {time.perf_counter() - started:.0f} s", flush=True)
                if extra is not None:
                    extra.sync()
                with rows._open() as kept:
                    kept.snapshot("warm")  # the first snapshot of a folder walks it whole
                    calls = rows.calls(kept)
                    calls.update(extra.calls() if extra is not None else {})
                    calls = {name: call for name, call in calls.items() if not only or any(w in name for w in only)}
                    for name, call in calls.items():
                        call()  # warm
                        times = []
                        before, wire_before = counter.count, wire.snapshot()
                        for _ in range(runs):
                            start = time.perf_counter()
                            done = call()
                            times.append(done.seconds if isinstance(done, Took) else time.perf_counter() - start)
                        table.setdefault(name, {})[size] = min(times) * 1000  # the least disturbed run
                        parsed.setdefault(name, {})[size] = (counter.count - before) // runs
                        moved = tuple((b - a) // runs for a, b in zip(wire_before, wire.snapshot()))
                        wired.setdefault(name, {})[size] = moved  # type: ignore[assignment]
                        median = statistics.median(times) * 1000
                        if extra is not None and extra.dropped:
                            print(f"  (retention dropped {extra.dropped} snapshots a run)")
                            extra.dropped.clear()
                        print(
                            f"  {name:<24} {table[name][size]:8.1f} ms (median {median:.1f}), "
                            f"{parsed[name][size]} commits parsed, {moved[0]:,} B read from the server, "
                            f"{moved[1]:,} B written to it, {moved[2]:,} B of packed-refs rewritten",
                            flush=True,
                        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return table, parsed, wired


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
    parser.add_argument("--chart", type=Path, help="write an SVG chart of the table here")
    parser.add_argument("--rows", nargs="+", help="only the rows whose names hold one of these words")
    parser.add_argument("--no-remote", action="store_true", help="leave out the rows of long_history_ops")
    parser.add_argument("--defaults", action="store_true", help="what the default retention keeps of a day and a week")
    args = parser.parse_args()
    if args.defaults:
        defaults()
        return
    table, parsed, wired = measure(sorted(args.sizes), args.runs, not args.no_remote, args.rows)
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
    print("\nbytes read from the server / written to it / of packed-refs rewritten, a call:")
    for name, moved in wired.items():
        if any(any(cell) for cell in moved.values()):
            print(f"  {name:<24} " + "  ".join("/".join(f"{n:,}" for n in moved[size]) for size in sorted(moved)))
    if args.json:
        data: dict[str, Any] = {name: {str(k): v for k, v in cells.items()} for name, cells in table.items()}
        args.json.write_text(json.dumps(data, indent=2))
    if args.chart:
        args.chart.write_text(chart(table))


_COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#000000",
    "#aec7e8",
)


def chart(table: dict[str, dict[int, float]]) -> str:
    """An SVG chart: each row's cost as a ratio to its cost at the first size,
    against the number of snapshots (log scale), with the 1.2x target drawn."""
    sizes = sorted({size for cells in table.values() for size in cells})
    width, height, left, top, right, bottom = 760, 420, 60, 20, 250, 50
    plot_w, plot_h = width - left - right, height - top - bottom
    ratios = {
        name: {size: cells[size] / cells[sizes[0]] for size in sizes if size in cells}
        for name, cells in table.items()
        if sizes[0] in cells and cells[sizes[0]] > 0
    }
    high = max([1.5, *(r for row in ratios.values() for r in row.values())])

    def x(size: int) -> float:
        span = (len(sizes) - 1) or 1
        return left + plot_w * sizes.index(size) / span

    def y(ratio: float) -> float:
        return top + plot_h * (1 - ratio / high)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="black"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="black"/>',
        f'<line x1="{left}" y1="{y(1.2):.1f}" x2="{left + plot_w}" y2="{y(1.2):.1f}" stroke="red" '
        'stroke-dasharray="4 3"/>',
        f'<text x="{left + plot_w + 4}" y="{y(1.2) + 4:.1f}" fill="red">1.2x</text>',
    ]
    for size in sizes:
        parts.append(f'<text x="{x(size):.1f}" y="{top + plot_h + 18}" text-anchor="middle">{size:,}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 10}" text-anchor="middle">snapshots (log scale)</text>')
    step = 0.5 if high <= 4 else 1.0 if high <= 10 else 5.0
    tick = 0.0
    while tick <= high:
        parts.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}x</text>')
        tick += step
    for i, (name, row) in enumerate(ratios.items()):
        colour = _COLOURS[i % len(_COLOURS)]
        points = " ".join(f"{x(size):.1f},{y(ratio):.1f}" for size, ratio in sorted(row.items()))
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{width - right + 30}" y="{top + 16 * i + 10}" fill="{colour}">{name}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    main()
