"""snapshotter beside the git binary, in the same run, on a generated workspace.

    python benchmarks/bench_engine.py                 # 20,000 files, 3 runs each
    python benchmarks/bench_engine.py --files 100000 --runs 5 --json out.json

git does the same job in a bare shadow repository: ``add -A``, ``write-tree``,
``commit-tree``, ``update-ref`` for a snapshot and ``read-tree -u --reset`` for a
restore. Every figure is the median of ``--runs`` runs; ratios are
snapshotter / git (below 1.0 means snapshotter is faster). The bare
``os.scandir`` + ``lstat`` walk is the floor any Python walker pays.

This is a measurement, not a test: run it by hand on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from snapshotter import Snapshotter  # noqa: E402

WORDS = [
    "def",
    "class",
    "return",
    "import",
    "self",
    "value",
    "result",
    "data",
    "index",
    "for",
    "while",
    "if",
    "else",
    "None",
    "True",
    "False",
]


def generate(root: Path, files: int, seed: int = 1) -> list[Path]:
    """Source-like files of 100 B to 4 KB in nested folders, with a few .gitignore files."""
    rng = random.Random(seed)
    paths = []
    per_dir = 20
    for i in range(files):
        d = i // per_dir
        folder = root / f"pkg{d // 400}" / f"mod{(d // 20) % 20}" / f"sub{d % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        size = rng.randint(100, 4096)
        lines = []
        total = 0
        while total < size:
            line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 10))) + "\n"
            lines.append(line)
            total += len(line)
        path = folder / f"file{i}.py"
        path.write_text("".join(lines))
        paths.append(path)
    for k in range(5):
        (root / f"pkg{k}").mkdir(exist_ok=True)
        (root / f"pkg{k}" / ".gitignore").write_text("*.log\nbuild/\n!keep.log\n")
        (root / f"pkg{k}" / "run.log").write_text("ignored\n")
    (root / ".gitignore").write_text("*.tmp\n/dist/\n")
    return paths


def median_time(runs: int, action: Callable[[], object], before: Callable[[], object] | None = None) -> float:
    times = []
    for _ in range(runs):
        if before is not None:
            before()
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class GitShadow:
    """The git binary doing snapshotter's job in a bare shadow repository."""

    def __init__(self, workspace: Path, scratch: Path) -> None:
        self.git = shutil.which("git")
        if self.git is None:
            raise SystemExit("git is needed on PATH for the side-by-side figures")
        self.ws = workspace
        self.dir = scratch / "shadow.git"
        self.env = dict(
            os.environ,
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_AUTHOR_NAME="b",
            GIT_AUTHOR_EMAIL="b@b",
            GIT_COMMITTER_NAME="b",
            GIT_COMMITTER_EMAIL="b@b",
        )
        self.last_tree = ""

    def run(self, *args: str) -> str:
        assert self.git is not None
        base = [self.git, "--git-dir", str(self.dir), "--work-tree", str(self.ws)]
        return subprocess.run(base + list(args), env=self.env, check=True, capture_output=True, text=True).stdout

    def reset(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
        assert self.git is not None
        subprocess.run([self.git, "init", "-q", "--bare", str(self.dir)], env=self.env, check=True)
        (self.dir / "info" / "exclude").write_text(".git\n")

    def snapshot(self) -> str:
        self.run("add", "-A")
        tree = self.run("write-tree").strip()
        commit = self.run("commit-tree", tree, "-m", "snap").strip()
        self.run("update-ref", "refs/snapshots/x", commit)
        self.last_tree = tree
        return tree

    def restore(self, tree: str) -> None:
        self.run("read-tree", "-u", "--reset", tree)


def python_walk(root: Path) -> int:
    count = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != ".git":
                        stack.append(entry.path)
                else:
                    entry.stat(follow_symlinks=False)
                    count += 1
    return count


def change(paths: list[Path], count: int, rng: random.Random) -> None:
    for path in rng.sample(paths, count):
        with open(path, "a") as handle:
            handle.write(f"# edit {rng.random()}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--scratch", help="folder for the workspace and stores (default: a temp folder)")
    args = parser.parse_args()

    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="snapbench-"))
    ws = scratch / "ws"
    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir(parents=True)
    print(f"generating {args.files:,} files in {ws} ...", flush=True)
    paths = generate(ws, args.files)
    time.sleep(1.1)  # let every mtime fall strictly before the first cache write (racy rule)
    rng = random.Random(2)
    git = GitShadow(ws, scratch)
    homes = iter(range(10_000))
    results: dict[str, dict[str, float]] = {}

    def fresh_home() -> Path:
        home = scratch / f"home{next(homes)}"
        shutil.rmtree(home, ignore_errors=True)
        return home

    # cold snapshot
    def snap_cold() -> None:
        with Snapshotter(ws, home=fresh_home()) as snap:
            snap.snapshot("cold")

    results["cold snapshot"] = {
        "snapshotter": median_time(args.runs, snap_cold),
        "git": median_time(args.runs, git.snapshot, before=git.reset),
    }
    home = fresh_home()
    snap = Snapshotter(ws, home=home)
    base = snap.snapshot("base")
    git.reset()
    git_base = git.snapshot()
    time.sleep(1.1)
    snap.snapshot("settle")  # records are no longer racy after this one

    results["no-change snapshot"] = {
        "snapshotter": median_time(args.runs, snap.snapshot),
        "git": median_time(args.runs, git.snapshot),
    }
    results["snapshot, 10 changed"] = {
        "snapshotter": median_time(args.runs, snap.snapshot, before=lambda: change(paths, 10, rng)),
        "git": median_time(args.runs, git.snapshot, before=lambda: change(paths, 10, rng)),
    }
    snap.snapshot("after changes")
    git.snapshot()
    base = snap.snapshot("restore base")
    git_base = git.snapshot()

    def mutate_and_snapshot_git() -> None:
        change(paths, 10, rng)

    results["restore after 10 changes"] = {
        "snapshotter": median_time(args.runs, lambda: snap.restore(base.id), before=lambda: change(paths, 10, rng)),
        "git": median_time(args.runs, lambda: git.restore(git_base), before=mutate_and_snapshot_git),
    }
    results["python scandir+lstat walk"] = {"snapshotter": median_time(args.runs, lambda: python_walk(ws)), "git": 0.0}
    snap.close()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print(f"\n{args.files:,} files, median of {args.runs} runs, {time.strftime('%Y-%m-%d')}")
    print(f"{'operation':<28} {'snapshotter':>12} {'git':>10} {'ratio':>7}")
    for name, row in results.items():
        ratio = f"{row['snapshotter'] / row['git']:.2f}" if row["git"] else "-"
        git_col = f"{row['git']:.3f} s" if row["git"] else "-"
        print(f"{name:<28} {row['snapshotter']:>10.3f} s {git_col:>10} {ratio:>7}")
    print(f"peak RSS of this process: {peak_mib:.0f} MiB")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"files": args.files, "runs": args.runs, "results": results, "peak_rss_mib": peak_mib}, indent=2)
        )
    if not args.scratch:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
