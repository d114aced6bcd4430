"""Whether a snapshot costs more as the history grows: agent turns (a begin, three
bracketed tool calls of one edit each, an end: 8 snapshots) over a small folder
in watch mode, retention off, timed per block of 100 turns.

    python benchmarks/bench_long_history.py                 # 3,200 snapshots
    python benchmarks/bench_long_history.py --snapshots 5000

The figure is the growth: milliseconds a snapshot in the last block against the
first. The folder is small on purpose (50 files), so what grows is the history's
cost, not the scan's. A measurement, not a test: run it by hand.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from snapshotter import Retention, Snapshotter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--snapshots", type=int, default=3200)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-history-"))
    ws = scratch / "ws"
    ws.mkdir()
    for i in range(50):
        (ws / f"f{i}.txt").write_text("x\n")
    blocks = []
    try:
        with Snapshotter(ws, home=scratch / "home", watch=True, retention=Retention.unlimited()) as snap:
            snap.snapshot("first")
            started = time.perf_counter()
            for turn in range(args.snapshots // 8):
                session = snap.in_session("claude-code-aa" if turn % 2 else "codex-bb")
                session.begin_turn(f"turn {turn}")
                for call in range(3):
                    session.tool_snapshot(f"c{turn}-{call}")
                    with open(ws / f"f{(turn * 3 + call) % 50}.txt", "a") as handle:
                        handle.write(f"{turn}\n")
                    session.tool_done(f"c{turn}-{call}")
                session.end_turn()
                if turn % 100 == 99:
                    blocks.append((turn + 1) * 8 + 1)
                    ms = (time.perf_counter() - started) / 800 * 1000
                    print(f"{blocks[-1]:>6,} snapshots: {ms:6.1f} ms a snapshot over the last 800", flush=True)
                    blocks[-1] = ms
                    started = time.perf_counter()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if len(blocks) >= 2:
        print(f"growth, last block / first: {blocks[-1] / blocks[0]:.2f}")


if __name__ == "__main__":
    main()
