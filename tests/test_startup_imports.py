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


@pytest.mark.parametrize("words", [["--version"], ["--help"], ["where"], ["config"], ["hooks", "status"]])
def test_a_command_that_reads_no_store_loads_no_engine(recorded: Path, home: Path, words: list[str]) -> None:
    modules = loaded(recorded, home, *words)
    assert [m for m in modules if m.startswith(ENGINE + ABOVE)] == []


@pytest.mark.parametrize("words", [["--version"], ["--help"]])
def test_version_and_help_load_no_settings(recorded: Path, home: Path, words: list[str]) -> None:
    modules = loaded(recorded, home, *words)
    assert "snapshotter.frontends.shared.config" not in modules
    assert "snapshotter.frontends.shared.rendering" not in modules


READING = [["log", "-n", "20"], ["show", "@"], ["sessions"]]
"""The commands that read the store's history (and walk nothing)."""


@pytest.mark.parametrize("words", READING)
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


NOT_WALKING = [["--version"], ["--help"], ["where"], ["config"], ["hooks", "status"], *READING]
"""Every command issue #51 item 2 times beside ``python -c pass`` (``benchmarks/bench_commands.py``)."""


@pytest.mark.parametrize("words", NOT_WALKING)
def test_a_command_that_does_not_walk_loads_no_worktree_comparison_or_dulwich_repository(
    recorded: Path, home: Path, words: list[str]
) -> None:
    """Nothing of the wing that walks the folder (the walk, the stat cache, the
    filesystem's probe, the user's git repository, the size limits), no
    comparison, and not dulwich's ``Repo``, whose opening loads most of dulwich
    (object store, packs, hooks, subprocess): ``log``, ``show`` and ``sessions``
    read refs and commits through the store's own readers (issue #51)."""
    modules = loaded_all(recorded, home, *words)
    assert [m for m in modules if m.startswith(("snapshotter.engine.worktree", "snapshotter.engine.compare"))] == []
    assert [m for m in modules if m.startswith(("dulwich.repo", "dulwich.object_store", "dulwich.pack"))] == []


@pytest.mark.parametrize("words", READING)
def test_reading_the_history_makes_only_the_snapshots_values(recorded: Path, home: Path, words: list[str]) -> None:
    """Making a frozen dataclass costs about half a millisecond: a command that
    reads the history loads the model's ``snapshots`` family alone, not the
    values of comparisons, restores, remotes or upkeep."""
    modules = loaded(recorded, home, *words)
    listed = ["snapshotter.model.sessions"] if words == ["sessions"] else []
    assert [m for m in modules if m.startswith("snapshotter.model.")] == [*listed, "snapshotter.model.snapshots"]


def test_a_status_loads_the_worktree_and_the_values_of_changes(recorded: Path, home: Path) -> None:
    """The checks above can fail: ``status`` walks, compares and lists changes."""
    modules = loaded(recorded, home, "status")
    assert "snapshotter.engine.worktree.statcache" in modules
    assert "snapshotter.model.changes" in modules


def test_the_model_publishes_every_name_from_its_family() -> None:
    """``snapshotter.model`` names each value where its family's module defines it,
    and ``from snapshotter.model import X`` works for every name it lists."""
    import snapshotter.model as model
    from snapshotter.model import changes, lines, remotes, results, scans, sessions, snapshots, stats

    families = (snapshots, sessions, changes, lines, results, remotes, scans, stats)
    for name in model.__all__:
        defined = [family for family in families if name in vars(family)]
        assert len(defined) >= 1, name
        assert getattr(model, name) is getattr(defined[0], name)
    assert sorted(model.__all__) == sorted({*model._FAMILY})
    with pytest.raises(AttributeError):
        model.NoSuchValue  # noqa: B018


def test_the_facade_blames_as_far_back_as_blame_by_default() -> None:
    """The facade spells ``blame``'s default limit out rather than import
    ``history.blame`` (and the values of comparisons) to read it."""
    import inspect

    from snapshotter.facade.api import Snapshotter
    from snapshotter.history.blame import DEFAULT_LIMIT

    assert inspect.signature(Snapshotter.blame).parameters["limit"].default == DEFAULT_LIMIT


@pytest.mark.parametrize("words", NOT_WALKING)
def test_a_command_that_writes_nothing_loads_no_file_copying_or_temporary_files(
    recorded: Path, home: Path, words: list[str]
) -> None:
    """``shutil`` (which loads ``bz2``, ``lzma`` and ``fnmatch``) and ``tempfile``
    (which loads ``shutil`` and ``random``) are for writing; argparse asks
    ``shutil`` the terminal's width for every option it adds unless the grammar
    does (``arguments._columns``), and the store's side files (history index,
    pack indexes, line counts) import ``tempfile`` where they write one."""
    modules = loaded_all(recorded, home, *words)
    assert [m for m in modules if m in ("shutil", "tempfile", "random", "bz2", "lzma")] == []


