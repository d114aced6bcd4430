"""``snapshotter hook AGENT EVENT``: each agent's payloads (as its CLI sends them,
captured from the real binaries) through the real command, on real folders.
The hook always exits 0 and says nothing (``{}`` for Gemini CLI); what it
records lets a turn's revert take back the agent's edits and keep a person's."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import COMMAND, contents, run_command, write

DIRECT = {"SNAPSHOTTER_NO_WATCHER": "1"}


class Agent:
    """One agent's hook calls into one workspace, in a subprocess each."""

    def __init__(self, name: str, ws: Path, home: Path, env: dict[str, str] | None = None) -> None:
        self.name, self.ws = name, ws
        self.env = {**os.environ, "SNAPSHOTTER_HOME": str(home), **DIRECT, **(env or {})}
        self.env["SNAPSHOTTER_HOOKS_LOG"] = str(home.parent / "fallback-hooks.log")

    def __call__(self, event: str, **payload: Any) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*COMMAND, "hook", self.name, event],
            input=json.dumps(payload),
            text=True,
            capture_output=True,
            env=self.env,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0 and done.stderr == "", done
        assert done.stdout == ("{}\n" if self.name == "gemini" else ""), done.stdout
        return done


def cli(ws: Path, home: Path, *args: str) -> Any:
    done = run_command("--json", *args, cwd=ws, env={"SNAPSHOTTER_HOME": str(home), **DIRECT})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["result"]


def claude(agent: Agent, session: str, event: str, **more: Any) -> None:
    agent(event, session_id=session, cwd=str(agent.ws), hook_event_name=event, **more)


def test_a_claude_code_turn_is_bracketed_and_its_revert_keeps_a_persons_edit(ws: Path, home: Path) -> None:
    write(ws, {"app.py": "v1\n", "notes.txt": "mine\n"})
    agent = Agent("claude-code", ws, home)
    claude(agent, "s1", "SessionStart", source="startup")
    long_prompt = "Refactor the parser so that it " + "really " * 20 + "handles nesting\nand more lines"
    claude(agent, "s1", "UserPromptSubmit", prompt=long_prompt)
    claude(agent, "s1", "PreToolUse", tool_name="Bash", tool_input={"command": "x"}, tool_use_id="t1")
    write(ws, {"app.py": "v2 by bash\n", "made.txt": "new\n"})
    claude(agent, "s1", "PostToolUse", tool_name="Bash", tool_use_id="t1")
    claude(agent, "s1", "PreToolUse", tool_name="mcp__fs__write", tool_input={}, tool_use_id="t2")
    write(ws, {"app.py": "v3 by an MCP tool\n"})
    claude(agent, "s1", "PostToolUseFailure", tool_name="mcp__fs__write", tool_use_id="t2", error="x")
    claude(agent, "s1", "Stop", stop_hook_active=False)
    write(ws, {"notes.txt": "mine, edited after the turn\n"})
    log = cli(ws, home, "--session", "claude-code-s1", "log", "-n", "0")
    assert [s["label"] for s in reversed(log)] == [
        "pre-turn:1",
        "tool:t1",
        "tool-done:t1",
        "tool:t2",
        "tool-done:t2",
        "post-turn:1",
    ]
    message = log[-1]["message"]
    assert len(message) <= 72 and message.startswith("Refactor the parser") and "\n" not in message
    assert log[-1]["metadata"] == {"agent": "claude-code", "agent-session": "s1", "turn": "1"}
    reverted = cli(ws, home, "turn", "revert", "--agent", "claude-code")
    assert set(reverted["reverted"]) == {"app.py", "made.txt"}
    assert contents(ws) == {"app.py": b"v1\n", "notes.txt": b"mine, edited after the turn\n"}


