"""End to end with the real agent CLIs from npm (Claude Code, Codex, Gemini CLI,
Copilot CLI), each driven headless by a scripted model server on 127.0.0.1 (``agent_servers``), with
snapshotter's hooks installed by ``snapshotter hooks install``. ``.ci/run``
installs the CLIs into a cache outside the repository; without npm or the
binaries these tests skip, saying why."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_servers import AnthropicServer, ChatServer, GeminiServer, ResponsesServer, Step, agent_binary
from conftest import contents, run_command, write

CLAUDE, CODEX, GEMINI, COPILOT = (agent_binary(name) for name in ("claude", "codex", "gemini", "copilot"))
needs_claude = pytest.mark.skipif(
    CLAUDE is None, reason="Claude Code is not installed (npm i @anthropic-ai/claude-code)"
)
needs_codex = pytest.mark.skipif(CODEX is None, reason="Codex is not installed (npm i @openai/codex)")
needs_gemini = pytest.mark.skipif(GEMINI is None, reason="Gemini CLI is not installed (npm i @google/gemini-cli)")
needs_copilot = pytest.mark.skipif(COPILOT is None, reason="Copilot CLI is not installed (npm i @github/copilot)")
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "TERM": "dumb", "LANG": "C.UTF-8", "SNAPSHOTTER_HOOK_IDLE": "60"}


def snapshotter(ws: Path, home: Path, *args: str) -> Any:
    done = run_command("--json", *args, cwd=ws, env={"SNAPSHOTTER_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["result"]


def install(ws: Path, home: Path, agent: str) -> None:
    assert run_command("hooks", "install", agent, cwd=ws, env={"SNAPSHOTTER_HOME": str(home)}).returncode == 0


def run_claude(ws: Path, tmp: Path, home: Path, port: int, prompt: str, name: str = "c") -> subprocess.Popen[str]:
    assert CLAUDE is not None
    private = tmp / f"claude-{name}"
    env = {
        **BASE_ENV,
        "HOME": str(private / "home"),
        "CLAUDE_CONFIG_DIR": str(private / "config"),
        "CLAUDE_CODE_TMPDIR": str(private / "tmp"),
        "IS_SANDBOX": "1",  # the suite may run as root
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "SNAPSHOTTER_HOME": str(home),
    }
    for folder in ("home", "config", "tmp"):
        (private / folder).mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [CLAUDE, "-p", prompt, "--permission-mode", "bypassPermissions", "--output-format", "json"],
        cwd=ws,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, (out[-2000:], err[-2000:])
    found: dict[str, Any] = json.loads(out)
    return found


CLAUDE_TURN: list[Step] = [
    ("bash", "echo from bash > bash.txt"),
    ("write", "written.txt", "written by the agent\n"),
    ("edit", "app.py", "return 1", "return 2"),
    ("text", "All done."),
]


@needs_claude
def test_claude_code_a_turns_bash_write_and_edit_revert_and_a_persons_edit_stays(tmp_path: Path, ws: Path) -> None:
    home = tmp_path / "home"
    write(ws, {"app.py": "def f():\n    return 1\n", "notes.txt": "the person's notes\n"})
    install(ws, home, "claude-code")
    with AnthropicServer(CLAUDE_TURN, ws) as server:
        result = finished(run_claude(ws, tmp_path, home, server.port, "change the app"))
    assert result["result"] == "All done."
    assert (ws / "bash.txt").read_text() == "from bash\n" and (ws / "app.py").read_text().endswith("return 2\n")
    write(ws, {"notes.txt": "the person's notes, edited after the turn\n"})
    (session,) = snapshotter(ws, home, "sessions")["sessions"]
    assert session["agent"] == "claude-code" and session["turns"] == 1 and not session["open_turn"]
    reverted = snapshotter(ws, home, "turn", "revert", "--agent", "claude-code")
    assert set(reverted["reverted"]) == {"bash.txt", "written.txt", "app.py"}
    assert contents(ws) | {".claude/settings.json": b""} == {
        "app.py": b"def f():\n    return 1\n",
        "notes.txt": b"the person's notes, edited after the turn\n",
        ".claude/settings.json": b"",
    }


@needs_claude
def test_claude_code_two_sessions_at_once_are_reverted_apart(tmp_path: Path, ws: Path) -> None:
    home = tmp_path / "home"
    write(ws, {"a.txt": "a0\n", "b.txt": "b0\n"})
    install(ws, home, "claude-code")
    with (
        AnthropicServer([("edit", "a.txt", "a0", "a1"), ("text", "A done.")], ws) as one,
        AnthropicServer([("edit", "b.txt", "b0", "b1"), ("text", "B done.")], ws) as two,
    ):
        # Both run at once, their tool calls one after the other: A edits, then B
        # edits while A waits for its model, then both finish. (Two calls at the
        # same moment cannot be told apart: each bracket would hold both edits.)
        two.holds[0] = one.reached(1)
        one.holds[1] = two.reached(1)
        runs = [
            run_claude(ws, tmp_path, home, one.port, "edit a", "one"),
            run_claude(ws, tmp_path, home, two.port, "edit b", "two"),
        ]
        for run in runs:
            finished(run)
    assert contents(ws)["a.txt"] == b"a1\n" and contents(ws)["b.txt"] == b"b1\n"
    listed = {s["name"]: s for s in snapshotter(ws, home, "sessions")["sessions"]}
    assert len(listed) == 2 and all(s["agent"] == "claude-code" for s in listed.values())
    by_prompt = {_prompt(ws, home, name): name for name in listed}
    snapshotter(ws, home, "--session", by_prompt["edit a"], "turn", "revert")
    assert contents(ws)["a.txt"] == b"a0\n" and contents(ws)["b.txt"] == b"b1\n"
    snapshotter(ws, home, "--session", by_prompt["edit b"], "turn", "revert")
    assert contents(ws)["a.txt"] == b"a0\n" and contents(ws)["b.txt"] == b"b0\n"


@needs_claude
def test_claude_code_a_write_during_another_sessions_slow_bash_call_is_reverted_apart(tmp_path: Path, ws: Path) -> None:
    """Session one's Bash call runs long; while it runs, session two's Write
    creates b.txt between its own hooks; then one's command writes a.txt. One's
    turn revert takes back a.txt only, two's b.txt only. The order is made by
    signals, not by time: one's command waits for two's next model request
    (two's PostToolUse hook has run by then); two's first request waits for
    one's command to have started (its PreToolUse hook has run by then)."""
    home, signals = tmp_path / "home", tmp_path / "signals"
    signals.mkdir()
    write(ws, {"notes.txt": "the person's notes\n"})
    install(ws, home, "claude-code")
    started, go_on = signals / "one-started", signals / "two-done"
    slow = (
        f"touch {started}; i=0; while [ ! -e {go_on} ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; "
        "echo A > a.txt"
    )
    with (
        AnthropicServer([("bash", slow), ("text", "One done.")], ws) as one,
        AnthropicServer([("write", "b.txt", "B\n"), ("text", "Two done.")], ws) as two,
    ):
        two.holds[0] = threading.Event()
        waiters = [
            threading.Thread(target=_when, args=(lambda: started.exists(), two.holds[0].set), daemon=True),
            threading.Thread(target=_when, args=(lambda: two.reached(1).is_set(), go_on.touch), daemon=True),
        ]
        for waiter in waiters:
            waiter.start()
        runs = [
            run_claude(ws, tmp_path, home, one.port, "run the slow command", "one"),
            run_claude(ws, tmp_path, home, two.port, "write b", "two"),
        ]
        for run in runs:
            finished(run)
    assert contents(ws) | {".claude/settings.json": b""} == {
        "a.txt": b"A\n",
        "b.txt": b"B\n",
        "notes.txt": b"the person's notes\n",
        ".claude/settings.json": b"",
    }
    by_prompt = {_prompt(ws, home, s["name"]): s["name"] for s in snapshotter(ws, home, "sessions")["sessions"]}
    labels = [s["label"] for s in snapshotter(ws, home, "log", "-n", "0")]
    assert sum(label.startswith("tool:") for label in labels) == 2, labels  # one call each
    reverted = snapshotter(ws, home, "--session", by_prompt["run the slow command"], "turn", "revert")
    assert reverted["reverted"] == ["a.txt"] and reverted["unattributed"] == [], reverted
    assert (ws / "b.txt").read_text() == "B\n" and not (ws / "a.txt").exists()
    reverted = snapshotter(ws, home, "--session", by_prompt["write b"], "turn", "revert")
    assert reverted["reverted"] == ["b.txt"], reverted
    assert not (ws / "b.txt").exists() and (ws / "notes.txt").read_text() == "the person's notes\n"


def _when(condition: Callable[[], bool], then: Callable[[], object], timeout: float = 150.0) -> None:
    """Run ``then`` once ``condition`` holds (polled), or give up after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    then()


def _prompt(ws: Path, home: Path, session: str) -> str:
    """A session's first turn's message: its prompt's first line."""
    return str(snapshotter(ws, home, "--session", session, "log", "-n", "0", "--label", "pre-turn:1")[0]["message"])


@needs_claude
def test_claude_code_with_a_broken_store_still_edits_and_succeeds(tmp_path: Path, ws: Path) -> None:
    home = tmp_path / "home-is-a-file"
    write(ws, {"app.py": "def f():\n    return 1\n"})
    install(ws, tmp_path / "install-home", "claude-code")
    home.write_text("not a folder\n")
    with AnthropicServer(CLAUDE_TURN, ws) as server:
        result = finished(run_claude(ws, tmp_path, home, server.port, "change the app"))
    assert result["result"] == "All done." and not result.get("is_error")
    assert (ws / "bash.txt").read_text() == "from bash\n" and (ws / "written.txt").exists()
    assert (ws / "app.py").read_text().endswith("return 2\n")


@needs_claude
def test_claude_code_install_twice_is_once_and_uninstall_keeps_the_users_hooks(tmp_path: Path, ws: Path) -> None:
    home = tmp_path / "home"
    fired = tmp_path / "users-hook.log"
    own = {
        "hooks": {
            "PreToolUse": [
                {"matcher": "*", "hooks": [{"type": "command", "command": f"cat >> {fired}; echo >> {fired}"}]}
            ]
        }
    }
    original = json.dumps(own, indent=2) + "\n"
    write(ws, {".claude/settings.json": original, "app.py": "def f():\n    return 1\n"})
    install(ws, home, "claude-code")
    once = (ws / ".claude" / "settings.json").read_text()
    install(ws, home, "claude-code")
    assert (ws / ".claude" / "settings.json").read_text() == once
    with AnthropicServer(CLAUDE_TURN, ws) as server:
        finished(run_claude(ws, tmp_path, home, server.port, "go"))
    assert fired.read_text().count('"hook_event_name":"PreToolUse"') == 3  # the user's hook ran, once a call
    labels = [s["label"] for s in snapshotter(ws, home, "log", "-n", "0")]
    assert sum(label.startswith("tool:") for label in labels) == 3  # ours too, once a call
    assert run_command("hooks", "uninstall", "claude-code", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)}).returncode == 0
    assert (ws / ".claude" / "settings.json").read_text() == original


