"""Big files kept as deltas: store growth, time and memory per snapshot, beside git (issue #53).

    python benchmarks/bench_bigfile.py                        # 1 GiB file, 200 MiB SQLite database
    python benchmarks/bench_bigfile.py --mib 64 --db-mib 16   # a quick trial of the script itself
    python benchmarks/bench_bigfile.py --json out.json --no-git

Two workloads, each in one run:

- a file of ``--mib`` MiB of random bytes (nothing to compress: a full copy
  costs its whole size) with ten 64 KiB stretches rewritten in place at random
  places between snapshots;
- a SQLite database of ``--db-mib`` MiB made with the standard library's
  ``sqlite3`` (rows of ~1 KB), with 100 random rows updated between snapshots;
  every version restored is checked with ``PRAGMA integrity_check``.

Per snapshot: the store's growth (bytes on disk, signatures included), the
time, the time to read and SHA-1 the same file in this process just before
(the floor any snapshot pays), and the peak RSS the step added in a fresh
child process. Beside them, where git is on PATH, the same versions stored
with ``git add`` (and a commit, so that ``git gc --aggressive`` keeps them)
in a bare shadow repository: its growth and time per version, then
``git gc --aggressive``'s time and the repository's size. Then a restore of
the newest version of the big file into an empty place (the end of a chain of
``--versions`` deltas) beside ``cp`` of the same file, ``--restores`` times (the
median: the machine may be shared), and snapshotter's own
``gc()``. Every version restored is compared byte for byte (SHA-256).

The page cache is left warm for both sides (this benchmark never drops
caches: the machine may be shared). Needs about ``(versions + 3) x --mib`` on
disk with git, and removes what it made.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GIT = shutil.which("git")

STEP = r"""
import json, os, sys, time
sys.path.insert(0, {root!r})

def status(field):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith(field)) / 1024

def rss_now():
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")  # the peak starts again from here
    return status("VmRSS:")

from snapshotter import Snapshotter, Retention
from snapshotter.engine.upkeep.compaction import disk_usage
snap = Snapshotter({ws!r}, home={home!r}, max_new_file_size=1 << 40, retention=Retention.unlimited(),
                   max_workspace_bytes=0)
store = snap._engine_ok().store
before_bytes = disk_usage(store)
base = rss_now()
start = time.perf_counter()
cpu = time.process_time()
if {step!r} == "snapshot":
    info = snap.snapshot({label!r})
    out = {{"id": info.id, "tree": info.tree_id}}
elif {step!r} == "restore":
    result = snap.restore({ref!r})
    out = {{"written": result.written}}
else:
    out = {{"gc": snap.gc().bytes_after}}
