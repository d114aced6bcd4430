"""The watcher a hook starts: detached (the agent never waits on it), serving the
later hook calls, and gone when the last agent session ends or it idles."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from agent_servers import AnthropicServer, Step, agent_binary
from conftest import COMMAND, run_command, watcher_gone, watcher_up, write

from snapshotter import watch_available
from snapshotter.engine.gitstore.location import store_path_for
from snapshotter.frontends.hooks import hooklog, watchstart
from snapshotter.frontends.shared import wire

pytestmark = [
    pytest.mark.skipif(not watch_available(), reason="a hook starts a watcher only with watchdog installed"),
    pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32", reason="the watcher is forked (POSIX)"),
]


def hook(ws: Path, home: Path, event: str, env: dict[str, str] | None = None, **payload: Any) -> float:
    started = time.monotonic()
    done = subprocess.run(
        [*COMMAND, "hook", "claude-code", event],
        input=json.dumps({"session_id": "s", "cwd": str(ws), "hook_event_name": event, **payload}),
        text=True,
        capture_output=True,  # the call is over only once nothing holds its pipes: a watcher must not
        env={**os.environ, "SNAPSHOTTER_HOME": str(home), **(env or {})},
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    return time.monotonic() - started


def test_the_first_hook_starts_a_watcher_that_serves_and_leaves_with_the_last_session(short_tmp: Path) -> None:
    ws, home = short_tmp / "ws", short_tmp / "home"
    write(ws, {"f.txt": "0\n"})
    store = store_path_for(str(ws.resolve()), str(home))
    took = hook(ws, home, "SessionStart", source="startup")
    assert took < 20  # returned though its watcher lives on: it holds none of the call's streams
    assert watcher_up(store)
    hook(ws, home, "UserPromptSubmit", prompt="p")
    hook(ws, home, "PreToolUse", tool_name="Write", tool_use_id="w")
    write(ws, {"f.txt": "1\n"})
    hook(ws, home, "PostToolUse", tool_name="Write", tool_use_id="w")
    served = Path(store, "snapshotter", "hooks.log").read_text()
    assert "tool-done:w" in served and " FAILED " not in served
    hook(ws, home, "SessionEnd", reason="other")
    assert watcher_gone(store)
    assert "post-turn:1 (ended with the session)" in Path(store, "snapshotter", "hooks.log").read_text()


def test_a_watcher_a_hook_started_leaves_when_idle(short_tmp: Path) -> None:
    ws, home = short_tmp / "ws", short_tmp / "home"
    write(ws, {"f.txt": "0\n"})
    store = store_path_for(str(ws.resolve()), str(home))
    hook(ws, home, "SessionStart", env={"SNAPSHOTTER_HOOK_IDLE": "2"})
    assert watcher_up(store)
    assert watcher_gone(store, seconds=20)


def long_home(short_tmp: Path, size: int = 150) -> Path:
    """A home folder whose path is ``size`` bytes long (its store's socket path: ~210)."""
    base = str(short_tmp / "home-")
    return Path(base + "h" * (size - len(base)))


TRACED_HOOK = (
    "import json, sys; from snapshotter.frontends import hookclient; code = hookclient.main(sys.argv[2:]); "
    "heavy = [m for m in sys.modules if m.startswith(("
    "'snapshotter.facade.api', 'snapshotter.engine.session', 'dulwich'))]; "
    "open(sys.argv[1], 'w').write(json.dumps(heavy)); sys.exit(code)"
)
"""A hook call that writes down which engine modules it loaded: none where the watcher took the event."""


def traced_hook(ws: Path, home: Path, trace: Path, event: str, **payload: Any) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", TRACED_HOOK, str(trace), "claude-code", event],
        input=json.dumps({"session_id": "s", "cwd": str(ws), "hook_event_name": event, **payload}),
        text=True,
        capture_output=True,
        env={**os.environ, "SNAPSHOTTER_HOME": str(home)},
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    loaded: list[str] = json.loads(trace.read_text())
    return loaded


def test_a_hook_call_takes_the_watchers_path_under_a_150_byte_home(short_tmp: Path) -> None:
    ws, home = short_tmp / "ws", long_home(short_tmp)
    write(ws, {"f.txt": "0\n"})
    store = store_path_for(str(ws.resolve()), str(home))
    assert len(os.fsencode(home)) == 150 and len(os.fsencode(wire.address_of(store))) > 108
    hook(ws, home, "SessionStart", source="startup")
    assert watcher_up(store)
    assert traced_hook(ws, home, short_tmp / "t1", "UserPromptSubmit", prompt="p") == []
    assert traced_hook(ws, home, short_tmp / "t2", "PreToolUse", tool_name="Write", tool_use_id="w") == []
    write(ws, {"f.txt": "1\n"})
    assert traced_hook(ws, home, short_tmp / "t3", "PostToolUse", tool_name="Write", tool_use_id="w") == []
    served = Path(store, "snapshotter", "hooks.log").read_text()
    assert "tool-done:w" in served and " FAILED " not in served
    status = run_command("--json", "hooks", "status", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)})
    assert json.loads(status.stdout)["result"]["watcher"] is True
    hook(ws, home, "SessionEnd", reason="other")
    assert watcher_gone(store)


