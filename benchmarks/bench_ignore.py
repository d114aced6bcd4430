"""The ignore rules alone: reading sources, and judging names, in names per second.

    python benchmarks/bench_ignore.py                 # 100,000 names, 5 runs
    python benchmarks/bench_ignore.py --names 20000 --runs 3
    python benchmarks/bench_ignore.py --git           # and git check-ignore on the same names, same rules

The walker judges every name of a folder whose listing or rules are new to the
stat cache (a cold snapshot judges them all), so this is the cost a cold scan
pays per name on top of its system calls. The rules are the built-in excludes,
a typical 60-line root ``.gitignore`` and a short nested one; the names are
source-like, with 2% non-ASCII (those take a byte conversion first). Building
the sources is timed too: an incremental scan builds the sources of every
folder with a ``.gitignore`` that it enters. Only ``root_stack``,
``IgnoreSource.from_lines`` and ``IgnoreStack`` are used, so this script runs
unchanged against older versions of the package, for a before/after figure.
``--git`` also times ``git check-ignore --no-index --stdin`` over the same
names and rules (the defaults as ``info/exclude``, the folders made, each run
one process), alternating with ours, for a ratio that the machine's noise
affects less than two separate runs. git checks every name's parent folders
too, so the ratio is a yardstick, not like for like.

This is a measurement, not a test: run it by hand on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from snapshotter import DEFAULT_EXCLUDES  # noqa: E402
from snapshotter.engine.worktree.ignore import IgnoreSource, IgnoreStack, root_stack  # noqa: E402

ROOT_GITIGNORE = """\
# Byte-compiled / optimized / DLL files
__pycache__/
*.py[cod]
*$py.class
*.so
.Python
build/
develop-eggs/
dist/
downloads/
eggs/
.eggs/
lib64/
parts/
sdist/
var/
wheels/
*.egg-info/
.installed.cfg
*.egg
MANIFEST
*.manifest
*.spec
pip-log.txt
htmlcov/
.coverage
.coverage.*
nosetests.xml
coverage.xml
*.cover
.hypothesis/
*.mo
*.pot
*.log
local_settings.py
db.sqlite3
instance/
.webassets-cache
.scrapy
docs/_build/
target/
.ipynb_checkpoints
profile_default/
ipython_config.py
.python-version
celerybeat-schedule
*.sage.py
.spyderproject
.spyproject
.ropeproject
/site
.dmypy.json
dmypy.json
.pyre/
node_modules/
**/generated/**
!keep.log
*.tmp
/out/
logs/**/*.gz
"""
NESTED_GITIGNORE = "*.bak\n!important.bak\nfixtures/**/*.bin\n"

WORDS = ["core", "util", "model", "view", "test", "data", "api", "io", "parse", "render", "ünï", "cödé"]
EXTS = [".py", ".py", ".py", ".txt", ".md", ".json", ".log", ".c", ".h", ".js", ".bak", ".tmp", ""]


def names(count: int, rng: random.Random) -> list[tuple[str, bool]]:
    """Workspace paths below ``pkg/src``, with whether each is a folder."""
    out = []
    for _ in range(count):
        depth = rng.randint(0, 3)
        folders = "/".join(rng.choice(WORDS[:10]) for _ in range(depth))
        word = rng.choice(WORDS if rng.random() < 0.02 else WORDS[:10])
        name = f"{word}_{rng.randint(0, 999)}{rng.choice(EXTS)}"
        path = "pkg/src/" + (folders + "/" if folders else "") + name
        out.append((path, rng.random() < 0.15))
    return out


def stack(workspace: str) -> IgnoreStack:
    rules = root_stack(workspace, (), True)
    rules = rules.push(IgnoreSource.from_lines(ROOT_GITIGNORE.splitlines()))
    return rules.push(IgnoreSource.from_lines(NESTED_GITIGNORE.splitlines(), "pkg/src"))


def git_workspace(paths: list[tuple[str, bool]]) -> tuple[str, str, dict[str, str]]:
    """A repository holding the same rules and folders, for ``git check-ignore``:
    its folder (removed by the caller), the git program, its environment."""
    program = shutil.which("git")
    if program is None:
        raise SystemExit("--git: no git on PATH")
    folder = tempfile.mkdtemp(prefix="bench-ignore-git-")
    env = {**os.environ, "HOME": folder, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run([program, "init", "-q", folder], check=True, env=env)
    root = Path(folder)
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("".join(line + "\n" for line in DEFAULT_EXCLUDES))
    (root / ".gitignore").write_text(ROOT_GITIGNORE)
    (root / "pkg" / "src").mkdir(parents=True)
    (root / "pkg" / "src" / ".gitignore").write_text(NESTED_GITIGNORE)
    for path, is_dir in paths:
        (root / (path if is_dir else os.path.dirname(path))).mkdir(parents=True, exist_ok=True)
    return folder, program, env


def time_git(folder: str, program: str, env: dict[str, str], stdin: bytes) -> tuple[float, int]:
    """Seconds for one ``git check-ignore`` over every name, and how many it ignores."""
    started = time.perf_counter()
    done = subprocess.run(
        [program, "check-ignore", "--no-index", "-z", "--stdin"], cwd=folder, env=env, input=stdin, capture_output=True
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr.decode(errors="replace"))
    return elapsed, done.stdout.count(b"\0")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--names", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--git", action="store_true", help="also time git check-ignore on the same names")
    args = parser.parse_args()
    paths = names(args.names, random.Random(7))
    reference = git_workspace(paths) if args.git else None
    stdin = b"".join(os.fsencode(path) + b"\0" for path, _ in paths)
    git_times: list[float] = []
    git_ignored = 0
    with tempfile.TemporaryDirectory() as workspace:
        builds = []
        for _ in range(args.runs):
            started = time.perf_counter()
            for _ in range(100):
                rules = stack(workspace)
            builds.append((time.perf_counter() - started) / 100)
        judging = []
        for _ in range(args.runs):
            rules = stack(workspace)
            started = time.perf_counter()
            ignored = sum(rules.is_ignored(path, is_dir) for path, is_dir in paths)
            judging.append(time.perf_counter() - started)
            if reference is not None:
                elapsed, git_ignored = time_git(*reference, stdin)
                git_times.append(elapsed)
    if reference is not None:
        shutil.rmtree(reference[0], ignore_errors=True)
    best = statistics.median(judging)
    print(f"{len(paths):,} names, {ignored:,} ignored, median of {args.runs} runs")
    print(f"judging:  {best:.3f} s, {len(paths) / best:,.0f} names/s (min {min(judging):.3f} s)")
    if git_times:
        median, fastest = statistics.median(git_times), min(git_times)
        print(f"git check-ignore: {median:.3f} s (min {fastest:.3f} s), {git_ignored:,} ignored")
        print(f"ratio to git: median {best / median:.2f}, min {min(judging) / fastest:.2f}")
    print(f"building the sources (defaults, root and nested .gitignore): {statistics.median(builds) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