out["seconds"] = time.perf_counter() - start
out["cpu_seconds"] = time.process_time() - cpu
out["rss_added_mib"] = status("VmHWM:") - base
out["rss_base_mib"] = base
out["store_before"] = before_bytes
out["store_after"] = disk_usage(store)
snap.close()
print(json.dumps(out))
"""


def step(ws: Path, home: Path, name: str, label: str = "", ref: str = "") -> dict[str, Any]:
    code = STEP.format(root=str(ROOT), ws=str(ws), home=str(home), step=name, label=label, ref=ref)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    found["grew"] = found["store_after"] - found["store_before"]
    return found


def read_and_sha1(path: Path) -> tuple[float, float]:
    """(seconds, CPU seconds) to read the file in 1 MiB pieces and SHA-1 it, in this process."""
    start = time.perf_counter()
    cpu = time.process_time()
    digest = hashlib.sha1()
    with open(path, "rb", buffering=0) as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return time.perf_counter() - start, time.process_time() - cpu


def cp_seconds(path: Path, scratch: Path) -> float:
    target = scratch / "cp-target"
    start = time.perf_counter()
    subprocess.run(["cp", str(path), str(target)], check=True)
    seconds = time.perf_counter() - start
    target.unlink()
    return seconds


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def folder_bytes(path: Path) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


class Shadow:
    """A bare git repository beside the workspace, storing the same versions."""

    def __init__(self, scratch: Path, ws: Path) -> None:
        self.dir = scratch / "shadow.git"
        self.ws = ws
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        self.env.update(
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            HOME=str(scratch),
            GIT_AUTHOR_NAME="b",
            GIT_AUTHOR_EMAIL="b@b",
            GIT_COMMITTER_NAME="b",
            GIT_COMMITTER_EMAIL="b@b",
        )
        self._git("init", "-q", "--bare", str(self.dir))
        self.count = 0

    def _git(self, *args: str) -> str:
        assert GIT is not None
        done = subprocess.run([GIT, *args], capture_output=True, text=True, env=self.env, check=True)
        return done.stdout.strip()

    def add(self) -> tuple[float, int]:
        """``git add -A`` and a commit of the workspace: (seconds for the add, bytes the repository grew)."""
        base = ["--git-dir", str(self.dir), "--work-tree", str(self.ws)]
        before = folder_bytes(self.dir)
        start = time.perf_counter()
        self._git(*base, "add", "-A")
        seconds = time.perf_counter() - start
        tree = self._git(*base, "write-tree")
        commit = self._git("--git-dir", str(self.dir), "commit-tree", tree, "-m", f"v{self.count}")
        self._git("--git-dir", str(self.dir), "update-ref", f"refs/heads/v{self.count}", commit)
        self.count += 1
        return seconds, folder_bytes(self.dir) - before

    def gc_aggressive(self) -> tuple[float, int]:
        start = time.perf_counter()
        self._git("--git-dir", str(self.dir), "gc", "--aggressive", "--prune=now", "-q")
        return time.perf_counter() - start, folder_bytes(self.dir)


def rewrite_in_place(path: Path, rng: random.Random, count: int = 10, size: int = 64 << 10) -> None:
    length = path.stat().st_size
    with open(path, "r+b") as handle:
        for _ in range(count):
            handle.seek(rng.randrange(0, length - size))
            handle.write(rng.randbytes(size))


def make_database(path: Path, mib: int, rng: random.Random) -> int:
    """A SQLite database of about ``mib`` MiB: rows of an id and ~1 KB of text; returns the row count."""
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, payload TEXT)")
    rows = 0
    while path.stat().st_size < mib << 20:
        batch = [(rows + i, f"item {rows + i}", rng.randbytes(500).hex()) for i in range(5000)]
        connection.executemany("INSERT INTO items VALUES (?, ?, ?)", batch)
        connection.commit()
        rows += len(batch)
    connection.close()
    return rows


def update_rows(path: Path, rows: int, rng: random.Random, count: int = 100) -> None:
    connection = sqlite3.connect(path)
    for _ in range(count):
        connection.execute("UPDATE items SET payload = ? WHERE id = ?", (rng.randbytes(500).hex(), rng.randrange(rows)))
    connection.commit()
    connection.close()


def integrity(path: Path) -> str:
    connection = sqlite3.connect(path)
    try:
        return str(connection.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        connection.close()


def run_workload(
    name: str, scratch: Path, versions: int, use_git: bool, make: Any, change: Any, check: Any, restores: int = 1
) -> dict[str, Any]:
    """Snapshot the first version, then ``versions`` changed ones; restore each; returns the figures."""
    ws, home = scratch / name / "ws", scratch / name / "home"
    ws.mkdir(parents=True)
    target = make(ws)
    time.sleep(1.1)
    shadow = Shadow(scratch / name, ws) if use_git else None
    rows: list[dict[str, Any]] = []
    recorded: list[tuple[str, str]] = []
    for version in range(versions + 1):
        if version:
            change(target)
        floor, floor_cpu = min(read_and_sha1(target) for _ in range(2))
        found = step(ws, home, "snapshot", f"v{version}")
        row: dict[str, Any] = {
            "version": version,
            "seconds": found["seconds"],
            "cpu_seconds": found["cpu_seconds"],
            "read_sha1_seconds": floor,
            "read_sha1_cpu_seconds": floor_cpu,
            "grew": found["grew"],
            "rss_added_mib": found["rss_added_mib"],
            "rss_base_mib": found["rss_base_mib"],
        }
        if shadow is not None:
            row["git_add_seconds"], row["git_grew"] = shadow.add()
        rows.append(row)
        recorded.append((found["id"], sha256(target)))
        print(
            f"  {name} v{version}: {row['seconds']:.2f} s (read+SHA-1 {floor:.2f} s, x{row['seconds'] / floor:.2f};"
            f" CPU {row['cpu_seconds']:.2f} s against {floor_cpu:.2f}),"
            f" store +{row['grew'] / 2**20:.2f} MiB, peak RSS +{row['rss_added_mib']:.1f} MiB"
            + (
                f"; git add {row['git_add_seconds']:.2f} s, +{row['git_grew'] / 2**20:.2f} MiB"
                if shadow is not None
                else ""
            ),
            flush=True,
        )
    result: dict[str, Any] = {"versions": rows}
    # the newest version restored into an empty place, beside cp of the same file, ``restores`` times
    newest_id, newest_digest = recorded[-1]
    runs: list[dict[str, Any]] = []
    for _ in range(restores):
        cp = min(cp_seconds(target, scratch) for _ in range(2))
        target.unlink()
        restored = step(ws, home, "restore", ref=newest_id)
        assert sha256(target) == newest_digest, "the newest version did not restore byte for byte"
        runs.append({**{key: restored[key] for key in ("seconds", "cpu_seconds", "rss_added_mib")}, "cp_seconds": cp})
    seconds = statistics.median(run["seconds"] for run in runs)
    cp = statistics.median(run["cp_seconds"] for run in runs)
    result["restore"] = {
        "seconds": seconds,
        "cpu_seconds": statistics.median(run["cpu_seconds"] for run in runs),
        "cp_seconds": cp,
        "rss_added_mib": max(run["rss_added_mib"] for run in runs),
        "runs": runs,
    }
    print(
        f"  {name} restore of the newest (a chain of {versions} deltas), median of {len(runs)}: {seconds:.2f} s"
        f" (CPU {result['restore']['cpu_seconds']:.2f} s), cp {cp:.2f} s (x{seconds / cp:.2f}),"
        f" peak RSS +{result['restore']['rss_added_mib']:.1f} MiB; each run (restore/cp): "
        + ", ".join(f"{run['seconds']:.2f}/{run['cp_seconds']:.2f}" for run in runs),
        flush=True,
    )
    checks = []
    for snapshot_id, digest in recorded:
        step(ws, home, "restore", ref=snapshot_id)
        assert sha256(target) == digest, f"{snapshot_id} did not restore byte for byte"
        checks.append(check(target))
    result["checks"] = checks
    collected = step(ws, home, "gc")
    result["gc"] = {"seconds": collected["seconds"], "bytes_after": collected["store_after"]}
    result["store_bytes"] = collected["store_after"]
    print(f"  {name} gc(): {collected['seconds']:.2f} s, store {collected['store_after'] / 2**20:.1f} MiB", flush=True)
    if shadow is not None:
        seconds, size = shadow.gc_aggressive()
        result["git_gc_aggressive"] = {"seconds": seconds, "bytes_after": size}
        print(f"  {name} git gc --aggressive: {seconds:.2f} s, repository {size / 2**20:.1f} MiB", flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=1024, help="the random file's size (default 1024; 0: none)")
    parser.add_argument("--db-mib", type=int, default=200, help="the SQLite database's size (default 200; 0: none)")
    parser.add_argument("--versions", type=int, default=5, help="changed versions after the first (default 5)")
    parser.add_argument("--no-git", action="store_true", help="skip git's figures")
    parser.add_argument(
        "--restores", type=int, default=5, help="restores of the newest version beside cp (default 5; the median)"
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--scratch", type=Path, help="where to work (default: a new folder); one given is kept, less this run's files"
    )
    args = parser.parse_args()
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="snapbig-"))
    made = args.scratch is None or not scratch.exists()
    scratch.mkdir(parents=True, exist_ok=True)
    use_git = GIT is not None and not args.no_git
    rng = random.Random(53)
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "mib": args.mib, "db_mib": args.db_mib}
    try:

        def make_file(ws: Path) -> Path:
            path = ws / "big.bin"
            with open(path, "wb") as handle:
                for _ in range(args.mib // 8):
                    handle.write(rng.randbytes(8 << 20))
            return path

        if args.mib:
            print(f"{args.mib} MiB of random bytes, ten 64 KiB rewrites between snapshots:", flush=True)
            out["file"] = run_workload(
                "file",
                scratch,
                args.versions,
                use_git,
                make_file,
                lambda p: rewrite_in_place(p, rng),
                lambda p: "-",
                args.restores,
            )
        rows_made: list[int] = []

        def make_db(ws: Path) -> Path:
            path = ws / "app.db"
            rows_made.append(make_database(path, args.db_mib, rng))
            return path

        if args.db_mib:
            print(f"a {args.db_mib} MiB SQLite database, 100 rows updated between snapshots:", flush=True)
            out["database"] = run_workload(
                "database",
                scratch,
                args.versions,
                use_git,
                make_db,
                lambda p: update_rows(p, rows_made[0], rng),
                integrity,
                args.restores,
            )
            assert all(found == "ok" for found in out["database"]["checks"]), out["database"]["checks"]
            print("every restored database passes PRAGMA integrity_check", flush=True)
    finally:
        if made:
            shutil.rmtree(scratch, ignore_errors=True)
        else:  # the caller's folder (it may hold the --json file): only what this run put there
            for name in ("file", "database"):
                shutil.rmtree(scratch / name, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