def start_failures(store: str) -> list[str]:
    log = Path(store, "snapshotter", "hooks.log")
    return [line for line in log.read_text().splitlines() if " watcher start FAILED " in line] if log.exists() else []


def test_a_watcher_that_cannot_start_says_why_and_is_not_started_again_and_again(short_tmp: Path) -> None:
    ws, home = short_tmp / "ws", short_tmp / "home"
    write(ws, {"f.txt": "0\n"})
    env = {"SNAPSHOTTER_HOME": str(home), "SNAPSHOTTER_NO_WATCHER": "1"}
    assert run_command("snapshot", cwd=ws, env=env).returncode == 0
    store = store_path_for(str(ws.resolve()), str(home))
    blocker = Path(wire.address_of(store))
    blocker.mkdir()  # a folder where the socket goes: no watcher can listen there
    (blocker / "x").write_text("x")
    hook(ws, home, "SessionStart", source="startup")
    deadline = time.monotonic() + 20
    while not start_failures(store) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(start_failures(store)) == 1 and "watch.sock" in start_failures(store)[0]
    for n in range(3):  # each records its event itself, and starts no other watcher
        hook(ws, home, "UserPromptSubmit", prompt=f"p{n}")
    time.sleep(3)  # room for a watcher that was started by mistake to fail too
    assert len(start_failures(store)) == 1
    logged = [s["label"] for s in json.loads(run_command("--json", "log", cwd=ws, env=env).stdout)["result"]]
    assert logged.count("pre-turn:3") == 1
    status = run_command("hooks", "status", cwd=ws, env=env)
    assert "watcher: could not start" in status.stdout and "watch.sock" in status.stdout, status.stdout
    assert "tries again" in status.stdout
    document = json.loads(run_command("--json", "hooks", "status", cwd=ws, env=env).stdout)["result"]
    assert document["watcher"] is False and document["watcher_start"]["failures"] == 1


def test_a_failed_start_waits_its_back_off_and_a_claim_whose_watcher_died_is_a_failure(tmp_path: Path) -> None:
    store = str(tmp_path / "home" / "snapshots" / "k")
    assert watchstart.claim(store, now=1000.0)
    assert not watchstart.claim(store, now=1001.0)  # claimed: that hook's watcher is starting
    watchstart.failed(store, "boom", now=1002.0)
    assert not watchstart.claim(store, now=1002.0 + watchstart.FIRST_BACKOFF - 1)
    assert watchstart.claim(store, now=1002.0 + watchstart.FIRST_BACKOFF + 1)
    again = watchstart.failed(store, "boom again", now=2000.0)
    assert (again.failures, again.retry_at) == (2, 2000.0 + 2 * watchstart.FIRST_BACKOFF)  # doubled
    assert watchstart.backoff(30) == watchstart.MAX_BACKOFF
    assert watchstart.claim(store, now=3000.0)
    gone = subprocess.Popen(["true"])
    gone.wait()
    watchstart.starting(store, gone.pid, now=3000.0)
    assert not watchstart.claim(store, now=3001.0)  # its watcher ended without a word: a failure, not a new start
    found = watchstart.state(store)
    assert found is not None and found.state == "failed" and found.failures == 3
    assert "ended before it listened" in found.reason
    assert watchstart.claim(store, now=4000.0)
    watchstart.starting(store, os.getpid(), now=4001.0)  # alive: waited for, up to the start limit
    assert not watchstart.claim(store, now=4000.0 + watchstart.START_LIMIT)
    waited = watchstart.state(store)
    assert waited is not None and (waited.state, waited.pid, waited.since) == ("starting", os.getpid(), 4000.0)
    assert not watchstart.claim(store, now=4000.0 + watchstart.START_LIMIT + watchstart.FORK_LIMIT + 1)
    late = watchstart.state(store)
    assert late is not None and late.failures == 4 and "did not listen within" in late.reason
    watchstart.started(store)  # a watcher that listens clears it all
    assert watchstart.state(store) is None and watchstart.claim(store, now=5000.0)
    assert oct(os.stat(tmp_path / "home" / "watchers").st_mode & 0o777) == "0o700"


