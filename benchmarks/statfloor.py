"""The floor of a no-change check in a new Python process (issue #51): what is left when
everything but the check itself is taken away.

    python benchmarks/statfloor.py WORKSPACE STATCACHE [--threads 2] [--verbose]

It starts, loads the stat cache a snapshot of WORKSPACE left (``statcache.load``),
lists the folders to check (``preloadthread.folder_jobs``), and checks every file
of them with the compiled loop (``_statmatch.check_folders``: one ``lstat`` each,
compared with its record) on ``--threads`` threads, the GIL released; then it
exits. It reads no ignore rule, lists no folder, builds no tree, compares nothing
and prints nothing. Any ``snapshotter status`` or ``diff`` does at least this much
in a new process, so its time beside ``git diff --stat`` bounds how close those
commands can come to git's (``bench_commands.py`` times it as the row ``floor``).
This is a measurement, not a test: run it by hand.
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import argparse  # noqa: E402
import os  # noqa: E402
import struct  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402

from snapshotter.engine.fsutil import DIR_FLAGS  # noqa: E402
from snapshotter.engine.worktree import _statmatch, statcache  # noqa: E402
from snapshotter.engine.worktree.preloadthread import Job, folder_jobs  # noqa: E402

RACY_NS = 10**10
"""Files changed in the last 10 s count as racy, as a scan right after a change would."""
VERDICT = struct.Struct("=qqqQ")
"""A folder's verdict, as ``check_folders`` writes it: its total size, or -1 if changed."""


def check(root_fd: int, jobs: list[Job], bodies: list[bytes], cutoff: int) -> int:
    """Check ``jobs`` as the walk's thread does; how many folders held no change."""
    control = bytearray(32)
    verdicts = bytearray(VERDICT.size * len(jobs))
    _statmatch.check_folders(root_fd, jobs, bodies, cutoff, control, verdicts)
    return sum(1 for verdict in VERDICT.iter_unpack(verdicts) if verdict[0] >= 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workspace")
    parser.add_argument("statcache")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--verbose", action="store_true", help="print each step's time to stderr")
    args = parser.parse_args()
    imported = time.perf_counter()
    cache = statcache.load(args.statcache)
    loaded = time.perf_counter()
    cutoff = time.time_ns() - RACY_NS
    found = folder_jobs(cache, cutoff, lambda: False)
    assert found is not None and found[0], "no folder to check: is STATCACHE this workspace's?"
    jobs, bodies, _ = found
    listed = time.perf_counter()
    fd = os.open(args.workspace, DIR_FLAGS)
    parts = [jobs[i :: args.threads] for i in range(args.threads)]
    unchanged = [0] * args.threads

    def run(at: int) -> None:
        unchanged[at] = check(fd, parts[at], bodies, cutoff)

    helpers = [threading.Thread(target=run, args=(at,)) for at in range(1, args.threads)]
    for helper in helpers:
        helper.start()
    run(0)
    for helper in helpers:
        helper.join()
    checked = time.perf_counter()
    if args.verbose:
        print(
            f"imports {1e3 * (imported - STARTED):.1f} ms, cache load {1e3 * (loaded - imported):.1f} ms,"
            f" job list {1e3 * (listed - loaded):.1f} ms, check {1e3 * (checked - listed):.1f} ms:"
            f" {len(jobs):,} folders, {sum(unchanged):,} unchanged",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
