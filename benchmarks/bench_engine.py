"""snapshotter beside the git binary, in the same run, on generated workspaces.

    python benchmarks/bench_engine.py                                  # 20,000 and 100,000 files, big files; 3 runs
    python benchmarks/bench_engine.py --sizes 20000,big --runs 5 --json out.json --chart out.png
    python benchmarks/bench_engine.py --new-process --sizes 100000 --runs 7   # the command line, new processes

git does the same job in a bare shadow repository: ``add -A``, ``write-tree``,
``commit-tree``, ``update-ref`` for a snapshot, ``read-tree -u --reset`` for a
restore and ``diff -p --numstat <tree>`` for a diff. Every figure is the median
of ``--runs`` runs; ratios are snapshotter / git (below 1.0 means snapshotter is
faster). The bare ``os.scandir`` + ``lstat`` walk is the floor any Python walker
pays. Each workspace is measured in a child process of its own, so its peak RSS
is its own. benchmarks/README.md says what every row measures.

This is a measurement, not a test: run it by hand on a quiet machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import snapshotter  # noqa: E402
from snapshotter import Retention, SnapshotInfo, Snapshotter  # noqa: E402

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

OPERATIONS = {
    "cold": "cold snapshot (fresh store)",
    "no_change": "no-change snapshot",
    "diff_none": "diff, nothing changed",
    "status_new": "status, new instance (no change)",
    "changed_10": "snapshot, 10 files changed",
    "restore_exact": "exact restore after 10 changed",
    "restore_10pct": "restore A<->B, 10% of files differ",
    "diff_10": "diff of 10 changed, with patches",
    "walk": "Python floor: scandir + lstat walk",
    "watch_no_change": "watch mode: no-change snapshot",
    "watch_changed_10": "watch mode: snapshot, 10 changed",
    "watch_restore_exact": "watch mode: exact restore",
    "watch_restore_10pct": "watch mode: restore A<->B, 10%",
    "watch_diff_10": "watch mode: diff of 10 changed",
}
TARGETS_AT = "100000"
TARGETS = {
    "cold": 0.5,
    "no_change": 1.5,
    "changed_10": 1.5,
    "restore_exact": 1.0,
    "restore_10pct": 1.0,
    "watch_no_change": 0.1,
    "watch_diff_10": 0.1,
}
"""Target ratios to git at 100,000 files."""
TARGETS_VS_NO_CHANGE = {"diff_none": 1.5}
"""Target ratios to the no-change snapshot of the same run, at 100,000 files."""

BIG_FILES = 20
DEFAULT_MAX_NEW_FILE = 10 * 2**20
DEFAULT_SIZES = "20000,100000,big"


# -- workspaces ----------------------------------------------------------------------------


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


def generated_workspace(prefix: str, files: int) -> tuple[Path, Path, list[Path]]:
    """A new scratch folder holding a generated workspace: (scratch, workspace, its files)."""
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    ws = scratch / "ws"
    ws.mkdir()
    print(f"generating {files:,} files ...", flush=True)
    return scratch, ws, generate(ws, files)


def generate_big(root: Path, files: int, mib: int, seed: int = 1) -> list[Path]:
    """``files`` files of ``mib`` MiB each: 16 KiB random blocks, each written twice
    in a row, so zlib halves them (partly compressible, like real binaries)."""
    rng = random.Random(seed)
    paths = []
    (root / "data").mkdir(parents=True, exist_ok=True)
    for i in range(files):
        path = root / "data" / f"blob{i:02d}.bin"
        with open(path, "wb") as handle:
            for _ in range(mib * 2**20 // (32 << 10)):
                block = rng.randbytes(16 << 10)
                handle.write(block + block)
        paths.append(path)
    (root / ".gitignore").write_text("*.tmp\n")
    return paths


def change(paths: list[Path], count: int, rng: random.Random) -> None:
    """Append a line to ``count`` random files (kept for bench_store.py)."""
    for path in rng.sample(paths, count):
        with open(path, "a") as handle:
            handle.write(f"# edit {rng.random()}\n")


@dataclass
class Workspace:
    """A generated workspace and how to edit its files."""

    name: str
    root: Path
    paths: list[Path]
    big: bool

    def describe(self) -> str:
        if self.big:
            mib = self.paths[0].stat().st_size / 2**20 if self.paths else 0
            return f"{len(self.paths)} files of {mib:g} MiB"
        return f"{len(self.paths):,} source-like files"

    def edit(self, paths: Sequence[Path], rng: random.Random) -> None:
        """Change each file: big ones get a 64 KiB slice rewritten, others a line appended."""
        for path in paths:
            if self.big:
                size = path.stat().st_size
                piece = min(64 << 10, size)
                with open(path, "r+b") as handle:
                    handle.seek(rng.randrange(0, size - piece + 1))
                    handle.write(rng.randbytes(piece))
            else:
                with open(path, "a") as handle:
                    handle.write(f"# edit {rng.random()}\n")

    def pick(self, count: int, rng: random.Random) -> list[Path]:
        return rng.sample(self.paths, min(count, len(self.paths)))


def make_workspace(name: str, root: Path, big_mib: int) -> Workspace:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    if name == "big":
        return Workspace(name, root, generate_big(root, BIG_FILES, big_mib), big=True)
    return Workspace(name, root, generate(root, int(name)), big=False)


def python_walk(root: Path) -> int:
    """The floor: list every folder, then ``lstat`` each file. Listing a folder
    whole before the calls is ~30% faster than interleaving them (measured)."""
    count = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as it:
            entries = list(it)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != ".git":
                    stack.append(entry.path)
            else:
                entry.stat(follow_symlinks=False)
                count += 1
    return count


# -- the git side --------------------------------------------------------------------------


GIT_ENV = dict(
    os.environ,
    GIT_CONFIG_NOSYSTEM="1",
    GIT_CONFIG_GLOBAL=os.devnull,
    GIT_AUTHOR_NAME="b",
    GIT_AUTHOR_EMAIL="b@b",
    GIT_COMMITTER_NAME="b",
    GIT_COMMITTER_EMAIL="b@b",
)
"""git with no user or system config and a fixed identity: the same for every run."""


class GitShadow:
    """The git binary doing snapshotter's job in a bare shadow repository."""

    def __init__(self, workspace: Path, scratch: Path) -> None:
        self.git = shutil.which("git")
        if self.git is None:
            raise SystemExit("git is needed on PATH for the side-by-side figures")
        self.ws = workspace
        self.dir = scratch / "shadow.git"
        self.env = GIT_ENV
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

    def status(self) -> str:
        """The index against the work tree, and the files it does not track."""
        return self.run("status", "--porcelain")

    def diff(self, tree: str) -> str:
        """Stored tree -> work tree, with line counts and patches (the index says which files to read)."""
        return self.run("diff", "--no-color", "--no-ext-diff", "--no-renames", "--numstat", "-p", tree)