@pytest.mark.parametrize("words", [["status"], ["diff", "--stat"], ["snapshot", "-m", "nothing changed"]])
def test_a_walk_that_changes_nothing_loads_no_file_copying_or_temporary_files(
    recorded: Path, home: Path, words: list[str]
) -> None:
    """The same for the walking commands of issue #51 item 1 when nothing
    changed: the stat cache, the commit a snapshot still writes and the pack
    and loose-object writers make their temporary files with
    ``fsutil.new_temp_file``, not ``tempfile`` (3 ms of each call's start)."""
    modules = loaded_all(recorded, home, *words)
    assert [m for m in modules if m in ("shutil", "tempfile", "random", "bz2", "lzma", "secrets")] == []


@pytest.mark.parametrize("words", READING)
def test_reading_the_history_makes_no_object_writer(recorded: Path, home: Path, words: list[str]) -> None:
    """Reading writes no object: the store's writer (its pack builder, its list
    of loose folders) is made when first asked for."""
    assert "snapshotter.engine.gitstore.objectwriter" not in loaded(recorded, home, *words)


HOOK_LOADED = """
import json, sys
from snapshotter.frontends.entry import main
code = main(["hook", "claude-code", sys.argv[1]])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""
"""One hook call as the agent makes it (the event on stdin), then every module it loaded (on stderr:
the call's answer is on stdout)."""


def hook_loaded(ws: Path, home: Path, event: str, **payload: object) -> list[str]:
    env = dict(os.environ, SNAPSHOTTER_HOME=str(home), SNAPSHOTTER_NO_WATCHER="1")
    env["SNAPSHOTTER_HOOKS_LOG"] = str(home / "fallback-hooks.log")
    document = {"session_id": "s", "cwd": str(ws), "hook_event_name": event, **payload}
    done = subprocess.run(
        [sys.executable, "-c", HOOK_LOADED, event],
        cwd=ws,
        env=env,
        input=json.dumps(document),
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = json.loads(done.stderr.splitlines()[-1])
    assert found["code"] == 0
    modules: list[str] = found["modules"]
    return modules


def test_a_hook_call_without_a_watcher_loads_no_watch_code_and_no_compaction(recorded: Path, home: Path) -> None:
    """A call that records its event itself (no watcher: ``SNAPSHOTTER_NO_WATCHER``, Windows, no watchdog)
    walks without a watcher, and its upkeep pass measures the store without compacting it: neither the watch
    journal (nor ``importlib.metadata``, which asks watchdog's version), nor dulwich's packs (a compaction's
    deltas), nor the upkeep's result values are loaded (issue #51 item 4)."""
    hook_loaded(recorded, home, "UserPromptSubmit", prompt="go")
    modules = hook_loaded(recorded, home, "PreToolUse", tool_name="Bash", tool_input={"command": "x"}, tool_use_id="t")
    assert "snapshotter.engine.worktree.walker" in modules  # it did walk
    assert (home / "fallback-hooks.log").exists() is False or "FAILED" not in (home / "fallback-hooks.log").read_text()
    unwanted = ("snapshotter.engine.worktree.watch", "importlib.metadata", "dulwich.pack", "snapshotter.model.stats")
    assert [m for m in modules if m in unwanted] == []


UNDOING = (
    "snapshotter.engine.session.restoring",
    "snapshotter.engine.session.reverting",
    "snapshotter.engine.session.hunks",
    "snapshotter.engine.compare.merge",
    "snapshotter.engine.compare.hunkset",
    "snapshotter.history.attribution",
    "snapshotter.model.results",
    "merge3",
    "snapshotter.engine.session.checkout",
    "snapshotter.engine.worktree.fsops",
    "snapshotter.model.changes",
    "snapshotter.model.lines",
)
"""What undoes, redoes and reverts: restores (their plans, the workspace's writer), three-way merges,
a change's hunks, their values, and the values of diffs (a snapshot counts its lines without them)."""


@pytest.mark.parametrize(
    "event, payload",
    [
        ("UserPromptSubmit", {"prompt": "go"}),
        ("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "x"}, "tool_use_id": "t2"}),
        ("PreToolUse", {"tool_name": "Edit", "tool_input": {"file_path": "f0.txt"}, "tool_use_id": "t3"}),
        ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "x"}, "tool_use_id": "t", "tool_response": {}}),
        ("Stop", {}),
    ],
)
def test_a_hook_event_loads_no_restore_revert_or_merge(
    recorded: Path, home: Path, event: str, payload: dict[str, object]
) -> None:
    """A hook event records a checkpoint, a turn's or a tool call's snapshot: it
    restores and reverts nothing, so it loads none of that (issue #51 item 4:
    ``history.undo`` once imported it all at its top, about 15-20 ms)."""
    hook_loaded(recorded, home, "UserPromptSubmit", prompt="go")
    hook_loaded(recorded, home, "PreToolUse", tool_name="Bash", tool_input={"command": "x"}, tool_use_id="t")
    modules = hook_loaded(recorded, home, event, **payload)
    assert "snapshotter.history.undo" in modules  # it did record through the undo stacks
    assert [m for m in modules if m in UNDOING] == []


