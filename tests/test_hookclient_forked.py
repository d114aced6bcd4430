"""``hookclient.main`` where the call must end the process itself, or makes
one: in a fork of this process, the budget's alarm, which gives up, answers
the agent and leaves at once (``os._exit``); here, the first call starting a
watcher (a detached copy) that the next calls hand their events to.

A fork runs the code loaded here (a mutation run's mutant too), but mutmut
maps a test only to the functions this process calls: each test here also
makes a call in this process (the same call answered in time, the call that
opens the session), so that a mutant of ``main`` or ``_arm`` is run against
it. The agent's side is real: the event comes on a pipe, the answer goes to a
pipe, the exit status is the process's.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import watcher_gone, watcher_up, write

from snapshotter import Snapshotter, watch_available
from snapshotter.engine.gitstore.location import store_path_for
from snapshotter.frontends import hookclient
from snapshotter.frontends.hooks import hooklog, watchstart

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the budget is an alarm, on POSIX")

RETURNED = 3
"""The child's exit status when ``main`` returned instead of ending the process."""


class _Stdin:
    def __init__(self, fd: int) -> None:
        self.buffer = os.fdopen(fd, "rb")


def forked_call(argv: list[str], event: dict[str, Any] | None, limit: float = 30.0) -> tuple[int, str]:
    """``hookclient.main(argv)`` in a forked child: its exit status and what it
    wrote to stdout. ``event`` None: the agent never finishes writing the event
    (its stdin stays open), so the call waits for it until its budget ends."""
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the hook call: never returns
        status = RETURNED
        try:
            os.close(stdin_write)
            os.close(stdout_read)
            sys.stdin = _Stdin(stdin_read)  # type: ignore[assignment]
            sys.stdout = os.fdopen(stdout_write, "w")
            hookclient._store.clear()  # one process, one call: as the command runs
            hookclient.main(argv)
        finally:
            os._exit(status)
    os.close(stdin_read)
    os.close(stdout_write)
    try:
        if event is not None:
            os.write(stdin_write, json.dumps(event).encode())
            os.close(stdin_write)
            stdin_write = -1
        deadline = time.monotonic() + limit
        while True:
            ended, status = os.waitpid(pid, os.WNOHANG)
            if ended:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail(f"the hook call was still running after {limit} s")
            time.sleep(0.02)
        out = b""
        while chunk := os.read(stdout_read, 1 << 16):
            out += chunk
    finally:
        os.close(stdout_read)
        if stdin_write >= 0:
            os.close(stdin_write)
    assert os.WIFEXITED(status), status
    return os.WEXITSTATUS(status), out.decode()


@pytest.fixture
def hook_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, home: Path) -> Path:
    """The environment an agent gives its hooks (inherited by the fork); the fallback log's path."""
    monkeypatch.setenv("SNAPSHOTTER_HOME", str(home))
    monkeypatch.setenv("SNAPSHOTTER_NO_WATCHER", "1")
    monkeypatch.setenv("SNAPSHOTTER_HOOKS_LOG", str(tmp_path / "fallback-hooks.log"))
    for var in ("SNAPSHOTTER_HOOK_BUDGET", "SNAPSHOTTER_LOCK_TIMEOUT", "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "fallback-hooks.log"


def in_process_call(monkeypatch: pytest.MonkeyPatch, argv: list[str], event: dict[str, Any]) -> tuple[int, str]:
    """``hookclient.main(argv)`` here, the event on a stdin of bytes: (exit code, stdout)."""
    stdin = io.TextIOWrapper(io.BytesIO(json.dumps(event).encode()))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(hookclient, "_store", [])
    before = signal.getsignal(signal.SIGALRM)
    try:
        code = hookclient.main(argv)
        assert signal.alarm(0) == 0, "the budget's alarm is disarmed once answered"
    finally:
        signal.signal(signal.SIGALRM, before)
    return code, out.getvalue()


@pytest.mark.parametrize("argv,shown", [(["gemini", "BeforeTool"], "gemini BeforeTool"), (["gemini"], "gemini ?")])
def test_a_call_past_its_budget_gives_up_answers_and_ends_at_once(
    hook_env: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], shown: str
) -> None:
    """The agent never finishes sending the event: at the end of the budget
    (1 s here) the call logs that it gave up (no store known yet: in the
    fallback log), gives the agent its answer once, and the process ends with
    status 0, without returning through the code it was stuck in."""
    assert in_process_call(monkeypatch, argv, {"session_id": "s"}) == (0, "{}\n")  # in time: answered, nothing logged
    assert not hook_env.exists()
    monkeypatch.setenv("SNAPSHOTTER_HOOK_BUDGET", "1")  # only for the fork: an alarm here would end the test run
    assert forked_call(argv, None) == (0, "{}\n")
    lines = hook_env.read_text().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].endswith(f" {shown} FAILED gave up after 1 s: the bracket stays open (store unknown)"), lines


