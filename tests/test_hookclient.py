"""``hookclient.main`` called in this process: the fail-open path, step by step.

``test_hook_events.py`` runs the real command in a child process for every
agent; these call the same entry point here (stdin and stdout swapped for
in-memory streams, the environment set as the agent sets it, the watcher
turned off so nothing forks), so each promise is checked where a mutation run
can see it: whatever fails, the call returns 0, answers what its agent reads
(nothing, or ``{}`` for Gemini CLI), and says in the hooks log what failed;
the budget armed is the agent's; an event that names a folder is recorded.
"""

from __future__ import annotations

import fcntl
import io
import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import write

from snapshotter import Snapshotter
from snapshotter.frontends import hookclient
from snapshotter.frontends.hooks import hooklog

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="the budget is an alarm on POSIX")


class _Stdin:
    """An agent's stdin: the event's bytes, and the alarm pending when the call reads them."""

    def __init__(self, data: bytes) -> None:
        self.buffer = self
        self.data = data
        self.alarm_at_read: float | None = None

    def read(self, limit: int = -1) -> bytes:
        self.alarm_at_read = signal.getitimer(signal.ITIMER_REAL)[0]
        return self.data if limit < 0 else self.data[:limit]


class Call:
    """One hook call in this process: (exit code, what it wrote to stdout); ``stdin`` is the last one's."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fallback: Path) -> None:
        self.monkeypatch, self.fallback = monkeypatch, fallback
        self.stdin = _Stdin(b"")

    def __call__(self, argv: list[str], data: bytes | dict[str, Any] = b"{}") -> tuple[int, str]:
        self.stdin = _Stdin(json.dumps(data).encode() if isinstance(data, dict) else data)
        out = io.StringIO()
        self.monkeypatch.setattr(sys, "stdin", self.stdin)
        self.monkeypatch.setattr(sys, "stdout", out)
        self.monkeypatch.setattr(hookclient, "_store", [])  # one process, one call: as the command runs
        code = hookclient.main(argv)
        assert signal.alarm(0) == 0, "the budget's alarm is disarmed once answered"
        return code, out.getvalue()

    def fallback_lines(self) -> list[str]:
        return self.fallback.read_text().splitlines() if self.fallback.exists() else []


@pytest.fixture
def call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, home: Path) -> Iterator[Call]:
    before = signal.getsignal(signal.SIGALRM)
    monkeypatch.setenv("SNAPSHOTTER_HOME", str(home))
    monkeypatch.setenv("SNAPSHOTTER_NO_WATCHER", "1")
    monkeypatch.setenv("SNAPSHOTTER_HOOKS_LOG", str(tmp_path / "fallback-hooks.log"))
    for var in ("SNAPSHOTTER_HOOK_BUDGET", "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "COPILOT_PROJECT_DIR"):
        monkeypatch.delenv(var, raising=False)
    try:
        yield Call(monkeypatch, tmp_path / "fallback-hooks.log")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def test_an_unknown_agent_fails_open_and_is_logged(call: Call) -> None:
    assert call(["nobody", "X"]) == (0, "")
    assert call([]) == (0, "")
    lines = call.fallback_lines()
    assert len(lines) == 2
    assert lines[0].endswith(
        " nobody X FAILED ValueError: no agent 'nobody'; hooks know claude-code, codex, copilot, gemini (store unknown)"
    )
    assert " ? ? FAILED ValueError: no agent ''; hooks know claude-code, " in lines[1]


@pytest.mark.parametrize(
    "data,why",
    [
        (b"not json", "JSONDecodeError: "),
        (b"[1, 2]", "ValueError: the event is not a JSON object"),
        (b'"text"', "ValueError: the event is not a JSON object"),
        (b" " * (hookclient.MAX_PAYLOAD + 1), f"ValueError: the event is larger than {hookclient.MAX_PAYLOAD} bytes"),
    ],
)
@pytest.mark.parametrize("agent,event,answer", [("claude-code", "PreToolUse", ""), ("gemini", "BeforeTool", "{}\n")])
def test_a_garbage_event_fails_open_with_the_agents_answer(
    call: Call, data: bytes, why: str, agent: str, event: str, answer: str
) -> None:
    assert call([agent, event], data) == (0, answer)
    (line,) = call.fallback_lines()
    assert f" {agent} {event} FAILED {why}" in line and line.endswith(" (store unknown)")


def test_an_event_of_exactly_the_largest_size_is_read(call: Call, ws: Path) -> None:
    event = json.dumps({"hook_event_name": "Notification", "session_id": "s", "cwd": str(ws)}).encode()
    padded = event + b" " * (hookclient.MAX_PAYLOAD - len(event))
    assert call(["claude-code", "Notification"], padded) == (0, "")
    assert call.fallback_lines() == []


def test_an_empty_event_or_one_without_a_folder_records_nothing(call: Call, ws: Path, home: Path) -> None:
    assert call(["claude-code", "PreToolUse"], b"") == (0, "")
    assert call(["claude-code", "PreToolUse"], {"hook_event_name": "PreToolUse", "session_id": "s"}) == (0, "")
    assert call(["gemini", "Unheard"], {"session_id": "s", "cwd": str(ws)}) == (0, "{}\n")
    assert call.fallback_lines() == [] and not home.exists()


def _claude(call: Call, ws: Path, event: str, **more: Any) -> tuple[int, str]:
    return call(["claude-code", event], {"hook_event_name": event, "session_id": "s1", "cwd": str(ws), **more})


def test_a_turn_is_recorded_in_this_process_and_logged_in_the_store(call: Call, ws: Path, home: Path) -> None:
    write(ws, {"app.py": "v1\n"})
    assert _claude(call, ws, "UserPromptSubmit", prompt="make it v2") == (0, "")
    write(ws, {"app.py": "v2\n"})
    assert _claude(call, ws, "Stop") == (0, "")
    with Snapshotter(ws, home=home) as snap:
        (session,) = snap.sessions()
        assert (session.name, session.agent, session.turns, session.open_turn) == (
            "claude-code-s1",
            "claude-code",
            1,
            False,
        )
        log = Path(snap.store_path, "snapshotter", hooklog.NAME).read_text().splitlines()
        assert len(log) == 2 and all(" claude-code " in line and hooklog.FAILED not in line for line in log)
        assert call.fallback_lines() == []
        snap.in_session("claude-code-s1").revert_turn()
    assert (ws / "app.py").read_text() == "v1\n"


def test_the_folder_comes_from_the_agents_project_variable(
    call: Call, ws: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(ws, {"a.txt": "a\n"})
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(ws))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert _claude(call, elsewhere, "UserPromptSubmit", prompt="p") == (0, "")
    with Snapshotter(ws, home=home) as snap:
        assert [session.name for session in snap.sessions()] == ["claude-code-s1"]
    assert sorted(p.name for p in home.iterdir()) == ["snapshots"] and len(list((home / "snapshots").iterdir())) == 1


def test_a_broken_home_fails_open_and_the_log_names_the_store(
    call: Call, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "home-is-a-file"
    broken.write_text("not a folder\n")
    monkeypatch.setenv("SNAPSHOTTER_HOME", str(broken))
    write(ws, {"f.txt": "0\n"})
    assert _claude(call, ws, "PreToolUse", tool_use_id="t", tool_name="Edit") == (0, "")
    (line,) = call.fallback_lines()
    assert " claude-code PreToolUse FAILED " in line and f"(store {broken}" in line


@pytest.mark.parametrize(
    "value,expected", [(None, 20), ("5", 5), ("0", 1), ("-3", 1), ("100", 20), ("20", 20), ("soon", 20), ("", 20)]
)
def test_the_budget_is_the_variables_within_one_to_twenty_seconds(
    value: str | None, expected: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if value is None:
        monkeypatch.delenv("SNAPSHOTTER_HOOK_BUDGET", raising=False)
    else:
        monkeypatch.setenv("SNAPSHOTTER_HOOK_BUDGET", value)
    assert hookclient.budget() == expected


@pytest.mark.parametrize(
    "argv,budget",
    [
        (["claude-code", "PreToolUse"], 7),
        (["codex", "SessionEnd"], hookclient.SHORT_BUDGET),
        (["codex", "Interrupt"], hookclient.SHORT_BUDGET),
        (["codex", "PreToolUse"], 7),
        (["codex"], 7),
        (["nobody", "SessionEnd"], 7),
    ],
)
def test_the_call_runs_under_its_budget_short_where_the_agent_gives_little_time(
    call: Call, argv: list[str], budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SNAPSHOTTER_HOOK_BUDGET", "7")
    call(argv, b"{}")
    pending = call.stdin.alarm_at_read
    if argv[0] == "nobody":
        assert pending is None  # refused before reading the event
        return
    assert pending is not None and budget - 1 < pending <= budget


def test_an_answer_the_agent_no_longer_reads_is_no_failure(call: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    assert hookclient._answer("{}") == 0
    assert hookclient._answer("") == 0


def test_the_answer_is_written_and_flushed_on_its_own_line(monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[str] = []

    class Recorder(io.StringIO):
        def flush(self) -> None:
            written.append(self.getvalue())

    monkeypatch.setattr(sys, "stdout", Recorder())
    assert hookclient._answer("{}") == 0
    assert written == ["{}\n"]
    written.clear()
    monkeypatch.setattr(sys, "stdout", Recorder())
    assert hookclient._answer("") == 0
    assert written == [""]  # flushed, nothing written


def test_the_alarm_is_armed_for_the_budget_and_disarmed(monkeypatch: pytest.MonkeyPatch) -> None:
    before = signal.getsignal(signal.SIGALRM)
    try:
        disarm = hookclient._arm(9, "", "claude-code", "PreToolUse")
        assert 8 < signal.getitimer(signal.ITIMER_REAL)[0] <= 9
        assert callable(signal.getsignal(signal.SIGALRM)) and signal.getsignal(signal.SIGALRM) is not before
        disarm()
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)


def test_an_event_the_command_line_does_not_name_is_read_from_the_payload(call: Call, ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "a\n"})
    event = {"hook_event_name": "UserPromptSubmit", "session_id": "s2", "cwd": str(ws), "prompt": "p"}
    assert call(["claude-code"], event) == (0, "")
    with Snapshotter(ws, home=home) as snap:
        assert [(s.name, s.turns, s.open_turn) for s in snap.sessions()] == [("claude-code-s2", 1, True)]


@pytest.mark.parametrize("value,expected", [(None, None), ("", None), ("0", None), ("1", False), ("yes", False)])
def test_the_watcher_is_asked_unless_the_variable_turns_it_off(
    value: str | None, expected: bool | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``SNAPSHOTTER_NO_WATCHER`` set (not empty, not 0): False, record it yourself;
    else the watcher is looked for, and a store none serves gives None (start one)."""
    if value is None:
        monkeypatch.delenv("SNAPSHOTTER_NO_WATCHER", raising=False)
    else:
        monkeypatch.setenv("SNAPSHOTTER_NO_WATCHER", value)
    store = tmp_path / "store"
    store.mkdir()
    assert hookclient._to_watcher(str(store), "claude-code", "PreToolUse", {}, {}) is expected


