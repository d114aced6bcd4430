"""Line counts after a big change: snapshotter's snapshot beside git's snapshot plus
``git diff --numstat`` of the same change, in the same run.

    python benchmarks/bench_linediff.py                      # 20 files of 5,000-50,000 lines, ~40% changed
    python benchmarks/bench_linediff.py --runs 5 --json out.json
    python benchmarks/bench_linediff.py --checkout ~/src/git:HEAD~400:HEAD   # a real checkout, optional

A snapshot counts the lines added and deleted in every changed file (as ``git diff
--numstat`` does), so a change to many big files is where counting costs most. git
needs two commands for the same result: a snapshot in a bare shadow repository
(``add -A``, ``write-tree``, ``commit-tree``, ``update-ref``) and ``diff --numstat``
of the two trees. Both sides start settled (an untimed snapshot of the old files, and
mtimes past the racy window); then the files change and each side is timed on the
same change, taking turns. Every figure is the median of ``--runs`` runs.

Each run also checks that snapshotter's per-file counts equal git's on every file, and
times snapshotter's line counting alone, file by file (the slowest are listed).

``--checkout REPO:OLD:NEW`` adds a row for a real repository: the workspace holds
``git archive OLD`` and then changes to ``git archive NEW`` (git/git's
``HEAD~400`` to ``HEAD`` is the case that took 112.8 s before git's algorithm was
ported). The files come from the git binary; snapshotter never runs git.

This is a measurement, not a test: run it by hand on a quiet machine.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # textcorpus: the seeded real-looking files the tests use too
sys.path.insert(0, str(ROOT / "benchmarks"))

import textcorpus  # noqa: E402
from bench_engine import GitShadow, environment  # noqa: E402

from snapshotter import Retention, Snapshotter  # noqa: E402
from snapshotter.engine.compare import linediff  # noqa: E402
from snapshotter.engine.gitstore.objects import is_binary  # noqa: E402

KINDS = ("c", "po", "parser", "csv")
TARGET = 1.5

Files = dict[str, tuple[bytes, bytes]]
"""path -> (old content, new content)."""


def generated(files: int, low: int, high: int, fraction: float, seed: int = 1) -> Files:
    """``files`` files of ``low`` to ``high`` lines, kinds in turn, ``fraction`` of their lines changed."""
    rng = random.Random(seed)
    out: Files = {}
    for i in range(files):
        kind = KINDS[i % len(KINDS)]
        lines = rng.randint(low, high)
        out[f"src/f{i:02d}-{lines}{textcorpus.KINDS[kind][0]}"] = textcorpus.text_pair(kind, lines, fraction, i)
    return out


def checkout(spec: str) -> Files:
    """Every file of ``git archive OLD`` and ``git archive NEW`` of REPO (``REPO:OLD:NEW``)."""
    repo, old, new = spec.rsplit(":", 2)
    sides = []
    for rev in (old, new):
        raw = subprocess.run(["git", "-C", repo, "archive", rev], check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
            sides.append({m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()})  # type: ignore[union-attr]
    return {path: (sides[0].get(path, b""), sides[1].get(path, b"")) for path in sides[0].keys() | sides[1].keys()}


def write(ws: Path, files: Files, side: int) -> None:
    """Lay one side of ``files`` into ``ws`` (a file empty on that side is absent)."""
    for path, pair in files.items():
        target = ws / path
        if pair[side] or pair[1 - side] == b"":
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(pair[side])
        else:
            target.unlink(missing_ok=True)


def git_numstat(output: str) -> dict[str, tuple[str, str]]:
    counts = {}
    for line in output.splitlines():
        added, deleted, path = line.split("\t")
        counts[path] = (added, deleted)
    return counts


def per_file_counts(snap: Snapshotter, before: str, after: str) -> dict[str, tuple[str, str]]:
    """snapshotter's numstat of every changed file, in git's notation (``-`` for binary)."""
    out = {}
    for d in snap.diff(before, after):
        out[d.path] = ("-", "-") if d.binary else (str(d.additions), str(d.deletions))
    return out


def timed_run(snap: Snapshotter, git: GitShadow, old_tree: str, ours_first: bool) -> dict[str, Any]:
    """The timed part of one run, both sides on the same change, in the given order."""
    out: dict[str, Any] = {}
    for side in ("ours", "git") if ours_first else ("git", "ours"):
        start = time.perf_counter()
        if side == "ours":
            out["after"] = snap.snapshot("new")
            out["ours"] = time.perf_counter() - start
            continue
        new_tree = git.snapshot()
        middle = time.perf_counter()
        numstat = git.run("diff", "--numstat", "--no-renames", old_tree, new_tree)
        end = time.perf_counter()
        out["git"], out["git_parts"], out["git_counts"] = end - start, (middle - start, end - middle), numstat
    return out


def measure(name: str, files: Files, scratch: Path, runs: int) -> dict[str, Any]:
    """One row: ``runs`` runs of old -> new on both sides, plus the equality check and per-file times."""
    ws = scratch / "ws"
    shutil.rmtree(scratch, ignore_errors=True)
    ws.mkdir(parents=True)
    git = GitShadow(ws, scratch)
    git.reset()
    biggest = max(max(len(a), len(b)) for a, b in files.values())
    options: dict[str, Any] = {"retention": Retention(max_store_bytes=None), "max_new_file_size": max(biggest, 1 << 20)}
    snap = Snapshotter(ws, home=scratch / "home", **options)
    ours: list[float] = []
    theirs: list[float] = []
    parts: list[tuple[float, float]] = []
    mismatches: dict[str, Any] = {}
    compared = 0
    try:
        for run in range(runs):
            write(ws, files, 0)
            time.sleep(1.1)  # every mtime past the racy window, so neither side rereads the old files
            before = snap.snapshot("old")
            old_tree = git.snapshot()
            write(ws, files, 1)
            result = timed_run(snap, git, old_tree, ours_first=run % 2 == 0)
            ours.append(result["ours"])
            theirs.append(result["git"])
            parts.append(result["git_parts"])
            after, counts = result["after"], git_numstat(result["git_counts"])
            mine = per_file_counts(snap, before.id, after.id)
            compared += len(counts)
            if mine != counts:
                differ = [p for p in mine.keys() | counts.keys() if mine.get(p) != counts.get(p)]
                mismatches[f"run {run}"] = {p: (mine.get(p), counts.get(p)) for p in differ}
            added = sum(int(a) for a, _ in counts.values() if a != "-")
            deleted = sum(int(d) for _, d in counts.values() if d != "-")
            if (after.additions, after.deletions) != (added, deleted):
                mismatches[f"run {run} totals"] = {
                    "snapshot": (after.additions, after.deletions),
                    "git": (added, deleted),
                }
            print(
                f"  [{name}] run {run + 1}: snapshotter {ours[-1]:.3f} s, git {theirs[-1]:.3f} s "
                f"(snapshot {parts[-1][0]:.3f} + numstat {parts[-1][1]:.3f})",
                flush=True,
            )
    finally:
        snap.close()
    per_file = []
    for path, (old, new) in files.items():
        if old == new or is_binary(old) or is_binary(new):
            continue
        start = time.perf_counter()
        counts_one = linediff.numstat(old, new)
        elapsed = time.perf_counter() - start
        per_file.append({"path": path, "lines": old.count(b"\n"), "seconds": elapsed, "numstat": counts_one})
    per_file.sort(key=lambda row: -row["seconds"])
    return {
        "name": name,
        "files": len(files),
        "lines": sum(a.count(b"\n") for a, _ in files.values()),
        "bytes": sum(len(a) for a, _ in files.values()),
        "snapshotter": ours,
        "git": theirs,
        "git_snapshot_and_numstat": parts,
        "snapshotter_median": statistics.median(ours),
        "git_median": statistics.median(theirs),
        "ratio": statistics.median(ours) / statistics.median(theirs),
        "ratio_range": [min(ours) / max(theirs), max(ours) / min(theirs)],
        "changed_files_compared": compared,
        "mismatches": mismatches,
        "numstat_seconds_total": sum(row["seconds"] for row in per_file),
        "slowest_files": per_file[:5],
    }


def report(row: dict[str, Any]) -> None:
    print(f"\n{row['name']}: {row['files']} files, {row['lines']:,} lines, {row['bytes'] / 2**20:.1f} MiB")
    runs = ", ".join(f"{t:.3f}" for t in row["snapshotter"])
    print(f"  snapshotter snapshot          {row['snapshotter_median']:.3f} s  (runs: {runs})")
    runs = ", ".join(f"{t:.3f}" for t in row["git"])
    print(f"  git snapshot + diff --numstat {row['git_median']:.3f} s  (runs: {runs})")
    low, high = row["ratio_range"]
    print(f"  ratio {row['ratio']:.2f} (range {low:.2f}-{high:.2f}; target {TARGET})")
    verdict = "equal to git's on every file" if not row["mismatches"] else f"MISMATCHES {row['mismatches']}"[:2000]
    print(f"  numstat: {verdict} ({row['changed_files_compared']} changed files compared, all runs)")
    print(f"  line counting alone: {row['numstat_seconds_total']:.3f} s; slowest files:")
    for file in row["slowest_files"]:
        added, deleted = file["numstat"]
        print(f"    {file['path']:40s} {file['lines']:7,} lines  {file['seconds']:.3f} s  +{added} -{deleted}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs per figure; the median is reported (default 3)")
    parser.add_argument("--files", type=int, default=20, help="generated files (default 20)")
    parser.add_argument("--lines", default="5000,50000", help="fewest,most lines per file (default 5000,50000)")
    parser.add_argument("--fraction", type=float, default=0.4, help="share of lines changed (default 0.4)")
    parser.add_argument("--checkout", help="REPO:OLD:NEW, a row for a real repository's two revisions")
    parser.add_argument("--json", help="also write every raw time, median and ratio to this file")
    parser.add_argument("--scratch", help="folder for workspaces and stores (default: a temp folder, removed after)")
    args = parser.parse_args()
    if shutil.which("git") is None:
        raise SystemExit("git is needed on PATH for the side-by-side figures")
    low, high = (int(part) for part in args.lines.split(","))
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="linediff-bench-")).resolve()
    env = environment(args.runs)
    print(
        f"{env['date']}; {env['machine']['cores']} cores, {env['machine']['platform']}; "
        f"Python {env['versions']['python']}, git {env['versions']['git']}, compressor {env['versions']['compressor']}"
    )
    rows = []
    try:
        name = f"{args.files} files of {low:,}-{high:,} lines, {args.fraction:.0%} changed"
        rows.append(measure(name, generated(args.files, low, high, args.fraction), scratch / "generated", args.runs))
        report(rows[-1])
        if args.checkout:
            rows.append(measure(f"checkout {args.checkout}", checkout(args.checkout), scratch / "checkout", args.runs))
            report(rows[-1])
    finally:
        if args.json:
            Path(args.json).write_text(json.dumps({**env, "rows": rows}, indent=2))
        if not args.scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    if any(row["mismatches"] for row in rows):
        raise SystemExit("numstat differs from git's")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
