"""A PyInstaller app with the ``fast`` extra, run with no git, no Python and no environment.

Slow (one PyInstaller build: 16 s here with the ``fast`` extra, 46 s with ``[test]``,
which bundles mcp), so it runs only when asked:

    pip install -e ".[fast]" pyinstaller
    SNAPSHOTTER_FROZEN=1 python -m pytest tests/test_frozen.py

The build passes PyInstaller nothing about what snapshotter needs: the hooks in
``snapshotter/frontends/_pyinstaller`` (the ``pyinstaller40`` entry point) must supply it.
``--paths`` only says where the snapshotter under test is, since PyInstaller
cannot follow setuptools' editable-install finder (pyinstaller#7524).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import snapshotter
from snapshotter.frontends.shared import arguments

pytestmark = [
    pytest.mark.skipif(not os.environ.get("SNAPSHOTTER_FROZEN"), reason="a PyInstaller build: SNAPSHOTTER_FROZEN=1"),
    pytest.mark.skipif(os.name != "posix", reason="runs the app under env -i"),
]

APP = Path(__file__).with_name("frozen_app.py")
BARE = ["env", "-i", "PATH=/nonexistent"]
"""No git, no Python and no variables reach the frozen app."""


def run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, check=False, timeout=600
    )


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The app, frozen one folder (``--onedir``) with the Python running this test."""
    for needed, install in (("PyInstaller", "pyinstaller"), ("isal", '".[fast]"')):
        if importlib.util.find_spec(needed) is None:
            pytest.fail(f"SNAPSHOTTER_FROZEN needs {needed}: pip install {install}")
    build = tmp_path_factory.mktemp("build")
    where = Path(snapshotter.__file__).resolve().parent.parent
    made = run(
        sys.executable,
        "-m",
        "PyInstaller",
        "--noconfirm",
        "--log-level=WARN",
        "--onedir",
        f"--paths={where}",
        f"--distpath={build / 'dist'}",
        f"--workpath={build / 'work'}",
        f"--specpath={build}",
        APP,
        cwd=build,
    )
    assert made.returncode == 0, made.stderr
    return build / "dist" / APP.stem / APP.stem


def report(command: list[str | Path], tmp: Path) -> dict[str, Any]:
    (tmp / "ws").mkdir(parents=True)
    (tmp / "scratch").mkdir()
    result = run(*BARE, *command, "api", tmp / "ws", tmp / "scratch")
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def test_the_frozen_app_runs_as_python_does(frozen: Path, tmp_path: Path) -> None:
    """Snapshot, edit, status, diff, restore and verify pass in the frozen app
    (``frozen_app.py`` checks each), with the same compressor, the same modules
    and the same snapshot as the same script run by this Python."""
    bundled = report([frozen], tmp_path / "frozen")
    source = report([sys.executable, APP], tmp_path / "source")
    missing = sorted(set(source["modules"]) - set(bundled["modules"]))
    assert not missing, f"modules the frozen app could not import (is the pyinstaller40 hook installed?): {missing}"
    assert bundled["compressor"] == "isal"
    assert bundled == source