def test_two_agent_sessions_in_one_folder_are_reverted_apart(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "a0\n", "b.txt": "b0\n"})
    agent = Agent("claude-code", ws, home)
    for session in ("one", "two"):
        claude(agent, session, "UserPromptSubmit", prompt=f"work {session}")
    claude(agent, "one", "PreToolUse", tool_name="Edit", tool_use_id="x1")
    write(ws, {"a.txt": "a1 by one\n"})
    claude(agent, "one", "PostToolUse", tool_name="Edit", tool_use_id="x1")
    claude(agent, "two", "PreToolUse", tool_name="Edit", tool_use_id="y1")
    write(ws, {"b.txt": "b1 by two\n"})
    claude(agent, "two", "PostToolUse", tool_name="Edit", tool_use_id="y1")
    for session in ("one", "two"):
        claude(agent, session, "Stop")
    listed = cli(ws, home, "sessions")["sessions"]
    assert {s["name"] for s in listed} == {"claude-code-one", "claude-code-two"}
    assert all(s["agent"] == "claude-code" and s["turns"] == 1 and not s["open_turn"] for s in listed)
    cli(ws, home, "--session", "claude-code-one", "turn", "revert")
    assert contents(ws) == {"a.txt": b"a0\n", "b.txt": b"b1 by two\n"}
    cli(ws, home, "--session", "claude-code-two", "turn", "revert")
    assert contents(ws) == {"a.txt": b"a0\n", "b.txt": b"b0\n"}


def test_a_turn_left_open_is_ended_by_the_next_prompt(ws: Path, home: Path) -> None:
    write(ws, {"f.txt": "0\n"})
    agent = Agent("claude-code", ws, home)
    claude(agent, "s", "UserPromptSubmit", prompt="first")
    claude(agent, "s", "PreToolUse", tool_name="Write", tool_use_id="w1")
    write(ws, {"f.txt": "1\n"})  # then the agent is killed: no PostToolUse, no Stop
    claude(agent, "s", "UserPromptSubmit", prompt="second")
    labels = [s["label"] for s in reversed(cli(ws, home, "--session", "claude-code-s", "log", "-n", "0"))]
    assert labels == ["pre-turn:1", "tool:w1", "post-turn:1", "pre-turn:2"]
    text = run_command("--session", "claude-code-s", "log", cwd=ws, env={"SNAPSHOTTER_HOME": str(home), **DIRECT})
    headings = [line for line in text.stdout.splitlines() if not line.startswith("  ")]
    assert headings == ["turn 2: second  (open)", "turn 1: first"]  # each turn under its prompt line
    newest = run_command("--session", "claude-code-s", "log", "-n", "2", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)})
    assert [line.split()[-1] for line in newest.stdout.splitlines()] == ["(open)", "second", "first", "prompt"]
    cli(ws, home, "--session", "claude-code-s", "turn", "revert", "2")  # the call ran to the turn's end
    assert (ws / "f.txt").read_text() == "0\n"


def test_codex_turn_ids_begin_a_turn_whose_prompt_was_not_seen(ws: Path, home: Path) -> None:
    write(ws, {"f.txt": "0\n"})
    agent = Agent("codex", ws, home)
    base = {"session_id": "c-1", "cwd": str(ws), "model": "gpt-5.5"}
    agent("UserPromptSubmit", **base, turn_id="turn-a", hook_event_name="UserPromptSubmit", prompt="go")
    agent("PreToolUse", **base, turn_id="turn-b", hook_event_name="PreToolUse", tool_name="Bash", tool_use_id="k1")
    write(ws, {"f.txt": "1\n"})
    agent("PostToolUse", **base, turn_id="turn-b", hook_event_name="PostToolUse", tool_name="Bash", tool_use_id="k1")
    agent("Stop", **base, turn_id="turn-b", hook_event_name="Stop")
    log = list(reversed(cli(ws, home, "--session", "codex-c-1", "log", "-n", "0")))
    assert [s["label"] for s in log] == [
        "pre-turn:1",
        "post-turn:1",
        "pre-turn:2",
        "tool:k1",
        "tool-done:k1",
        "post-turn:2",
    ]
    assert log[0]["metadata"]["turn-id"] == "turn-a" and log[2]["metadata"]["turn-id"] == "turn-b"