PATCH_APP = "*** Begin Patch\n*** Update File: app.py\n@@\n def f():\n-    return 1\n+    return 2\n*** End Patch\n"


def start_codex(ws: Path, tmp: Path, home: Path, port: int, prompt: str, name: str = "c") -> subprocess.Popen[str]:
    """``codex exec`` on a model provider of our own, approvals, sandbox and hook
    trust bypassed (else it asks, or runs no project hooks), a Codex home each."""
    assert CODEX is not None
    codex_home = tmp / f"codex-home-{name}"
    codex_home.mkdir(exist_ok=True)
    (codex_home / "config.toml").write_text(
        'model = "gpt-5.5"\nmodel_provider = "fake"\n[model_providers.fake]\nname = "Fake"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\nwire_api = "responses"\n'
    )
    env = {**BASE_ENV, "HOME": str(tmp / "codex-user"), "CODEX_HOME": str(codex_home), "SNAPSHOTTER_HOME": str(home)}
    argv = [CODEX, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--trust"]
    return subprocess.Popen(
        [*argv, "--dangerously-bypass-hook-trust", prompt],
        cwd=ws,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_codex(ws: Path, tmp: Path, home: Path, port: int, prompt: str) -> str:
    """Its run's output, once it succeeded."""
    process = start_codex(ws, tmp, home, port, prompt)
    out, err = process.communicate(timeout=180)
    assert process.returncode == 0, (out[-2000:], err[-2000:])
    return out


@needs_codex
def test_codex_a_turns_shell_and_patch_revert_and_a_persons_edit_stays(tmp_path: Path, ws: Path) -> None:
    home = tmp_path / "home"
    write(ws, {"app.py": "def f():\n    return 1\n", "notes.txt": "the person's notes\n"})
    install(ws, home, "codex")
    script: list[Step] = [("bash", "echo from codex > shell.txt"), ("patch", PATCH_APP), ("text", "Done.")]
    with ResponsesServer(script, ws) as server:
        run_codex(ws, tmp_path, home, server.port, "change the app")
    assert (ws / "shell.txt").read_text() == "from codex\n" and (ws / "app.py").read_text().endswith("return 2\n")
    write(ws, {"notes.txt": "the person's notes, edited after the turn\n"})
    (session,) = snapshotter(ws, home, "sessions")["sessions"]
    assert session["agent"] == "codex" and session["turns"] >= 1
    log = snapshotter(ws, home, "--session", session["name"], "log", "-n", "0")
    assert sum(s["label"].startswith("tool-done:") for s in log) == 2
    reverted = snapshotter(ws, home, "turn", "revert", "--agent", "codex")
    assert set(reverted["reverted"]) == {"shell.txt", "app.py"}
    assert (ws / "app.py").read_text().endswith("return 1\n") and not (ws / "shell.txt").exists()
    assert (ws / "notes.txt").read_text() == "the person's notes, edited after the turn\n"


def run_gemini(ws: Path, tmp: Path, home: Path, port: int, prompt: str) -> subprocess.CompletedProcess[str]:
    """Gemini CLI headless (``-p``, every tool approved), its API key taken as
    the way in, the workspace trusted (else it runs no project hooks)."""
    assert GEMINI is not None
    user = tmp / "gemini-user"
    (user / ".gemini").mkdir(parents=True, exist_ok=True)
    settings = user / ".gemini" / "settings.json"
    kept = json.loads(settings.read_text()) if settings.exists() else {}  # a --user install's hooks, say
    settings.write_text(
        json.dumps({**kept, "security": {"auth": {"selectedType": "gemini-api-key"}}, "telemetry": {"enabled": False}})
    )
    env = {
        **BASE_ENV,
        "HOME": str(user),
        "GEMINI_API_KEY": "fake-key",
        "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{port}",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "NO_BROWSER": "1",
        "SNAPSHOTTER_HOME": str(home),
    }
    return _agent_run([GEMINI, "-p", prompt, "--yolo"], ws, env)


def run_copilot(ws: Path, tmp: Path, home: Path, port: int, prompt: str) -> subprocess.CompletedProcess[str]:
    """Copilot CLI headless (``-p``, every tool allowed) on a model provider of
    one's own, offline, the folder trusted (else it runs no repository hooks)."""
    assert COPILOT is not None
    user = tmp / "copilot-user"
    user.mkdir(exist_ok=True)
    env = {
        **BASE_ENV,
        "HOME": str(user),
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "COPILOT_PROVIDER_API_KEY": "fake-key",
        "COPILOT_MODEL": "gpt-4.1",
        "COPILOT_AUTO_UPDATE": "false",
        "SNAPSHOTTER_HOME": str(home),
    }
    return _agent_run([COPILOT, "-p", prompt, "--allow-all-tools", "--trust-folder"], ws, env)


def _agent_run(argv: list[str], ws: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=ws, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    return done


SHELL_AND_WRITE: list[Step] = [
    ("bash", "echo from the shell > shell.txt && echo changed > app.txt"),
    ("write", "written.txt", "written by the agent\n"),
    ("text", "All done."),
]
RUNNERS = {"gemini": (run_gemini, GeminiServer), "copilot": (run_copilot, ChatServer)}
id_less = pytest.mark.parametrize(
    "agent", [pytest.param("gemini", marks=needs_gemini), pytest.param("copilot", marks=needs_copilot)]
)


@id_less
def test_a_turn_of_an_agent_without_call_ids_reverts_and_a_persons_edit_stays(
    agent: str, tmp_path: Path, ws: Path
) -> None:
    home = tmp_path / "home"
    write(ws, {"app.txt": "original\n", "notes.txt": "the person's notes\n"})
    install(ws, home, agent)
    runner, server_kind = RUNNERS[agent]
    with server_kind(SHELL_AND_WRITE, ws) as server:
        done = runner(ws, tmp_path, home, server.port, "change the app")
    assert "All done." in done.stdout
    assert (ws / "shell.txt").exists() and (ws / "app.txt").read_text() == "changed\n"
    assert (ws / "written.txt").read_text() == "written by the agent\n"
    write(ws, {"notes.txt": "the person's notes, edited after the turn\n"})
    (session,) = snapshotter(ws, home, "sessions")["sessions"]
    assert session["agent"] == agent and session["turns"] == 1 and not session["open_turn"]
    labels = [s["label"] for s in snapshotter(ws, home, "--session", session["name"], "log", "-n", "0")]
    assert labels == ["post-turn:1", "tool-done:c2", "tool:c2", "tool-done:c1", "tool:c1", "pre-turn:1"]
    reverted = snapshotter(ws, home, "turn", "revert", "--agent", agent)
    assert set(reverted["reverted"]) == {"shell.txt", "app.txt", "written.txt"}
    assert (ws / "app.txt").read_text() == "original\n"
    assert not (ws / "shell.txt").exists() and not (ws / "written.txt").exists()
    assert (ws / "notes.txt").read_text() == "the person's notes, edited after the turn\n"


@id_less
def test_an_agent_without_call_ids_with_a_broken_store_still_edits_and_succeeds(
    agent: str, tmp_path: Path, ws: Path
) -> None:
    home = tmp_path / "home-is-a-file"
    write(ws, {"app.txt": "original\n"})
    install(ws, tmp_path / "install-home", agent)
    home.write_text("not a folder\n")
    runner, server_kind = RUNNERS[agent]
    with server_kind(SHELL_AND_WRITE, ws) as server:
        done = runner(ws, tmp_path, home, server.port, "change the app")
    assert "All done." in done.stdout
    assert (ws / "app.txt").read_text() == "changed\n" and (ws / "written.txt").exists()


@needs_codex
def test_codex_two_sessions_at_once_are_reverted_apart(tmp_path: Path, ws: Path) -> None:
    home = tmp_path / "home"
    write(ws, {"a.txt": "a0\n", "b.txt": "b0\n"})
    install(ws, home, "codex")
    with (
        ResponsesServer([("bash", "echo a1 > a.txt"), ("text", "A done.")], ws) as one,
        ResponsesServer([("bash", "echo b1 > b.txt"), ("text", "B done.")], ws) as two,
    ):
        two.holds[0] = one.reached(1)  # as for Claude Code: both at once, their calls one after the other
        one.holds[1] = two.reached(1)
        runs = [start_codex(ws, tmp_path, home, one.port, "edit a", "one")]
        runs.append(start_codex(ws, tmp_path, home, two.port, "edit b", "two"))
        for run in runs:
            out, err = run.communicate(timeout=180)
            assert run.returncode == 0, (out[-2000:], err[-2000:])
    assert contents(ws)["a.txt"] == b"a1\n" and contents(ws)["b.txt"] == b"b1\n"
    listed = {s["name"]: s for s in snapshotter(ws, home, "sessions")["sessions"]}
    assert len(listed) == 2 and all(s["agent"] == "codex" for s in listed.values())
    by_prompt = {_prompt(ws, home, name): name for name in listed}
    snapshotter(ws, home, "--session", by_prompt["edit a"], "turn", "revert")
    assert contents(ws)["a.txt"] == b"a0\n" and contents(ws)["b.txt"] == b"b1\n"
    snapshotter(ws, home, "--session", by_prompt["edit b"], "turn", "revert")
    assert contents(ws)["a.txt"] == b"a0\n" and contents(ws)["b.txt"] == b"b0\n"


@needs_codex
def test_codex_with_a_broken_store_still_edits_and_succeeds(tmp_path: Path, ws: Path) -> None:
    home = tmp_path / "home-is-a-file"
    write(ws, {"app.py": "def f():\n    return 1\n"})
    install(ws, tmp_path / "install-home", "codex")
    home.write_text("not a folder\n")
    script: list[Step] = [("bash", "echo from codex > shell.txt"), ("patch", PATCH_APP), ("text", "Done.")]
    with ResponsesServer(script, ws) as server:
        run_codex(ws, tmp_path, home, server.port, "change the app")
    assert (ws / "shell.txt").read_text() == "from codex\n" and (ws / "app.py").read_text().endswith("return 2\n")


@needs_codex
def test_codex_install_twice_is_once_and_uninstall_keeps_the_users_hooks(tmp_path: Path, ws: Path) -> None:
    home = tmp_path / "home"
    fired = tmp_path / "users-hook.log"
    own = {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": f"cat >> {fired}; echo >> {fired}"}]}]}}
    original = json.dumps(own, indent=4) + "\n"
    write(ws, {".codex/hooks.json": original, "app.py": "def f():\n    return 1\n"})
    install(ws, home, "codex")
    once = (ws / ".codex" / "hooks.json").read_text()
    install(ws, home, "codex")
    assert (ws / ".codex" / "hooks.json").read_text() == once
    script: list[Step] = [("bash", "echo from codex > shell.txt"), ("patch", PATCH_APP), ("text", "Done.")]
    with ResponsesServer(script, ws) as server:
        run_codex(ws, tmp_path, home, server.port, "go")
    assert fired.read_text().count('"hook_event_name":"PreToolUse"') == 2  # the user's hook ran, once a call
    labels = [s["label"] for s in snapshotter(ws, home, "log", "-n", "0")]
    assert sum(label.startswith("tool-done:") for label in labels) == 2  # ours too
    assert run_command("hooks", "uninstall", "codex", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)}).returncode == 0
    assert (ws / ".codex" / "hooks.json").read_text() == original


# -- each call once, under the agent that made it, whichever hooks files are installed ------------


def install_user(ws: Path, home: Path, agent: str, env: dict[str, str]) -> None:
    """``hooks install AGENT --user`` into the user-level folder ``env`` names (a tmp
    home), with another command than the project's (as from another environment,
    a pipx install say: an agent that runs one command once would hide a double)."""
    other = f"{shlex.quote(sys.executable)} -m snapshotter"
    done = run_command(
        "hooks", "install", agent, "--user", "--command", other, cwd=ws, env={"SNAPSHOTTER_HOME": str(home), **env}
    )
    assert done.returncode == 0, done.stderr


def _one_turn_once(ws: Path, home: Path, agent: str, calls: int, before: dict[str, bytes]) -> None:
    """The folder holds one session, ``agent``'s, with one turn of ``calls``
    bracketed calls, each once; ``turn revert`` (no n: the newest) takes the
    turn's work back: the folder is as ``before`` (its hooks files aside)."""
    (session,) = snapshotter(ws, home, "sessions")["sessions"]
    assert session["agent"] == agent and session["turns"] == 1, session
    labels = [s["label"] for s in snapshotter(ws, home, "--session", session["name"], "log", "-n", "0")]
    assert sum(label.startswith("pre-turn:") for label in labels) == 1, labels
    assert sum(label.startswith("tool:") for label in labels) == calls, labels
    assert sum(label.startswith("tool-done:") for label in labels) == calls, labels
    reverted = snapshotter(ws, home, "turn", "revert", "--agent", agent)
    assert reverted["reverted"], reverted
    hooks_files = (".claude/", ".github/", ".codex/", ".gemini/")
    assert {path: data for path, data in contents(ws).items() if not path.startswith(hooks_files)} == before


@needs_copilot
@pytest.mark.parametrize("own_hooks", [True, False], ids=["with-copilots-own-hooks", "claude-hooks-only"])
def test_copilot_running_claude_codes_project_hooks_records_copilots_calls_once(
    own_hooks: bool, tmp_path: Path, ws: Path
) -> None:
    home = tmp_path / "home"
    write(ws, {"notes.txt": "the person's notes\n", "app.txt": "original\n"})
    before = contents(ws)
    install(ws, home, "claude-code")  # Copilot CLI runs these too
    if own_hooks:
        install(ws, home, "copilot")
    with ChatServer(SHELL_AND_WRITE, ws) as server:
        done = run_copilot(ws, tmp_path, home, server.port, "change the app")
    assert "All done." in done.stdout and (ws / "written.txt").exists()
    refused = run_command("turn", "revert", "--agent", "claude-code", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)})
    assert refused.returncode != 0 and "no claude-code session" in refused.stderr
    _one_turn_once(ws, home, "copilot", 2, before)


