"""Archive commits (planned remote layout, docs/remotes.md "Archives"): one
commit over the empty tree whose parents are the previous archive and up to
1,000 snapshots, so a remote keeps old snapshots reachable from one ref per
store instead of one ref each. Only their form is built yet: git is the
oracle that accepts it (fsck --strict, log, cat-file), dulwich writes the same
bytes, and no reader takes one for a snapshot."""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest
from remote_servers import GIT

from snapshotter.engine.gitstore import archives
from snapshotter.engine.gitstore.objects import object_id
from snapshotter.engine.gitstore.objectwriter import ObjectWriter
from snapshotter.engine.gitstore.trailers import IDENTITY, build_commit, is_snapshot_commit
from snapshotter.errors import InvalidInput

WHEN = 1_765_000_000


def _snapshot(seq: int, tree: bytes = archives.EMPTY_TREE) -> bytes:
    """A snapshot commit's raw text, as the engine records one."""
    when = datetime.fromtimestamp(WHEN + seq, timezone.utc)
    return build_commit(tree, f"s{seq}", seq=seq, label=None, metadata={}, stats=(0, 0, 0), skipped=[], when=when).raw


def _ids(count: int) -> list[bytes]:
    return [object_id(b"commit", _snapshot(seq)) for seq in range(1, count + 1)]


def test_an_archive_reads_back_as_its_previous_archive_and_snapshots_in_order() -> None:
    snaps = _ids(5)
    first = archives.build_archive(None, snaps[:3], WHEN)
    assert archives.read_archive(first) == archives.Archive(None, tuple(snaps[:3]))
    second = archives.build_archive(object_id(b"commit", first), snaps[3:], WHEN + 1)
    assert archives.read_archive(second) == archives.Archive(object_id(b"commit", first), tuple(snaps[3:]))


def test_an_archive_is_no_snapshot_and_a_snapshot_is_no_archive() -> None:
    raw = archives.build_archive(None, _ids(2), WHEN)
    assert not is_snapshot_commit(raw)
    assert archives.read_archive(_snapshot(1)) is None


def test_an_archive_is_the_commit_dulwich_writes_for_the_same_fields() -> None:
    from dulwich.objects import Commit

    previous, snaps = b"\x01" * 20, _ids(3)
    commit = Commit()
    commit.tree = archives.EMPTY_TREE.hex().encode()
    commit.parents = [sha.hex().encode() for sha in [previous, *snaps]]
    commit.author = commit.committer = IDENTITY
    commit.author_time = commit.commit_time = WHEN
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = b"snapshotter archive\n\nSnapshotter-Archive: 3\n"
    assert archives.build_archive(previous, snaps, WHEN) == commit.as_raw_string()


@pytest.mark.parametrize(
    "previous, count, why",
    [(None, 0, "no snapshot"), (None, archives.MAX_SNAPSHOTS + 1, "too many"), (b"\x01" * 19, 2, "short id")],
)
def test_an_archive_that_could_not_be_read_back_is_refused(previous: bytes | None, count: int, why: str) -> None:
    with pytest.raises(InvalidInput):
        archives.build_archive(previous, _ids(count), WHEN)


def test_an_archive_naming_a_snapshot_twice_or_itself_as_previous_is_refused() -> None:
    snaps = _ids(2)
    with pytest.raises(InvalidInput):
        archives.build_archive(None, [snaps[0], snaps[0]], WHEN)
    with pytest.raises(InvalidInput):
        archives.build_archive(snaps[0], snaps, WHEN)


@pytest.mark.parametrize(
    "raw",
    [
        b"tree " + b"ab" * 20 + b"\nauthor a <a> 0 +0000\ncommitter a <a> 0 +0000\n\nsnapshotter archive\n\n"
        b"Snapshotter-Archive: 0\n",
        b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nparent " + b"ab" * 20 + b"\n"
        b"author a <a> 0 +0000\ncommitter a <a> 0 +0000\n\nsnapshotter archive\n\nSnapshotter-Archive: 3\n",
        b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nparent " + b"ab" * 20 + b"\n"
        b"author a <a> 0 +0000\ncommitter a <a> 0 +0000\n\nsnapshotter archive\n\nSnapshotter-Archive: x\n",
        b"\xff" * 30,
    ],
    ids=["other tree, no parent", "count over parents", "count not a number", "not a commit"],
)
def test_what_is_not_an_archive_reads_as_none(raw: bytes) -> None:
    assert archives.read_archive(raw) is None


def test_archive_objects_carry_the_empty_tree_with_the_commit() -> None:
    objects = archives.archive_objects(None, _ids(2), WHEN)
    assert [(kind, sha) for kind, sha, _ in objects][0] == (2, archives.EMPTY_TREE)
    assert object_id(b"tree", objects[0][2]) == archives.EMPTY_TREE
    kind, sha, content = objects[1]
    assert kind == 1 and sha == object_id(b"commit", content)


def _git(repo: Path, *args: str) -> str:
    assert GIT is not None
    done = subprocess.run([GIT, "-C", str(repo), *args], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


@pytest.mark.skipif(GIT is None, reason="git is the oracle here")
def test_git_accepts_a_chain_of_full_archives_and_reaches_every_snapshot_through_it(tmp_path: Path) -> None:
    """1,005 snapshots behind two archives (1,000 parents, then the first and 5):
    fsck --strict is clean, and git's log of the one ref lists them all."""
    repo = tmp_path / "remote.git"
    _git(tmp_path, "init", "-q", "--bare", str(repo))
    writer = ObjectWriter(str(repo / "objects"), lambda sha, relist: False)
    count = archives.MAX_SNAPSHOTS + 5
    with writer.batch():
        tree = writer.write(b"tree", b"")
        assert tree == archives.EMPTY_TREE
        snaps = [writer.write(b"commit", _snapshot(seq)) for seq in range(1, count + 1)]
        first_objects = archives.archive_objects(None, snaps[: archives.MAX_SNAPSHOTS], WHEN)
        first = writer.write(b"commit", first_objects[1][2])
        tip = writer.write(b"commit", archives.build_archive(first, snaps[archives.MAX_SNAPSHOTS :], WHEN + 1))
    ref = repo / "refs" / "snapshotter" / "ws" / "hosts" / "0123456789abcdef" / "archive"
    ref.parent.mkdir(parents=True)
    ref.write_text(tip.hex() + "\n")
    fsck = _git(repo, "fsck", "--strict", "--no-dangling")
    assert "error" not in fsck and "warning" not in fsck, fsck
    listed = _git(repo, "log", "--all", "--format=%H").split()
    assert len(listed) == count + 2
    assert set(listed) == {sha.hex() for sha in [*snaps, first, tip]}
    shown = _git(repo, "cat-file", "-p", tip.hex())
    assert shown.splitlines()[:2] == [f"tree {archives.EMPTY_TREE.hex()}", f"parent {first.hex()}"]
    assert _git(repo, "cat-file", "-p", first.hex()).count("\nparent ") == archives.MAX_SNAPSHOTS
