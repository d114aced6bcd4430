"""A command that does not walk the folder does not load what walks it.

Every ``snapshotter`` call is a new process, and a module it imports is time it
pays before it does anything (issue #51: ``--version`` once imported the whole
engine). Each command here runs in a fresh interpreter, the way the console
script runs it, and the modules it loaded are compared with what it may load:
``--version``, ``--help``, ``where``, ``config`` and ``hooks status`` load no
session, comparison or walk, and no facade; ``log``, ``show`` and ``sessions``
read the store without loading the walker. Timings are for benchmarks/; this
holds the import structure that the start-up time follows from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write

from snapshotter import Snapshotter

LOADED = """
import contextlib, io, json, sys
from snapshotter.frontends.entry import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as stop:
        code = stop.code
print(json.dumps({"code": code, "modules": sorted(m for m in sys.modules if m.startswith("snapshotter"))}))
"""
"""Run one command line as ``entry.main`` runs it, then name every snapshotter module loaded."""

ENGINE = ("snapshotter.engine.session", "snapshotter.engine.compare", "snapshotter.engine.worktree")
ABOVE = ("snapshotter.facade", "snapshotter.history", "snapshotter.remote", "snapshotter.model")
WALKER = "snapshotter.engine.worktree.walker"


def loaded(ws: Path, home: Path, *words: str) -> list[str]:
    env = dict(os.environ, SNAPSHOTTER_HOME=str(home), SNAPSHOTTER_NO_WATCHER="1")
    done = subprocess.run(
        [sys.executable, "-c", LOADED, *words], cwd=ws, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["code"] == 0, (words, done.stderr)
    modules: list[str] = found["modules"]
    assert "snapshotter.frontends.entry" in modules  # it ran what the console script runs
    return modules


@pytest.fixture
def recorded(ws: Path, home: Path) -> Path:
    """A workspace with a store and a few snapshots."""
    with Snapshotter(ws, home=home) as snap:
        for i in range(3):
            write(ws, {f"f{i}.txt": f"{i}\n"})
            snap.snapshot(f"s{i}")
    return ws


@pytest.mark.parametrize("words", [["--version"], ["--help"], ["where"], ["config"], ["hooks", "status"]])
def test_a_command_that_reads_no_store_loads_no_engine(recorded: Path, home: Path, words: list[str]) -> None:
    modules = loaded(recorded, home, *words)
    assert [m for m in modules if m.startswith(ENGINE + ABOVE)] == []


@pytest.mark.parametrize("words", [["--version"], ["--help"]])
def test_version_and_help_load_no_settings(recorded: Path, home: Path, words: list[str]) -> None:
    modules = loaded(recorded, home, *words)
    assert "snapshotter.frontends.shared.config" not in modules
    assert "snapshotter.frontends.shared.rendering" not in modules


@pytest.mark.parametrize("words", [["log", "-n", "20"], ["show", "@"], ["sessions"]])
def test_reading_the_history_does_not_load_the_walker(recorded: Path, home: Path, words: list[str]) -> None:
    modules = loaded(recorded, home, *words)
    assert WALKER not in modules
    assert "snapshotter.engine.gitstore.catalog" in modules  # it did read the store


def test_a_snapshot_loads_the_walker(recorded: Path, home: Path) -> None:
    """The check above can fail: a command that walks shows the walker loaded."""
    assert WALKER in loaded(recorded, home, "snapshot")