def git_version() -> str:
    git = shutil.which("git")
    if git is None:
        return "missing"
    out = subprocess.run([git, "--version"], capture_output=True, text=True).stdout
    return out.strip().removeprefix("git version ")


# -- measuring one workspace (in a child process) ------------------------------------------


@dataclass
class Row:
    """The raw times of one operation, per side."""

    snapshotter: list[float] = field(default_factory=list)
    git: list[float] = field(default_factory=list)
    files_hashed: list[int] = field(default_factory=list)
    scans: list[dict[str, Any]] = field(default_factory=list)
    written: list[int] = field(default_factory=list)
    status: str = "ok"
    note: str = ""

    def as_json(self, label: str) -> dict[str, Any]:
        ours = statistics.median(self.snapshotter) if self.snapshotter else None
        theirs = statistics.median(self.git) if self.git else None
        return {
            "label": label,
            "status": self.status,
            "note": self.note,
            "snapshotter": self.snapshotter,
            "git": self.git,
            "snapshotter_median": ours,
            "git_median": theirs,
            "ratio": ours / theirs if ours is not None and theirs else None,
            "snapshotter_files_hashed": self.files_hashed,
            "snapshotter_scans": self.scans,
            "snapshotter_written": self.written,
        }


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def quiet_disk(limit: float = 5.0, wait: float = 120.0) -> None:
    """Flush, then wait (up to ``wait`` s) until the disk is quiet: the share of
    the last 10 s in which some task stalled on I/O under ``limit`` percent
    (Linux's ``/proc/pressure/io``). Writing 100,000 files leaves seconds of
    writeback behind, which would land on whichever side runs next."""
    os.sync()
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            first = Path("/proc/pressure/io").read_text().split()[1]  # "avg10=12.34"
        except (OSError, IndexError):
            return
        if float(first.partition("=")[2]) < limit:
            return
        time.sleep(2)


