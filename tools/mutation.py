"""Mutation testing over the modules that carry SECURITY.md's guarantees, with mutmut 3.

    pip install -e ".[test,mutation]"
    python tools/mutation.py                      # every module below, one after the other
    python tools/mutation.py racy objects         # the modules whose path contains these words
    python tools/mutation.py --list               # the modules and the tests each one runs
    python tools/mutation.py --sample 4 statcache # every 4th mutant by name (a module with hundreds)

Not a test and not in CI: a run over every module takes tens of minutes on 2 cores.
Each module is mutated alone, in a copy of the repository under ``.mutation/<module>/``
(the checkout itself is never changed), and each mutant is checked only by the test
files ``MODULES`` maps its module to, and of those only the tests that call the
mutated function (mutmut records which tests reach which function, then runs each
mutant in a fork of one process). ``PYTHONPATH`` points at the mutated copy, so the
tests' child processes (a hook call, a crash worker) run the mutant too; but mutmut
selects tests by the calls it sees in its own process, so a function reached only in
a child process counts as "no tests".

Each run prints one line per module (mutants, killed, survived, no tests, timeouts,
score) and writes the surviving mutants' diffs to ``.mutation/<module>/survivors.txt``.
The score is killed (a timeout counts as killed) over all mutants: the surviving ones
judged equivalent are listed, with why, in docs/development.md, which gives the score
without them.

``MODULES`` is the one place that names the modules and their tests: when a module
moves, change its path here.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODULES: dict[str, tuple[str, ...]] = {
    # object and tree encoding
    "snapshotter/engine/gitstore/objects.py": (
        "tests/test_object_format.py",
        "tests/test_tree_order.py",
        "tests/test_tree_names.py",
        "tests/test_store_integrity.py",
    ),
    # the stat cache and its fast paths
    "snapshotter/engine/worktree/racy.py": (
        "tests/test_racy.py",
        "tests/test_record_match.py",
        "tests/test_statcache.py",
        "tests/test_packedfolder.py",
    ),
    "snapshotter/engine/worktree/packedfolder.py": (
        "tests/test_packedfolder.py",
        "tests/test_record_match.py",
        "tests/test_racy.py",
        "tests/test_statcache.py",
    ),
    "snapshotter/engine/worktree/preload.py": ("tests/test_preload.py", "tests/test_racy.py"),
    "snapshotter/engine/worktree/statcache.py": (
        "tests/test_statcache.py",
        "tests/test_racy.py",
        "tests/test_packedfolder.py",
        "tests/test_preload.py",
    ),
    # default excludes and ignore rules
    "snapshotter/engine/worktree/defaults.py": ("tests/test_secrets.py", "tests/test_virtual_envs.py"),
    "snapshotter/engine/worktree/ignore.py": (
        "tests/test_ignore_files.py",
        "tests/test_ignore_oracle.py",
        "tests/test_secrets.py",
        "tests/test_untracked_kept.py",  # the restore's forced paths, which the rules' stack carries
    ),
    # the restore plan and confined writes
    "snapshotter/engine/session/checkout.py": (
        "tests/test_restore.py",
        "tests/test_hostile.py",
        "tests/test_untracked_kept.py",
        "tests/test_unchecked.py",
        "tests/test_windows_semantics.py",  # names left out, records carrying modes, link stand-ins
    ),
    "snapshotter/engine/worktree/fsops.py": (
        "tests/test_fsops.py",
        "tests/test_restore.py",
        "tests/test_hostile.py",
        "tests/test_windows_semantics.py",
        "tests/test_splitwrite.py",
    ),
    # three-way merge
    "snapshotter/engine/compare/merge.py": (
        "tests/test_merge.py",
        "tests/test_merge_counts.py",
        "tests/test_revert.py",
    ),
    # locking and ref updates
    # the lock in one process with short timeouts (test_concurrency.py and
    # test_crash.py kill real holders, but wait out whole timeouts per mutant)
    "snapshotter/engine/gitstore/locking.py": ("tests/test_store_lock.py",),
    "snapshotter/engine/gitstore/store.py": (
        "tests/test_store_refs.py",
        "tests/test_store_integrity.py",
        "tests/test_ref_reading.py",
        "tests/test_generations.py",
        # its threads (the processes' calls run where mutmut sees no test)
        "tests/test_concurrency.py::test_eight_threads_share_one_snapshotter",
        "tests/test_concurrency.py::test_refs_read_once_are_read_again_when_another_writer_changes_them",
        "tests/test_crash.py::test_a_ref_lock_left_by_a_killed_writer_is_cleared_by_the_next_one",
    ),
    # the refs themselves: written, fsynced, packed (refstore), the packed-refs file
    # searched and read once (packedrefs) and rewritten under its lock (packedrewrite),
    # the loose refs read once and odd names (refreading). test_long_history.py's two
    # slowest tests (a day of hook calls, a week's retention: 40 s) are left out.
    **dict.fromkeys(
        (
            "snapshotter/engine/gitstore/refstore.py",
            "snapshotter/engine/gitstore/packedrefs.py",
            "snapshotter/engine/gitstore/packedrewrite.py",
        ),
        (
            "tests/test_refstore.py",
            "tests/test_store_refs.py",
            "tests/test_ref_reading.py",
            "tests/test_history_index.py",
            "tests/test_long_history.py::test_no_call_reads_more_of_a_longer_history",
            "tests/test_long_history.py::test_retention_reads_what_it_drops_not_the_whole_history",
            "tests/test_long_history.py::test_git_reads_every_snapshot_of_a_long_history",
            "tests/test_long_history.py::test_a_page_deep_in_a_long_history_costs_a_page",
            "tests/test_store_side_files.py",
            "tests/test_concurrency.py::test_refs_read_once_are_read_again_when_another_writer_changes_them",
            "tests/test_crash.py::test_a_ref_lock_left_by_a_killed_writer_is_cleared_by_the_next_one",
        ),
    ),
    "snapshotter/engine/gitstore/refreading.py": (
        "tests/test_ref_reading.py",
        "tests/test_store_refs.py",
        "tests/test_store_side_files.py",
        "tests/test_concurrency.py::test_refs_read_once_are_read_again_when_another_writer_changes_them",
    ),
    # the check of a ref's name (what an odd name in the store is told by), held equal to dulwich's
    "snapshotter/engine/gitstore/refnames.py": ("tests/test_refnames.py", "tests/test_ref_reading.py"),
    # the hook client's fail-open path (and, in forks of the test process, the
    # budget's alarm that ends a call and the watcher a call starts)
    "snapshotter/frontends/hookclient.py": (
        "tests/test_hookclient.py",
        "tests/test_hookclient_forked.py",
        "tests/test_hook_store.py",
        "tests/test_hook_events.py",
    ),
}

COPIED = ("snapshotter", "tests", "pyproject.toml", "README.md", "SECURITY.md", "docs", "LICENSE")
KILLED = {"killed", "timeout", "segfault"}


def _scratch(module: str) -> Path:
    return ROOT / ".mutation" / module.removesuffix(".py").replace("/", ".")


def _prepare(module: str, tests: tuple[str, ...], where: Path) -> None:
    """A copy of the repository in ``where`` whose pyproject.toml tells mutmut what to do."""
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, where / name, ignore=skip)
        elif source.exists():
            shutil.copy2(source, where / name)
    settings = {
        "source_paths": ["snapshotter/"],
        "only_mutate": [module],
        "also_copy": ["README.md", "SECURITY.md", "docs/", "LICENSE"],
        "pytest_add_cli_args_test_selection": list(tests),
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-q"],
        # A mutant that loops (a retry that never ends) is stopped after 10 times its
        # tests' CPU time, not mutmut's 30 times: one such mutant held a run 5 minutes.
        "timeout_multiplier": 5.0,
    }
    lines = ["", "[tool.mutmut]"] + [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
    with open(where / "pyproject.toml", "a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def _mutmut(where: Path, *args: str, quiet: bool = False) -> str:
    # The tests' child processes import the mutated copy too. The folder exists before
    # Python starts, or its import system takes it for missing for good.
    (where / "mutants").mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(where / "mutants"))
    done = subprocess.run(
        [sys.executable, "-m", "mutmut", *args],
        cwd=where,
        env=env,
        stdout=subprocess.PIPE if quiet else None,
        text=True,
        check=False,
    )
    return done.stdout or ""


def _listed(where: Path) -> dict[str, str]:
    """Every mutant of the copy in ``where`` -> its status (``not checked`` if never run)."""
    listing = _mutmut(where, "results", "--all", "true", quiet=True)
    return dict(re.findall(r"^\s*(\S+__mutmut_\d+): (.+?)\s*$", listing, re.MULTILINE))


def run(module: str, children: int, sample: int = 1) -> dict[str, object]:
    """Mutate ``module``, run its tests against every mutant (``sample`` > 1: against
    every ``sample``-th mutant in the order of their names, a deterministic
    sample); the counts by outcome, of the mutants checked."""
    where = _scratch(module)
    _prepare(module, MODULES[module], where)
    if sample > 1:
        # A name that matches no mutant: mutmut makes the mutants and records which
        # tests reach which function, then stops (an assertion) before checking any.
        _mutmut(where, "run", "--max-children", str(children), "no-such-mutant", quiet=True)
        chosen = sorted(_listed(where))[::sample]
        _mutmut(where, "run", "--max-children", str(children), *chosen)
    else:
        _mutmut(where, "run", "--max-children", str(children))
    listed = _listed(where)
    outcome = {name: status for name, status in listed.items() if status != "not checked"}
    counts = Counter(outcome.values())
    survivors = sorted(name for name, status in outcome.items() if status not in KILLED)
    with open(where / "survivors.txt", "w", encoding="utf-8") as report:
        for name in survivors:
            report.write(f"## {name}: {outcome[name]}\n{_mutmut(where, 'show', name, quiet=True)}\n")
    killed = sum(counts[status] for status in KILLED)
    return {
        "module": module,
        "sample": f"every {sample}th of {len(listed)}" if sample > 1 else "all",
        "mutants": len(outcome),
        "killed": killed,
        "survived": counts["survived"],
        "no tests": counts["no tests"],
        "timeout": counts["timeout"],
        "other": len(outcome) - killed - counts["survived"] - counts["no tests"],
        "score": round(100 * killed / len(outcome), 1) if outcome else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("words", nargs="*", help="run only the modules whose path contains one of these")
    parser.add_argument("--list", action="store_true", help="list the modules and their tests, run nothing")
    parser.add_argument("--max-children", type=int, default=2, help="mutants checked at once (default 2)")
    parser.add_argument(
        "--sample", type=int, default=1, help="check only every Nth mutant by name (deterministic; default 1: all)"
    )
    args = parser.parse_args()
    chosen = [m for m in MODULES if not args.words or any(word in m for word in args.words)]
    if args.list:
        for module in chosen:
            print(f"{module}: {' '.join(MODULES[module])}")
        return
    if importlib.util.find_spec("mutmut") is None:  # each run would count 0 mutants and look done
        sys.exit('mutation.py: mutmut is not installed here: pip install -e ".[test,mutation]"')
    rows = []
    for module in chosen:
        rows.append(run(module, args.max_children, args.sample))
        print(json.dumps(rows[-1]), flush=True)
    (ROOT / ".mutation").mkdir(exist_ok=True)
    with open(ROOT / ".mutation" / "summary.json", "w", encoding="utf-8") as handle:
        json.dump(rows, handle, indent=1)
    print(f"\n{'module':45} {'mutants':>8} {'killed':>7} {'survived':>9} {'no tests':>9} {'score':>6}")
    for row in rows:
        print(
            f"{row['module']:45} {row['mutants']:>8} {row['killed']:>7} {row['survived']:>9}"
            f" {row['no tests']:>9} {row['score']!s:>6}"
        )


if __name__ == "__main__":
    main()