@pytest.mark.parametrize("agent_name", ["gemini", "copilot"])
def test_calls_without_ids_are_paired_by_tool_and_arguments(agent_name: str, ws: Path, home: Path) -> None:
    """Gemini CLI and Copilot CLI name no call and end parallel calls as they finish:
    the after-hooks come in the other order here, and each closes its own call."""
    write(ws, {"a.txt": "a0\n", "b.txt": "b0\n"})
    agent = Agent(agent_name, ws, home)
    if agent_name == "gemini":
        names = {"prompt": "BeforeAgent", "before": "BeforeTool", "after": "AfterTool", "stop": "AfterAgent"}

        def payload(event: str, **more: Any) -> dict[str, Any]:
            return {"session_id": "g", "cwd": str(ws), "hook_event_name": event, **more}

        def tool(name: str, args: dict[str, str]) -> dict[str, Any]:
            return {"tool_name": name, "tool_input": args}
    else:
        names = {"prompt": "userPromptSubmitted", "before": "preToolUse", "after": "postToolUse", "stop": "agentStop"}

        def payload(event: str, **more: Any) -> dict[str, Any]:
            return {"sessionId": "g", "cwd": str(ws), "timestamp": 1, **more}

        def tool(name: str, args: dict[str, str]) -> dict[str, Any]:
            return {"toolName": name, "toolArgs": args}

    agent(names["prompt"], **payload(names["prompt"], prompt="two edits at once"))
    agent(names["before"], **payload(names["before"], **tool("write_file", {"file_path": "a.txt"})))
    agent(names["before"], **payload(names["before"], **tool("write_file", {"file_path": "b.txt"})))
    write(ws, {"a.txt": "a1\n", "b.txt": "b1\n"})
    agent(names["after"], **payload(names["after"], **tool("write_file", {"file_path": "b.txt"})))
    agent(names["after"], **payload(names["after"], **tool("write_file", {"file_path": "a.txt"})))
    agent(names["stop"], **payload(names["stop"]))
    log = list(reversed(cli(ws, home, "--session", f"{agent_name}-g", "log", "-n", "0")))
    assert [s["label"] for s in log] == [
        "pre-turn:1",
        "tool:c1",
        "tool:c2",
        "tool-done:c2",
        "tool-done:c1",
        "post-turn:1",
    ]
    reverted = cli(ws, home, "turn", "revert", "--agent", agent_name)
    assert set(reverted["reverted"]) == {"a.txt", "b.txt"} and contents(ws) == {"a.txt": b"a0\n", "b.txt": b"b0\n"}


def test_a_broken_store_never_fails_the_hook_and_the_failure_is_logged(tmp_path: Path, ws: Path) -> None:
    home = tmp_path / "home-is-a-file"
    home.write_text("not a folder\n")
    write(ws, {"f.txt": "0\n"})
    for name, event, payload in (
        ("claude-code", "PreToolUse", {"session_id": "s", "cwd": str(ws), "tool_use_id": "t"}),
        ("gemini", "BeforeTool", {"session_id": "s", "cwd": str(ws), "tool_name": "x"}),
        ("copilot", "preToolUse", {"sessionId": "s", "cwd": str(ws), "toolName": "bash"}),
    ):
        Agent(name, ws, home)(event, **payload)  # exit 0, the agent's answer, nothing on stderr
    fallback = (tmp_path / "fallback-hooks.log").read_text()
    assert fallback.count(" FAILED ") == 3 and "claude-code PreToolUse FAILED" in fallback
    logged = {"SNAPSHOTTER_HOOKS_LOG": str(tmp_path / "fallback-hooks.log")}
    status = run_command("--json", "hooks", "status", cwd=ws, env={"SNAPSHOTTER_HOME": str(home), **logged})
    assert "copilot preToolUse FAILED" in json.loads(status.stdout)["result"]["last_failure"]
    elsewhere = tmp_path / "another-workspace"
    elsewhere.mkdir()
    status = run_command("--json", "hooks", "status", cwd=elsewhere, env={"SNAPSHOTTER_HOME": str(home), **logged})
    assert json.loads(status.stdout)["result"]["last_failure"] is None  # another store's failures are not its own