@pytest.mark.parametrize("words", READING)
def test_reading_the_history_loads_no_dulwich_refs(recorded: Path, home: Path, words: list[str]) -> None:
    """The store reads its refs with its own readers: the one thing they took
    from ``dulwich.refs`` was its check of a ref's name (``gitstore.refnames``)."""
    assert "dulwich.refs" not in loaded_all(recorded, home, *words)


@pytest.mark.parametrize("words", READING)
def test_reading_the_history_loads_no_dulwich_objects(recorded: Path, home: Path, words: list[str]) -> None:
    """A snapshot's commit is read for its tree, time and message
    (``gitstore.commitread``): dulwich's object classes are for writing one."""
    assert [m for m in loaded_all(recorded, home, *words) if m in ("dulwich.objects", "dulwich._objects")] == []


@pytest.mark.parametrize("words", READING)
def test_reading_the_history_loads_no_dulwich_file_locks(recorded: Path, home: Path, words: list[str]) -> None:
    """dulwich's lock files are its writers': reading loads no ``dulwich.file``
    (the engine's failures tell its ``FileLocked`` by the loaded module)."""
    assert "dulwich.file" not in loaded_all(recorded, home, *words)


def test_a_dulwich_lock_held_is_a_typed_store_locked() -> None:
    """What the engine tells apart without importing dulwich's lock files is still typed."""
    from dulwich.file import FileLocked

    from snapshotter.engine.session.failures import translated
    from snapshotter.errors import StoreLocked

    with pytest.raises(StoreLocked, match="held by another writer"), translated("/nowhere"):
        raise FileLocked("/nowhere/refs/x", "/nowhere/refs/x.lock")
    with pytest.raises(KeyError), translated("/nowhere"):
        raise KeyError("not a failure of the store's: passed on as it is")


def test_a_hook_event_loads_no_dulwich_objects(recorded: Path, home: Path) -> None:
    """A hook's snapshot commit is written as text (``trailers.build_commit``): no dulwich object classes."""
    hook_loaded(recorded, home, "UserPromptSubmit", prompt="go")
    modules = hook_loaded(recorded, home, "PreToolUse", tool_name="Bash", tool_input={"command": "x"}, tool_use_id="t")
    assert "snapshotter.engine.worktree.walker" in modules  # it did walk (and record)
    assert [m for m in modules if m in ("dulwich.objects", "dulwich._objects")] == []


BIG_FILE_CODE = (
    "snapshotter.engine.worktree.bigfile",
    "snapshotter.engine.gitstore.bigstore",
    "snapshotter.engine.gitstore.chainappend",
    "snapshotter.engine.gitstore.chainpack",
    "snapshotter.engine.gitstore.chainread",
    "snapshotter.engine.gitstore.deltaencode",
    "snapshotter.engine.gitstore.signature",
    "snapshotter.engine.gitstore.sha1state",
    "ctypes",
)
"""What keeps big files as deltas (issue #53): loaded by a call that writes or reads one, not by every write."""


def test_a_hook_call_writing_small_files_loads_no_big_file_code(recorded: Path, home: Path) -> None:
    """A hook call that snapshots a changed small file writes its blob and commit, and loads none of the
    big files' chain packs, delta matcher or OpenSSL hashing state: those load where a big file is written."""
    hook_loaded(recorded, home, "UserPromptSubmit", prompt="go")
    (recorded / "f0.txt").write_text("changed\n")
    modules = hook_loaded(recorded, home, "PreToolUse", tool_name="Bash", tool_input={"command": "x"}, tool_use_id="t")
    assert "snapshotter.engine.gitstore.objectwriter" in modules  # it did write
    assert [m for m in modules if m in BIG_FILE_CODE] == []


LINE_DIFF = tuple(f"snapshotter.engine.compare.{name}" for name in ("linediff", "xdiff", "xprepare", "hunks"))
"""Counting and showing lines: what a call that counts no line has no use for."""


@pytest.mark.parametrize("words", [["snapshot"], ["status"]])
def test_a_call_with_no_line_to_count_loads_no_line_diff(recorded: Path, home: Path, words: list[str]) -> None:
    """A snapshot with nothing changed counts no line, and ``status`` lists paths only:
    neither loads the line differ (git's xdiff in Python, about 5 ms of imports)."""
    modules = loaded(recorded, home, *words)
    assert [m for m in modules if m in LINE_DIFF] == []


def test_a_snapshot_of_a_changed_file_loads_the_line_diff(recorded: Path, home: Path) -> None:
    """The check above can fail: a changed file's lines are counted."""
    (recorded / "f0.txt").write_text("changed\n")
    assert "snapshotter.engine.compare.linediff" in loaded(recorded, home, "snapshot")
