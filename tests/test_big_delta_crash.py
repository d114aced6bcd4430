"""SIGKILL while a delta is being appended to a chain pack.

A child process snapshots a changed big file and is killed at each step of the
append (journal written, pack set aside, entry half written, written and
synced, renamed, indexed; see ``chainpack``). Afterwards the store opens,
every completed snapshot restores byte for byte, ``verify`` and ``git fsck
--strict`` are clean before any writer runs (opening the store puts a
half-done append back), and the next snapshot appends again.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GIT, git, git_env

from snapshotter import Retention, Snapshotter
from snapshotter.engine.gitstore import bigfacts, chainjournal

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")

SIZE = 9 << 20

_CHILD = r"""
import os, sys, time
from snapshotter import Retention, Snapshotter
from snapshotter.engine.gitstore import chainappend

ws, home, stage = sys.argv[1], sys.argv[2], sys.argv[3]

def stop(name):
    if name == stage:
        print("at", name, flush=True)
        time.sleep(60)

chainappend._stage = stop
with Snapshotter(ws, home=home, retention=Retention.unlimited(), max_new_file_size=1 << 30) as snap:
    snap.snapshot("changed")
print("done", flush=True)
"""


def _change(path: Path, rng: random.Random) -> bytes:
    data = bytearray(path.read_bytes())
    at = rng.randrange(0, len(data) - 65536)
    data[at : at + 65536] = rng.randbytes(65536)
    path.write_bytes(data)
    return bytes(data)


@pytest.mark.parametrize("stage", ["journal", "aside", "writing", "written", "renamed", "indexed"])
def test_a_writer_killed_mid_append_loses_nothing(tmp_path: Path, stage: str) -> None:
    rng = random.Random(stage)
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    big = ws / "db.bin"
    big.write_bytes(rng.randbytes(SIZE))
    done: list[tuple[str, bytes]] = []
    with Snapshotter(ws, home=home, retention=Retention.unlimited(), max_new_file_size=1 << 30) as snap:
        done.append((snap.snapshot("v0").id, big.read_bytes()))
        _change(big, rng)
        done.append((snap.snapshot("v1").id, big.read_bytes()))
        store = snap.store_path
    _change(big, rng)
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(ws), str(home), stage], stdout=subprocess.PIPE)
    assert child.stdout is not None
    line = child.stdout.readline().decode().strip()
    assert line == f"at {stage}", line
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()
    assert chainjournal.appending(os.path.join(store, "objects", "pack"))

    with Snapshotter(ws, home=home, retention=Retention.unlimited(), max_new_file_size=1 << 30) as snap:
        assert not chainjournal.appending(os.path.join(store, "objects", "pack"))  # put back (or completed) at once
        verified = snap.verify(full=True)
        assert verified.ok, verified.problems
        if GIT is not None:
            git("--git-dir", store, "fsck", "--strict", "--no-dangling", "--no-progress", env=git_env(tmp_path))
        latest = big.read_bytes()
        for snapshot_id, content in done:
            snap.restore(snapshot_id)
            assert big.read_bytes() == content
        big.write_bytes(latest)
        _change(big, rng)
        after = snap.snapshot("after")
        names = os.listdir(os.path.join(store, "objects", "pack"))
        assert len([n for n in names if n.startswith(bigfacts.PREFIX) and n.endswith(".pack")]) == 1  # appended to
        big.write_bytes(b"")
        snap.restore(after.id)
        assert big.read_bytes() != b""
        assert snap.verify(full=True).ok
