"""A push that carries an archive commit (docs/remotes.md, "Archives", step 1):
``replication.send`` streams raw objects that are in no store (the empty tree
and the archive commit) in the pack beside the store's, and moves the host's
``archive`` ref in the same round. git is the oracle on the remote: the
repository checks out with ``fsck --strict``, and once the snapshot refs are
deleted (the design's second round) the archive alone keeps every snapshot
reachable. Nothing here yet decides when a push archives (step 2)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import GIT, needs_git, write
from remote_servers import bare_repository, git_daemon, has_git_program

from snapshotter.engine.gitstore import archives, replication
from snapshotter.engine.gitstore.transport import open_remote
from snapshotter.errors import InvalidInput
from snapshotter.remote.remotes import PREFIX, host_id

NAME = "archived"
WHEN = 1_765_000_000


def git(*args: str) -> subprocess.CompletedProcess[str]:
    assert GIT is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run([GIT, *args], capture_output=True, text=True, env=env, check=False)


@contextlib.contextmanager
def serving(kind: str, base: Path) -> Iterator[str]:
    """The location of the bare repository ``base/snaps.git``: over ``git daemon``, or as a folder."""
    bare_repository(base / "snaps.git")
    if kind == "folder":
        yield str(base / "snaps.git")
        return
    if not has_git_program("daemon"):
        pytest.skip("git daemon is not installed with git here")
    with git_daemon(base) as url:
        yield f"{url}/snaps.git"


@needs_git
@pytest.mark.parametrize("kind", ["git-daemon", "folder"])
def test_a_push_carries_an_archive_commit_that_keeps_every_pushed_snapshot_reachable(  # type: ignore[no-untyped-def]
    kind: str, tmp_path: Path, ws: Path, make
) -> None:
    server = tmp_path / "server"
    server.mkdir()
    with serving(kind, server) as location:
        snap = make()
        ids = []
        for i in range(4):
            write(ws, {"a.txt": f"version {i}\n", f"f{i}.txt": "x\n"})
            ids.append(snap.snapshot(f"s{i}").id)
        snap.push(location, name=NAME)
        store = snap._engine_ok().store
        remote = open_remote(location)
        namespace = PREFIX + NAME.encode() + b"/"
        listed = replication.remote_refs(remote, namespace)
        assert {namespace + b"snapshots/" + sha.encode() for sha in ids} <= set(listed)

        extra = archives.archive_objects(None, [bytes.fromhex(sha) for sha in ids], WHEN)
        archive = extra[1][1].hex()
        archive_ref = namespace + b"hosts/" + host_id(store).encode() + b"/archive"
        planned = replication.plan(store, [], list(listed.values()), extra=extra)
        sent = replication.send(store, remote, {archive_ref: archive.encode()}, planned=planned)
        assert (sent.objects, sent.refs_updated, dict(sent.refused)) == (2, 1, {})  # the empty tree, the archive

        # The design's second round: the snapshot refs go; the archive alone reaches the snapshots.
        deletes: dict[bytes, bytes | None] = {namespace + b"snapshots/" + sha.encode(): None for sha in ids}
        gone = replication.send(store, remote, deletes)
        assert (gone.objects, gone.refs_updated, dict(gone.refused)) == (0, len(ids), {})
        remote.release()

    bare = str(server / "snaps.git")
    fsck = git("--git-dir", bare, "fsck", "--strict", "--no-progress")
    noticed = [line for line in fsck.stderr.splitlines() if not line.startswith("notice:")]
    complaints = fsck.stdout.splitlines() + noticed
    assert fsck.returncode == 0 and not complaints, fsck.stdout + fsck.stderr  # nothing missing, nothing dangling
    assert git("--git-dir", bare, "rev-parse", archive_ref.decode()).stdout.strip() == archive
    assert git("--git-dir", bare, "for-each-ref", f"refs/snapshotter/{NAME}/snapshots/").stdout == ""
    logged = git("--git-dir", bare, "log", "--all", "--format=%H").stdout.split()
    assert set(ids) | {archive} <= set(logged)
    assert git("--git-dir", bare, "cat-file", "-t", archives.EMPTY_TREE.hex()).stdout.strip() == "tree"


def test_a_push_with_no_archive_plans_and_sends_no_extra_object(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n"})
    snap = make()
    first = snap.snapshot("first").id
    planned = replication.plan(snap._engine_ok().store, [first.encode()], [])
    assert planned.extra == ()
    assert len(planned.objects) == 3  # the commit, its tree, one blob: nothing else


def test_an_extra_object_whose_id_is_not_its_content_is_refused_before_anything_goes(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n"})
    snap = make()
    first = snap.snapshot("first").id
    tree, commit = archives.archive_objects(None, [bytes.fromhex(first)], WHEN)
    forged = (commit[0], commit[1], commit[2].replace(b"snapshotter archive", b"snapshotter archivE"))
    with pytest.raises(InvalidInput, match="not the object its id names"):
        replication.plan(snap._engine_ok().store, [], [first.encode()], extra=[tree, forged])


@needs_git
@pytest.mark.parametrize("kind", ["git-daemon", "folder"])
def test_an_archive_ref_moved_since_it_was_listed_is_refused_not_overwritten(  # type: ignore[no-untyped-def]
    kind: str, tmp_path: Path, ws: Path, make
) -> None:
    """Round 1 moves ``archive`` only from the value the push listed: one that
    another push moved meanwhile is a refusal, and the other's archive stays."""
    server = tmp_path / "server"
    server.mkdir()
    with serving(kind, server) as location:
        snap = make()
        ids = []
        for i in range(2):
            write(ws, {"a.txt": f"version {i}\n"})
            ids.append(snap.snapshot(f"s{i}").id)
        snap.push(location, name=NAME)
        store = snap._engine_ok().store
        remote = open_remote(location)
        namespace = PREFIX + NAME.encode() + b"/"
        listed = replication.remote_refs(remote, namespace)
        archive_ref = namespace + b"hosts/" + host_id(store).encode() + b"/archive"
        assert archive_ref not in listed
        theirs = archives.archive_objects(None, [bytes.fromhex(ids[0])], WHEN)
        first = replication.plan(store, [], list(listed.values()), extra=theirs)
        assert replication.send(store, remote, {archive_ref: theirs[1][1].hex().encode()}, planned=first).refused == {}

        ours = archives.archive_objects(None, [bytes.fromhex(sha) for sha in ids], WHEN + 1)
        late = replication.plan(store, [], list(listed.values()), extra=ours)
        sent = replication.send(
            store, remote, {archive_ref: ours[1][1].hex().encode()}, planned=late, expected={archive_ref: None}
        )
        remote.release()
    assert list(sent.refused) == [archive_ref.decode()] and sent.refs_updated == 0
    bare = str(server / "snaps.git")
    assert git("--git-dir", bare, "rev-parse", archive_ref.decode()).stdout.strip() == theirs[1][1].hex()