def test_a_short_event_stuck_on_the_lock_gives_up_in_its_short_budget_and_logs_in_the_store(
    hook_env: Path, ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex gives its SessionEnd hook 3 s: another writer holds the store, so
    the call gives up at ``SHORT_BUDGET`` (before its lock wait, half the full
    budget, ends), and says so in the store's own log, the store being known."""
    write(ws, {"f.txt": "0\n"})
    event = {"session_id": "s", "cwd": str(ws), "hook_event_name": "UserPromptSubmit", "prompt": "p", "turn_id": "1"}
    assert in_process_call(monkeypatch, ["codex", "UserPromptSubmit"], event) == (0, "")
    with Snapshotter(ws, home=home) as snap:
        assert [s.name for s in snap.sessions()] == ["codex-s"]
        log = Path(snap.store_path, "snapshotter", hooklog.NAME)
        lock_path = Path(snap.store_path, "snapshotter", "lock")
    before = log.read_text().splitlines()
    with open(lock_path, "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # another writer, stuck
        end = {"session_id": "s", "cwd": str(ws), "hook_event_name": "SessionEnd"}
        assert forked_call(["codex", "SessionEnd"], end) == (0, "")
    added = log.read_text().splitlines()[len(before) :]
    assert len(added) == 1 and added[0].endswith(
        f" codex SessionEnd FAILED gave up after {hookclient.SHORT_BUDGET} s: the bracket stays open"
    ), added
    assert not hook_env.exists()


# The watcher a call starts: ``_start_watcher`` runs in this process (its fork,
# the go-between's wait), the watcher in a detached grandchild; the calls after
# it hand their events to that watcher (``_to_watcher``) from this process.


@pytest.mark.skipif(not watch_available(), reason="a hook starts a watcher only with watchdog installed")
def test_the_first_call_starts_a_watcher_and_the_next_ones_hand_it_their_events(
    short_tmp: Path, hook_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No watcher serves the workspace: the first call starts one (detached) and
    records its event itself; the next calls hand theirs to the watcher, which
    records them as the call would (the folder from the agent's project
    variable, which only the call's environment holds) and says so in the log;
    the session's end stops it."""
    ws, home = short_tmp / "ws", short_tmp / "home"
    write(ws, {"f.txt": "0\n"})
    monkeypatch.setenv("SNAPSHOTTER_HOME", str(home))
    monkeypatch.delenv("SNAPSHOTTER_NO_WATCHER")
    monkeypatch.setenv("SNAPSHOTTER_HOOK_IDLE", "20")  # should the session's end not stop it
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(ws))  # the payloads name no folder (cwd)
    store = store_path_for(str(ws.resolve()), str(home))

    def claude(event: str, **more: Any) -> None:
        assert in_process_call(
            monkeypatch, ["claude-code", event], {"session_id": "s", "hook_event_name": event, **more}
        ) == (0, "")

    try:
        claude("SessionStart", source="startup")
        assert watcher_up(store), "the first call started a watcher"
        claude("UserPromptSubmit", prompt="make it 1")
        claude("PreToolUse", tool_name="Write", tool_use_id="w")
        write(ws, {"f.txt": "1\n"})
        claude("PostToolUse", tool_name="Write", tool_use_id="w")
        log = Path(store, "snapshotter", hooklog.NAME).read_text().splitlines()
        assert len(log) == 4 and not any(hooklog.FAILED in line for line in log), log
        assert not log[0].endswith(hooklog.BY_WATCHER)  # recorded by the first call itself
        served = [line.split(" ", 1)[1] for line in log[1:]]
        assert served[0].startswith("claude-code UserPromptSubmit ok ") and " pre-turn:1 " in served[0], served
        assert served[1].startswith("claude-code PreToolUse ok ") and " tool:w " in served[1], served
        assert served[2].startswith("claude-code PostToolUse ok ") and " tool-done:w " in served[2], served
        assert all(line.endswith(hooklog.BY_WATCHER) for line in served), served
        claude("SessionEnd", reason="other")
        assert watcher_gone(store), "the last session's end stopped the watcher"
    finally:
        watcher_gone(store, seconds=30)
    with Snapshotter(ws, home=home) as snap:
        (session,) = snap.sessions()
        assert (session.name, session.turns) == ("claude-code-s", 1)
    assert not hook_env.exists()


def test_a_watcher_that_could_not_start_says_why_and_when_the_next_call_tries(hook_env: Path, home: Path) -> None:
    """What the watcher's side records when it fails (it runs in the detached
    copy; called here): a failed line in the hooks log (no store yet: the
    fallback log, naming the store) saying why, that calls record their events
    themselves meanwhile, and when the next one tries; the back-off starts."""
    store = str(home / "snapshots" / "abc")
    hookclient._start_failed(store, "it did not listen within 300 s")
    known = watchstart.state(store)
    assert known is not None and (known.state, known.failures, known.reason) == (
        "failed",
        1,
        "it did not listen within 300 s",
    )
    again = time.strftime("%H:%M:%S", time.localtime(known.retry_at))
    hookclient._start_failed(store, "OSError: boom", stopped=True)
    lines = hook_env.read_text().splitlines()
    assert len(lines) == 2
    assert lines[0].endswith(
        " watcher start FAILED could not start: it did not listen within 300 s; hook calls record their events"
        f" themselves (slower); the next hook tries at {again} (store {store})"
    ), lines[0]
    assert " watcher start FAILED stopped: OSError: boom; hook calls record " in lines[1]
    assert watchstart.state(store).failures == 2  # type: ignore[union-attr]
