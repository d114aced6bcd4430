"""``snapshotter hooks install|uninstall|status``: merged into the user's own
hooks files, twice is once, and uninstalling leaves the rest byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import run_command, write

from snapshotter import InvalidInput
from snapshotter.frontends import hookinstall
from snapshotter.frontends.agents import AGENTS
from snapshotter.frontends.arguments import AGENT_NAMES

USERS_OWN = {
    "claude-code": {
        "model": "opus",
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh", "timeout": 5}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        },
        "zzz": "last",
    },
    "codex": {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo stopped"}]}]}},
    "gemini": {
        "theme": "dark",
        "hooks": {
            "BeforeTool": [{"matcher": "write_file", "hooks": [{"name": "mine", "type": "command", "command": "x"}]}]
        },
    },
}


def _file(ws: Path, agent: str) -> Path:
    return ws / AGENTS[agent].project_file


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini"])
def test_install_merges_twice_is_once_and_uninstall_restores_the_bytes(agent: str, ws: Path) -> None:
    path = _file(ws, agent)
    original = json.dumps(USERS_OWN[agent], indent=2) + "\n"
    write(ws, {str(path.relative_to(ws)): original})
    spec = AGENTS[agent]
    hookinstall.install(spec, str(path), "/opt/bin/snapshotter")
    once = path.read_text()
    hookinstall.install(spec, str(path), "/opt/bin/snapshotter")
    assert path.read_text() == once  # twice is once
    document = json.loads(once)
    for key, value in USERS_OWN[agent].items():  # the user's keys, in their order, unchanged
        if key != "hooks":
            assert document[key] == value
    assert list(document)[: len(USERS_OWN[agent])] == list(USERS_OWN[agent])
    for event, groups in USERS_OWN[agent]["hooks"].items():
        assert document["hooks"][event][: len(groups)] == groups  # theirs first, as they were
    assert set(spec.events) <= set(document["hooks"])
    ours = [g for groups in document["hooks"].values() for g in groups if "snapshotter hook" in json.dumps(g)]
    assert len(ours) == len(spec.events)
    hookinstall.uninstall(spec, str(path))
    assert path.read_text() == original  # byte for byte


def test_a_file_that_is_not_json_is_refused_and_nothing_is_written(ws: Path) -> None:
    path = _file(ws, "claude-code")
    write(ws, {".claude/settings.json": '{"hooks": {,}'})
    before = path.read_bytes()
    with pytest.raises(InvalidInput, match="not valid JSON"):
        hookinstall.install(AGENTS["claude-code"], str(path), "snapshotter")
    assert path.read_bytes() == before and sorted(os.listdir(path.parent)) == ["settings.json"]


def test_copilot_gets_a_file_of_its_own(ws: Path) -> None:
    theirs = ws / ".github" / "hooks" / "team.json"
    write(ws, {".github/hooks/team.json": '{"version": 1, "hooks": {}}\n'})
    spec = AGENTS["copilot"]
    path = ws / spec.project_file
    hookinstall.install(spec, str(path), "/opt/bin/snapshotter")
    document = json.loads(path.read_text())
    assert document["version"] == 1 and set(document["hooks"]) == set(spec.events)
    entry = document["hooks"]["preToolUse"][0]
    assert entry["bash"] == "/opt/bin/snapshotter hook copilot preToolUse" and entry["timeoutSec"] == 30
    hookinstall.uninstall(spec, str(path))
    assert not path.exists() and theirs.read_text() == '{"version": 1, "hooks": {}}\n'


def test_timeouts_are_in_each_agents_unit() -> None:
    hooks = {
        name: json.loads(hookinstall.install(AGENTS[name], os.devnull + "x", "s", dry_run=True)[1])
        for name in ("claude-code", "gemini", "codex")
    }
    assert hooks["claude-code"]["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] == 30  # seconds
    assert hooks["gemini"]["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"] == 30000  # milliseconds
    assert hooks["codex"]["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 3  # Codex gives it 3 s at most
    assert hooks["claude-code"]["hooks"]["PreToolUse"][0]["matcher"] == "*"  # every tool, MCP ones included


def test_the_grammar_and_the_table_name_the_same_agents() -> None:
    assert set(AGENT_NAMES) == set(AGENTS)


def test_the_command_line_installs_with_its_own_path_and_reports_status(tmp_path: Path, ws: Path) -> None:
    env = {"SNAPSHOTTER_HOME": str(tmp_path / "home"), "HOME": str(tmp_path / "user")}
    dry = run_command("hooks", "install", "claude-code", "--dry-run", cwd=ws, env=env)
    assert dry.returncode == 0 and not (ws / ".claude").exists() and '"PreToolUse"' in dry.stdout
    done = run_command("--json", "hooks", "install", "claude-code", cwd=ws, env=env)
    assert done.returncode == 0, done.stderr
    command = json.loads(done.stdout)["result"]["command"]
    first = command.split()[0].strip("'\"")
    assert os.path.isabs(first) and os.access(first, os.X_OK)  # runs without the virtualenv on PATH
    user = run_command("--json", "hooks", "install", "codex", "--user", cwd=ws, env=env)
    assert json.loads(user.stdout)["result"]["path"] == str(tmp_path / "user" / ".codex" / "hooks.json")
    status = json.loads(run_command("--json", "hooks", "status", cwd=ws, env=env).stdout)["result"]
    assert {(i["agent"], i["user"], i["complete"], i["runs"]) for i in status["installed"]} == {
        ("claude-code", False, True, True),
        ("codex", True, True, True),
    }
    assert run_command("hooks", "uninstall", "claude-code", cwd=ws, env=env).returncode == 0
    assert not (ws / ".claude" / "settings.json").exists()
    bad = run_command("--json", "hooks", "install", "nobody", cwd=ws, env=env)
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"]["type"] == "UsageError"


def test_the_installed_command_runs_from_an_empty_path(tmp_path: Path, ws: Path) -> None:
    """The agent may start the hook without our virtualenv (or anything) on PATH."""
    env = {"SNAPSHOTTER_HOME": str(tmp_path / "home"), "HOME": str(tmp_path / "user")}
    assert run_command("hooks", "install", "claude-code", cwd=ws, env=env).returncode == 0
    settings = json.loads((ws / ".claude" / "settings.json").read_text())
    line = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    payload = json.dumps({"session_id": "s", "cwd": str(ws), "hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    done = subprocess.run(
        ["/bin/sh", "-c", line],
        input=payload,
        text=True,
        capture_output=True,
        env={"PATH": "/nonexistent", "SNAPSHOTTER_HOME": env["SNAPSHOTTER_HOME"], "SNAPSHOTTER_NO_WATCHER": "1"},
        check=False,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    assert run_command("--json", "log", cwd=ws, env=env).returncode == 0
    logged = json.loads(run_command("--json", "log", cwd=ws, env=env).stdout)["result"]
    assert [s["label"] for s in logged] == ["pre-turn:1"] and logged[0]["message"] == "hi"


def test_status_says_why_no_watcher_is_started(tmp_path: Path, ws: Path) -> None:
    env = {"SNAPSHOTTER_HOME": str(tmp_path / "home"), "SNAPSHOTTER_NO_WATCHER": "1"}
    status = run_command("hooks", "status", cwd=ws, env=env)
    assert "watcher: none (SNAPSHOTTER_NO_WATCHER is set: each call records its event itself)" in status.stdout
