"""Where a remote location points, read as git reads it: an scp-like
``user@host:path`` is SSH (an absolute path included), never a folder made in
the workspace; a remote folder inside the workspace is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import GIT, run_command, write

from snapshotter import InvalidInput, RemoteError, SnapshotError
from snapshotter.engine.gitstore.transport import open_remote


@pytest.mark.parametrize(
    ("location", "host", "path"),
    [
        ("git@127.0.0.1:/abs.git", "127.0.0.1", "/abs.git"),
        ("git@example.com:team/repo.git", "example.com", "team/repo.git"),
        ("example.com:repo.git", "example.com", "repo.git"),
        ("git@[::1]:/srv/x.git", "::1", "/srv/x.git"),
    ],
)
def test_an_scp_like_location_is_ssh(location: str, host: str, path: str) -> None:
    remote = open_remote(location)
    assert not remote.is_local and remote.path == path
    assert remote.client.host == host  # type: ignore[attr-defined]
    assert "git@" not in remote.shown


@pytest.mark.parametrize("location", ["./host:path", "/tmp/a:b", "sub/dir:x", "C:\\Users\\x\\snaps.git"])
def test_a_colon_after_a_slash_or_a_drive_is_a_path(location: str) -> None:
    assert open_remote(location).is_local


def test_an_unknown_scheme_is_refused() -> None:
    with pytest.raises(InvalidInput, match="not a kind of remote"):
        open_remote("gopher://example.com/x.git")


def test_pushing_to_an_scp_like_address_makes_no_folder_in_the_workspace(tmp_path: Path, ws: Path) -> None:
    """The report: ``push git@127.0.0.1:/abs.git`` "pushed" into a new folder
    ``git@127.0.0.1:`` in the workspace and exited 0. Nothing listens on port 22
    here (or it refuses our key): the push fails, and nothing is made."""
    write(ws, {"f.txt": "x\n"})
    env = {"SNAPSHOTTER_HOME": str(tmp_path / "home"), "SNAPSHOTTER_SSH_KNOWN_HOSTS": str(tmp_path / "none")}
    assert run_command("snapshot", cwd=ws, env=env).returncode == 0
    before = sorted(os.listdir(ws))
    pushed = run_command("push", "git@127.0.0.1:/abs.git", cwd=ws, env=env)
    assert pushed.returncode != 0 and "\n" not in pushed.stderr.strip()
    assert sorted(os.listdir(ws)) == before and not (tmp_path / "abs.git").exists()


@pytest.mark.parametrize("inside", ["remote.git", "sub/remote.git", "."])
def test_a_remote_folder_inside_the_workspace_is_refused(inside: str, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"f.txt": "x\n", "sub/g.txt": "y\n"})
    snap = make()
    snap.snapshot()
    before = sorted(str(p.relative_to(ws)) for p in ws.rglob("*"))
    for location in (str(ws / inside), (ws / inside).resolve().as_uri()):
        with pytest.raises(InvalidInput, match="inside the workspace"):
            snap.push(location)
        with pytest.raises(InvalidInput, match="inside the workspace"):
            snap.fetch(location)
    assert sorted(str(p.relative_to(ws)) for p in ws.rglob("*")) == before


@pytest.mark.skipif(GIT is None, reason="the SSH test server runs git's pack commands")
def test_an_scp_like_absolute_path_reaches_the_ssh_server(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """End to end on port 22 of 127.0.0.1 (skipped where it cannot be bound):
    ``git@127.0.0.1:/snaps.git`` is an SSH push, received by the server."""
    pytest.importorskip("paramiko")
    import socket

    from remote_servers import bare_repository, ssh_server

    from snapshotter import Credentials

    probe = socket.socket()
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind(("127.0.0.1", 22))
    except OSError as exc:
        pytest.skip(f"port 22 of 127.0.0.1 cannot be bound here ({exc.strerror})")
    finally:
        probe.close()
    write(ws, {"f.txt": "x\n"})
    bare_repository(tmp_path / "srv" / "snaps.git")
    with ssh_server(tmp_path / "srv", tmp_path / "keys", port=22) as end:
        snap = make()
        snap.snapshot()
        creds = Credentials(key_file=end.key_file, known_hosts=end.known_hosts)
        try:
            result = snap.push("git@127.0.0.1:/snaps.git", credentials=creds)
        except SnapshotError as exc:
            raise AssertionError(f"the push did not reach the server: {exc}") from None
        assert result.snapshots_sent == 1
    assert not any(name.startswith("git@") for name in os.listdir(ws))
    with pytest.raises(RemoteError):  # and the server is gone: a typed error, not a folder
        snap.push("git@127.0.0.1:/snaps.git", credentials=creds)


def test_a_push_to_a_folder_whose_parent_is_missing_creates_nothing(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """The report: ``snapshotter push /nonexistent/x.git`` made ``/nonexistent``
    at the filesystem root. A typo is not a new repository: a remote folder is
    made only where its parent folder exists; anywhere deeper the push is
    refused, naming the missing folder, and nothing is made."""
    write(ws, {"f.txt": "x\n"})
    snap = make()
    snap.snapshot()
    before = sorted(os.listdir(tmp_path))
    for location in (tmp_path / "typo" / "x.git", tmp_path / "a" / "b" / "c" / "x.git"):
        for given in (str(location), location.as_uri()):
            with pytest.raises(InvalidInput, match="does not exist") as caught:
                snap.push(given)
            assert "\n" not in str(caught.value) and str(location.parent) in str(caught.value)
    assert sorted(os.listdir(tmp_path)) == before
    env = {"SNAPSHOTTER_HOME": str(tmp_path / "home")}
    pushed = run_command("push", str(tmp_path / "nowhere" / "x.git"), cwd=ws, env=env)
    assert pushed.returncode != 0 and len(pushed.stderr.strip().splitlines()) == 1, pushed.stderr
    assert not (tmp_path / "nowhere").exists()


def test_a_push_to_a_new_folder_whose_parent_exists_makes_a_bare_repository(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"f.txt": "x\n"})
    snap = make()
    snap.snapshot()
    pushed = snap.push(str(tmp_path / "new.git"))
    assert pushed.snapshots_sent == 1
    assert (tmp_path / "new.git" / "HEAD").is_file() and (tmp_path / "new.git" / "objects").is_dir()
    other = tmp_path / "other"
    other.mkdir()
    fetched = make(other, home=tmp_path / "home2").fetch(str(tmp_path / "new.git"), name=pushed.name)
    assert len(fetched.snapshots) == 1
