"""Pushing and cloning big files kept as deltas (issue #53).

A push sends a changed big file's new version as a delta of its last one
(a thin pack: the remote has the base), not the whole file again; git on
the server takes it (``fsck --strict``, ``cat-file`` of every version), and a
clone or fetch elsewhere restores every version byte for byte.
"""

from __future__ import annotations

import contextlib
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import GIT, needs_git
from remote_servers import bare_repository, git_daemon, has_git_program

from snapshotter import Retention, Snapshotter

pytestmark = needs_git
SIZE = 10 << 20


@contextlib.contextmanager
def serving(kind: str, base: Path) -> Iterator[str]:
    bare_repository(base / "snaps.git")
    if kind == "path":
        yield str(base / "snaps.git")
    else:
        if not has_git_program("daemon"):
            pytest.skip("git daemon is not installed with git here")
        with git_daemon(base) as url:
            yield f"{url}/snaps.git"


def _git(*args: str) -> bytes:
    assert GIT is not None
    done = subprocess.run([GIT, *args], capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


@pytest.mark.parametrize("kind", ["path", "git"])
def test_a_push_sends_deltas_and_a_clone_restores_them(kind: str, tmp_path: Path, ws: Path) -> None:
    rng = random.Random(kind)
    data = bytearray(rng.randbytes(SIZE))
    big = ws / "db.bin"
    versions = []
    server = tmp_path / "server" / "snaps.git"
    with serving(kind, tmp_path / "server") as location:
        with Snapshotter(ws, home=tmp_path / "home", retention=Retention.unlimited()) as snap:
            big.write_bytes(data)
            first = snap.snapshot("v0", label="v0")
            versions.append((first, bytes(data)))
            name = snap.push(location).name
            for i in range(1, 4):
                for _ in range(3):
                    at = rng.randrange(0, SIZE - 65536)
                    data[at : at + 65536] = rng.randbytes(65536)
                big.write_bytes(data)
                versions.append((snap.snapshot(f"v{i}", label=f"v{i}"), bytes(data)))
                pushed = snap.push(location)
                assert pushed.snapshots_sent == 1
                assert pushed.bytes_sent < 1 << 20, f"push {i} sent {pushed.bytes_sent:,} bytes: the whole file"
        _git("--git-dir", str(server), "fsck", "--strict", "--no-dangling")
        for info, content in versions:
            assert _git("--git-dir", str(server), "cat-file", "-p", f"{info.tree_id}:db.bin") == content

        copy = tmp_path / "copy"
        with Snapshotter.clone(location, name, "v3", copy, home=tmp_path / "h2") as cloned:
            assert (copy / "db.bin").read_bytes() == versions[-1][1]
            cloned.fetch(location, name=name)
            for info, content in versions:
                cloned.restore(info.id)
                assert (copy / "db.bin").read_bytes() == content
            assert cloned.verify(full=True).ok
            _git("--git-dir", cloned.store_path, "fsck", "--strict", "--no-dangling")
