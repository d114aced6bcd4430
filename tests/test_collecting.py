"""A ``snapshotter`` process holds Python's garbage collections off while it
loads, collects as usual through the command's work, and exits with what it
made frozen (``frontends.shared.collecting``, issue #51).

Each command runs in a fresh interpreter the way the console script runs it
(``entry.main()`` with no arguments), and the collector's own callbacks say
which collections ran. Timings are for benchmarks/.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write

from snapshotter.frontends.shared import collecting

AS_THE_PROGRAM = """
import contextlib, gc, io, json, sys
enabled_at_work = []
if sys.argv[1] == "watch-the-snapshot":
    from snapshotter.facade.api import Snapshotter
    original = Snapshotter.snapshot
    def snapshot(self, *args, **kwargs):
        enabled_at_work.append(gc.isenabled())
        return original(self, *args, **kwargs)
    Snapshotter.snapshot = snapshot
sys.argv = ["snapshotter", *sys.argv[2:]]
from snapshotter.frontends.entry import main
# Counted from here: importing the entry itself comes before it can hold anything
# (and compiles its few modules where no bytecode is cached: a collection or not).
collections = []
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info["generation"]))
import atexit
def report():  # as the process leaves (``entry._leave`` runs the atexit handlers, then ``os._exit``)
    print(json.dumps({"collections": collections, "enabled_at_work": enabled_at_work,
                      "enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}), file=sys.__stdout__, flush=True)
atexit.register(report)
with contextlib.redirect_stdout(io.StringIO()):
    sys.exit(main())
"""
"""Run one command line as the console script runs it, then say what the collector did."""


def run_as_the_program(ws: Path, home: Path, *words: str, watch_the_snapshot: bool = False) -> dict[str, object]:
    env = dict(os.environ, SNAPSHOTTER_HOME=str(home), SNAPSHOTTER_NO_WATCHER="1")
    how = "watch-the-snapshot" if watch_the_snapshot else "plain"
    done = subprocess.run(
        [sys.executable, "-c", AS_THE_PROGRAM, how, *words],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (words, done.stderr)
    found: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return found


@pytest.mark.parametrize("words", [["--version"], ["where"], ["log", "-n", "20"], ["sessions"]])
def test_a_command_run_as_the_program_collects_nothing_while_it_loads(
    recorded: Path, home: Path, words: list[str]
) -> None:
    found = run_as_the_program(recorded, home, *words)
    assert found["collections"] == []
    assert found["enabled"] is True  # the command began its work (or had none): collections are back on
    assert isinstance(found["frozen"], int) and found["frozen"] > 1000  # what it made is frozen for the exit


def test_a_snapshot_collects_as_usual_while_it_works(recorded: Path, home: Path) -> None:
    """Only loading is spared: the walk of a big folder collects its garbage."""
    write(recorded, {"new.txt": "new\n"})
    found = run_as_the_program(recorded, home, "snapshot", "-m", "m", watch_the_snapshot=True)
    assert found["enabled_at_work"] == [True]


def test_a_command_run_inside_another_program_leaves_the_collector_alone(ws: Path, home: Path) -> None:
    """``main(argv)`` (a test, a watcher serving another process's command) holds nothing, freezes nothing."""
    from snapshotter.frontends.entry import main

    frozen = gc.get_freeze_count()
    with contextlib.redirect_stdout(io.StringIO()), pytest.raises(SystemExit):
        main(["--version"])
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen


def test_hold_then_begin_collects_again_over_new_objects_only() -> None:
    """What ``hold`` kept from being collected is frozen by ``begin``; a second
    ``begin`` (the hook's, before forking a watcher) changes nothing."""
    assert gc.isenabled()
    collecting.hold()
    try:
        assert not gc.isenabled()
    finally:
        collecting.begin()
    frozen = gc.get_freeze_count()
    assert gc.isenabled() and frozen > 0
    collecting.begin()
    assert gc.get_freeze_count() == frozen
    gc.unfreeze()  # this test process goes on: let its objects be collected again


LEAVING = """
import atexit, sys, threading, time
out = sys.argv[1]
def note(what):
    with open(out, "a") as handle:
        handle.write(what + "\\n")
import os
leave = os._exit
def left(code):
    note(f"os._exit({code})")
    leave(code)
os._exit = left  # how the program leaves
atexit.register(note, "atexit")
def late():
    time.sleep(0.3)
    note("thread")
threading.Thread(target=late).start()  # not a daemon: waited for
sys.argv = ["snapshotter", *sys.argv[2:]]
from snapshotter.frontends.entry import main
sys.exit(main())
"""


def test_a_command_run_as_the_program_leaves_without_the_interpreters_finalization(
    recorded: Path, home: Path, tmp_path: Path
) -> None:
    """Finalizing the interpreter took 25-30 ms after a snapshot of 100,000 files
    (tearing down every module and what they hold) and frees nothing the system
    does not take back: the program leaves with ``os._exit`` once what finalization
    does that matters is done: threads waited for, ``atexit`` handlers run (they
    close the store), the output flushed."""
    out = tmp_path / "notes"
    env = dict(os.environ, SNAPSHOTTER_HOME=str(home), SNAPSHOTTER_NO_WATCHER="1")
    done = subprocess.run(
        [sys.executable, "-c", LEAVING, str(out), "log", "-n", "1"],
        cwd=recorded,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "s2" in done.stdout  # the newest snapshot's message, flushed before leaving
    assert out.read_text().split() == ["thread", "atexit", "os._exit(0)"]


def test_a_command_run_under_a_profiler_leaves_the_usual_way_so_the_profile_is_written(
    recorded: Path, home: Path, tmp_path: Path
) -> None:
    """``python -m cProfile -o FILE -m snapshotter ...`` writes its profile after the
    program returns: a program that left with ``os._exit`` would leave no profile."""
    profile = tmp_path / "profile"
    env = dict(os.environ, SNAPSHOTTER_HOME=str(home), SNAPSHOTTER_NO_WATCHER="1")
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "snapshotter", "log", "-n", "1"],
        cwd=recorded,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "s2" in done.stdout and profile.stat().st_size > 0
