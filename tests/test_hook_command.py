"""The command line ``hooks install`` writes: it answers the agent's "go on" by
itself when its program cannot start (issue 46, item 1), leaves a working
program's output and exit alone, and is told exactly from a person's hook."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_command

from snapshotter.frontends.hooks import hookcommand, hookinstall
from snapshotter.frontends.hooks.agents import AGENTS

SHELLS = [shell for shell in ("/bin/sh", "/bin/bash", shutil.which("dash"), shutil.which("zsh")) if shell]
posix_only = pytest.mark.skipif(os.name == "nt", reason="POSIX shells")


def broken_program(tmp: Path, how: str) -> str:
    """A program that cannot start, as a deleted or broken environment leaves it."""
    if how == "missing":  # a virtualenv deleted or re-made, a pipx uninstall
        return str(tmp / "deleted-venv" / "bin" / "snapshotter")
    script = tmp / "bin" / "snapshotter"
    script.parent.mkdir(exist_ok=True)
    if how == "bad-interpreter":  # the Python it was made with is gone
        script.write_text(f"#!{tmp / 'removed-python' / 'python3'}\nprint('never')\n")
        script.chmod(0o755)
    elif how == "trampoline":  # pip's launcher where the path is too long for #!
        script.write_text(f"#!/bin/sh\n'''exec' \"{tmp / 'removed-python' / 'python3'}\" \"$0\" \"$@\"\n' '''\n")
        script.chmod(0o755)
    elif how == "not-executable":
        script.write_text("#!/bin/sh\necho never\n")
        script.chmod(0o644)
    else:  # ``python -m snapshotter`` where the package is gone
        return f"{sys.executable} -I -S -m snapshotter"
    return str(script)


def commands_of(agent: str, path: Path) -> list[str]:
    """Every POSIX command line of ours in an installed hooks file."""
    document = json.loads(path.read_text())
    found = []
    for entries in document["hooks"].values():
        for item in entries:
            found.extend([item["bash"]] if agent == "copilot" else [entry["command"] for entry in item["hooks"]])
    return found


def run_line(shell: str, line: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    payload = json.dumps({"session_id": "s", "cwd": "/nonexistent", "hook_event_name": "PreToolUse"})
    return subprocess.run(
        [shell, "-c", line], input=payload, text=True, capture_output=True, env=env, timeout=60, check=False
    )


@posix_only
@pytest.mark.parametrize("how", ["missing", "bad-interpreter", "trampoline", "not-executable", "no-module"])
@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_hook_whose_program_cannot_start_answers_go_on_itself(agent: str, how: str, tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    hookinstall.install(AGENTS[agent], str(path), broken_program(tmp_path, how))
    lines = commands_of(agent, path)
    assert len(lines) == len(AGENTS[agent].events)
    for shell in SHELLS:
        for line in lines:
            done = run_line(shell, line)
            assert done.returncode == 0, (shell, line, done.stderr)
            assert done.stdout.strip() == AGENTS[agent].answer, (shell, line, done.stdout)


@posix_only
@pytest.mark.parametrize("exit_code", [0, 3])
def test_a_program_that_starts_keeps_its_own_output(exit_code: int, tmp_path: Path) -> None:
    program = tmp_path / "bin" / "snapshotter"
    program.parent.mkdir()
    # Shell built-ins only: CI's first pass has nothing but the venv on PATH.
    body = f'while read -r _; do :; done\nprintf \'{{"decision": "x"}}\'\necho "$*" >&2\nexit {exit_code}\n'
    program.write_text("#!/bin/sh\n" + body)
    program.chmod(0o755)
    path = tmp_path / "settings.json"
    hookinstall.install(AGENTS["claude-code"], str(path), str(program))
    for line in commands_of("claude-code", path):
        done = run_line("/bin/sh", line)
        assert done.stdout == '{"decision": "x"}' and done.stderr.startswith("hook claude-code ")
        assert done.returncode == 0  # the guard's answer, where the program did not say 0: still "go on"


@posix_only
def test_the_real_hook_answers_gemini_once(tmp_path: Path, ws: Path) -> None:
    env = {"SNAPSHOTTER_HOME": str(tmp_path / "home"), "HOME": str(tmp_path / "user")}
    assert run_command("hooks", "install", "gemini", cwd=ws, env=env).returncode == 0
    line = json.loads((ws / ".gemini" / "settings.json").read_text())["hooks"]["BeforeAgent"][0]["hooks"][0]
    payload = json.dumps({"session_id": "s", "cwd": str(ws), "hook_event_name": "BeforeAgent", "prompt": "hi"})
    done = subprocess.run(
        ["/bin/bash", "-c", line["command"]],
        input=payload,
        text=True,
        capture_output=True,
        env={"PATH": "/nonexistent", "SNAPSHOTTER_NO_WATCHER": "1", **env},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == "{}" and done.stderr == ""
    assert run_command("--json", "log", cwd=ws, env=env).returncode == 0


OLD = "/old/venv/bin/snapshotter"


def test_entries_an_older_version_wrote_are_upgraded_where_they_stand(tmp_path: Path) -> None:
    """Entries without the guard (as every version before it wrote them) are
    rewritten in place, the person's around them untouched."""
    theirs = {"type": "command", "command": "./lint.sh"}
    path = tmp_path / "settings.json"
    old = {
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [theirs]},
                {"matcher": "*", "hooks": [{"type": "command", "command": f"{OLD} hook claude-code PreToolUse"}]},
                {"matcher": "Edit", "hooks": [theirs]},
            ],
            "Stop": [{"hooks": [{"type": "command", "command": f"{OLD} hook claude-code Stop", "timeout": 30}]}],
        },
        "model": "opus",
    }
    path.write_text(json.dumps(old, indent=2) + "\n")
    hookinstall.install(AGENTS["claude-code"], str(path), "/new/bin/snapshotter")
    document = json.loads(path.read_text())
    groups = document["hooks"]["PreToolUse"]
    assert [g["matcher"] for g in groups] == ["Bash", "*", "Edit"] and groups[0]["hooks"] == groups[2]["hooks"] == [
        theirs
    ]
    assert groups[1]["hooks"][0]["command"] == "/new/bin/snapshotter hook claude-code PreToolUse || exit 0"
    assert document["hooks"]["Stop"][0]["hooks"][0]["command"] == "/new/bin/snapshotter hook claude-code Stop || exit 0"
    assert list(document) == ["hooks", "model"] and len(commands_of("claude-code", path)) == 2 + 8
    hookinstall.uninstall(AGENTS["claude-code"], str(path))
    assert json.loads(path.read_text()) == {
        "hooks": {"PreToolUse": [old["hooks"]["PreToolUse"][i] for i in (0, 2)]},
        "model": "opus",
    }


