"""The watcher a hook starts: detached (the agent never waits on it), serving the
later hook calls, and gone when the last agent session ends or it idles."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import COMMAND, write

from snapshotter import watch_available
from snapshotter.frontends import wire
from snapshotter.gitstore.location import store_path_for

pytestmark = [
    pytest.mark.skipif(not watch_available(), reason="a hook starts a watcher only with watchdog installed"),
    pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32", reason="the watcher is forked (POSIX)"),
]


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short folder: a Unix socket's path may not pass ~100 bytes."""
    path = Path(tempfile.mkdtemp(prefix="hw-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


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


def watcher_up(store: str, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if wire.read_key(store) is not None and os.path.exists(wire.address_of(store)):
            return True
        time.sleep(0.05)
    return False


def watcher_gone(store: str, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not os.path.exists(wire.address_of(store)):
            return True
        time.sleep(0.05)
    return False


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