def stay_fair(run: int) -> tuple[str, str]:
    """Which side goes first in this run: they take turns, so drift and caches favour neither."""
    return ("snapshotter", "git") if run % 2 == 0 else ("git", "snapshotter")


def watch_open(ws: Path, **options: Any) -> tuple[Snapshotter | None, str]:
    """A watch-mode Snapshotter, or None and why not (the API may not exist yet)."""
    available = getattr(snapshotter, "watch_available", None)
    if not callable(available):
        return None, "snapshotter.watch_available() is missing"
    if not available():
        return None, "snapshotter.watch_available() is False"
    try:
        watch: dict[str, Any] = {"watch": True}  # a new keyword: older versions raise TypeError
        return Snapshotter(ws, **options, **watch), ""
    except TypeError as exc:
        return None, f"Snapshotter(watch=True) is not supported ({exc})"


class Bench:
    """Every operation on one workspace, snapshotter and git taking turns."""

    def __init__(self, ws: Workspace, scratch: Path, runs: int) -> None:
        self.ws = ws
        self.scratch = scratch
        self.runs = runs
        self.rng = random.Random(2)
        self.git = GitShadow(ws.root, scratch)
        self.rows: dict[str, Row] = {key: Row() for key in OPERATIONS}
        self.tree_mismatches: list[str] = []
        biggest = max((p.stat().st_size for p in ws.paths), default=0)
        # Never a size-triggered prune or gc inside a timed call, and big files are never skipped;
        # everything else is the default (count and age limits, auto-gc on loose objects and packs).
        self.options: dict[str, Any] = {
            "retention": Retention(max_store_bytes=None),
            "max_new_file_size": max(DEFAULT_MAX_NEW_FILE, biggest),
        }
        self.home = scratch / "home"
        shutil.rmtree(self.home, ignore_errors=True)
        self.snap: Snapshotter | None = None
        self.cold_homes = 0

    def say(self, key: str) -> None:
        row = self.rows[key]
        if row.status != "ok":
            text = f"{row.status}: {row.note}"
        else:
            parts = []
            for side, times in (("snapshotter", row.snapshotter), ("git", row.git)):
                if times:
                    parts.append(f"{side} {statistics.median(times):.3f} s")
            text = ", ".join(parts)
        print(f"  [{self.ws.name}] {OPERATIONS[key]}: {text}", flush=True)

    def measure(self, key: str, body: Callable[[Row], None]) -> None:
        row = self.rows[key]
        try:
            body(row)
        except Exception as exc:  # one broken operation must not lose the others' figures
            row.status, row.note = "error", f"{type(exc).__name__}: {exc}"
            try:
                self.sync()
            except Exception as again:
                row.note += f"; then sync failed: {type(again).__name__}: {again}"
        self.say(key)

    def time_side(self, row: Row, side: str, action: Callable[[], object], snap: Snapshotter | None = None) -> None:
        """Time one call; for snapshotter also record how many files its scan hashed."""
        seconds = timed(action)
        if side == "git":
            row.git.append(seconds)
            return
        row.snapshotter.append(seconds)
        if snap is not None:
            scan = snap.last_scan
            row.files_hashed.append(scan.files_hashed)
            row.scans.append(dataclasses.asdict(scan) if dataclasses.is_dataclass(scan) else {})

    def sync(self) -> tuple[SnapshotInfo, str]:
        """Let every mtime age past the racy window, then snapshot on both sides
        untimed, so both the stat cache and git's index are settled."""
        snap = self.snap
        assert snap is not None
        time.sleep(1.1)
        info = snap.snapshot("sync")
        tree = self.git.snapshot()
        if info.tree_id != tree:
            self.tree_mismatches.append(f"snapshotter {info.tree_id} != git {tree}")
        return info, tree

    # -- the operations ------------------------------------------------------------------

    def cold(self, row: Row) -> None:
        def ours() -> None:
            self.cold_homes += 1
            home = self.scratch / f"home-cold{self.cold_homes}"
            shutil.rmtree(home, ignore_errors=True)

            def take() -> None:
                with Snapshotter(self.ws.root, home=home, **self.options) as snap:
                    snap.snapshot("cold")

            quiet_disk()  # the other side's, or the generator's, writeback lands on nobody's run
            self.time_side(row, "snapshotter", take)
            shutil.rmtree(home, ignore_errors=True)

        def theirs() -> None:
            self.git.reset()
            quiet_disk()
            self.time_side(row, "git", self.git.snapshot)

        for run in range(self.runs):
            for side in stay_fair(run):
                if side == "snapshotter":
                    ours()
                else:
                    theirs()

    def open_main(self) -> None:
        self.snap = Snapshotter(self.ws.root, home=self.home, **self.options)
        self.snap.snapshot("base")
        self.git.snapshot()
        self.sync()

    def no_change(self, row: Row) -> None:
        snap = self.snap
        assert snap is not None
        self.sync()
        for run in range(self.runs):
            for side in stay_fair(run):
                action = snap.snapshot if side == "snapshotter" else self.git.snapshot
                self.time_side(row, side, action, snap)

    def diff_none(self, row: Row) -> None:
        """Diff against the newest snapshot with nothing changed since: the stat
        cache and the cached folder trees answer, as for a no-change snapshot."""
        snap = self.snap
        assert snap is not None
        before, tree = self.sync()

        def ours() -> None:
            found = snap.diff(before.id)
            if found:
                raise RuntimeError(f"nothing changed, yet diff found {len(found)} changes")

        for run in range(self.runs):
            for side in stay_fair(run):
                if side == "snapshotter":
                    self.time_side(row, side, ours, snap)
                else:
                    self.time_side(row, side, lambda: self.git.diff(tree))

    def status_new(self, row: Row) -> None:
        """``status`` with nothing changed by a new ``Snapshotter`` on the same store: the walk
        as a new process pays for it, less the imports (the stat cache loaded from its file,
        its folders checked with the forked copy where ``second_core`` allows), beside
        ``git status --porcelain``, which reads its index and ``lstat``s every file too."""
        self.sync()

        def ours() -> None:
            with Snapshotter(self.ws.root, home=self.home, **self.options) as fresh:
                found = fresh.status()
                scan = fresh.last_scan
            if found:
                raise RuntimeError(f"nothing changed, yet status found {len(found)} changes")
            row.files_hashed.append(scan.files_hashed)
            row.scans.append(dataclasses.asdict(scan))

        for run in range(self.runs):
            for side in stay_fair(run):
                self.time_side(row, side, ours if side == "snapshotter" else self.git.status)

    def changed_10(self, row: Row) -> None:
        snap = self.snap
        assert snap is not None
        self.sync()
        for run in range(self.runs):
            self.ws.edit(self.ws.pick(10, self.rng), self.rng)  # both sides see the same 10 changed files
            for side in stay_fair(run):
                action = snap.snapshot if side == "snapshotter" else self.git.snapshot
                self.time_side(row, side, action, snap)

    @staticmethod
    def restore_counted(row: Row, snap: Snapshotter, target: SnapshotInfo) -> None:
        row.written.append(snap.restore(target.id).written)

    # Restores are timed one side at a time (all snapshotter runs, a settling sync, then all git
    # runs): a restore rewrites files, and taking turns would make the other side re-read them.

    def restore_exact(self, row: Row) -> None:
        """Snapshot T; then per run change 10 files and restore T. Each side changes the same files."""
        snap = self.snap
        assert snap is not None
        target, tree = self.sync()
        snap.pin(target.id)
        chosen = [self.ws.pick(10, self.rng) for _ in range(self.runs)]
        for paths in chosen:
            self.ws.edit(paths, self.rng)
            quiet_disk()
            self.time_side(row, "snapshotter", partial(self.restore_counted, row, snap, target), snap)
        self.sync()
        for paths in chosen:
            self.ws.edit(paths, self.rng)
            quiet_disk()
            self.time_side(row, "git", partial(self.git.restore, tree))

    def restore_10pct(self, row: Row) -> None:
        """Snapshot A, change 10% of files, snapshot B; then restore A, B, A... from B."""
        snap = self.snap
        assert snap is not None
        a, tree_a = self.sync()
        self.ws.edit(self.ws.pick(max(1, len(self.ws.paths) // 10), self.rng), self.rng)
        b, tree_b = self.sync()
        self.restore_between(row, (a, tree_a), (b, tree_b))

    def restore_between(self, row: Row, a: tuple[SnapshotInfo, str], b: tuple[SnapshotInfo, str]) -> None:
        """From state B, restore A, B, A...: all snapshotter's runs, then git's."""
        snap = self.snap
        assert snap is not None
        snap.pin(a[0].id)
        snap.pin(b[0].id)
        for run in range(self.runs):
            quiet_disk()
            target = a[0] if run % 2 == 0 else b[0]
            self.time_side(row, "snapshotter", partial(self.restore_counted, row, snap, target), snap)
        if self.runs % 2:
            snap.restore(b[0].id)
        self.sync()
        for run in range(self.runs):
            quiet_disk()
            self.time_side(row, "git", partial(self.git.restore, a[1] if run % 2 == 0 else b[1]))
        if self.runs % 2:
            self.git.restore(b[1])

    def diff_10(self, row: Row) -> None:
        snap = self.snap
        assert snap is not None
        before, tree = self.sync()
        self.ws.edit(self.ws.pick(10, self.rng), self.rng)

        def ours() -> None:
            for d in snap.diff(before.id):
                _ = d.patch  # patches are computed on first use: make sure they are

        for run in range(self.runs):
            for side in stay_fair(run):
                if side == "snapshotter":
                    self.time_side(row, side, ours, snap)
                else:
                    self.time_side(row, side, lambda: self.git.diff(tree))

    def walk(self, row: Row) -> None:
        for _ in range(self.runs):
            row.snapshotter.append(timed(lambda: python_walk(self.ws.root)))

    WATCH_ROWS = ("watch_no_change", "watch_changed_10", "watch_restore_exact", "watch_restore_10pct", "watch_diff_10")

    def watch(self, keys: Sequence[str] = WATCH_ROWS) -> None:
        """The watch-mode rows (``keys``, in this order), with a watch-mode Snapshotter on the same store."""
        if self.snap is not None:
            self.snap.close()
            self.snap = None
        try:
            watcher, why = watch_open(self.ws.root, home=self.home, **self.options)
        except Exception as exc:
            watcher, why = None, f"Snapshotter(watch=True) failed: {type(exc).__name__}: {exc}"
        if watcher is None:
            for key in keys:
                self.rows[key].status, self.rows[key].note = "n/a", why
                self.say(key)
            return
        with watcher:
            self.snap = watcher  # the same two rows as before, now in watch mode
            watcher.snapshot("watch start")
            running = getattr(watcher, "watching", True)
            bodies = {
                "watch_no_change": self.no_change,
                "watch_changed_10": self.changed_10,
                "watch_restore_exact": self.restore_exact,
                "watch_restore_10pct": self.restore_10pct,
                "watch_diff_10": self.diff_10,
            }
            for key in keys:
                self.measure(key, bodies[key])
            self.snap = None
            if not (running and getattr(watcher, "watching", True)):
                for key in keys:  # the figures are then full walks: say so
                    self.rows[key].note = "the watcher was not running (Snapshotter.watching was False)"

    def run_all(self) -> None:
        self.measure("cold", self.cold)
        try:
            self.open_main()
        except Exception as exc:  # nothing else can run; keep the cold figures
            for key in OPERATIONS:
                if key != "cold":
                    self.rows[key].status = "error"
                    self.rows[key].note = f"opening the store failed: {type(exc).__name__}: {exc}"
            return
        for key, body in (
            ("no_change", self.no_change),
            ("diff_none", self.diff_none),
            ("status_new", self.status_new),
            ("changed_10", self.changed_10),
            ("restore_exact", self.restore_exact),
            ("restore_10pct", self.restore_10pct),
            ("diff_10", self.diff_10),
            ("walk", self.walk),
        ):
            self.measure(key, body)
        self.watch()


def max_rss_mib(who: int) -> float:
    value = resource.getrusage(who).ru_maxrss
    return value / 2**20 if sys.platform == "darwin" else value / 1024  # bytes on macOS, KiB elsewhere


def measure_one(name: str, scratch: Path, runs: int, big_mib: int, out: Path) -> None:
    """The child process: one workspace, every operation, results to ``out``."""
    scratch.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    print(f"[{name}] generating the workspace in {scratch} ...", flush=True)
    ws = make_workspace(name, scratch / "ws", big_mib)
    total = sum(p.stat().st_size for p in ws.paths)
    time.sleep(1.1)  # let every mtime fall strictly before the first cache write (racy rule)
    bench = Bench(ws, scratch, runs)
    bench.run_all()
    if bench.snap is not None:
        bench.snap.close()
    result = {
        "name": name,
        "description": ws.describe(),
        "files": len(ws.paths),
        "bytes": total,
        "operations": {key: row.as_json(OPERATIONS[key]) for key, row in bench.rows.items()},
        "vs_no_change": vs_no_change(bench.rows),
        "tree_mismatches": bench.tree_mismatches,
        "seconds_total": time.perf_counter() - started,
        # Only our own process: a git child's ru_maxrss counts the memory it
        # shared with this process between fork and exec, so it never reads
        # below this process's own size and says nothing about git.
        "peak_rss_mib": {"snapshotter_process": max_rss_mib(resource.RUSAGE_SELF)},
    }
    out.write_text(json.dumps(result, indent=2))


def vs_no_change(rows: dict[str, Row]) -> dict[str, float | None]:
    """Each row of ``TARGETS_VS_NO_CHANGE``: its median over the no-change snapshot's, same run."""
    base = statistics.median(rows["no_change"].snapshotter) if rows["no_change"].snapshotter else None
    out: dict[str, float | None] = {}
    for key in TARGETS_VS_NO_CHANGE:
        times = rows[key].snapshotter
        out[key] = statistics.median(times) / base if times and base and rows[key].status == "ok" else None
    return out


# -- the parent: one child per workspace, then the report ----------------------------------


def environment(runs: int) -> dict[str, Any]:
    import dulwich

    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "runs": runs,
        "machine": {
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "machine": platform.machine(),
        },
        "versions": {
            "python": platform.python_version(),
            "git": git_version(),
            "snapshotter": getattr(snapshotter, "__version__", "?"),
            "dulwich": ".".join(str(p) for p in dulwich.__version__),
            "compressor": snapshotter.engine.gitstore.deflate.backend(),
        },
        "targets_at": TARGETS_AT,
        "targets": TARGETS,
        "targets_vs_no_change": TARGETS_VS_NO_CHANGE,
    }


def header_line(report: dict[str, Any]) -> str:
    """The date, machine and versions of ``environment()``, on one line."""
    return (
        f"{report['date']}; {report['machine']['cores']} cores, {report['machine']['platform']}; "
        f"Python {report['versions']['python']}, git {report['versions']['git']}, "
        f"snapshotter {report['versions']['snapshotter']}, dulwich {report['versions']['dulwich']}, "
        f"compressor {report['versions']['compressor']}"
    )


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 0.01:
        return f"{value:.5f} s"
    return f"{value:.3f} s" if value < 10 else f"{value:.1f} s"


def workspace_title(result: dict[str, Any]) -> str:
    return f"{result['description']} ({result['bytes'] / 2**20:,.0f} MiB)"


def print_table(result: dict[str, Any], runs: int) -> None:
    with_target = result["name"] == TARGETS_AT
    print(f"\n{workspace_title(result)}, median of {runs} run{'s' if runs != 1 else ''}")
    header = f"{'operation':<36} {'snapshotter':>12} {'git':>10} {'ratio':>7}"
    print(header + (f" {'target':>7}" if with_target else ""))
    for key, row in result["operations"].items():
        if row["status"] != "ok":
            line = f"{row['label']:<36} {row['status']:>12} {'':>10} {'':>7}"
        else:
            ratio = f"{row['ratio']:.2f}" if row["ratio"] is not None else "-"
            line = f"{row['label']:<36} {seconds(row['snapshotter_median']):>12} {seconds(row['git_median']):>10}"
            line += f" {ratio:>7}"
        if with_target:
            line += f" {TARGETS[key]:>7.2f}" if key in TARGETS else f" {'':>7}"
        print(line)
    for key, ratio in result.get("vs_no_change", {}).items():
        target = f" (target {TARGETS_VS_NO_CHANGE[key]:.2f})" if with_target and key in TARGETS_VS_NO_CHANGE else ""
        shown = f"{ratio:.2f}" if ratio is not None else "-"
        print(f"{OPERATIONS[key]} / no-change snapshot, snapshotter: {shown}{target}")
    rss = result["peak_rss_mib"]
    print(f"peak RSS of the process running snapshotter (and the benchmark): {rss['snapshotter_process']:.0f} MiB")
    for row in result["operations"].values():
        if row["note"]:
            print(f"  {row['label']}: {row['status']}: {row['note']}")
    for mismatch in result["tree_mismatches"]:
        print(f"  tree ids differ: {mismatch}")


def draw_chart(report: dict[str, Any], path: str) -> None:
    """Ratio to git per operation, one bar per workspace, a line at 1.0, targets as markers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    workspaces = report["workspaces"]
    keys = [k for k in OPERATIONS if k in TARGETS or any(w["operations"][k]["ratio"] is not None for w in workspaces)]
    height = 0.8 / max(1, len(workspaces))
    shown = [1.0] + [TARGETS[k] for k in TARGETS if k in keys]
    fig, ax = plt.subplots(figsize=(10, 1.0 + 0.35 * len(keys) * max(1, len(workspaces))))
    for i, result in enumerate(workspaces):
        ys, ratios = [], []
        for row_index, key in enumerate(keys):
            ratio = result["operations"][key]["ratio"]
            y = row_index - 0.4 + height * (i + 0.5)
            if ratio is not None:
                ys.append(y)
                ratios.append(ratio)
            else:
                ax.text(1.0, y, f" {result['operations'][key]['status']}", va="center", fontsize=7, color="grey")
        shown += ratios
        bars = ax.barh(ys, ratios, height=height * 0.9, label=workspace_title(result))
        ax.bar_label(bars, labels=[f"{r:.2f}" if r < 10 else f"{r:.0f}" for r in ratios], padding=2, fontsize=7)
    target_ys = [keys.index(k) for k in TARGETS if k in keys]
    if target_ys:
        ax.scatter(
            [TARGETS[keys[y]] for y in target_ys],
            target_ys,
            marker="D",
            color="black",
            zorder=3,
            label=f"target at {int(TARGETS_AT):,} files",
        )
    ax.axvline(1.0, color="grey", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlim(min(shown) / 1.5, max(shown) * 2)  # room for the value labels
    ax.xaxis.set_major_locator(FixedLocator([0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks(range(len(keys)), [OPERATIONS[k] for k in keys])
    ax.invert_yaxis()
    ax.set_xlabel("snapshotter time / git time (log scale; below 1 is faster than git)")
    versions = report["versions"]
    ax.set_title(
        f"snapshotter vs git {versions['git']}, median of {report['runs']}; "
        f"{report['date'][:10]}, {report['machine']['cores']} cores, Python {versions['python']}",
        fontsize=9,
    )
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parse_sizes(text: str) -> list[str]:
    sizes = []
    for token in (t.strip() for t in text.split(",")):
        if token == "big" or (token.isdigit() and int(token) > 0):
            sizes.append(token)
        elif token:
            raise SystemExit(f"--sizes takes file counts and 'big', comma-separated; not {token!r}")
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help=f"workspaces to measure (default {DEFAULT_SIZES})")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure; the median is reported (default 3)")
    parser.add_argument("--json", help="also write every raw time, median and ratio to this file")
    parser.add_argument("--chart", help="also draw the ratios to git as a PNG (needs matplotlib)")
    parser.add_argument("--scratch", help="folder for workspaces and stores (default: a temp folder, removed after)")
    parser.add_argument(
        "--new-process", action="store_true", help="the command line's rows instead: benchmarks/bench_commands.py"
    )
    parser.add_argument("--big-mib", type=int, default=10, help=argparse.SUPPRESS)
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure this workspace in this process
    parser.add_argument("--out", help=argparse.SUPPRESS)  # internal: where that child writes its results
    args = parser.parse_args()
    if args.runs < 1 or args.big_mib < 1:
        raise SystemExit("--runs and --big-mib must be at least 1")

    if args.new_process:  # each size's command rows: whole processes beside git's (issue #51)
        import bench_commands

        for name in parse_sizes(args.sizes):
            extra = ["--json", args.json] if args.json else []
            bench_commands.main(["--files", name, "--runs", str(args.runs), *extra])
        return
    if args.one:
        measure_one(args.one, Path(args.scratch), args.runs, args.big_mib, Path(args.out))
        return

    sizes = parse_sizes(args.sizes)
    if args.chart:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise SystemExit("--chart needs matplotlib: pip install matplotlib") from None
    if shutil.which("git") is None:
        raise SystemExit("git is needed on PATH for the side-by-side figures")
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="snapbench-")).resolve()
    report = environment(args.runs)
    report["workspaces"] = []
    failed = []
    print(header_line(report), flush=True)
    for name in sizes:
        out = scratch / f"result-{name}.json"
        out.unlink(missing_ok=True)
        command = [sys.executable, str(Path(__file__).resolve()), "--one", name, "--out", str(out)]
        command += ["--runs", str(args.runs), "--big-mib", str(args.big_mib), "--scratch", str(scratch / name)]
        child = subprocess.run(command)
        if child.returncode != 0 or not out.exists():
            print(f"[{name}] failed (exit {child.returncode}); going on with the next workspace", flush=True)
            failed.append(name)
            continue
        result = json.loads(out.read_text())
        report["workspaces"].append(result)
        print_table(result, args.runs)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2))
        if not args.scratch:
            shutil.rmtree(scratch / name, ignore_errors=True)
    if args.chart and report["workspaces"]:
        draw_chart(report, args.chart)
        print(f"\nchart: {args.chart}")
    if args.json:
        print(f"figures: {args.json}")
    if not args.scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