OURS = [
    ("/opt/bin/snapshotter hook codex Stop || exit 0", "/opt/bin/snapshotter"),
    ("'/my venv/bin/snapshotter' hook codex Stop || exit 0", "'/my venv/bin/snapshotter'"),
    ('"C:\\Py\\Scripts\\snapshotter.exe" hook codex Stop || exit 0', '"C:\\Py\\Scripts\\snapshotter.exe"'),
    ("/usr/bin/python3 -m snapshotter hook codex Stop || exit 0", "/usr/bin/python3 -m snapshotter"),
    ("uvx snapshotter hook codex Stop || exit 0", "uvx snapshotter"),  # an install's --command
    ("& /opt/bin/snapshotter hook codex Stop; if (-not $?) { exit 0 }", "/opt/bin/snapshotter"),
    ("/opt/bin/snapshotter hook codex Stop", "/opt/bin/snapshotter"),  # as older versions wrote it
    ("/usr/bin/python3 -m snapshotter hook codex Stop", "/usr/bin/python3 -m snapshotter"),
    ("& '/opt/bin/snapshotter' hook codex Stop", "'/opt/bin/snapshotter'"),
]
NOT_OURS = [
    "/opt/bin/snapshotter hook codex PreToolUse || exit 0",  # another event's
    "/opt/bin/snapshotter hook claude-code Stop || exit 0",  # another agent's
    "./check.sh && snapshotter hook codex Stop || exit 0",
    "./check.sh; snapshotter hook codex Stop",
    "echo snapshotter hook codex Stop",  # unguarded: only a program as install writes it
    'echo "snapshotter hook codex Stop"',
    "snapshotter hook codex Stop --verbose",
    "$(which snapshotter) hook codex Stop || exit 0",
    "/opt/bin/not-snapshotter hook codex Stop || exit 0",
    "/opt/bin/snapshotter hook codex Stop || true",
]


@pytest.mark.parametrize(("command", "program"), OURS)
def test_our_command_lines_are_known_exactly(command: str, program: str) -> None:
    assert hookcommand.program_of(command, "codex", "Stop") == program


@pytest.mark.parametrize("command", NOT_OURS)
def test_a_persons_command_line_is_not_ours(command: str) -> None:
    assert hookcommand.program_of(command, "codex", "Stop") is None


def test_an_unguarded_line_with_the_given_command_is_ours() -> None:
    assert hookcommand.program_of("uvx snapshotter hook codex Stop", "codex", "Stop") is None
    assert hookcommand.program_of("uvx snapshotter hook codex Stop", "codex", "Stop", "uvx snapshotter")


def test_the_powershell_lines_answer_for_the_program() -> None:
    """PowerShell is not on this machine: the lines are checked as text (see docs/agents.md)."""
    line = hookcommand.line('"C:\\snapshotter.exe"', "gemini", "BeforeTool", "{}", hookcommand.POWERSHELL)
    assert line == "& \"C:\\snapshotter.exe\" hook gemini BeforeTool; if (-not $?) { $global:LASTEXITCODE = 0; '{}' }"
    assert hookcommand.program_of(line, "gemini", "BeforeTool") == '"C:\\snapshotter.exe"'


@posix_only
@pytest.mark.parametrize(
    ("how", "runs"),
    [("missing", False), ("bad-interpreter", False), ("trampoline", False), ("not-executable", False), ("ok", True)],
)
def test_hooks_status_flags_a_program_that_cannot_start(how: str, runs: bool, tmp_path: Path, ws: Path) -> None:
    if how == "ok":
        program = tmp_path / "bin" / "snapshotter"
        program.parent.mkdir()
        program.write_text(f"#!{sys.executable}\n")
        program.chmod(0o755)
    env = {"SNAPSHOTTER_HOME": str(tmp_path / "home"), "HOME": str(tmp_path / "user")}
    command = str(program) if how == "ok" else broken_program(tmp_path, how)
    assert run_command("hooks", "install", "copilot", "--command", command, cwd=ws, env=env).returncode == 0
    (found,) = json.loads(run_command("--json", "hooks", "status", cwd=ws, env=env).stdout)["result"]["installed"]
    assert found["complete"] and found["runs"] is runs
    text = run_command("hooks", "status", cwd=ws, env=env).stdout
    assert ("its command does not run" in text) is not runs