def test_a_watcher_that_cannot_open_a_folder_over_the_cap_leaves_no_half_store(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, home = short_tmp / "ws", short_tmp / "home"
    write(ws, {f"f{i}.txt": f"{i}\n" for i in range(12)})
    fallback = short_tmp / "fallback-hooks.log"
    monkeypatch.setenv("SNAPSHOTTER_HOOKS_LOG", str(fallback))
    capped = {"SNAPSHOTTER_MAX_WORKSPACE_ENTRIES": "5"}
    hook(ws, home, "PreToolUse", env=capped, tool_name="Write", tool_use_id="t0")
    deadline = time.monotonic() + 20
    while " watcher start FAILED " not in (fallback.read_text() if fallback.exists() else ""):
        assert time.monotonic() < deadline, "the watcher's failure was never logged"
        time.sleep(0.05)
    store = store_path_for(str(ws.resolve()), str(home))
    assert not os.path.exists(store) and sorted(os.listdir(home)) == ["watchers"]
    status = run_command("--json", "hooks", "status", cwd=ws, env={"SNAPSHOTTER_HOME": str(home), **capped})
    start = json.loads(status.stdout)["result"]["watcher_start"]
    assert start["state"] == "failed" and "5" in start["reason"]


CLAUDE = agent_binary("claude")


@pytest.mark.skipif(CLAUDE is None, reason="Claude Code is not installed (npm i @anthropic-ai/claude-code)")
def test_the_real_claude_codes_hook_calls_take_the_watchers_path_under_a_150_byte_home(short_tmp: Path) -> None:
    ws, home = short_tmp / "ws", long_home(short_tmp)
    write(ws, {"app.py": "def f():\n    return 1\n"})
    assert run_command("hooks", "install", "claude-code", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)}).returncode == 0
    private = short_tmp / "claude"
    for folder in ("home", "config", "tmp"):
        (private / folder).mkdir(parents=True)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "TERM": "dumb",
        "LANG": "C.UTF-8",
        "HOME": str(private / "home"),
        "CLAUDE_CONFIG_DIR": str(private / "config"),
        "CLAUDE_CODE_TMPDIR": str(private / "tmp"),
        "IS_SANDBOX": "1",  # the suite may run as root
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "SNAPSHOTTER_HOME": str(home),
        "SNAPSHOTTER_HOOK_IDLE": "120",
    }
    store = store_path_for(str(ws.resolve()), str(home))
    warm = {"session_id": "warm", "cwd": str(ws), "hook_event_name": "SessionStart", "source": "startup"}
    started = subprocess.run(  # a watcher up first, started as Claude Code's own hooks start one
        [*COMMAND, "hook", "claude-code", "SessionStart"], input=json.dumps(warm), env=env, text=True, timeout=60
    )
    assert started.returncode == 0 and watcher_up(store)
    turn: list[Step] = [("bash", "echo hi > bash.txt"), ("edit", "app.py", "return 1", "return 2"), ("text", "ok")]
    with AnthropicServer(turn, ws) as server:
        done = subprocess.run(
            [CLAUDE, "-p", "change the app", "--permission-mode", "bypassPermissions", "--output-format", "json"],
            cwd=ws,
            env={**env, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.port}"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert done.returncode == 0 and json.loads(done.stdout)["result"] == "ok", done.stderr[-2000:]
    assert (ws / "bash.txt").exists()
    logged = Path(store, "snapshotter", "hooks.log").read_text().splitlines()
    calls = [line for line in logged if " claude-code " in line][1:]  # the first: the warm-up's own
    assert sum("tool-done:" in line for line in calls) == 2 and " FAILED " not in "\n".join(logged)
    assert all(line.endswith(hooklog.BY_WATCHER) for line in calls), calls  # none recorded the slow way
    warm.update(hook_event_name="SessionEnd", reason="other")
    subprocess.run([*COMMAND, "hook", "claude-code", "SessionEnd"], input=json.dumps(warm), env=env, text=True)
    assert watcher_gone(store)


def test_a_watcher_that_listens_but_does_not_answer_is_not_joined_by_another(short_tmp: Path) -> None:
    """Busy or stuck: the call records its event itself, and starts no second watcher (which could not listen)."""
    ws, home = short_tmp / "ws", short_tmp / "home"
    write(ws, {"f.txt": "0\n"})
    assert run_command("snapshot", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)}).returncode == 0
    store = store_path_for(str(ws.resolve()), str(home))
    Path(wire.key_path(store)).write_bytes(b"k" * 32)
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with silent:
        wire.reach(wire.address_of(store), silent.bind)
        silent.listen()
        hook(ws, home, "UserPromptSubmit", prompt="while it is busy")
        assert not (home / "watchers").exists()  # no start was even claimed
    logged = json.loads(run_command("--json", "log", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)}).stdout)["result"]
    assert [s["label"] for s in logged][0] == "pre-turn:1"
