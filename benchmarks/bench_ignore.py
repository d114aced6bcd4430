"""The ignore rules alone: reading sources, and judging names, in names per second.

    python benchmarks/bench_ignore.py                 # 100,000 names, 5 runs
    python benchmarks/bench_ignore.py --names 20000 --runs 3

The walker judges every name of a folder whose listing or rules are new to the
stat cache (a cold snapshot judges them all), so this is the cost a cold scan
pays per name on top of its system calls. The rules are the built-in excludes,
a typical 60-line root ``.gitignore`` and a short nested one; the names are
source-like, with 2% non-ASCII (those take a byte conversion first). Building
the sources is timed too: an incremental scan builds the sources of every
folder with a ``.gitignore`` that it enters. Only ``root_stack``,
``IgnoreSource.from_lines`` and ``IgnoreStack`` are used, so this script runs
unchanged against older versions of the package, for a before/after figure.

This is a measurement, not a test: run it by hand on a quiet machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--names", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    paths = names(args.names, random.Random(7))
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
    best = statistics.median(judging)
    print(f"{len(paths):,} names, {ignored:,} ignored, median of {args.runs} runs")
    print(f"judging:  {best:.3f} s, {len(paths) / best:,.0f} names/s")
    print(f"building the sources (defaults, root and nested .gitignore): {statistics.median(builds) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