def _claude_both(ws: Path, tmp: Path, home: Path) -> int:
    install_user(ws, home, "claude-code", {"CLAUDE_CONFIG_DIR": str(tmp / "claude-c" / "config")})
    with AnthropicServer(CLAUDE_TURN, ws) as server:
        finished(run_claude(ws, tmp, home, server.port, "change the app"))
    return 3


def _codex_both(ws: Path, tmp: Path, home: Path) -> int:
    install_user(ws, home, "codex", {"CODEX_HOME": str(tmp / "codex-home-c")})
    script: list[Step] = [("bash", "echo from codex > shell.txt"), ("patch", PATCH_APP), ("text", "Done.")]
    with ResponsesServer(script, ws) as server:
        run_codex(ws, tmp, home, server.port, "change the app")
    return 2


def _gemini_both(ws: Path, tmp: Path, home: Path) -> int:
    install_user(ws, home, "gemini", {"HOME": str(tmp / "gemini-user")})
    with GeminiServer(SHELL_AND_WRITE, ws) as server:
        run_gemini(ws, tmp, home, server.port, "change the app")
    return 2


def _copilot_both(ws: Path, tmp: Path, home: Path) -> int:
    install_user(ws, home, "copilot", {"HOME": str(tmp / "copilot-user"), "COPILOT_HOME": ""})
    assert (tmp / "copilot-user" / ".copilot" / "hooks" / "snapshotter.json").exists()
    with ChatServer(SHELL_AND_WRITE, ws) as server:
        run_copilot(ws, tmp, home, server.port, "change the app")
    return 2