def test_the_frozen_cli(frozen: Path, tmp_path: Path) -> None:
    """``snapshotter`` commands through the frozen app: snapshot, status, diff, restore."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    (ws / "a.py").write_text("one\n")

    def cli(*args: str) -> str:
        result = run(*BARE, frozen, "cli", *args, "-C", ws, "--home", home)
        assert result.returncode == 0, result.stderr
        return result.stdout

    first = json.loads(cli("snapshot", "-m", "first", "--json"))["result"]["id"]
    (ws / "a.py").write_text("one\ntwo\n")
    (ws / "b.py").write_text("b\n")
    status = json.loads(cli("status", "--json"))["result"]
    assert {(c["path"], c["status"]) for c in status} == {("a.py", "modified"), ("b.py", "added")}
    assert cli("diff", first, "--numstat").splitlines() == ["1\t0\ta.py", "1\t0\tb.py"]
    restored = json.loads(cli("restore", first, "-y", "--json"))["result"]
    assert (restored["written"], restored["deleted"]) == (1, 1)
    assert (ws / "a.py").read_text() == "one\n" and not (ws / "b.py").exists()


def test_every_command_in_the_frozen_app(frozen: Path, tmp_path: Path) -> None:
    """Each command of ``snapshotter --help`` runs in the frozen app: the commands
    import what they run when they run it (issue #51), and a module PyInstaller
    did not bundle would fail only the command that imports it. The servers
    (``watch``, ``ui``, ``mcp``) answer once and stop."""
    from dulwich.repo import Repo

    ws, home, remote = tmp_path / "ws", tmp_path / "home", tmp_path / "remote.git"
    ws.mkdir()
    (ws / "a.py").write_text("one\n")
    Repo.init_bare(str(remote), mkdir=True).close()
    where = ["-C", str(ws), "--home", str(home)]

    ran: set[str] = set()

    def cli(*args: str | Path, stdin: str | None = None, env: tuple[str, ...] = (), code: int = 0) -> str:
        ran.add(str(args[0]))
        result = subprocess.run(
            [*BARE, *env, frozen, "cli", *(str(a) for a in args)],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert "No module named" not in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)
        assert result.returncode == code, (args, result.returncode, result.stdout, result.stderr)
        return result.stdout

    assert cli("--version").strip()
    assert "snapshot" in cli("--help")
    first = json.loads(cli("snapshot", *where, "-m", "first", "--label", "start", "--json"))["result"]["id"]
    cli("track", *where, "-m", "second")
    (ws / "a.py").write_text("one\ntwo\n")
    cli("checkpoint", *where)
    assert "first" in cli("log", *where, "-n", "20") and first in cli("show", *where, "start")
    (ws / "b.py").write_text("b\n")
    assert "b.py" in cli("status", *where) and "b.py" in cli("diff", *where, "--stat")
    cli("turn", "begin", *where)
    cli("tool", "begin", "call-1", *where)
    (ws / "c.py").write_text("c\n")
    cli("tool", "done", "call-1", *where)
    cli("turn", "end", *where)
    assert "c.py" in cli("turn", "hunks", "1", *where)
    cli("turn", "revert", "1", *where)
    cli("undo", *where)
    cli("redo", *where)
    assert "one" in cli("blame", *where, "a.py")
    cli("revert", *where, "start")
    cli("restore", *where, "start", "--dry-run")
    cli("pin", *where, "start")
    cli("unpin", *where, "start")
    fork = tmp_path / "fork"
    cli("fork", *where, "start", fork)
    (fork / "f.py").write_text("from the fork\n")
    assert str(fork) in cli("forks", *where)
    cli("merge", *where, fork)
    assert (ws / "f.py").read_text() == "from the fork\n"
    payload = {"session_id": "s1", "cwd": str(ws), "hook_event_name": "PreToolUse", "tool_name": "Bash"}
    for event in ("PreToolUse", "PostToolUse"):
        payload["hook_event_name"] = event
        cli(
            "hook",
            "claude-code",
            event,
            stdin=json.dumps({**payload, "tool_use_id": "t1"}),
            env=(f"SNAPSHOTTER_HOME={home}", "SNAPSHOTTER_NO_WATCHER=1"),
        )
    assert "s1" in cli("sessions", *where)
    cli("hooks", "install", "claude-code", *where)
    assert "claude-code" in cli("hooks", "status", *where)
    cli("hooks", "uninstall", "claude-code", *where)
    cli("push", *where, remote)
    name = json.loads(cli("remote", "list", remote, *where, "--json"))["result"][0]["name"]
    cli("fetch", *where, remote, "--name", name)
    cli("clone", remote, name, tmp_path / "clone", *where)
    assert (tmp_path / "clone" / "a.py").exists()
    cli("prune", *where, "--dry-run")
    cli("gc", *where)
    assert "snapshots" in cli("stats", *where)
    cli("verify", *where)
    assert str(home) in cli("where", *where)
    cli("config", *where)
    _served_once(frozen, ["watch", *where], "watching ")
    _served_once(frozen, ["ui", *where, "--no-open"], "snapshotter ui: http://127.0.0.1:")
    ran.update(("watch", "ui"))
    if importlib.util.find_spec("mcp") is not None:  # bundled when the Python running this has it
        _mcp_lists_its_tools(frozen, where)
        ran.add("mcp")
    cli("cleanup", *where, "--yes")
    unrun = set(arguments.COMMAND_WORDS) - ran - ({"mcp"} if importlib.util.find_spec("mcp") is None else set())
    assert not unrun, f"commands this test does not run: {sorted(unrun)}"


def _served_once(frozen: Path, words: list[str], ready: str) -> None:
    """A server command starts, says it is ready, and stops on Ctrl-C with status 0."""
    server = subprocess.Popen([*BARE, frozen, "cli", *words], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith(ready), (words, line, server.stderr.read() if server.stderr else "")
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=30) == 0
    finally:
        server.kill()
        server.wait()


def _mcp_lists_its_tools(frozen: Path, where: list[str]) -> None:
    """``mcp`` answers an MCP client's first two requests over stdio."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    server = subprocess.Popen(
        [*BARE, frozen, "cli", "mcp", *where],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdin is not None and server.stdout is not None
        for message in messages:
            server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()
        answers: dict[int, Any] = {}
        while 2 not in answers:
            line = server.stdout.readline()
            assert line, server.stderr.read() if server.stderr else ""
            found = json.loads(line)
            answers[found.get("id", 0)] = found
        assert any(tool["name"] == "snapshot" for tool in answers[2]["result"]["tools"])
        server.stdin.close()
        server.wait(timeout=30)
    finally:
        server.kill()
        server.wait()