@pytest.mark.parametrize("setting,waited", [(None, "4"), ("0.25", "0.25"), ("100", "4")])
def test_a_held_store_is_waited_for_half_the_budget_at_most_and_the_log_says_how_long(
    call: Call, ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch, setting: str | None, waited: str
) -> None:
    """Another writer holds the store: the call waits for it the user's
    ``lock_timeout``, but never past half its budget (8 s here: its alarm,
    which would end this process, stays well clear), so it fails open in time
    with a line that says how long it waited."""
    write(ws, {"f.txt": "0\n"})
    assert _claude(call, ws, "UserPromptSubmit", prompt="p") == (0, "")
    monkeypatch.setenv("SNAPSHOTTER_HOOK_BUDGET", "8")
    if setting is not None:
        monkeypatch.setenv("SNAPSHOTTER_LOCK_TIMEOUT", setting)
    (lock_path,) = home.rglob("snapshotter/lock")
    with open(lock_path, "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # another writer, stuck
        assert _claude(call, ws, "PreToolUse", tool_name="Bash", tool_use_id="late") == (0, "")
    (log,) = home.rglob(f"snapshotter/{hooklog.NAME}")
    last = log.read_text().splitlines()[-1]
    assert " claude-code PreToolUse FAILED StoreLocked: store is locked by " in last
    assert f" for over {waited} s;" in last