@pytest.mark.parametrize(
    "agent",
    [
        pytest.param("claude-code", marks=needs_claude),
        pytest.param("codex", marks=needs_codex),
        pytest.param("gemini", marks=needs_gemini),
        pytest.param("copilot", marks=needs_copilot),
    ],
)
def test_a_project_and_a_user_install_record_each_call_once(agent: str, tmp_path: Path, ws: Path) -> None:
    """Both files hold our hooks, with different commands (so the agent runs
    both): the turn is recorded once, and ``turn revert`` takes its work back."""
    home = tmp_path / "home"
    write(ws, {"notes.txt": "the person's notes\n", "app.txt": "original\n", "app.py": "def f():\n    return 1\n"})
    before = contents(ws)
    install(ws, home, agent)
    run = {"claude-code": _claude_both, "codex": _codex_both, "gemini": _gemini_both, "copilot": _copilot_both}
    calls = run[agent](ws, tmp_path, home)
    assert contents(ws) != before
    _one_turn_once(ws, home, agent, calls, before)


def _broken_command(tmp: Path, how: str) -> str:
    """A hook command whose program cannot start: gone (a deleted virtualenv: the
    shell says 127), a script whose interpreter is gone (a Python removed:
    "bad interpreter"), a file that is not executable (126), or an interpreter
    without the package (``python -m snapshotter`` after a ``pip uninstall``: 1)."""
    if how == "missing":
        return str(tmp / "deleted-venv" / "bin" / "snapshotter")
    script = tmp / "bin" / "snapshotter"
    script.parent.mkdir(exist_ok=True)
    if how == "bad-interpreter":
        script.write_text(f"#!{tmp / 'removed-python' / 'python3'}\nprint('never')\n")
        script.chmod(0o755)
    elif how == "not-executable":
        script.write_text("#!/bin/sh\necho never\n")
        script.chmod(0o644)
    else:
        return "/usr/bin/python3 -I -m snapshotter"
    return str(script)


