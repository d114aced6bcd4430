"""``snapshotter watch``: the command line handed to a running watcher gives what the
direct command line gives, and a dead, stale, stuck or foreign watcher is bypassed
or refused. Real processes, real sockets, temporary folders."""

from __future__ import annotations

import http.client
import json
import os
import re
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import COMMAND, run_command, write

from snapshotter import watch_available
from snapshotter.engine.gitstore.location import store_path_for
from snapshotter.frontends.shared import wire
from snapshotter.frontends.watch import relay, watchserver

pytestmark = [
    pytest.mark.skipif(not watch_available(), reason="watch mode needs watchdog 7.1 (Python 3.11+)"),
    pytest.mark.skipif(sys.platform == "win32", reason="these tests drive the Unix socket directly"),
]

DIRECT = {relay.DISABLE_ENV: "1"}


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A short temporary folder: the homes below it are short unless a test makes them long."""
    path = Path(tempfile.mkdtemp(prefix="sw-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def store_of(ws: Path, home: Path) -> str:
    return store_path_for(os.path.realpath(ws), os.path.realpath(home))


class Watcher:
    """``snapshotter watch`` in a subprocess, answering once its socket is up."""

    def __init__(self, ws: Path, home: Path, log: Path) -> None:
        self.log = log
        self.process = subprocess.Popen(
            [*COMMAND, "watch", "-C", str(ws)],
            env=dict(os.environ, SNAPSHOTTER_HOME=str(home)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log.open("w"),
            text=True,
        )
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()  # "watching WS; serving its commands at ADDRESS"
        assert ready.startswith("watching "), (ready, log.read_text())
        self.address = ready.rstrip("\n").rpartition(" at ")[2]

    def served(self) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if "served" in line]

    def stop(self, how: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(how)
        return self.process.wait(timeout=30)


@pytest.fixture
def watcher(tmp_path: Path) -> Iterator[Any]:
    started: list[Watcher] = []

    def start(ws: Path, home: Path) -> Watcher:
        started.append(Watcher(ws, home, tmp_path / f"watch{len(started)}.log"))
        return started[-1]

    yield start
    for one in started:
        one.stop(signal.SIGKILL)


HEX = re.compile(r"\b[0-9a-f]{7,40}\b")
STAMP = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(\+00:00)?")
SIZES = re.compile(r"[\d,]+(?= bytes| -> )|(?<=bytes_on_disk: )\d+|(?<= in )[\d.]+(?= s$)", re.M)
VARYING = {"seconds", "bytes_before", "bytes_after", "bytes", "size_bytes", "pack_bytes", "loose_bytes"}


def masked(text: str, ws: Path, home: Path) -> str:
    """What naturally differs between two runs: ids, times, the two folders."""
    text = text.replace(os.path.realpath(home), "<home>").replace(os.path.realpath(ws), "<ws>")
    text = text.replace(os.path.realpath(ws.parent / "fork"), "<fork>")  # the script's fork, beside the folder
    text = STAMP.sub("<time>", HEX.sub("<id>", text))
    return SIZES.sub("<n>", text)  # the text forms of sizes and durations (the JSON ones: ``normal``)


def normal(document: Any) -> Any:
    if isinstance(document, dict):  # store sizes vary by a byte or two with compressed times
        return {k: ("<n>" if k in VARYING or "bytes" in k else normal(v)) for k, v in document.items()}
    if isinstance(document, list):
        return [normal(v) for v in document]
    return document


SCRIPT: list[tuple[dict[str, str], list[str]]] = [
    ({"a.txt": "one\n", "d/b.txt": "b\n"}, ["snapshot", "-m", "first", "--label", "start", "--meta", "k=v"]),
    ({"a.txt": "one\ntwo\n", "c.txt": "c\n"}, ["status"]),
    ({}, ["diff"]),
    ({}, ["diff", "--stat"]),
    ({}, ["diff", "--name-status"]),
    ({}, ["diff", "--numstat"]),
    ({}, ["diff", "start", "--", "a.txt"]),
    ({}, ["snapshot", "-m", "second"]),
    ({}, ["log"]),
    ({}, ["log", "--label", "start"]),
    ({}, ["show", "start"]),
    ({}, ["restore", "start", "--dry-run"]),
    ({}, ["restore", "start", "-y"]),
    ({}, ["undo"]),
    ({}, ["redo"]),
    ({}, ["turn", "begin"]),
    ({"e.txt": "e\n"}, ["turn", "end"]),
    ({}, ["turn", "revert"]),
    ({}, ["tool", "begin", "call-1"]),
    ({"f.txt": "f\n", "a.txt": "one\ntwo\nthree\n"}, ["tool", "done", "call-1"]),
    ({}, ["revert", "start", "--dry-run"]),
    ({}, ["revert", "start", "--conflicts", "ours"]),
    ({}, ["fork", "start", "../fork"]),
    ({}, ["merge", "../fork", "--dry-run"]),
    ({}, ["merge", "start", "--base", "@"]),
    ({}, ["pin", "start"]),
    ({}, ["unpin", "start"]),
    ({}, ["prune", "--dry-run"]),
    ({}, ["gc"]),
    ({}, ["stats"]),
    ({}, ["verify"]),
    ({}, ["show", "nope"]),  # exit 3
    ({}, ["restore", "nope", "-y"]),  # exit 3
    ({}, ["restore", "start"]),  # exit 2: nobody to ask, no --yes
    ({}, ["undo"]),
    ({}, ["undo"]),
    ({}, ["undo"]),
    ({}, ["undo"]),  # eventually nothing to undo: exit 1
    ({}, ["snapshot"]),
]
USAGE_ERROR = ["diff", "--stat", "--numstat"]


def play(ws: Path, home: Path, env: dict[str, str], json_mode: bool) -> list[tuple[int, Any, str]]:
    seen = []
    for files, argv in SCRIPT:
        write(ws, files)
        argv = ["--json", *argv] if json_mode else argv
        done = run_command(*argv, cwd=ws, env={"SNAPSHOTTER_HOME": str(home), **env})
        assert "Traceback" not in done.stderr, done.stderr
        out = masked(done.stdout, ws, home)
        seen.append((done.returncode, normal(json.loads(out)) if json_mode else out, masked(done.stderr, ws, home)))
    return seen


@pytest.mark.parametrize("json_mode", [True, False], ids=["json", "text"])
def test_served_like_direct(tmp_path: Path, watcher: Any, json_mode: bool) -> None:
    """The same script on two identical fresh workspaces, one through the watcher."""
    results = {}
    for side in ("served", "direct"):
        ws, home = tmp_path / side / "ws", tmp_path / side / "home"
        ws.mkdir(parents=True)
        write(ws, {"a.txt": "zero\n"})
        assert run_command("snapshot", "-m", "zero", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)}).returncode == 0
        if side == "served":
            server = watcher(ws, home)
            results[side] = play(ws, home, {}, json_mode)
            assert len(server.served()) == len(SCRIPT)  # every command really went through it
            assert server.stop() == 0
        else:
            results[side] = play(ws, home, DIRECT, json_mode)
        usage = run_command(*USAGE_ERROR, cwd=ws, env={"SNAPSHOTTER_HOME": str(home)})
        results[side].append((usage.returncode, usage.stdout, usage.stderr))
    assert results["served"] == results["direct"]
    codes = [code for code, _, _ in results["served"]]
    assert {0, 1, 2, 3} <= set(codes) and codes[-1] == 2


def test_settings_that_differ_are_declined_and_run_directly(ws: Path, home: Path, watcher: Any) -> None:
    write(ws, {"a.txt": "a\n", "skip.log": "x\n"})
    server = watcher(ws, home)
    env = {"SNAPSHOTTER_HOME": str(home)}
    done = run_command("--json", "status", "--exclude", "*.log", cwd=ws, env=env)
    assert done.returncode == 0 and [c["path"] for c in json.loads(done.stdout)["result"]] == ["a.txt"]
    assert server.served() == [] and "declined" in server.log.read_text()
    assert run_command("--json", "status", cwd=ws, env=env).returncode == 0
    assert len(server.served()) == 1


def test_stale_socket_of_a_killed_watcher_is_bypassed(ws: Path, home: Path, watcher: Any) -> None:
    write(ws, {"a.txt": "a\n"})
    env = {"SNAPSHOTTER_HOME": str(home)}
    server = watcher(ws, home)
    server.stop(signal.SIGKILL)
    assert os.path.exists(server.address)  # left behind
    done = run_command("--json", "snapshot", "-m", "after", cwd=ws, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["message"] == "after" and done.stderr == ""
    again = watcher(ws, home)  # a new watcher replaces the stale socket
    assert run_command("--json", "status", cwd=ws, env=env).returncode == 0
    assert len(again.served()) == 1


def test_second_watcher_is_refused(ws: Path, home: Path, watcher: Any) -> None:
    watcher(ws, home)
    second = run_command("watch", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)})
    assert second.returncode == 1
    assert second.stderr.startswith("snapshotter: a watcher already serves") and second.stderr.count("\n") == 1


def test_sigterm_and_cleanup_stop_it_and_remove_socket_and_key(ws: Path, home: Path, watcher: Any) -> None:
    write(ws, {"a.txt": "a\n"})
    store = store_of(ws, home)
    server = watcher(ws, home)
    assert oct(os.stat(server.address).st_mode & 0o777) == "0o600"
    assert oct(os.stat(wire.key_path(store)).st_mode & 0o777) == "0o600"
    assert server.stop() == 0
    assert not os.path.exists(server.address) and not os.path.exists(wire.key_path(store))
    server = watcher(ws, home)
    done = run_command("cleanup", "-y", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert server.process.wait(timeout=30) == 0 and not os.path.exists(store)
    assert server.served() == []  # cleanup runs in the calling process


def fake_watcher(store: str, key: bytes, behave: str) -> threading.Thread:
    """A watcher that misbehaves: ``silent`` accepts and never answers; ``dies``
    takes the command and goes away before answering."""
    os.makedirs(os.path.dirname(wire.key_path(store)), exist_ok=True)
    Path(wire.key_path(store)).write_bytes(key)
    address = wire.address_of(store)
    if behave == "silent":
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        raw.bind(address)
        raw.listen()

        def silent() -> None:
            held = [raw.accept()[0]]  # never a word
            time.sleep(30)
            held.clear()

        thread = threading.Thread(target=silent, daemon=True)
    else:
        listener = wire.Listener(address)

        def dies() -> None:
            conn = listener.accept()
            wire.greet(conn, key, 5.0)
            conn.recv()
            conn.send(b'{"accept": true}')
            assert conn.recv() == b'"go"'
            conn.close()  # gone before answering
            listener.close()

        thread = threading.Thread(target=dies, daemon=True)
    thread.start()
    return thread


def test_a_watcher_that_never_answers_is_bypassed_in_time(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "a\n"})
    env = {"SNAPSHOTTER_HOME": str(home)}
    assert run_command("snapshot", cwd=ws, env=env).returncode == 0
    fake_watcher(store_of(ws, home), b"k" * 32, "silent")
    started = time.monotonic()
    assert relay.connect(wire.address_of(store_of(ws, home)), b"k" * 32) is None
    assert time.monotonic() - started < 1.0  # the handshake timeout, with room for a busy machine
    done = run_command("--json", "status", cwd=ws, env=env)
    assert done.returncode == 0 and json.loads(done.stdout)["result"] == []


def test_a_watcher_that_dies_mid_command_is_one_error_line(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "a\n"})
    env = {"SNAPSHOTTER_HOME": str(home)}
    assert run_command("snapshot", cwd=ws, env=env).returncode == 0
    thread = fake_watcher(store_of(ws, home), b"k" * 32, "dies")
    done = run_command("--json", "snapshot", "-m", "lost", cwd=ws, env=env)
    thread.join(10)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("snapshotter: the watcher serving this workspace stopped before answering")
    assert done.stderr.count("\n") == 1 and json.loads(done.stdout)["error"]["type"] == "WatcherLost"
    log = run_command("--json", "log", cwd=ws, env={**env, **DIRECT})
    assert [s["message"] for s in json.loads(log.stdout)["result"]] == [""]  # never run a second time here


def test_a_wrong_key_is_refused_both_ways(ws: Path, home: Path, watcher: Any) -> None:
    write(ws, {"a.txt": "a\n"})
    server = watcher(ws, home)
    assert relay.connect(server.address, b"w" * 32, timeout=2.0) is None  # a caller without the key
    key = wire.read_key(store_of(ws, home))
    assert key is not None
    conn = relay.connect(server.address, key, timeout=2.0)
    assert conn is not None
    conn.close()
    assert run_command("--json", "status", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)}).returncode == 0
    assert len(server.served()) == 1  # still serving after the refused caller


def test_a_squatter_without_the_key_gets_nothing(tmp_path: Path) -> None:
    """The caller checks the watcher's key too: a listener that welcomes anyone
    (it cannot know the key) is not sent the command."""
    store = str(tmp_path / "store")
    os.makedirs(os.path.dirname(wire.key_path(store)))
    listener = wire.Listener(wire.address_of(store))
    heard: list[bytes] = []

    def squat() -> None:
        conn = listener.accept()
        conn.send(os.urandom(wire.NONCE))
        heard.append(conn.recv(5.0))  # the caller's nonce and proof: useless without the key
        conn.send(os.urandom(32))  # a guess at our proof
        try:
            heard.append(conn.recv(2.0))
        except (EOFError, OSError):
            pass

    thread = threading.Thread(target=squat, daemon=True)
    thread.start()
    try:
        assert relay.connect(wire.address_of(store), b"k" * 32, timeout=2.0) is None
        thread.join(5)
    finally:
        listener.close()
    assert len(heard) == 1 and len(heard[0]) == 64  # the handshake only, never a command


def test_peer_uid_check() -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        if not hasattr(socket, "SO_PEERCRED"):
            pytest.skip("SO_PEERCRED is Linux only; elsewhere the key decides")
        assert watchserver.peer_uid_allowed(left, os.getuid())
        assert not watchserver.peer_uid_allowed(left, os.getuid() + 1)


def test_no_watcher_env_and_interactive_restore_are_not_relayed() -> None:
    assert not relay.relayable(relay.quiet_parse(["restore", "@"]), interactive=True)
    assert relay.relayable(relay.quiet_parse(["restore", "@"]), interactive=False)  # refused the same way there
    assert relay.relayable(relay.quiet_parse(["restore", "@", "--dry-run"]), interactive=True)
    for argv in (["cleanup", "-y"], ["where"], ["config"], ["mcp"], ["watch"], ["--debug", "status"], ["nope"]):
        assert not relay.relayable(relay.quiet_parse(argv), interactive=False)


def test_the_relay_path_does_not_load_the_engine(ws: Path, home: Path, watcher: Any) -> None:
    write(ws, {"a.txt": "a\n"})
    server = watcher(ws, home)
    probe = (
        "import sys; from snapshotter.frontends.cli import cli; code = cli.main(['status']); "
        "heavy = [m for m in sys.modules if m.startswith(("
        "'snapshotter.facade.api', 'snapshotter.engine.session', 'dulwich'))]; "
        "print(heavy, file=sys.stderr); sys.exit(code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ws,
        env=dict(os.environ, SNAPSHOTTER_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stderr.strip() == "[]", done.stderr
    assert len(server.served()) == 1


def test_every_public_name_loads_on_first_use() -> None:
    probe = (
        "import sys, snapshotter; assert 'snapshotter.facade.api' not in sys.modules; "
        "missing = [n for n in snapshotter.__all__ if getattr(snapshotter, n, None) is None]; "
        "assert missing == [], missing; from snapshotter import *; print(Snapshotter.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout == "Snapshotter\n", done.stderr


def test_the_cheap_config_path_is_configs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from snapshotter.frontends.shared import config

    assert relay.user_config_path is config.user_config_path  # one function, in a module that loads no settings
    monkeypatch.delenv("SNAPSHOTTER_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config.user_config_path() == str(tmp_path / "xdg" / "snapshotter" / "config.toml")
    monkeypatch.setenv("SNAPSHOTTER_CONFIG", str(tmp_path / "mine.toml"))
    assert config.user_config_path() == str(tmp_path / "mine.toml")


def test_home_from_the_user_config_file_is_found(tmp_path: Path, watcher: Any) -> None:
    """A home named only in the user's config file: the caller still finds the watcher."""
    ws, home = tmp_path / "ws", tmp_path / "h"
    ws.mkdir()
    write(ws, {"a.txt": "a\n"})
    user_config = tmp_path / "user.toml"
    user_config.write_text(f'home = "{home}"\n')
    env = dict(os.environ, SNAPSHOTTER_CONFIG=str(user_config))
    env.pop("SNAPSHOTTER_HOME", None)
    server = Watcher.__new__(Watcher)
    server.log = tmp_path / "w.log"
    server.process = subprocess.Popen(
        [*COMMAND, "watch"],
        cwd=ws,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=server.log.open("w"),
        text=True,
    )
    try:
        assert server.process.stdout is not None and server.process.stdout.readline().startswith("watching ")
        done = subprocess.run(
            [*COMMAND, "--json", "status"], cwd=ws, env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0 and len(server.served()) == 1, (done.stderr, server.log.read_text())
    finally:
        server.stop()


def test_a_token_in_a_served_command_line_is_in_no_log_output_or_store(tmp_path: Path, watcher: Any) -> None:
    """A push URL carrying a token, served by the watcher and declined by it (other
    settings): the token is in none of the watcher's log lines, the command's
    output (text or JSON), nor any file of the store."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    write(ws, {"a.txt": "a\n"})
    token = "ghp_NEVERSHOWNtoken0123456789"
    assert run_command("snapshot", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)}).returncode == 0
    started = watcher(ws, home)
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    port = dead.getsockname()[1]
    dead.close()  # nothing listens there: each push fails, naming the remote
    url = f"http://bot:{token}@127.0.0.1:{port}/x.git"
    outputs = []
    for argv in (["push", url], ["--json", "push", url], ["--exclude", "other", "push", url]):
        done = run_command(*argv, cwd=ws, env={"SNAPSHOTTER_HOME": str(home)})
        assert done.returncode != 0
        outputs.append(done.stdout + done.stderr)
    served = started.served()
    assert len(served) == 2 and all("http://127.0.0.1" in line for line in served), served
    assert any("declined" in line for line in started.log.read_text().splitlines()), started.log.read_text()
    started.stop()
    assert all(token not in text and "bot:" not in text for text in outputs), outputs
    assert token not in started.log.read_text()
    for path in Path(store_of(ws, home)).rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path


def test_the_page_runs_beside_a_watcher_and_hears_of_what_it_records(ws: Path, home: Path, watcher: Any) -> None:
    """``snapshotter ui`` is never handed to the watcher (it would never return);
    a snapshot the watcher records reaches the page's event stream."""
    write(ws, {"a.txt": "one\n"})
    env = {"SNAPSHOTTER_HOME": str(home)}
    assert run_command("snapshot", "-C", str(ws), env=env).returncode == 0
    running = watcher(ws, home)
    page = subprocess.Popen(
        [*COMMAND, "ui", "-C", str(ws)],
        env=dict(os.environ, **env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert page.stdout is not None
        assert select.select([page.stdout], [], [], 30)[0], "no URL: the command was handed to the watcher?"
        url = page.stdout.readline().split()[-1]
        port, token = int(url.split(":")[2].split("/")[0]), url.split("token=")[1]
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        connection.request("GET", f"/events?token={token}")
        stream = connection.getresponse()
        first = _next_event(stream)
        write(ws, {"a.txt": "two\n"})
        made = json.loads(run_command("--json", "snapshot", "-C", str(ws), env=env).stdout)["result"]["id"]
        assert any("'snapshot'" in line for line in running.served())  # the watcher recorded it
        assert _next_event(stream)["newest"] == made != first["newest"]
        connection.close()
    finally:
        page.send_signal(signal.SIGINT)
        assert page.wait(timeout=20) == 0
    assert not any("'ui'" in line for line in running.served())


def _next_event(stream: Any) -> dict[str, str]:
    while True:
        line = stream.readline().decode()
        if line.startswith("data: "):
            found: dict[str, str] = json.loads(line[6:])
            return found


@pytest.mark.parametrize("through_proc", [True, False])
def test_a_socket_at_a_path_past_the_systems_limit_listens_and_is_reached(tmp_path: Path, through_proc: bool) -> None:
    """Bound and reached from a short name for its folder: ``/proc/self/fd/N`` on
    Linux, else from inside the folder (the working folder is given back)."""
    if through_proc and not os.path.isdir("/proc/self/fd"):
        pytest.skip("no /proc here")
    folder = tmp_path / ("d" * 150)
    folder.mkdir()
    address = str(folder / wire.SOCKET_NAME)
    here = os.getcwd()
    raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with raw:
        wire.reach(address, raw.bind, through_proc=through_proc)
        assert os.getcwd() == here and stat.S_ISSOCK(os.lstat(address).st_mode)
        raw.listen()
        caller = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with caller:
            wire.reach(address, caller.connect, through_proc=through_proc)
            raw.accept()[0].close()
    assert os.getcwd() == here
    os.unlink(address)
    listener = wire.Listener(address)  # what the watcher and its callers use
    try:
        assert wire.probe(address, 2.0)
    finally:
        listener.close()


def test_snapshotter_watch_serves_under_a_long_home(tmp_path: Path, ws: Path, watcher: Any) -> None:
    home = tmp_path / ("h" * 150)
    write(ws, {"a.txt": "a\n"})
    server = watcher(ws, home)
    assert len(os.fsencode(server.address)) > 108
    done = run_command("--json", "status", cwd=ws, env={"SNAPSHOTTER_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert len(server.served()) == 1
