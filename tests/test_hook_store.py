"""One failed hook never makes a folder unusable: a hook call that fails in a fresh
folder leaves no half store (its log line goes to the user's fallback log, where
``hooks status`` still finds it), a store folder that holds only snapshotter's
side files (as older versions left) opens as a new store, and every folder made
for a store is owner-only. Real commands, real folders."""

from __future__ import annotations

import io
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import COMMAND, GIT, run_command, write

from snapshotter import Snapshotter
from snapshotter.engine.gitstore.location import store_path_for

DIRECT = {"SNAPSHOTTER_NO_WATCHER": "1"}


def hook(ws: Path, home: Path, event: str, env: dict[str, str] | None = None, **payload: Any) -> None:
    document = {"session_id": "s", "cwd": str(ws), "hook_event_name": event, **payload}
    done = subprocess.run(
        [*COMMAND, "hook", "claude-code", event],
        input=json.dumps(document),
        text=True,
        capture_output=True,
        env={**os.environ, "SNAPSHOTTER_HOME": str(home), **DIRECT, **(env or {})},
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def cli(ws: Path, home: Path, *args: str) -> Any:
    done = run_command("--json", *args, cwd=ws, env={"SNAPSHOTTER_HOME": str(home), **DIRECT})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["result"]


def store_of(ws: Path, home: Path) -> Path:
    return Path(store_path_for(os.path.realpath(ws), os.path.realpath(home)))


def a_working_folder_after(ws: Path, home: Path) -> None:
    """Every later call works: a good hook records its turn, and the command line reads it."""
    hook(ws, home, "UserPromptSubmit", prompt="after the failure")
    hook(ws, home, "PreToolUse", tool_name="Write", tool_use_id="t1")
    (ws / "new.txt").write_text("new\n")
    hook(ws, home, "PostToolUse", tool_name="Write", tool_use_id="t1")
    labels = [s["label"] for s in cli(ws, home, "log", "--session", "claude-code-s")]
    assert "pre-turn:1" in labels and any(label.startswith("tool-done") for label in labels)
    logged = (store_of(ws, home) / "snapshotter" / "hooks.log").read_text().splitlines()
    assert [line for line in logged if " FAILED " in line and not line.endswith("FAILED old")] == []


def test_a_failed_first_hook_call_leaves_no_half_store(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "a\n"})
    hook(ws, home, "UserPromptSubmit", session_id="", prompt="no session named")  # fails: names no session
    assert not store_of(ws, home).exists()  # nothing made for a call that recorded nothing
    status = cli(ws, home, "hooks", "status")
    assert "names no session" in status["last_failure"]  # the failure is still seen, from the fallback log
    a_working_folder_after(ws, home)


def test_a_folder_over_the_entry_cap_at_its_first_tool_call_is_usable_once_the_cap_is_raised(
    ws: Path, home: Path
) -> None:
    write(ws, {f"f{i}.txt": f"{i}\n" for i in range(12)})
    capped = {"SNAPSHOTTER_MAX_WORKSPACE_ENTRIES": "5"}
    hook(ws, home, "PreToolUse", env=capped, tool_name="Write", tool_use_id="t0")
    assert not store_of(ws, home).exists()
    failure = run_command("--json", "hooks", "status", cwd=ws, env={"SNAPSHOTTER_HOME": str(home), **capped})
    assert "5" in json.loads(failure.stdout)["result"]["last_failure"]
    a_working_folder_after(ws, home)


def test_a_number_session_id_is_a_session(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "a\n"})
    hook(ws, home, "UserPromptSubmit", session_id=1234, prompt="numbered")
    assert [s["name"] for s in cli(ws, home, "sessions")["sessions"]] == ["claude-code-1234"]
    assert " FAILED " not in (store_of(ws, home) / "snapshotter" / "hooks.log").read_text()


def half_store(ws: Path, home: Path) -> Path:
    """What a failed first hook left before: the store folder with only the hooks log in it."""
    store = store_of(ws, home)
    (store / "snapshotter").mkdir(parents=True)
    (store / "snapshotter" / "hooks.log").write_text("2026-01-01T00:00:00+0000 claude-code PreToolUse FAILED old\n")
    return store


def test_a_store_folder_holding_only_side_files_opens_as_a_new_store(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "a\n"})
    store = half_store(ws, home)
    with Snapshotter(ws, home=home) as snap:
        first = snap.snapshot("first")
        assert [s.id for s in snap.list()] == [first.id]
    assert "FAILED old" in (store / "snapshotter" / "hooks.log").read_text()  # the log is kept
    assert not [name for name in os.listdir(store.parent) if name.startswith(".")]  # nothing left beside it
    assert oct(stat.S_IMODE(store.stat().st_mode)) == "0o700"
    if GIT is not None:
        fsck = subprocess.run([GIT, "--git-dir", str(store), "fsck", "--strict"], capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stderr


def test_a_half_store_left_by_an_older_version_takes_hooks_and_commands(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "a\n"})
    half_store(ws, home)
    assert cli(ws, home, "where")["exists"] is False  # no store yet: none is made by asking
    a_working_folder_after(ws, home)
    assert cli(ws, home, "where")["exists"] is True


