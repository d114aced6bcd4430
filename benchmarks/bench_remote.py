"""Pushing snapshots to a git server, beside ``git push`` of the same refs to the same kind of server.

    python benchmarks/bench_remote.py                      # 100,000 files, 3 runs
    python benchmarks/bench_remote.py --sizes 20000 --runs 5

Rows (medians; ratio = snapshotter / git), each to a fresh bare repository
served by ``git daemon --enable=receive-pack`` on loopback (issue #22):

- first push: one snapshot of the whole workspace (every object sent).
  git: ``git push`` of a commit of the same tree from a repository holding it;
- push of 10 changed files: one more snapshot, after the first push.
  git: ``git push`` of a commit of the same files changed.

The git side pushes its commit to ``refs/heads/x``; snapshotter pushes under
its namespace. The object counts sent by each side are printed. Workspaces are
bench_engine.py's (same seed). A measurement, not a test: run it by hand on a
quiet machine.
"""

from __future__ import annotations

import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from bench_engine import GIT_ENV, generate  # noqa: E402
from bench_revert import edit, quiet_disk, run_sizes  # noqa: E402
from remote_servers import bare_repository, git_daemon  # noqa: E402

from snapshotter import Retention, Snapshotter  # noqa: E402


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], env=GIT_ENV, check=True, capture_output=True, text=True)
    return done.stdout + done.stderr


def measure(files: int, runs: int) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="brm-"))
    try:
        ws, repo = scratch / "ws", scratch / "repo"
        ws.mkdir()
        print(f"generating {files:,} files ...", flush=True)
        paths = generate(ws, files)
        shutil.copytree(ws, repo)
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "base")
        caps = {"max_workspace_entries": max(200_000, 2 * files), "retention": Retention(max_store_bytes=None)}
        rows: dict[str, dict[str, list[float]]] = {key: {"snapshotter": [], "git": []} for key in ("first", "ten")}
        sent: dict[str, list[int]] = {"first": [], "ten": []}
        rng = random.Random(4)
        servers = scratch / "servers"
        servers.mkdir()
        with git_daemon(servers) as url:
            for run in range(runs):
                ours, theirs = f"ours{run}.git", f"git{run}.git"
                bare_repository(servers / ours)
                bare_repository(servers / theirs)
                home = scratch / f"home{run}"
                with Snapshotter(ws, home=home, **caps) as snap:  # type: ignore[arg-type]
                    targets = (f"{url}/{ours}", repo, f"{url}/{theirs}")
                    snap.snapshot("base")
                    both_push(snap, *targets, rows["first"], sent["first"])
                    changed = [p.relative_to(ws) for p in rng.sample(paths, 10)]
                    edit([ws / p for p in changed], f"run {run}")
                    edit([repo / p for p in changed], f"run {run}")
                    snap.snapshot("ten")
                    git(repo, "commit", "-q", "-a", "-m", f"ten {run}")
                    both_push(snap, *targets, rows["ten"], sent["ten"])
        out: dict[str, Any] = {"files": files, "rows": {}, "objects_sent": sent}
        for key, sides in rows.items():
            a, b = statistics.median(sides["snapshotter"]), statistics.median(sides["git"])
            out["rows"][key] = {**sides, "snapshotter_median": a, "git_median": b, "ratio": a / b}
        return out
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def both_push(
    snap: Snapshotter, ours: str, repo: Path, theirs: str, row: dict[str, list[float]], sent: list[int]
) -> None:
    """Time our push to ``ours``, then git's from ``repo`` to ``theirs``, each on a quiet disk."""
    quiet_disk()
    start = time.perf_counter()
    sent.append(snap.push(ours, name="bench").objects_sent)
    row["snapshotter"].append(time.perf_counter() - start)
    quiet_disk()
    start = time.perf_counter()
    git(repo, "push", "-q", theirs, "HEAD:refs/heads/x")
    row["git"].append(time.perf_counter() - start)


def show(result: dict[str, Any]) -> None:
    for key, label in (("first", "first push (whole snapshot)"), ("ten", "push of 10 changed files")):
        row = result["rows"][key]
        print(
            f"  {label:30} snapshotter {row['snapshotter_median']:.3f} s   git push {row['git_median']:.3f} s"
            f"   ratio {row['ratio']:.2f}   objects sent {result['objects_sent'][key]}"
        )


if __name__ == "__main__":
    run_sizes(__doc__, measure, show)
