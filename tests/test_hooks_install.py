"""``snapshotter hooks install|uninstall|status``: merged into the user's own
hooks files, twice is once, and uninstalling leaves the rest byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import COMMAND, run_command, write

from snapshotter import InvalidInput
from snapshotter.frontends.hooks import hookinstall
from snapshotter.frontends.hooks.agents import AGENTS
from snapshotter.frontends.shared.arguments import AGENT_NAMES

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
    assert entry["bash"] == "/opt/bin/snapshotter hook copilot preToolUse || exit 0" and entry["timeoutSec"] == 30
    assert entry["powershell"] == "& /opt/bin/snapshotter hook copilot preToolUse; if (-not $?) { exit 0 }"
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


# -- the settings files are the user's (issue 46, item 5) ----------------------------------------


def _cli(ws: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``snapshotter hooks ARGS``, given 30 s: a hang fails the test."""
    env = {**os.environ, "SNAPSHOTTER_HOME": str(tmp_path / "home"), "HOME": str(tmp_path / "user")}
    return subprocess.run(
        [*COMMAND, "hooks", *args], cwd=ws, env=env, capture_output=True, text=True, timeout=30, check=False
    )


def _refused_in_one_line(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode != 0 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in lines[0], lines[0]


def _tree(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every entry below ``root``, .git included: (kind, bytes or link target)."""
    found: dict[str, tuple[str, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path).encode())
            elif path.is_dir():
                found[rel] = ("dir", b"")
            else:
                found[rel] = ("file", path.read_bytes())
    return found


def test_a_settings_file_that_is_a_link_keeps_its_link_and_its_target_gets_the_hooks(ws: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "user" / "dotfiles" / "claude.json"
    original = '{\n  "model": "opus"\n}\n'
    write(dotfiles.parent, {"claude.json": original})
    link = tmp_path / "user" / ".claude" / "settings.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    assert _cli(ws, tmp_path, "install", "claude-code", "--user").returncode == 0
    assert link.is_symlink() and os.readlink(link) == str(dotfiles)
    assert "snapshotter" in json.dumps(json.loads(dotfiles.read_text())["hooks"])
    assert _cli(ws, tmp_path, "uninstall", "claude-code", "--user").returncode == 0
    assert link.is_symlink() and dotfiles.read_text() == original
    # in the workspace, a link to a file of the workspace is kept the same way
    write(ws, {"config/claude.json": original})
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").symlink_to("../config/claude.json")
    assert _cli(ws, tmp_path, "install", "claude-code").returncode == 0
    assert (ws / ".claude" / "settings.json").is_symlink() and "hooks" in (ws / "config" / "claude.json").read_text()


@pytest.mark.parametrize(
    ("agent", "plant"),
    [
        ("claude-code", {".claude": ".git"}),
        ("gemini", {".gemini": "sub/.git"}),  # a nested repository's
        ("codex", {".codex": ".git/hooks"}),
        ("claude-code", {".claude/settings.json": "../.git/settings.json"}),
        ("copilot", {".github": ".git"}),
    ],
)
def test_no_link_leads_an_install_into_a_git_folder(
    agent: str, plant: dict[str, str], ws: Path, tmp_path: Path
) -> None:
    write(ws, {".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n", ".git/hooks/x": "#!/bin/sh\n"})
    write(ws, {"sub/.git/HEAD": "ref: refs/heads/main\n", "sub/a.txt": "a\n"})
    for name, target in plant.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).symlink_to(target)
    before = _tree(ws)
    done = _cli(ws, tmp_path, "install", agent)
    _refused_in_one_line(done, ".git", "nothing was written")
    assert _tree(ws) == before
    with pytest.raises(InvalidInput):
        hookinstall.install(AGENTS[agent], str(ws / AGENTS[agent].project_file), "/opt/bin/snapshotter", within=str(ws))
    assert _tree(ws) == before


def test_a_user_install_is_not_led_into_a_git_folder_either(ws: Path, tmp_path: Path) -> None:
    write(tmp_path, {"user/dotfiles/.git/HEAD": "ref: refs/heads/main\n"})
    (tmp_path / "user" / ".claude").symlink_to(tmp_path / "user" / "dotfiles" / ".git")
    before = _tree(tmp_path / "user")
    _refused_in_one_line(_cli(ws, tmp_path, "install", "claude-code", "--user"), ".git")
    assert _tree(tmp_path / "user") == before


@pytest.mark.parametrize("where", ["folder", "file"])
def test_a_project_install_is_not_led_out_of_the_workspace(where: str, ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    if where == "folder":
        (ws / ".claude").symlink_to(outside)
    else:
        (ws / ".claude").mkdir()
        (ws / ".claude" / "settings.json").symlink_to(outside / "settings.json")
    _refused_in_one_line(_cli(ws, tmp_path, "install", "claude-code"), "outside", "nothing was written")
    assert list(outside.iterdir()) == []


def test_a_read_only_settings_file_is_refused_not_replaced(ws: Path, tmp_path: Path) -> None:
    write(ws, {".claude/settings.json": '{"model": "opus"}\n'})
    path = ws / ".claude" / "settings.json"
    path.chmod(0o444)
    inode = path.stat().st_ino
    _refused_in_one_line(_cli(ws, tmp_path, "install", "claude-code"), "read-only", str(path))
    assert path.read_text() == '{"model": "opus"}\n' and path.stat().st_ino == inode
    assert path.stat().st_mode & 0o777 == 0o444
    assert sorted(os.listdir(path.parent)) == ["settings.json"]


def test_a_users_hook_sharing_a_group_with_ours_is_kept(ws: Path) -> None:
    spec, path = AGENTS["claude-code"], _file(ws, "claude-code")
    hookinstall.install(spec, str(path), "/opt/bin/snapshotter", within=str(ws))
    document = json.loads(path.read_text())
    theirs = {"type": "command", "command": "./audit.sh"}
    document["hooks"]["PreToolUse"][0]["hooks"].append(theirs)  # the user adds theirs to our group
    path.write_text(json.dumps(document, indent=2) + "\n")
    hookinstall.install(spec, str(path), "/opt/bin/snapshotter", within=str(ws))
    assert theirs in json.loads(path.read_text())["hooks"]["PreToolUse"][0]["hooks"]
    hookinstall.install(spec, str(path), "/new/bin/snapshotter", within=str(ws))
    group = json.loads(path.read_text())["hooks"]["PreToolUse"][0]["hooks"]
    assert group[1] == theirs and group[0]["command"].startswith("/new/bin/snapshotter hook claude-code PreToolUse")
    hookinstall.uninstall(spec, str(path), within=str(ws))
    assert json.loads(path.read_text()) == {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [theirs]}]}}


MENTIONS = [
    'echo "snapshotter hook claude-code PreToolUse" >> hooks.log',
    "./check.sh && snapshotter hook claude-code PreToolUse",
    "logger snapshotter hook claude-code ran",
    "snapshotter hook claude-code PreToolUse --verbose",
]


def test_a_users_hook_that_only_mentions_snapshotter_hook_is_kept(ws: Path) -> None:
    spec, path = AGENTS["claude-code"], _file(ws, "claude-code")
    groups = [{"matcher": "Bash", "hooks": [{"type": "command", "command": line}]} for line in MENTIONS]
    original = json.dumps({"hooks": {"PreToolUse": groups}}, indent=2) + "\n"
    write(ws, {".claude/settings.json": original})
    hookinstall.install(spec, str(path), "/opt/bin/snapshotter", within=str(ws))
    assert json.loads(path.read_text())["hooks"]["PreToolUse"][: len(groups)] == groups
    assert len(json.loads(path.read_text())["hooks"]["PreToolUse"]) == len(groups) + 1
    assert hookinstall.inspect(spec, str(path)).complete
    hookinstall.uninstall(spec, str(path), within=str(ws))
    assert path.read_text() == original


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"limit": 1E400}\n', ("number",)),
        ('{"limit": -1e999}\n', ("number",)),
        ('{"limit": NaN}\n', ("number",)),
        ('{"limit": Infinity}\n', ("number",)),
        ('{"name": "\\ud800"}\n', ("surrogate",)),
        ('{"\\udfff": 1}\n', ("surrogate",)),
        ("[" * 100_000 + "]" * 100_000, ("nested",)),
        ('{"hooks": {}, "hooks": {}}\n', ("twice",)),
    ],
    # Short ids: the id goes into PYTEST_CURRENT_TEST, which every command run inherits (200,000
    # brackets there are past the system's limit on one environment string).
    ids=["1E400", "-1e999", "NaN", "Infinity", "surrogate-value", "surrogate-key", "nested", "twice"],
)
def test_what_json_cannot_write_back_is_refused_in_one_line(
    text: str, words: tuple[str, ...], ws: Path, tmp_path: Path
) -> None:
    write(ws, {".claude/settings.json": text})
    for action in ("install", "uninstall"):
        _refused_in_one_line(_cli(ws, tmp_path, action, "claude-code"), "nothing was written", *words)
        assert (ws / ".claude" / "settings.json").read_text() == text
    status = run_command("--json", "hooks", "status", cwd=ws, env={"SNAPSHOTTER_HOME": str(tmp_path / "home")})
    assert status.returncode == 0 and "Traceback" not in status.stderr


def _plant(path: Path, what: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if what == "fifo":
        os.mkfifo(path)
    elif what == "device":
        path.symlink_to("/dev/zero")
    else:
        path.write_bytes(b"{" + b" " * (8 << 20) + b"}")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("what", ["fifo", "device", "huge"])
def test_a_settings_file_that_is_not_a_small_regular_file_is_refused_at_once(
    what: str, ws: Path, tmp_path: Path
) -> None:
    path = ws / ".claude" / "settings.json"
    _plant(path, what)
    for action in ("install", "uninstall"):
        _refused_in_one_line(_cli(ws, tmp_path, action, "claude-code"), str(path), "nothing was written")
    assert sorted(os.listdir(path.parent)) == ["settings.json"]
    status = _cli(ws, tmp_path, "status")
    assert status.returncode == 0 and "Traceback" not in status.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("what", ["fifo", "device", "huge"])
def test_hooks_status_reads_no_side_file_that_could_hang_it(what: str, ws: Path, tmp_path: Path) -> None:
    """The hooks log and the watcher's key are side files too."""
    from snapshotter.engine.gitstore.location import store_path_for
    from snapshotter.frontends.hooks import hooklog
    from snapshotter.frontends.shared import wire

    home = tmp_path / "home"
    store = store_path_for(os.path.realpath(ws), str(home))
    _plant(Path(hooklog.store_log(store)), what)
    _plant(Path(wire.key_path(store)), what)
    _plant(tmp_path / "user-state-hooks.log", what)
    status = _cli(ws, tmp_path, "status")
    assert status.returncode == 0 and "last failure: none logged" in status.stdout, status.stderr


ROUND_TRIPS = [
    '{"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}',
    '{"model":"opus"}\n',
    "{}",
    "{}\n",
    "{ }\n",
    '{"hooks": {}}\n',
    '{\n    "hooks": {\n        "PreToolUse": []\n    },\n    "n": 1.50, "e": 1e5, "u": "\\u00e9\\u2028"\n}\n',
    '{\r\n  "theme": "dark",\r\n  "hooks": {\r\n    "Stop": []\r\n  }\r\n}\r\n',
    '{\n\t"a": [1, 2,\n\t\t3],\n\t"b": {"c": null}\n}',
]


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini", "copilot"])
@pytest.mark.parametrize("original", ROUND_TRIPS)
def test_uninstall_gives_the_file_back_byte_for_byte(agent: str, original: str, ws: Path) -> None:
    spec, path = AGENTS[agent], _file(ws, agent)
    write(ws, {str(path.relative_to(ws)): original.encode()})
    hookinstall.install(spec, str(path), "/opt/bin/snapshotter", within=str(ws))
    installed = path.read_bytes()
    assert hookinstall.inspect(spec, str(path)).complete
    hookinstall.install(spec, str(path), "/opt/bin/snapshotter", within=str(ws))
    assert path.read_bytes() == installed  # twice is once
    hookinstall.uninstall(spec, str(path), within=str(ws))
    assert path.read_bytes() == original.encode()


def test_a_file_install_made_goes_with_uninstall(ws: Path) -> None:
    for agent in AGENTS:
        spec, path = AGENTS[agent], _file(ws, agent)
        hookinstall.install(spec, str(path), "/opt/bin/snapshotter", within=str(ws))
        assert path.exists()
        hookinstall.uninstall(spec, str(path), within=str(ws))
        assert not path.exists()


def test_uninstall_with_nothing_installed_says_so(ws: Path, tmp_path: Path) -> None:
    done = _cli(ws, tmp_path, "uninstall", "codex")
    assert done.returncode == 0 and "no snapshotter hooks" in done.stdout and not (ws / ".codex").exists()
    own = '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo snapshotter hook codex Stop"}]}]}}\n'
    write(ws, {".codex/hooks.json": own})
    done = _cli(ws, tmp_path, "uninstall", "codex")
    assert done.returncode == 0 and "no snapshotter hooks" in done.stdout
    assert (ws / ".codex" / "hooks.json").read_text() == own


def test_an_entry_the_user_added_to_copilots_file_is_kept(ws: Path) -> None:
    spec, path = AGENTS["copilot"], _file(ws, "copilot")
    hookinstall.install(spec, str(path), "/opt/bin/snapshotter", within=str(ws))
    document = json.loads(path.read_text())
    theirs = {"type": "command", "bash": "./notify.sh", "powershell": "./notify.ps1", "timeoutSec": 5}
    document["hooks"]["preToolUse"].append(theirs)
    document["hooks"]["errorOccurred"] = [theirs]
    edited = json.dumps(document, indent=2) + "\n"
    path.write_text(edited)
    hookinstall.install(spec, str(path), "/new/bin/snapshotter", within=str(ws))
    after = json.loads(path.read_text())
    assert after["hooks"]["preToolUse"][1] == theirs and after["hooks"]["errorOccurred"] == [theirs]
    assert after["hooks"]["preToolUse"][0]["bash"].startswith("/new/bin/snapshotter hook copilot preToolUse")
    hookinstall.uninstall(spec, str(path), within=str(ws))
    assert json.loads(path.read_text()) == {
        "version": 1,
        "hooks": {"preToolUse": [theirs], "errorOccurred": [theirs]},
    }


def test_uninstall_from_a_file_whose_hooks_are_not_a_table_changes_nothing(ws: Path, tmp_path: Path) -> None:
    write(ws, {".claude/settings.json": '{"hooks": "none"}\n'})
    done = _cli(ws, tmp_path, "uninstall", "claude-code")
    assert done.returncode == 0 and "no snapshotter hooks" in done.stdout
    _refused_in_one_line(_cli(ws, tmp_path, "install", "claude-code"), "'hooks' is not a JSON object")
    assert (ws / ".claude" / "settings.json").read_text() == '{"hooks": "none"}\n'


def test_status_says_why_no_watcher_is_started(tmp_path: Path, ws: Path) -> None:
    env = {"SNAPSHOTTER_HOME": str(tmp_path / "home"), "SNAPSHOTTER_NO_WATCHER": "1"}
    status = run_command("hooks", "status", cwd=ws, env=env)
    assert "watcher: none (SNAPSHOTTER_NO_WATCHER is set: each call records its event itself)" in status.stdout