def test_a_store_folder_with_other_content_is_not_taken_for_a_new_one(ws: Path, home: Path) -> None:
    """Only snapshotter's side files make a folder new: anything else may be a damaged store's, and is kept."""
    write(ws, {"a.txt": "a\n"})
    store = half_store(ws, home)
    (store / "objects").mkdir()
    (store / "objects" / "keep-me").write_text("a damaged store's\n")
    done = run_command("snapshot", cwd=ws, env={"SNAPSHOTTER_HOME": str(home), **DIRECT})
    assert "Traceback" not in done.stderr  # opened where it can be, or one line saying why not
    assert (store / "objects" / "keep-me").read_text() == "a damaged store's\n"  # never replaced


@pytest.mark.skipif(os.name != "posix", reason="folder modes are POSIX")
def test_every_folder_made_for_a_store_or_the_hooks_log_is_owner_only(tmp_path: Path, ws: Path) -> None:
    home = tmp_path / "deep" / "home"
    fallback = tmp_path / "state" / "snapshotter" / "hooks.log"
    old = os.umask(0o022)
    try:
        write(ws, {"a.txt": "a\n"})
        hook(ws, home, "UserPromptSubmit", env={"SNAPSHOTTER_HOOKS_LOG": str(fallback)}, session_id="")
        assert fallback.exists()
        hook(ws, home, "UserPromptSubmit", prompt="made")
    finally:
        os.umask(old)
    store = store_of(ws, home)
    for folder in (tmp_path / "deep", home, home / "snapshots", store, fallback.parent, tmp_path / "state"):
        assert oct(stat.S_IMODE(folder.stat().st_mode)) == "0o700", folder


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_fifo_or_a_link_planted_at_the_hooks_log_is_never_waited_on_nor_written_through(
    tmp_path: Path, ws: Path, home: Path
) -> None:
    write(ws, {"a.txt": "a\n"})
    hook(ws, home, "UserPromptSubmit", prompt="made")
    log = store_of(ws, home) / "snapshotter" / "hooks.log"
    log.unlink()
    os.mkfifo(log)
    hook(ws, home, "Stop", stop_hook_active=False)  # within the subprocess timeout: the log was not waited on
    status = run_command("--json", "hooks", "status", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)})
    assert status.returncode == 0, status.stderr
    log.unlink()
    target = tmp_path / "elsewhere.txt"
    target.write_text("theirs\n")
    log.symlink_to(target)
    hook(ws, home, "UserPromptSubmit", prompt="again")
    assert target.read_text() == "theirs\n"
    fallback = Path(os.environ["SNAPSHOTTER_HOOKS_LOG"]).read_text()
    assert "began pre-turn:2" in fallback  # the line went to the user's own log instead


OPEN_AND_SNAPSHOT = """
import os, sys, time
from snapshotter import Snapshotter
while not os.path.exists(sys.argv[4]):  # all at once
    time.sleep(0.001)
with Snapshotter(sys.argv[1], home=sys.argv[2], lock_timeout=120) as snap:
    snap.snapshot(sys.argv[3])
"""


def test_processes_opening_a_half_store_at_once_share_one_new_store_and_lose_no_snapshot(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    write(ws, {"a.txt": "a\n"})
    store = half_store(ws, home)
    go = tmp_path / "go"
    argv = [sys.executable, "-c", OPEN_AND_SNAPSHOT, str(ws), str(home)]
    writers = [subprocess.Popen([*argv, f"w{n}", str(go)], stderr=subprocess.PIPE) for n in range(6)]
    time.sleep(1.0)  # every writer started and waiting
    go.touch()
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err.decode()
    with Snapshotter(ws, home=home) as snap:
        assert sorted(s.message for s in snap.list()) == [f"w{n}" for n in range(6)]
    assert "FAILED old" in (store / "snapshotter" / "hooks.log").read_text()
    if GIT is not None:
        fsck = subprocess.run([GIT, "--git-dir", str(store), "fsck", "--strict"], capture_output=True, text=True)
        assert fsck.returncode == 0, fsck.stderr


@pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="the budget is an alarm on POSIX")
def test_a_hook_call_that_answered_leaves_no_alarm_to_kill_its_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget's alarm is disarmed once the call answered: firing while the
    interpreter exits (its handlers reset), it killed an answered call (exit -14)."""
    from snapshotter.frontends import hookclient

    event = io.TextIOWrapper(io.BytesIO(b'{"hook_event_name": "Notification", "session_id": "s"}'))
    monkeypatch.setattr(sys, "stdin", event)
    before = signal.getsignal(signal.SIGALRM)
    try:
        assert hookclient.main(["claude-code", "Notification"]) == 0
        assert signal.alarm(0) == 0  # nothing pending
    finally:
        signal.signal(signal.SIGALRM, before)