def test_garbage_and_unknown_events_fail_open(ws: Path, home: Path) -> None:
    for stdin in ("", "not json", "[1, 2]", json.dumps({"hook_event_name": "PreToolUse"})):
        done = subprocess.run(
            [*COMMAND, "hook", "claude-code", "PreToolUse"],
            input=stdin,
            text=True,
            capture_output=True,
            env={**os.environ, "SNAPSHOTTER_HOME": str(home), **DIRECT},
            timeout=60,
            check=False,
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    Agent("claude-code", ws, home)("Notification", session_id="s", cwd=str(ws), message="hi")
    Agent("claude-code", ws, home)("SubagentStart", session_id="s", cwd=str(ws), agent_id="a1")
    unknown = subprocess.run(
        [*COMMAND, "hook", "nobody", "X"],
        input="{}",
        text=True,
        capture_output=True,
        env={**os.environ, "SNAPSHOTTER_HOME": str(home)},
        timeout=60,
        check=False,
    )
    assert (unknown.returncode, unknown.stdout) == (0, "")
    assert not home.exists() or not any(home.rglob("refs/snapshots/*"))  # nothing recorded


def test_a_lock_held_too_long_gives_up_in_time_and_leaves_the_call_open(ws: Path, home: Path) -> None:
    write(ws, {"f.txt": "0\n"})
    agent = Agent("claude-code", ws, home, env={"SNAPSHOTTER_HOOK_BUDGET": "2"})
    claude(agent, "s", "UserPromptSubmit", prompt="p")
    (lock_path,) = home.rglob("snapshotter/lock")
    with open(lock_path, "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # another writer, stuck
        started = time.monotonic()
        claude(agent, "s", "PreToolUse", tool_name="Bash", tool_use_id="late")
        took = time.monotonic() - started
    assert took < 10, took
    logs = [*home.rglob("snapshotter/hooks.log"), home.parent / "fallback-hooks.log"]
    text = "".join(path.read_text() for path in logs if path.exists())
    assert "PreToolUse FAILED" in text and ("StoreLocked" in text or "gave up after 2 s" in text), text
    labels = [s["label"] for s in cli(ws, home, "--session", "claude-code-s", "log", "-n", "0")]
    assert "tool:late" not in labels  # the call stays unbracketed: the turn's end still takes its change


def _unreadable_characters(text: str) -> set[str]:
    """Characters that change how a line reads in a terminal or on the page:
    controls (escapes), bidi and other format characters, line separators."""
    import unicodedata

    return {
        ch for ch in text if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") and ch not in "\u200c\u200d"
    }


def test_huge_hook_ids_are_capped_and_hashed_so_calls_still_pair(ws: Path, home: Path) -> None:
    """A payload's ids reach labels, metadata and the hooks log: 50 KB ones are
    cut to a short label each, distinct ids stay distinct, and pre and post of
    one call still pair."""
    write(ws, {"f.txt": "0\n", "notes.txt": "mine\n"})
    agent = Agent("claude-code", ws, home)
    long_session = "s" * 50_000
    calls = ["toolu_" + "x" * 50_000 + "1", "toolu_" + "x" * 50_000 + "2"]  # one long prefix, two calls
    claude(agent, long_session, "UserPromptSubmit", prompt="p")
    for call, content in zip(calls, ("1\n", "2\n")):
        claude(agent, long_session, "PreToolUse", tool_name="Bash" * 10_000, tool_use_id=call)
        write(ws, {"f.txt": content})
        claude(agent, long_session, "PostToolUse", tool_name="Bash", tool_use_id=call)
    claude(agent, long_session + "t", "UserPromptSubmit", prompt="another session, the same long prefix")
    claude(agent, long_session, "Stop")
    listed = cli(ws, home, "sessions")["sessions"]
    assert len(listed) == 2 and all(len(s["name"]) <= 64 and len(s["agent_session_id"]) <= 128 for s in listed)
    (mine,) = [s for s in listed if s["turns"] == 1 and not s["open_turn"]]
    log = list(reversed(cli(ws, home, "--session", mine["name"], "log", "-n", "0")))
    labels = [s["label"] for s in log]
    assert [label.partition(":")[0] for label in labels] == [
        "pre-turn",
        "tool",
        "tool-done",
        "tool",
        "tool-done",
        "post-turn",
    ]
    assert labels[1][5:] == labels[2][10:] != labels[3][5:] == labels[4][10:]  # paired, and told apart
    assert all(len(label) <= 80 for label in labels)
    assert all(len(s["message"]) <= 80 and len(json.dumps(s["metadata"])) <= 400 for s in log)
    (hooks_log,) = home.rglob("snapshotter/hooks.log")
    assert max(len(line) for line in hooks_log.read_text().splitlines()) <= 400
    reverted = cli(ws, home, "--session", mine["name"], "turn", "revert")
    assert reverted["reverted"] == ["f.txt"] and contents(ws) == {"f.txt": b"0\n", "notes.txt": b"mine\n"}


def test_bidi_and_control_characters_never_reach_a_turns_message_or_labels(ws: Path, home: Path) -> None:
    """A prompt's first line becomes the turn's message, shown by ``log`` and on
    the page: a U+202E there would reverse how the line reads, an escape would
    drive the terminal. So would a tool's name or a call id in a label."""
    write(ws, {"f.txt": "0\n"})
    agent = Agent("claude-code", ws, home)
    prompt = "\u202efix\u2066 the \x1b[31mparser\u200b\x9b now\u2028second line"
    claude(agent, "s", "UserPromptSubmit", prompt=prompt)
    tool, call = "Bash\u202e\x1b]0;title\x07", "toolu\u202e1\x1b[2J"
    claude(agent, "s", "PreToolUse", tool_name=tool, tool_use_id=call)
    write(ws, {"f.txt": "1\n"})
    claude(agent, "s", "PostToolUse", tool_name=tool, tool_use_id=call)
    claude(agent, "s", "Stop")
    log = list(reversed(cli(ws, home, "--session", "claude-code-s", "log", "-n", "0")))
    assert log[0]["message"] == "fix the [31mparser now"
    assert log[1]["message"] == "before Bash ]0;title" and log[1]["metadata"]["tool"] == "Bash ]0;title"
    for info in log:
        shown = info["message"] + info["label"] + json.dumps(info["metadata"], ensure_ascii=False)
        assert not _unreadable_characters(shown), (info, _unreadable_characters(shown))
    assert log[1]["label"][5:] == log[2]["label"][10:]  # still one call
    text = run_command("--session", "claude-code-s", "log", cwd=ws, env={"SNAPSHOTTER_HOME": str(home), **DIRECT})
    assert not _unreadable_characters(text.stdout.replace("\n", ""))
    (hooks_log,) = home.rglob("snapshotter/hooks.log")
    assert not _unreadable_characters(hooks_log.read_text().replace("\n", ""))


# -- each call recorded once, under the agent that made it (#46 item 4) ---------------------------
# The payloads below are as Copilot CLI 1.0.102 and Codex 0.171 sent them (captured from the real
# binaries): Copilot runs the project's .claude/settings.json hooks too, Claude-shaped, with
# COPILOT_CLI=1 (and no tool_use_id, no transcript_path); it runs a user-level and a project
# hooks file one after the other, Codex at once, each with the same payload.

COPILOT_ENV = {"COPILOT_CLI": "1", "COPILOT_CLI_BINARY_VERSION": "1.0.102"}


def _copilot_turn(ws: Path, home: Path, copilot_own: int, through_claude: bool) -> None:
    """One Copilot turn (a shell call, then a write): each event sent ``copilot_own``
    times through Copilot's own hooks, then once through Claude Code's if ``through_claude``."""
    folders = {"COPILOT_PROJECT_DIR": str(ws), "CLAUDE_PROJECT_DIR": str(ws)}
    own = Agent("copilot", ws, home, env={**COPILOT_ENV, **folders})
    claudes = Agent("claude-code", ws, home, env={**COPILOT_ENV, **folders})
    ms = 1796522834531
    shell = {"command": "echo hi > shell.txt", "description": "a scripted command"}
    write_args = {"path": str(ws / "w.txt"), "file_text": "x\n"}
    steps: list[tuple[str, str, dict[str, Any], Any]] = [
        ("userPromptSubmitted", "UserPromptSubmit", {"prompt": "go"}, None),
        ("preToolUse", "PreToolUse", {"tool": ("bash", "Bash", shell)}, None),
        ("postToolUse", "PostToolUse", {"tool": ("bash", "Bash", shell)}, {"shell.txt": "hi\n"}),
        ("preToolUse", "PreToolUse", {"tool": ("create", "Write", write_args)}, None),
        ("postToolUse", "PostToolUse", {"tool": ("create", "Write", write_args)}, {"w.txt": "x\n"}),
        ("agentStop", "Stop", {}, None),
    ]
    for number, (event, claude_event, more, edits) in enumerate(steps):
        if edits:  # the tool ran between its hooks
            write(ws, edits)
        stamp = ms + 50 * number
        native: dict[str, Any] = {"sessionId": "cp-1", "timestamp": stamp, "cwd": str(ws)}
        shaped: dict[str, Any] = {"hook_event_name": claude_event, "session_id": "cp-1", "cwd": str(ws)}
        shaped["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(stamp // 1000)) + f".{stamp % 1000:03d}Z"
        if "prompt" in more:
            native["prompt"] = shaped["prompt"] = more["prompt"]
        if "tool" in more:
            name, claude_name, arguments = more["tool"]
            native.update(toolName=name, toolArgs=arguments)
            shaped.update(tool_name=claude_name, tool_input=arguments)
        for _ in range(copilot_own):
            own(event, **native)
        if through_claude:
            claudes(claude_event, **shaped)


@pytest.mark.parametrize("copilot_own", [0, 1, 2], ids=["claude-hooks-only", "both-files", "both-and-user-level"])
def test_copilots_calls_are_copilots_once_whichever_hooks_files_run_them(
    copilot_own: int, ws: Path, home: Path
) -> None:
    write(ws, {"notes.txt": "mine\n"})
    _copilot_turn(ws, home, copilot_own, through_claude=True)
    (session,) = cli(ws, home, "sessions")["sessions"]
    assert session["name"] == "copilot-cp-1" and session["agent"] == "copilot" and session["turns"] == 1
    labels = [s["label"] for s in reversed(cli(ws, home, "--session", "copilot-cp-1", "log", "-n", "0"))]
    assert labels == ["pre-turn:1", "tool:c1", "tool-done:c1", "tool:c2", "tool-done:c2", "post-turn:1"]
    refused = run_command("turn", "revert", "--agent", "claude-code", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)})
    assert refused.returncode != 0 and "no claude-code session" in refused.stderr
    reverted = cli(ws, home, "turn", "revert", "--agent", "copilot")
    assert set(reverted["reverted"]) == {"shell.txt", "w.txt"} and contents(ws) == {"notes.txt": b"mine\n"}


def test_a_project_and_a_user_install_record_each_codex_call_once(ws: Path, home: Path) -> None:
    """Codex runs both files' hooks at once, with one payload: the turn is
    recorded once, so ``turn revert`` (1, the newest) takes back its work."""
    write(ws, {"f.txt": "0\n"})
    agent = Agent("codex", ws, home)
    base = {"session_id": "k", "cwd": str(ws), "turn_id": "t-1", "model": "gpt-5.5"}
    tool = {"tool_name": "Bash", "tool_input": {"command": "echo 1 > f.txt"}, "tool_use_id": "call_1"}
    for event, more in (
        ("SessionStart", {"source": "startup"}),
        ("UserPromptSubmit", {"prompt": "go"}),
        ("PreToolUse", tool),
        ("PostToolUse", {**tool, "tool_response": ""}),
        ("Stop", {"stop_hook_active": False}),
    ):
        if event == "PostToolUse":
            write(ws, {"f.txt": "1\n"})
        payload = {**base, "hook_event_name": event, **more}
        if event == "SessionStart":
            payload.pop("turn_id")
        runs = [
            subprocess.Popen(
                [*COMMAND, "hook", "codex", event],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=agent.env,
            )
            for _ in range(2)
        ]
        for run in runs:
            out, err = run.communicate(json.dumps(payload), timeout=60)
            assert (run.returncode, out, err) == (0, "", "")
    labels = [s["label"] for s in reversed(cli(ws, home, "--session", "codex-k", "log", "-n", "0"))]
    assert labels == ["pre-turn:1", "tool:call_1", "tool-done:call_1", "post-turn:1"]
    cli(ws, home, "turn", "revert", "--agent", "codex")
    assert (ws / "f.txt").read_text() == "0\n"


def test_claude_code_run_by_copilot_is_still_claude_code(ws: Path, home: Path) -> None:
    """Claude Code started by Copilot's shell tool inherits COPILOT_CLI=1; its
    own hooks name its own session (CLAUDE_CODE_SESSION_ID): Claude's calls."""
    write(ws, {"f.txt": "0\n"})
    env = {**COPILOT_ENV, "CLAUDE_CODE_SESSION_ID": "cl-1", "CLAUDECODE": "1"}
    agent = Agent("claude-code", ws, home, env=env)
    claude(agent, "cl-1", "UserPromptSubmit", prompt="go", prompt_id="p1", transcript_path="/t.jsonl")
    claude(agent, "cl-1", "PreToolUse", tool_name="Bash", tool_use_id="toolu_1", transcript_path="/t.jsonl")
    write(ws, {"f.txt": "1\n"})
    claude(agent, "cl-1", "PostToolUse", tool_name="Bash", tool_use_id="toolu_1", transcript_path="/t.jsonl")
    (session,) = cli(ws, home, "sessions")["sessions"]
    assert session["name"] == "claude-code-cl-1" and session["agent"] == "claude-code"


def test_a_user_level_folder_variable_names_the_folder_the_agent_reads(tmp_path: Path) -> None:
    """CLAUDE_CONFIG_DIR, CODEX_HOME and COPILOT_HOME stand for ``~/.claude``,
    ``~/.codex`` and ``~/.copilot``: a ``--user`` install goes where the agent reads."""
    from snapshotter.frontends.hooks.agents import AGENTS

    folder = str(tmp_path / "moved")
    expected = {
        "claude-code": ("CLAUDE_CONFIG_DIR", "settings.json"),
        "codex": ("CODEX_HOME", "hooks.json"),
        "copilot": ("COPILOT_HOME", "hooks/snapshotter.json"),
    }
    for name, (variable, inside) in expected.items():
        assert AGENTS[name].user_dir_env == variable
        assert AGENTS[name].user_path({variable: folder}) == os.path.join(folder, *inside.split("/"))
        assert AGENTS[name].user_path({"HOME": str(tmp_path)}) == str(tmp_path / AGENTS[name].user_file[2:])


def test_a_write_made_during_another_sessions_long_bash_call_is_the_writes(ws: Path, home: Path) -> None:
    """Session one's Bash call runs ``sleep 2; echo A > a.txt``; while it runs,
    session two's Write creates b.txt between its own hooks, and one's command
    also writes c.txt (a file the Write did not name). One's revert takes back
    a.txt and c.txt, two's takes back b.txt: nobody's work goes with another's."""
    write(ws, {"notes.txt": "mine\n"})
    agent = Agent("claude-code", ws, home)
    for session in ("one", "two"):
        claude(agent, session, "UserPromptSubmit", prompt=f"work {session}", prompt_id=f"p-{session}")
    bash = {"command": "sleep 2; echo A > a.txt", "description": "slow"}
    claude(agent, "one", "PreToolUse", tool_name="Bash", tool_input=bash, tool_use_id="slow")
    made = {"file_path": str(ws / "b.txt"), "content": "B\n"}
    claude(agent, "two", "PreToolUse", tool_name="Write", tool_input=made, tool_use_id="w1")
    write(ws, {"b.txt": "B\n", "c.txt": "C, by one's command\n"})
    claude(agent, "two", "PostToolUse", tool_name="Write", tool_input=made, tool_use_id="w1")
    write(ws, {"a.txt": "A\n"})
    claude(agent, "one", "PostToolUse", tool_name="Bash", tool_input=bash, tool_use_id="slow")
    for session in ("one", "two"):
        claude(agent, session, "Stop")
    reverted = cli(ws, home, "--session", "claude-code-one", "turn", "revert")
    assert set(reverted["reverted"]) == {"a.txt", "c.txt"} and reverted["unattributed"] == [], reverted
    tool_snapshot = cli(ws, home, "--session", "claude-code-two", "log", "-n", "0", "--label", "tool:w1")[0]
    assert tool_snapshot["metadata"]["writes"] == '["b.txt"]'
    assert contents(ws) == {"b.txt": b"B\n", "notes.txt": b"mine\n"}
    assert cli(ws, home, "--session", "claude-code-two", "turn", "revert")["reverted"] == ["b.txt"]
    assert contents(ws) == {"notes.txt": b"mine\n"}
