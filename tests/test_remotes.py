"""Snapshots on git remotes: push, fetch, list, clone, over real servers on loopback.

Each transport runs the same checks: a push, a second push of 10 changed files
that sends only the new objects (counted against the trees), a fetch into a
fresh home and folder restored byte for byte, ``git fsck --strict`` on the
server's repository, and the real git listing and fetching the namespace.
git is the server (daemon, http-backend, upload/receive-pack behind the SSH
server) and the oracle; these tests skip without it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import GIT, contents, loosen, needs_git, write
from remote_servers import bare_repository, git_daemon, has_git_program, http_backend, ssh_server

from snapshotter import Credentials, PushRefused, RemoteAuthError, RemoteError, SnapshotError, Snapshotter, UnsafeTree
from snapshotter.engine.gitstore.objects import MODE_TREE
from snapshotter.engine.gitstore.replication import reachable

pytestmark = needs_git
TRANSPORTS = ["path", "file", "git", "http", "ssh"]
USER, PASSWORD = "agent", "s3cret-token-value"


@contextlib.contextmanager
def serving(kind: str, base: Path) -> Iterator[tuple[str, Credentials | None]]:
    """(the remote's location, the credentials it needs) for repository ``base/snaps.git``."""
    bare_repository(base / "snaps.git")
    if kind == "path":
        yield str(base / "snaps.git"), None
    elif kind == "file":
        yield (base / "snaps.git").as_uri(), None
    elif kind == "git":
        if not has_git_program("daemon"):
            pytest.skip("git daemon is not installed with git here")
        with git_daemon(base) as url:
            yield f"{url}/snaps.git", None
    elif kind == "http":
        if not has_git_program("http-backend"):
            pytest.skip("git http-backend is not installed with git here")
        with http_backend(base, USER, PASSWORD) as (url, _):
            yield f"{url}/snaps.git", Credentials(USER, PASSWORD)
    else:
        pytest.importorskip("paramiko")
        with ssh_server(base, base / "keys") as end:
            creds = Credentials(end.user, key_file=end.key_file, known_hosts=end.known_hosts)
            yield f"ssh://{end.user}@{end.host}:{end.port}/snaps.git", creds


def git(*args: str, cwd: Path | None = None) -> str:
    assert GIT is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run([GIT, *args], cwd=cwd, capture_output=True, text=True, env=env, check=True)
    return done.stdout


def new_objects(snap: Snapshotter, old: str, new: str) -> int:
    """Objects the commit ``new`` reaches that ``old`` does not: what an exact push sends."""
    store = snap._engine_ok().store
    known: set[bytes] = set()
    reachable(store, [bytes.fromhex(old)], known)
    return len(reachable(store, [bytes.fromhex(new)], known))


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_push_fetch_restore_and_git_reads_it(kind: str, tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    files = {f"src/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(40)}
    write(ws, {**files, "README.md": "readme\n", ".env": "SECRET=never-leaves\n"})
    with serving(kind, tmp_path / "server") as (location, creds):
        snap = make()
        first = snap.snapshot("first")
        pushed = snap.push(location, credentials=creds)
        everything = len(reachable(snap._engine_ok().store, [bytes.fromhex(first.id)]))
        assert pushed.snapshots_sent == 1 and pushed.objects_sent == everything  # 41 blobs, 2 trees, 1 commit
        write(ws, {f"src/m{i}.py": f"def f{i}():\n    return {i + 100}\n" for i in range(10)})
        second = snap.snapshot("second")
        again = snap.push(location, credentials=creds)
        assert again.snapshots_sent == 1
        assert again.objects_sent == new_objects(snap, first.id, second.id)  # 10 blobs, 2 trees, 1 commit
        assert snap.push(location, credentials=creds).objects_sent == 0  # nothing new: nothing sent

        other, other_home = tmp_path / "elsewhere", tmp_path / "other-home"
        other.mkdir()
        with Snapshotter(other, home=other_home) as there:
            listed = Snapshotter.remote_workspaces(location, credentials=creds)
            assert [(w.name, w.snapshots) for w in listed] == [(pushed.name, 2)]
            fetched = there.fetch(location, name=pushed.name, credentials=creds)
            assert [s.id for s in fetched.snapshots] == [first.id, second.id]  # the same ids, in order
            there.restore(second.id)
            assert contents(other) == {k: v for k, v in contents(ws).items() if k != ".env"}
            assert there.get(first.id).message == "first"

    server = tmp_path / "server" / "snaps.git"
    git("--git-dir", str(server), "fsck", "--strict")
    refs = git("--git-dir", str(server), "for-each-ref", "--format=%(refname)")
    assert all(line.startswith(f"refs/snapshotter/{pushed.name}/") for line in refs.split())
    clone = tmp_path / "real-git"
    git("init", "-q", str(clone))
    git("fetch", "-q", str(server), f"refs/snapshotter/{pushed.name}/snapshots/*:refs/x/*", cwd=clone)
    assert set(git("log", "--format=%s", "--all", cwd=clone).split()) == {"first", "second"}
    assert b"never-leaves" not in b"".join(p.read_bytes() for p in server.rglob("*") if p.is_file())


@pytest.mark.parametrize("kind", ["git", "http"])
def test_a_push_of_a_pack_past_the_socket_buffer_goes_through_whole(kind: str, tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """A pack of several MiB, incompressible: over git:// dulwich wrote it with one
    send() a call, its count unread, on a socket the read budget had given a
    timeout; past the socket's buffer a part went and the push hung until the
    idle timeout ("sent nothing for 15 s"). Found by the big-file branch."""
    data = os.urandom(7 << 20)
    write(ws, {"small.txt": "small\n"})
    (ws / "blob.bin").write_bytes(data)
    with serving(kind, tmp_path / "server") as (location, creds):
        snap = make()
        first = snap.snapshot("big")
        pushed = snap.push(location, credentials=creds)
        assert pushed.snapshots_sent == 1
        other = tmp_path / "elsewhere"
        other.mkdir()
        with Snapshotter(other, home=tmp_path / "other-home") as there:
            there.fetch(location, name=pushed.name, credentials=creds)
            there.restore(first.id)
        assert (other / "blob.bin").read_bytes() == data


def test_two_machines_push_one_namespace_without_overwriting(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    server = bare_repository(tmp_path / "shared.git")
    a_ws, b_ws = tmp_path / "a", tmp_path / "b"
    write(a_ws, {"f": "a\n"})
    write(b_ws, {"f": "b\n"})
    a, b = make(a_ws, home=tmp_path / "home-a"), make(b_ws, home=tmp_path / "home-b")
    a.checkpoint()
    b.checkpoint()
    a.push(str(server), name="project")
    b.push(str(server), name="project")
    a.push(str(server), name="project")
    listed = Snapshotter.remote_workspaces(str(server))
    assert [(w.name, w.snapshots, w.hosts) for w in listed] == [("project", 2, 2)]
    refs = git("--git-dir", str(server), "for-each-ref", "--format=%(refname)").split()
    assert len([r for r in refs if "/undo/" in r]) == 2  # each machine's undo stack, side by side


def test_prune_deletes_only_what_this_store_pushed_and_dropped(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    from snapshotter import Retention

    server = bare_repository(tmp_path / "r.git")
    write(ws, {"f": "0\n"})
    snap = make(retention=Retention(max_snapshots=2, max_undo=0, max_age=None))
    for i in range(4):
        write(ws, {"f": f"{i}\n"})
        snap.snapshot(f"s{i}")
        snap.push(str(server), name="n")
    kept = {s.id for s in snap.list(limit=None)}
    assert len(kept) == 2
    assert Snapshotter.remote_workspaces(str(server))[0].snapshots == 4
    result = snap.push(str(server), name="n", prune=True)
    assert result.pruned == 2
    refs = git("--git-dir", str(server), "for-each-ref", "--format=%(refname)").split()
    assert {r.rpartition("/")[2] for r in refs if "/snapshots/" in r} == kept
    git("--git-dir", str(server), "fsck", "--strict")


def test_clone_fills_a_new_folder_in_one_call(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    server = bare_repository(tmp_path / "r.git")
    write(ws, {"app.py": "print(1)\n", "lib/x.py": "x\n"})
    snap = make()
    snap.snapshot("v1", label="release")
    name = snap.push(str(server)).name
    with Snapshotter.clone(str(server), name, "release", tmp_path / "copy", home=tmp_path / "h2") as copy:
        assert contents(tmp_path / "copy") == contents(ws)
        assert copy.get("release").message == "v1"


def test_a_file_over_the_push_limit_refuses_before_anything_is_sent(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    server = bare_repository(tmp_path / "r.git")
    write(ws, {"small.txt": "ok\n", "data/big.bin": "x" * 5000})
    snap = make(max_push_file_size=1000)
    snap.snapshot()
    with pytest.raises(PushRefused, match="data/big.bin"):
        snap.push(str(server))
    assert git("--git-dir", str(server), "for-each-ref") == ""
    assert not list((server / "objects" / "pack").glob("*.pack"))


def test_a_server_that_is_down_is_a_typed_one_line_error(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    from remote_servers import free_port

    write(ws, {"f": "1\n"})
    snap = make()
    snap.snapshot()
    with pytest.raises(RemoteError) as caught:
        snap.push(f"git://127.0.0.1:{free_port()}/nothing.git")
    assert "\n" not in str(caught.value)


def test_wrong_credentials_are_refused_and_never_shown(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"f": "1\n"})
    snap = make()
    snap.snapshot()
    bare_repository(tmp_path / "srv" / "snaps.git")
    with http_backend(tmp_path / "srv", USER, PASSWORD) as (url, _):
        wrong = "wrong-" + PASSWORD
        with pytest.raises(RemoteAuthError) as caught:
            snap.push(f"http://{USER}:{wrong}@{url.removeprefix('http://')}/snaps.git")
        assert wrong not in str(caught.value) and PASSWORD not in str(caught.value)
        with pytest.raises(RemoteAuthError):
            snap.push(f"{url}/snaps.git")  # no credentials at all
        assert snap.push(f"{url}/snaps.git", credentials=Credentials(USER, PASSWORD)).snapshots_sent == 1


def test_a_push_cut_off_midway_leaves_no_ref_to_a_missing_object(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {f"f{i}.txt": f"{i}\n" * 200 for i in range(60)})
    snap = make()
    snap.snapshot()
    bare_repository(tmp_path / "srv" / "snaps.git")
    server = tmp_path / "srv" / "snaps.git"
    with http_backend(tmp_path / "srv", USER, PASSWORD) as (url, control):
        creds = Credentials(USER, PASSWORD)
        control.cut_push_after = 2000
        with pytest.raises(RemoteError):
            snap.push(f"{url}/snaps.git", credentials=creds)
        assert control.pushes_cut == 1
        assert git("--git-dir", str(server), "for-each-ref") == ""  # no ref, so none can name a missing object
        control.cut_push_after = None
        assert snap.push(f"{url}/snaps.git", credentials=creds).snapshots_sent == 1
    git("--git-dir", str(server), "fsck", "--strict")


def test_a_hostile_remote_cannot_make_a_restore_write_outside(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """A remote serving a snapshot whose tree holds ``..`` or ``.git``: the fetch takes
    the objects, and the restore refuses before writing anything."""
    from dulwich.objects import Blob, Commit, Tree
    from dulwich.repo import Repo

    server = bare_repository(tmp_path / "evil.git")
    repo = Repo(str(server))
    blob = Blob.from_string(b"owned\n")
    inner = Tree()
    inner.add(b"payload", 0o100644, blob.id)
    for bad in (b"..", b".git"):
        root = Tree()
        root.add(bad, MODE_TREE, inner.id)
        commit = Commit()
        commit.tree, commit.parents = root.id, []
        commit.author = commit.committer = b"x <x@x>"
        commit.author_time = commit.commit_time = 1_700_000_000
        commit.author_timezone = commit.commit_timezone = 0
        commit.message = b"looks like one\n\nSnapshot-Seq: 1\n"
        for item in (blob, inner, root, commit):
            repo.object_store.add_object(item)
        repo.refs[b"refs/snapshotter/evil/snapshots/" + commit.id] = commit.id
    repo.close()
    ws = tmp_path / "victim"
    write(ws, {"mine.txt": "mine\n"})
    snap = make(ws, home=tmp_path / "victim-home")
    fetched = snap.fetch(str(server), name="evil")
    assert len(fetched.snapshots) == 2
    for info in fetched.snapshots:
        with pytest.raises(UnsafeTree):
            snap.restore(info.id)
    assert contents(ws) == {"mine.txt": b"mine\n"} and not (tmp_path / "payload").exists()


def test_remote_settings_come_from_the_caller_never_the_workspace(tmp_path: Path, ws: Path) -> None:
    from conftest import run_command

    write(ws, {"f": "1\n", "snapshotter.toml": f'remote = "{tmp_path / "stolen.git"}"\nauto_push = true\n'})
    done = run_command("-C", str(ws), "push", env={"SNAPSHOTTER_HOME": str(tmp_path / "h")})
    assert done.returncode != 0 and "no remote" in done.stderr
    assert not (tmp_path / "stolen.git").exists()


def test_the_command_line_pushes_lists_fetches_and_clones(tmp_path: Path, ws: Path) -> None:
    import json

    from conftest import run_command

    server = bare_repository(tmp_path / "cli.git")
    env = {"SNAPSHOTTER_HOME": str(tmp_path / "h")}
    write(ws, {"a.txt": "a\n"})

    def cli(*args: str, **extra: str) -> dict:  # type: ignore[type-arg]
        done = run_command(*args, "--json", env={**env, **extra})
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["result"]  # type: ignore[no-any-return]

    cli("-C", str(ws), "snapshot", "-m", "one", "--label", "v1")
    pushed = cli("-C", str(ws), "push", str(server), "--name", "proj")
    assert pushed["snapshots_sent"] == 1 and pushed["name"] == "proj"
    assert cli("-C", str(ws), "remote", "list", str(server)) == [{"name": "proj", "snapshots": 1, "hosts": 1}]
    with_setting = cli("-C", str(ws), "push", "--name", "proj", SNAPSHOTTER_REMOTE=str(server))
    assert with_setting["snapshots_sent"] == 0
    other = tmp_path / "other"
    other.mkdir()
    fetched = cli("-C", str(other), "fetch", str(server), "--name", "proj", SNAPSHOTTER_HOME=str(tmp_path / "h2"))
    assert [s["message"] for s in fetched["snapshots"]] == ["one"]
    cloned = cli("clone", str(server), "proj", "v1", str(tmp_path / "copy"), SNAPSHOTTER_HOME=str(tmp_path / "h3"))
    assert cloned["snapshot"]["label"] == "v1" and (tmp_path / "copy" / "a.txt").read_text() == "a\n"


def test_auto_push_runs_in_the_background_and_close_flushes_it(tmp_path: Path, ws: Path) -> None:
    server = bare_repository(tmp_path / "auto.git")
    write(ws, {"f": "0\n"})
    with Snapshotter(ws, home=tmp_path / "h", remote=str(server), remote_name="auto", auto_push=True) as snap:
        for i in range(5):  # a burst: coalesced, never waited for
            write(ws, {"f": f"{i}\n"})
            snap.snapshot(f"s{i}")
        local = {s.id for s in snap.list(limit=None)}
    refs = git("--git-dir", str(server), "for-each-ref", "--format=%(refname)").split()
    assert {r.rpartition("/")[2] for r in refs if "/snapshots/" in r} == local  # close() pushed the last ones
    git("--git-dir", str(server), "fsck", "--strict")


def test_push_async_returns_at_once_and_a_failure_reaches_the_caller(tmp_path: Path, ws: Path) -> None:
    from remote_servers import free_port

    server = bare_repository(tmp_path / "a.git")
    write(ws, {"f": "0\n"})
    snap = Snapshotter(ws, home=tmp_path / "h", remote=str(server))
    snap.snapshot()
    assert snap.push_async().result(timeout=60).snapshots_sent == 1
    snap.close()
    down = Snapshotter(ws, home=tmp_path / "h", remote=f"git://127.0.0.1:{free_port()}/x.git", auto_push=True)
    down.snapshot("the push of this one fails")
    with pytest.raises(RemoteError):
        down.close(push_timeout=3)
    quiet = Snapshotter(
        ws, home=tmp_path / "h", remote=f"git://127.0.0.1:{free_port()}/x.git", auto_push=True, on_error="warn"
    )
    quiet.snapshot("and this one")
    quiet.close(push_timeout=2)  # warn mode: logged, not raised


def test_a_local_gc_changes_nothing_about_what_a_push_sends(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    server = bare_repository(tmp_path / "r.git")
    write(ws, {f"f{i}": f"{i}\n" for i in range(30)})
    snap = make()
    first = snap.snapshot()
    snap.push(str(server), name="n")
    snap.gc()  # every object repacked into a new pack
    assert snap.push(str(server), name="n").objects_sent == 0
    write(ws, {"f1": "changed\n"})
    second = snap.snapshot()
    assert snap.push(str(server), name="n").objects_sent == new_objects(snap, first.id, second.id) == 3


def test_a_damaged_pack_from_a_remote_is_refused_and_nothing_is_listed(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    server = bare_repository(tmp_path / "r.git")
    write(ws, {f"f{i}.txt": f"content {i}\n" * 50 for i in range(20)})
    snap = make()
    snap.snapshot()
    snap.push(str(server), name="n")
    git("--git-dir", str(server), "gc", "-q")
    pack = next((server / "objects" / "pack").glob("*.pack"))
    data = bytearray(pack.read_bytes())
    for at in range(200, len(data) - 200, 97):  # bytes in the middle of many objects' compressed data
        data[at] ^= 0xFF
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))
    other = tmp_path / "other"
    other.mkdir()
    with Snapshotter(other, home=tmp_path / "h2") as there:
        with pytest.raises(RemoteError):
            there.fetch(str(server), name="n")
        assert there.list(limit=None) == [] and there.verify(full=True).ok


def test_config_never_prints_a_remotes_password(tmp_path: Path, ws: Path) -> None:
    from conftest import run_command

    env = {"SNAPSHOTTER_HOME": str(tmp_path / "h"), "SNAPSHOTTER_REMOTE": "https://bot:hunter2-token@example.com/s.git"}
    done = run_command("-C", str(ws), "config", env=env)
    assert done.returncode == 0 and "example.com/s.git" in done.stdout
    assert "hunter2" not in done.stdout and "hunter2" not in done.stderr


def test_a_token_given_as_the_urls_user_is_never_shown(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """GitHub takes ``https://<token>@host/repo``: the token is the user part, and
    must leave every result, message and printed line as a password does."""
    from conftest import run_command

    token = "ghp_S3CRETTOKEN123"
    write(ws, {"f": "1\n"})
    make().snapshot()
    bare_repository(tmp_path / "srv" / "snaps.git")
    with http_backend(tmp_path / "srv", token, "") as (url, _):
        location = url.replace("http://", f"http://{token}@")
        snap = make()
        assert token not in snap.push(f"{location}/snaps.git").remote
        with pytest.raises(RemoteError) as caught:
            snap.push(f"{location}/missing.git")
        assert token not in str(caught.value)
        done = run_command(
            "-C", str(ws), "push", f"{location}/snaps.git", env={"SNAPSHOTTER_HOME": str(tmp_path / "home")}
        )
        assert done.returncode == 0 and "pushed" in done.stdout and token not in done.stdout + done.stderr


def test_an_ipv6_http_remote_works(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    import socket

    try:
        socket.socket(socket.AF_INET6).bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    write(ws, {"f": "1\n"})
    snap = make()
    snap.snapshot()
    bare_repository(tmp_path / "srv" / "snaps.git")
    with http_backend(tmp_path / "srv", USER, PASSWORD, host="::1") as (url, _):
        assert url.startswith("http://[::1]:")
        assert snap.push(f"{url}/snaps.git", credentials=Credentials(USER, PASSWORD)).snapshots_sent == 1


@pytest.mark.parametrize("url", ["http://host:abc/x.git", "git://host:99999/x.git", "http://tok@[::1/x.git"])
def test_a_malformed_remote_url_is_a_typed_error(url: str, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    from snapshotter import InvalidInput

    write(ws, {"f": "1\n"})
    snap = make()
    snap.snapshot()
    with pytest.raises(InvalidInput) as caught:
        snap.push(url)
    assert "tok" not in str(caught.value)


def test_prune_never_deletes_a_snapshot_another_store_pushed(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    from snapshotter import Retention

    server = bare_repository(tmp_path / "r.git")
    write(tmp_path / "a", {"f": "a\n"})
    write(tmp_path / "b", {"f": "b\n"})
    a = make(tmp_path / "a", home=tmp_path / "ha")
    theirs = a.snapshot("A's")
    a.push(str(server), name="proj")
    b = make(tmp_path / "b", home=tmp_path / "hb", retention=Retention(max_snapshots=2, max_undo=0, max_age=None))
    b.fetch(str(server), name="proj")
    b.snapshot("B's first")
    b.push(str(server), name="proj")  # A's is there already: B sends it not, so it is not B's to prune
    write(tmp_path / "b", {"g": "b\n"})
    b.snapshot("B's second")  # retention drops A's snapshot here
    assert theirs.id not in {s.id for s in b.list(limit=None)}
    assert b.push(str(server), name="proj", prune=True).pruned == 0
    refs = git("--git-dir", str(server), "for-each-ref", "--format=%(refname)")
    assert f"/snapshots/{theirs.id}" in refs


def test_a_push_racing_the_background_push_succeeds(tmp_path: Path, ws: Path, make, caplog) -> None:  # type: ignore[no-untyped-def]
    server = bare_repository(tmp_path / "r.git")
    snap = make(remote=str(server), remote_name="n", auto_push=True)
    failures = []
    for i in range(40):
        write(ws, {"f": f"{i}\n"})
        snap.snapshot(f"s{i}")
        try:
            snap.push()
        except Exception as exc:  # noqa: BLE001 (every kind of failure is what is counted)
            failures.append(f"{type(exc).__name__}: {exc}")
    snap.close(push_timeout=30)
    assert failures == [] and "background push failed" not in caplog.text
    refs = git("--git-dir", str(server), "for-each-ref", "--format=%(refname)")
    assert {r.rpartition("/")[2] for r in refs.split() if "/snapshots/" in r} == {s.id for s in snap.list(limit=None)}


def test_the_push_limit_refuses_before_a_ref_update_is_sent(tmp_path: Path, ws: Path, make, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import dulwich.protocol

    if not has_git_program("daemon"):
        pytest.skip("git daemon is not installed with git here")
    written: list[bytes] = []
    original = dulwich.protocol.Protocol.write_pkt_line

    def spy(self, line):  # type: ignore[no-untyped-def]
        written.append(line or b"")
        return original(self, line)

    monkeypatch.setattr(dulwich.protocol.Protocol, "write_pkt_line", spy)
    write(ws, {"big.bin": "x" * 5000})
    snap = make(max_push_file_size=1000)
    snap.snapshot()
    bare_repository(tmp_path / "srv" / "r.git")
    with git_daemon(tmp_path / "srv") as url, pytest.raises(PushRefused, match="big.bin"):
        snap.push(f"{url}/r.git")
    assert not [line for line in written if b"receive-pack" in line]  # not even a connection to take a push


def test_push_async_goes_where_each_call_says(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    a, b = bare_repository(tmp_path / "a.git"), bare_repository(tmp_path / "b.git")
    write(ws, {"f": "1\n"})
    snap = make()
    snap.snapshot()
    assert snap.push_async(str(a), name="one").result(60).name == "one"
    second = snap.push_async(str(b), name="two").result(60)
    assert (second.remote, second.name, second.snapshots_sent) == (str(b), "two", 1)
    assert [w.name for w in Snapshotter.remote_workspaces(str(b))] == ["two"]


def test_background_pushes_use_the_credentials_a_push_would(tmp_path: Path, ws: Path) -> None:
    """The user config's ``[credentials]`` reach the auto_push after ``snapshot``, as
    they reach ``push``; and a Snapshotter's own ``credentials=`` reach its pushes."""
    from conftest import run_command

    config = tmp_path / "user.toml"
    config.write_text(f'[credentials]\nusername = "{USER}"\npassword = "{PASSWORD}"\n')
    write(ws, {"f": "1\n"})
    bare_repository(tmp_path / "srv" / "snaps.git")
    with http_backend(tmp_path / "srv", USER, PASSWORD) as (url, _):
        env = {"SNAPSHOTTER_HOME": str(tmp_path / "h"), "SNAPSHOTTER_CONFIG": str(config)}
        env |= {"SNAPSHOTTER_REMOTE": f"{url}/snaps.git", "SNAPSHOTTER_AUTO_PUSH": "true"}
        done = run_command("-C", str(ws), "snapshot", "-m", "one", env=env)
        assert done.returncode == 0, done.stderr
        assert PASSWORD not in done.stdout + done.stderr
        assert Snapshotter.remote_workspaces(f"{url}/snaps.git", credentials=Credentials(USER, PASSWORD))[0].snapshots
        write(ws, {"f": "2\n"})
        creds = Credentials(USER, PASSWORD)
        with Snapshotter(ws, home=tmp_path / "h", remote=f"{url}/snaps.git", credentials=creds) as snap:
            snap.snapshot("two")
            assert snap.push_async().result(60).snapshots_sent == 1


def test_close_returns_once_the_background_push_has_failed(tmp_path: Path, ws: Path) -> None:
    import time

    from remote_servers import free_port

    write(ws, {"f": "0\n"})
    down = Snapshotter(ws, home=tmp_path / "h", remote=f"git://127.0.0.1:{free_port()}/x.git", auto_push=True)
    for i in range(3):
        write(ws, {"f": f"{i}\n"})
        down.snapshot()
    started = time.monotonic()
    with pytest.raises(RemoteError):
        down.close()  # the default push_timeout is a minute: a known failure need not wait it out
    assert time.monotonic() - started < 15


def test_a_wrong_ssh_key_is_refused_as_an_auth_error(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    paramiko = pytest.importorskip("paramiko")
    write(ws, {"f": "1\n"})
    snap = make()
    snap.snapshot()
    other_key = tmp_path / "other_id"
    paramiko.RSAKey.generate(2048).write_private_key_file(str(other_key))
    bare_repository(tmp_path / "srv" / "snaps.git")
    with ssh_server(tmp_path / "srv", tmp_path / "keys") as end:
        wrong = Credentials(end.user, key_file=str(other_key), known_hosts=end.known_hosts)
        with pytest.raises(RemoteAuthError) as caught:
            snap.push(f"ssh://{end.user}@{end.host}:{end.port}/snaps.git", credentials=wrong)
        assert "\n" not in str(caught.value)


@pytest.mark.parametrize("where", ["zlib stream", "entry header"])
def test_a_damaged_object_in_this_store_is_never_sent(tmp_path: Path, ws: Path, make, where: str) -> None:  # type: ignore[no-untyped-def]
    """One damaged byte in a packed object refuses the push with a typed error
    that blames this store, never the remote, and the remote holds no ref."""
    import hashlib

    from snapshotter import SnapshotError
    from snapshotter.engine.gitstore.packread import PackIndex

    write(ws, {f"f{i}.txt": f"line {i} of a file worth compressing\n" * 20 for i in range(64)})
    snap = make()
    snap.snapshot()
    (pack,) = (Path(snap._engine_ok().store.path) / "objects" / "pack").glob("*.pack")  # this many new files: one pack
    entries = PackIndex.read(str(pack.with_suffix(".idx"))).entries()
    start = max(offset for _, offset, _ in entries)  # the last entry: the commit
    raw = bytearray(pack.read_bytes()[:-20])
    raw[start + (0 if where == "entry header" else 10)] ^= 0x55
    pack.write_bytes(bytes(raw) + hashlib.sha1(bytes(raw)).digest())
    snap.close()
    server = bare_repository(tmp_path / "r.git")
    with pytest.raises(SnapshotError) as caught:
        make().push(str(server))
    assert "\n" not in str(caught.value) and "r.git" not in str(caught.value)
    assert git("--git-dir", str(server), "for-each-ref") == ""


def test_a_packed_object_is_sent_as_stored_only_if_it_matches_its_id(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """A push copies whole packed objects as stored, without compressing them
    again, yet checks each against its id first. Here a pack holds a blob under
    its id with other content, in a well-formed entry: only that check stands
    between it and the remote."""
    from snapshotter import SnapshotError
    from snapshotter.engine.gitstore.objects import object_id
    from snapshotter.engine.gitstore.packs import PackBuilder

    write(ws, {"a.txt": "genuine\n", "b.txt": "b\n"})
    snap = make()
    snap.snapshot()
    loosen(snap)
    store = snap._engine_ok().store
    blob = object_id(b"blob", b"genuine\n")
    loose = Path(store.path) / "objects" / blob.hex()[:2] / blob.hex()[2:]
    loose.unlink()  # the genuine copy goes; a forged one stands in a pack under its id
    builder = PackBuilder(str(Path(store.path) / "objects" / "pack"))
    builder.add(b"blob", blob, b"forged!\n")
    assert builder.finish() is not None
    snap.close()
    server = bare_repository(tmp_path / "r.git")
    with pytest.raises(SnapshotError, match=f"object {blob.hex()} .*damaged"):
        make().push(str(server))
    assert git("--git-dir", str(server), "for-each-ref") == ""


def _serving() -> list[str]:
    """The test HTTP servers' threads still serving a connection, a second on."""
    deadline = time.monotonic() + 1
    while time.monotonic() < deadline:
        names = [t.name for t in threading.enumerate() if "process_request" in t.name]
        if not names:
            return []
        time.sleep(0.02)
    return names


def test_a_push_refused_for_its_credentials_leaves_no_connection_open(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """dulwich raises on a 401 without closing the response, which holds its
    connection; the error a caller keeps holds dulwich's (its context) and so
    that response: the socket stayed open until the caller let go of the error
    and the garbage collector came (a later test saw the server's thread still
    serving)."""
    if not has_git_program("http-backend"):
        pytest.skip("git http-backend is not installed with git here")
    write(ws, {"f": "1\n"})
    snap = make()
    snap.snapshot()
    bare_repository(tmp_path / "srv" / "snaps.git")
    gc.disable()
    try:
        with http_backend(tmp_path / "srv", USER, PASSWORD) as (url, _):
            with pytest.raises(RemoteAuthError) as refused:
                snap.push(f"{url}/snaps.git", credentials=Credentials(USER, "wrong-" + PASSWORD))
            assert _serving() == [] and refused.value  # the error is still held
            with pytest.raises(SnapshotError) as missing:
                snap.fetch(f"{url}/missing.git", credentials=Credentials(USER, PASSWORD))  # a 404
            assert _serving() == [] and missing.value
    finally:
        gc.enable()


def test_no_connection_stays_open_after_a_push_or_a_fetch(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """The HTTP client keeps its connection for reuse: once a push or fetch
    returns it is closed, so the server's thread serving it ends (left open, it
    would end only when the client object is garbage-collected)."""
    if not has_git_program("http-backend"):
        pytest.skip("git http-backend is not installed with git here")
    serving = _serving

    write(ws, {"f": "1\n"})
    snap = make()
    snap.snapshot()
    bare_repository(tmp_path / "srv" / "snaps.git")
    gc.disable()  # the client's pool must be closed by the library, not by the collector
    try:
        with http_backend(tmp_path / "srv", USER, PASSWORD) as (url, _):
            snap.push(f"{url}/snaps.git", credentials=Credentials(USER, PASSWORD))
            assert serving() == []
            write(ws, {"f": "2\n"})
            snap.snapshot()
            snap.push_async(f"{url}/snaps.git", credentials=Credentials(USER, PASSWORD)).result(timeout=60)
            assert serving() == [], "the background pusher keeps its remote between pushes, not its connection"
            snap.fetch(f"{url}/snaps.git", credentials=Credentials(USER, PASSWORD))
            assert serving() == []
            Snapshotter.remote_workspaces(f"{url}/snaps.git", credentials=Credentials(USER, PASSWORD))
            assert serving() == []
    finally:
        gc.enable()
