"""snapshotter beside git on a real monorepo checkout: many tiny folders, and a
big restore into crowded folders.

    python benchmarks/bench_monorepo.py --repo PATH            # HEAD against HEAD~300, 3 runs
    python benchmarks/bench_monorepo.py --repo PATH --older HEAD~1000 --runs 5 --json out.json

``--repo`` is any git repository, a clone or a bare mirror (the figures in
benchmarks/README.md are babel/babel's: ``git clone --mirror
https://github.com/babel/babel``). Its ``HEAD`` is written out as a workspace of
its own (no ``.git`` in it), and the rows of ``bench_engine.py`` are measured
there, each side taking turns: git works in a bare shadow repository
(``add -A``, ``write-tree``...). One more row restores the whole folder between
``HEAD`` and ``--older`` (thousands of files written, deleted and made in folders
full of others), snapshotter's ``restore`` beside git's ``read-tree -u --reset``.
Ratios are snapshotter / git. A measurement, not a test: run it by hand.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_engine import GIT_ENV, OPERATIONS, Bench, GitShadow, Row, Workspace, environment  # noqa: E402

from snapshotter import DEFAULT_EXCLUDES  # noqa: E402

ROWS = ("cold", "no_change", "diff_none", "changed_10", "restore_exact", "diff_10")
RESTORE = "restore_commits"


class PolicyShadow(GitShadow):
    """git's side, told the default excludes (a real repository holds some:
    babel commits node_modules fixtures), so both sides record the same tree."""

    def reset(self) -> None:
        super().reset()
        (self.dir / "info" / "exclude").write_text("\n".join((".git", *DEFAULT_EXCLUDES)) + "\n")


def checkout(repo: str, rev: str, into: Path) -> list[Path]:
    """Write ``rev``'s tree into ``into`` (``git archive``, so no ``.git``)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", repo, "archive", rev], env=GIT_ENV, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return sorted(p for p in into.rglob("*") if p.is_file() and not p.is_symlink())


def restore_commits(bench: Bench, repo: str, older: str, row: Row) -> None:
    """Snapshot HEAD, make the workspace ``older`` (git writes it), snapshot;
    then restore HEAD, older, HEAD... (``Bench.restore_between``)."""
    snap = bench.snap
    assert snap is not None
    objects = subprocess.run(
        ["git", "-C", repo, "rev-parse", "--path-format=absolute", "--git-path", "objects"],
        env=GIT_ENV,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (bench.git.dir / "objects" / "info" / "alternates").write_text(objects + "\n")  # the older commit's blobs
    head, head_tree = bench.sync()
    old_tree = subprocess.run(
        ["git", "-C", repo, "rev-parse", f"{older}^{{tree}}"], env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout.strip()
    bench.git.run("read-tree", "-u", "--reset", old_tree)
    old, old_tree = bench.sync()  # as the default excludes have it
    bench.restore_between(row, (head, head_tree), (old, old_tree))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", required=True, help="a git repository (clone or bare mirror)")
    parser.add_argument("--older", default="HEAD~300", help="the other side of the whole-folder restore")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", help="also write every raw time here")
    parser.add_argument("--scratch", help="folder for the workspace and stores (default: a temp folder)")
    options = parser.parse_args()
    scratch = Path(options.scratch or tempfile.mkdtemp(prefix="snapshotter-monorepo-"))
    try:
        paths = checkout(options.repo, "HEAD", scratch / "ws")
        folders = len({p.parent for p in paths})
        name = Path(options.repo.rstrip("/")).name
        print(f"{name}: {len(paths):,} files in {folders:,} folders, {options.runs} runs", flush=True)
        bench = Bench(Workspace(name, scratch / "ws", paths, big=False), scratch, options.runs)
        bench.git = PolicyShadow(scratch / "ws", scratch)
        bench.rows[RESTORE] = Row()
        OPERATIONS[RESTORE] = f"restore HEAD <-> {options.older}, the whole folder"
        labels = OPERATIONS
        bench.git.reset()
        bench.measure("cold", bench.cold)
        bench.open_main()
        for key in ROWS[1:]:
            bench.measure(key, getattr(bench, key))
        bench.measure(RESTORE, partial(restore_commits, bench, options.repo, options.older))
        report = {"environment": environment(options.runs), "workspace": name, "files": len(paths), "rows": {}}
        print(f"\n{'operation':<46} {'snapshotter':>12} {'git':>10} {'ratio':>7}")
        for key in (*ROWS, RESTORE):
            row = bench.rows[key]
            report["rows"][key] = row.as_json(labels[key])
            if row.status != "ok" or not row.snapshotter or not row.git:
                print(f"{labels[key]:<46} {row.status}: {row.note}")
                continue
            ours, theirs = statistics.median(row.snapshotter), statistics.median(row.git)
            print(f"{labels[key]:<46} {ours:>10.3f} s {theirs:>8.3f} s {ours / theirs:>6.2f}x")
        if bench.tree_mismatches:
            print("tree ids differ:", *bench.tree_mismatches, sep="\n  ")
        report["tree_mismatches"] = bench.tree_mismatches
        if options.json:
            Path(options.json).write_text(json.dumps(report, indent=2) + "\n")
        if bench.snap is not None:
            bench.snap.close()
    finally:
        if not options.scratch:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