@id_less
@pytest.mark.parametrize("how", ["missing", "bad-interpreter", "not-executable", "no-module"])
def test_an_agent_whose_hook_cannot_start_still_edits_and_succeeds(
    agent: str, how: str, tmp_path: Path, ws: Path
) -> None:
    """The environment the hooks were installed from is gone: each call's program
    cannot start, and the installed command answers the agent's "go on" itself."""
    if how == "no-module" and not Path("/usr/bin/python3").exists():
        pytest.skip("no /usr/bin/python3 to stand for an interpreter without snapshotter")
    home = tmp_path / "home"
    write(ws, {"app.txt": "original\n"})
    command = _broken_command(tmp_path, how)
    done = run_command("hooks", "install", agent, "--command", command, cwd=ws, env={"SNAPSHOTTER_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    runner, server_kind = RUNNERS[agent]
    with server_kind(SHELL_AND_WRITE, ws) as server:
        done = runner(ws, tmp_path, home, server.port, "change the app")
    assert "All done." in done.stdout, (done.stdout[-2000:], done.stderr[-2000:])
    assert (ws / "app.txt").read_text() == "changed\n" and (ws / "shell.txt").exists()
    assert (ws / "written.txt").read_text() == "written by the agent\n"
    assert not home.exists()  # nothing ran
