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


NOT_FOR_READING = (
    "snapshotter.frontends.cli.workflow_commands",
    "snapshotter.frontends.cli.remote_commands",
    "snapshotter.frontends.cli.line_commands",
    "snapshotter.engine.gitstore.transport",
)
"""What reading the history has no use for: other families' commands, the remotes' transport."""


def loaded_all(ws: Path, home: Path, *words: str) -> list[str]:
    """Every module (not only snapshotter's) that one command line loads."""
    env = dict(os.environ, SNAPSHOTTER_HOME=str(home), SNAPSHOTTER_NO_WATCHER="1")
    script = LOADED.replace('if m.startswith("snapshotter")', "")
    done = subprocess.run(
        [sys.executable, "-c", script, *words], cwd=ws, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["code"] == 0, (words, done.stderr)
    modules: list[str] = found["modules"]
    return modules


@pytest.mark.parametrize("words", [["log", "-n", "20"], ["show", "@"], ["sessions"], ["where"], ["hooks", "status"]])
def test_reading_the_history_loads_no_other_commands_no_transport_no_socket(
    recorded: Path, home: Path, words: list[str]
) -> None:
    """Opening a store to read it costs only the store (issue #51): no other
    family of commands, no dulwich client or porcelain, and no socket module
    when no watcher's socket exists to hand the command to."""
    modules = loaded_all(recorded, home, *words)
    assert [m for m in modules if m.startswith(NOT_FOR_READING)] == []
    assert [m for m in modules if m.startswith(("dulwich.client", "dulwich.porcelain", "socket"))] == []
    assert "snapshotter.frontends.entry" in modules


@pytest.mark.parametrize("words", [["log", "-n", "20"], ["show", "@"], ["sessions"]])
def test_opening_an_existing_store_loads_no_ignore_rules_and_no_size_check(
    recorded: Path, home: Path, words: list[str]
) -> None:
    """The ignore rules, the listings a folder's stat vouches for and the name
    checks are a walk's and a restore's; a new store's size check uses them, an
    existing store's opening does not."""
    modules = loaded(recorded, home, *words)
    walking = ("ignore", "trust", "listing", "pathnames", "sizecheck")
    assert [m for m in modules if m in {f"snapshotter.engine.worktree.{name}" for name in walking}] == []


@pytest.mark.parametrize("words", [["log", "-n", "20"], ["show", "@"], ["sessions"]])
def test_reading_the_history_loads_no_thread_pool_and_no_toml_parser_without_a_settings_file(
    recorded: Path, home: Path, words: list[str]
) -> None:
    """No background call, no pool of threads; no settings file (the user's is
    absent here, the workspace has none), no TOML parser."""
    modules = loaded_all(recorded, home, *words)
    assert [m for m in modules if m.startswith(("concurrent", "tomllib", "tomli"))] == []


def test_a_settings_file_loads_the_toml_parser(recorded: Path, home: Path) -> None:
    """The check above can fail: a workspace's settings file is parsed."""
    (recorded / "snapshotter.toml").write_text("exclude = []\n")
    loaded = loaded_all(recorded, home, "log", "-n", "20")
    assert "tomllib" in loaded or "tomli" in loaded  # Python 3.10 reads TOML with tomli


def test_listing_forks_loads_the_workflow_commands(recorded: Path, home: Path) -> None:
    """The check above can fail: ``forks`` loads its family's module."""
    assert "snapshotter.frontends.cli.workflow_commands" in loaded_all(recorded, home, "forks")


def test_the_dispatch_names_each_family_as_its_module_does() -> None:
    """``cli`` dispatches workflow and remote commands without importing their
    modules; its sets must name what those modules run."""
    from snapshotter.frontends.cli import cli, remote_commands, workflow_commands

    assert cli.WORKFLOW_COMMANDS == workflow_commands.NAMES
    assert cli.REMOTE_COMMANDS == remote_commands.NAMES


def test_listing_sessions_loads_no_undo_no_comparison_and_no_hook_installer(recorded: Path, home: Path) -> None:
    """``sessions`` reads the catalog's labels: it loads neither what undoes and
    reverts (restores, merges, comparisons) nor what installs agents' hooks."""
    modules = loaded(recorded, home, "sessions")
    heavy = ("snapshotter.history.undo", "snapshotter.engine.session.restoring", "snapshotter.engine.compare")
    assert [m for m in modules if m.startswith(heavy)] == []
    assert [m for m in modules if m.startswith("snapshotter.frontends.hooks.hookinstall")] == []
