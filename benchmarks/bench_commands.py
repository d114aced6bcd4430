"""The ``snapshotter`` command as a new process, beside git's, in the same run (issue #51).

    python benchmarks/bench_engine.py --new-process --sizes 100000 --runs 7     # the same as:
    python benchmarks/bench_commands.py --files 100000 --runs 7 [--json out.json]

Every row is a whole process, started the way a person or a script starts it
(the installed console script), alternating with its comparison run by run (the
order flips every run), with no watcher (``SNAPSHOTTER_NO_WATCHER=1``) and no
user config. Rows that walk the folder compare with git on a shadow repository
of the same folder (``git add -A && git write-tree``; ``git status --porcelain``;
``git diff --stat``); rows that do not walk compare with ``python -c pass``
(issue #51 item 2: at most 3x).

Like with like: before the ``status`` and ``diff`` rows the shadow commits its
base (``HEAD``, as snapshotter's base), so ``git status`` compares with it
instead of listing every file as added to an empty history. ``snapshotter diff
--stat`` lists new files too, so it is timed beside ``git add -A -N && git diff
--stat`` (git looks for untracked files only when asked: ``add -N`` records each
one found as intended, and the diff then shows it), and, so as to hide nothing,
also beside the bare ``git diff --stat``, which compares the tracked files alone.
The row ``floor`` then times ``statfloor.py`` beside that bare ``git diff --stat``: a
new process that only loads the stat cache and checks every file in C on both cores,
the least any ``status`` or ``diff`` does.
The median and the minimum are reported, and
the ratio of the medians: on a machine shared with other work, the minimum is
the better guide to what the code costs, the median to what a user waits.
With ``--compare-source DIR`` (a checkout of another revision, e.g. ``git
worktree add /tmp/main main``) every row also runs that revision's package
(``PYTHONPATH=DIR``, the same interpreter and console script, a home of its
own) in the same alternation, so a change's before and after come from one run.
The package's bytecode is compiled first, as ``pip install`` does: from an
editable checkout with ``PYTHONDONTWRITEBYTECODE`` set, every run would
otherwise compile each module that has no ``__pycache__`` yet (20-30 ms).

This is a measurement, not a test: run it by hand.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from bench_engine import GIT_ENV, change, generate  # noqa: E402

SCRIPT = Path(sys.executable).parent / "snapshotter"
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "snapshotter"]
WALKING = [
    ("snapshot, nothing changed", ["snapshot", "-m", "b"], "git add -A && git write-tree", "snapshot"),
    ("snapshot, 10 changed", ["snapshot", "-m", "b"], "git add -A && git write-tree", "snapshot"),
    ("status", ["status"], "git status --porcelain", "status"),
    ("diff --stat", ["diff", "--stat"], "git add -A -N && git diff --stat", "diffstat-untracked"),
    ("diff --stat, git: tracked only", ["diff", "--stat"], "git diff --stat", "diffstat"),
]
"""(row, snapshotter's words, git's command as shown, git's side)."""
NOT_WALKING = [
    ["--version"],
    ["--help"],
    ["where"],
    ["config"],
    ["hooks", "status"],
    ["log", "-n", "20"],
    ["show", "@"],
    ["sessions"],
]
"""Commands that do not walk the folder: each beside ``python -c pass``."""


def run(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def git_side(ws: Path, shadow: Path, side: str) -> list[list[str]]:
    git = shutil.which("git")
    assert git is not None
    base = [git, "--git-dir", str(shadow), "--work-tree", str(ws)]
    if side == "snapshot":
        return [[*base, "add", "-A"], [*base, "write-tree"]]
    if side == "status":
        return [[*base, "status", "--porcelain"]]
    if side == "base":  # the snapshot's steps, then a commit: HEAD is the base, as snapshotter's is
        return [[*base, "add", "-A"], [*base, "commit", "-q", "--allow-empty", "-m", "base"]]
    if side == "diffstat-untracked":
        return [[*base, "add", "-A", "-N"], [*base, "diff", "--stat"]]
    return [[*base, "diff", "--stat"]]


COMPARED: list[str] = []
ONLY: list[str] = []
"""``--only``'s choice (empty: every row)."""
"""``--compare-source``'s folder, once given: its package runs as the side ``compared``."""


def compared_env(env: dict[str, str]) -> dict[str, str]:
    """The compared revision's environment: its package, and a home of its own, so that
    neither side finds the other's snapshot already taken."""
    return dict(env, PYTHONPATH=COMPARED[0], SNAPSHOTTER_HOME=env["SNAPSHOTTER_HOME"] + "-compared")


def pair(
    ours: list[str],
    theirs: list[list[str]],
    runs: int,
    cwd: Path,
    env: dict[str, str],
    before: Any = None,
    program: list[str] = COMMAND,
) -> dict[str, Any]:
    """Alternate ours (``program`` given ``ours``) and theirs (and the compared revision's, if any,
    unless ``program`` is another) ``runs`` times, the order rotating each run; ``before()`` runs
    before each run."""
    sides = ["ours", "theirs", *(["compared"] if COMPARED and program is COMMAND else [])]
    times: dict[str, list[float]] = {side: [] for side in sides}
    for index in range(runs):
        turn = index % len(sides)
        order = sides[turn:] + sides[:turn]
        if before is not None:
            before()
        for side in order:
            if side == "ours":
                times["ours"].append(run([*program, *ours], cwd, env))
            elif side == "compared":
                times["compared"].append(run([*COMMAND, *ours], cwd, compared_env(env)))
            else:
                times["theirs"].append(sum(run(step, cwd, dict(os.environ, **GIT_ENV)) for step in theirs))
    medians = {side: statistics.median(values) for side, values in times.items()}
    row = {
        "times": times,
        "median": medians,
        "min": {side: min(values) for side, values in times.items()},
        "ratio": medians["ours"] / medians["theirs"],
        "ratio_of_mins": min(times["ours"]) / min(times["theirs"]),
    }
    if "compared" in times:
        row["compared_ratio"] = medians["compared"] / medians["theirs"]
        row["compared_ratio_of_mins"] = min(times["compared"]) / min(times["theirs"])
    return row


def measure(files: int, runs: int, scratch: Path) -> dict[str, Any]:
    ws = scratch / "ws"
    if (scratch / "shadow.git").exists():  # ``--scratch`` of an earlier run: its folder, stores and shadow again
        print(f"reusing {ws}", flush=True)
        paths = sorted(ws.glob("pkg*/mod*/sub*/file*.py"))
    else:
        ws.mkdir(parents=True)
        print(f"generating {files:,} files ...", flush=True)
        paths = generate(ws, files)
    env = dict(
        os.environ,
        SNAPSHOTTER_HOME=str(scratch / "home"),
        SNAPSHOTTER_CONFIG=str(scratch / "no-user-config.toml"),
        SNAPSHOTTER_NO_WATCHER="1",
    )
    shadow = scratch / "shadow.git"
    if not shadow.exists():
        subprocess.run(["git", "init", "-q", "--bare", str(shadow)], env=dict(os.environ, **GIT_ENV), check=True)
        (shadow / "info" / "exclude").write_text(".git\n")
    for command in ([*COMMAND, "snapshot", "-m", "cold"],):  # both sides' cold first snapshot, outside the rows
        run(command, ws, env)
        if COMPARED:
            run(command, ws, compared_env(env))
    for step in git_side(ws, shadow, "snapshot"):
        run(step, ws, dict(os.environ, **GIT_ENV))
    rng = random.Random(7)
    rows: dict[str, Any] = {}
    for name, words, shown, side in WALKING if ONLY[0] != "not-walking" else []:
        changes = name == "snapshot, 10 changed"

        def before(changes: bool = changes) -> None:
            if changes:
                change(paths, 10, rng)  # both sides find the same 10 files changed since their last snapshot

        if name == "status":
            change(paths, 10, rng)  # both sides compare against a base 10 files behind
            run([*COMMAND, "snapshot", "-m", "base"], ws, env)
            if COMPARED:
                run([*COMMAND, "snapshot", "-m", "base"], ws, compared_env(env))
            for step in git_side(ws, shadow, "base"):
                run(step, ws, dict(os.environ, **GIT_ENV))
            change(paths, 10, rng)
        row = pair(words, git_side(ws, shadow, side), runs, ws, env, before)
        row["command"] = f"snapshotter {' '.join(words)}  vs  {shown}"
        rows[name] = row
        say(name, row)
    if ONLY[0] != "not-walking":
        rows["floor"] = floor(ws, shadow, scratch / "home", runs, env)
        say("floor", rows["floor"])
    for words in NOT_WALKING if ONLY[0] != "walking" else []:
        row = pair(words, [[sys.executable, "-c", "pass"]], runs, ws, env)
        row["command"] = f"snapshotter {' '.join(words)}  vs  python -c pass"
        rows[" ".join(words)] = row
        say(" ".join(words), row)
    return {"files": files, "runs": runs, "rows": rows, "load_average": os.getloadavg(), "cpus": os.cpu_count()}


def floor(ws: Path, shadow: Path, home: Path, runs: int, env: dict[str, str]) -> dict[str, Any]:
    """``statfloor.py`` (a new process that only loads the stat cache and checks every file
    in C on two threads) beside the bare ``git diff --stat``, in the state the rows above left."""
    caches = sorted(home.glob("snapshots/*/snapshotter/statcache"))
    assert len(caches) == 1, caches
    script = [sys.executable, str(ROOT / "statfloor.py"), str(ws), str(caches[0])]
    row = pair([], git_side(ws, shadow, "diffstat"), runs, ws, env, program=script)
    row["command"] = "python benchmarks/statfloor.py WS STATCACHE  vs  git diff --stat"
    return row


def compile_package(source: str | None = None) -> None:
    """Write the package's bytecode, as an installed package has it (see the module docstring);
    ``source``: the package found with ``PYTHONPATH`` set to it."""
    found = subprocess.run(
        [sys.executable, "-c", "import snapshotter, os; print(os.path.dirname(snapshotter.__file__))"],
        check=True,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=source) if source else None,
        cwd=os.path.dirname(sys.executable),  # not a checkout's root: ``-c`` puts the current folder first
    )
    compileall.compile_dir(found.stdout.strip(), quiet=1)


def say(name: str, row: dict[str, Any]) -> None:
    med, low = row["median"], row["min"]
    compared = ""
    if "compared_ratio" in row:
        compared = (
            f"  compared {med['compared']:.3f} s ratio {row['compared_ratio']:.2f}"
            f" (of mins {row['compared_ratio_of_mins']:.2f})"
        )
    print(
        f"{name:28} ours {med['ours']:.3f} s (min {low['ours']:.3f})  theirs {med['theirs']:.3f} s"
        f" (min {low['theirs']:.3f})  ratio {row['ratio']:.2f} (of mins {row['ratio_of_mins']:.2f}){compared}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", help="also write every raw time to this file")
    parser.add_argument(
        "--scratch", help="folder for the workspace and stores, kept and used again next time (default: a temp folder)"
    )
    parser.add_argument("--compare-source", help="also run the package in this folder (PYTHONPATH), alternating")
    parser.add_argument("--only", choices=("walking", "not-walking"), help="only these rows")
    args = parser.parse_args(argv)
    if shutil.which("git") is None:
        raise SystemExit("git is needed on PATH for the side-by-side figures")
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="snapcmd-")).resolve()
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} cpus", flush=True)
    compile_package()
    if args.compare_source:
        COMPARED.append(str(Path(args.compare_source).resolve()))
        compile_package(COMPARED[0])
    ONLY.append(args.only or "")
    try:
        result = measure(args.files, args.runs, scratch)
    finally:
        if not args.scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
