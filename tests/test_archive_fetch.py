"""Fetch and clone over archives (docs/remotes.md, "Archives", "Fetch"; issue
#50): once a store archived its oldest snapshots on the remote, their
``snapshots/`` refs are gone; another store's fetch (and a clone) still brings
every one, walking each host's ``archive`` chain back to the tip it saw last
time. Thresholds lowered (``ARCHIVE_AFTER`` 6, ``ARCHIVE_BATCH`` 3); a bare
repository in a folder or served by ``git daemon``; git the oracle.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import needs_git, write
from test_archive_push import serving
from test_archiving_push import _remote_state, git

from snapshotter import Snapshotter
from snapshotter.engine.gitstore import archives, objectstore
from snapshotter.engine.gitstore.location import store_path_for
from snapshotter.remote import archivewalk, archiving, remotes

NAME = "archived"


def _pushes_past_the_threshold(snap: Any, ws: Path, location: str, rounds: int, ids: list[str]) -> None:
    """``rounds`` times: 4 snapshots, then a push (archiving once over 6 own refs)."""
    for _ in range(rounds):
        for _ in range(4):
            write(ws, {"a.txt": f"snapshot {len(ids)}\n"})
            ids.append(snap.snapshot(f"{len(ids)}").id)
        snap.push(location, name=NAME)


class _ArchivesRead:
    """Archive commits read from a store (``StoredObjects.read_raw``)."""

    def __init__(self, patch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = objectstore.StoredObjects.read_raw

        def read_raw(store: Any, sha: bytes, *args: Any) -> Any:
            found = real(store, sha, *args)
            if found[0] == 1 and archives.read_archive(found[1]) is not None:
                self.count += 1
            return found

        patch.setattr(objectstore.StoredObjects, "read_raw", read_raw)


@pytest.fixture
def lowered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archives, "ARCHIVE_AFTER", 6)
    monkeypatch.setattr(archives, "ARCHIVE_BATCH", 3)


@needs_git
@pytest.mark.parametrize("kind", ["folder", "git-daemon"])
def test_a_fetch_brings_every_snapshot_another_store_pushed_archived_or_not(  # type: ignore[no-untyped-def]
    kind: str, tmp_path: Path, ws: Path, make, lowered: None
) -> None:
    with serving(kind, tmp_path) as location:
        snap = make()
        ids: list[str] = []
        _pushes_past_the_threshold(snap, ws, location, 4, ids)
        listed, tip = _remote_state(tmp_path / "snaps.git")
        assert tip and set(ids) - listed, "the set-up archived some snapshots"
        other = tmp_path / "other"
        other.mkdir()
        with Snapshotter(other, home=tmp_path / "home2") as theirs:
            fetched = theirs.fetch(location, name=NAME)
            assert sorted(info.id for info in fetched.snapshots) == sorted(ids)
            assert {info.id for info in theirs.list()} == set(ids)
            assert theirs.fetch(location, name=NAME).snapshots == ()
        store = Path(store_path_for(os.path.realpath(other), os.path.realpath(tmp_path / "home2")))
        fsck = git(store, "fsck", "--strict", "--no-progress")  # the archives it took: unreferenced, no ref
        assert fsck.returncode == 0 and "missing" not in fsck.stdout + fsck.stderr, fsck.stdout + fsck.stderr
        assert not [ref for ref in git(store, "for-each-ref").stdout.splitlines() if "archive" in ref]


@needs_git
@pytest.mark.parametrize("kind", ["folder", "git-daemon"])
def test_a_clone_restores_the_newest_snapshot_and_reaches_an_archived_one(  # type: ignore[no-untyped-def]
    kind: str, tmp_path: Path, ws: Path, make, lowered: None
) -> None:
    with serving(kind, tmp_path) as location:
        snap = make()
        ids: list[str] = []
        _pushes_past_the_threshold(snap, ws, location, 3, ids)
        listed, _ = _remote_state(tmp_path / "snaps.git")
        assert ids[0] not in listed, "the first snapshot is archived"
        with Snapshotter.clone(location, NAME, None, tmp_path / "cloned", home=tmp_path / "home2") as cloned:
            assert (tmp_path / "cloned" / "a.txt").read_text() == f"snapshot {len(ids) - 1}\n"
            cloned.restore(ids[0])
            assert (tmp_path / "cloned" / "a.txt").read_text() == "snapshot 0\n"


@needs_git
@pytest.mark.parametrize("kind", ["folder", "git-daemon"])
def test_a_second_fetch_walks_only_the_archives_made_since_the_first(  # type: ignore[no-untyped-def]
    kind: str, tmp_path: Path, ws: Path, make, lowered: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving(kind, tmp_path) as location:
        snap = make()
        ids: list[str] = []
        _pushes_past_the_threshold(snap, ws, location, 5, ids)
        other = tmp_path / "other"
        other.mkdir()
        with Snapshotter(other, home=tmp_path / "home2") as theirs:
            first = _ArchivesRead(monkeypatch)
            theirs.fetch(location, name=NAME)
            assert first.count >= 3, "the first fetch walks the whole chain"
            _, tip = _remote_state(tmp_path / "snaps.git")
            _pushes_past_the_threshold(snap, ws, location, 1, ids)
            _, new_tip = _remote_state(tmp_path / "snaps.git")
            assert new_tip != tip, "the set-up archived again"
            second = _ArchivesRead(monkeypatch)
            theirs.fetch(location, name=NAME)
            assert second.count == 1, "only the new archive is read"
            assert {info.id for info in theirs.list()} == set(ids)


def test_only_the_hosts_archive_refs_are_walked_whatever_else_a_server_lists() -> None:
    namespace = b"refs/snapshotter/n/"
    tip = b"a" * 40
    listed = {
        namespace + b"hosts/0123456789abcdef/archive": tip,
        namespace + b"hosts/0123456789abcdef/undo/0001": tip,
        namespace + b"hosts/\xff\x1b[2J/archive": tip,
        namespace + b"hosts/a/b/archive": tip,
        namespace + b"snapshots/" + tip: tip,
        b"refs/snapshotter/other/hosts/0123456789abcdef/archive": tip,
    }
    assert archivewalk.archive_refs(listed, namespace) == {namespace + b"hosts/0123456789abcdef/archive": tip}


@needs_git
def test_a_fetch_without_its_cache_walks_the_whole_chain_once_and_adds_nothing_twice(  # type: ignore[no-untyped-def]
    tmp_path: Path, ws: Path, make, lowered: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving("folder", tmp_path) as location:
        snap = make()
        ids: list[str] = []
        _pushes_past_the_threshold(snap, ws, location, 4, ids)
        other = tmp_path / "other"
        other.mkdir()
        with Snapshotter(other, home=tmp_path / "home2") as theirs:
            theirs.fetch(location, name=NAME)
            cache = Path(archivewalk.cache_file(theirs._engine_ok().store, location, NAME))
            assert " " + _remote_state(tmp_path / "snaps.git")[1] + "\n" in cache.read_text()
            cache.unlink()
            again = _ArchivesRead(monkeypatch)
            assert theirs.fetch(location, name=NAME).snapshots == ()
            assert again.count >= 2 and cache.exists()
            assert sorted(info.id for info in theirs.list()) == sorted(ids)


class _ObjectsReceived:
    """Objects in the packs a fetch took (``IncomingPack.install``)."""

    def __init__(self, patch: pytest.MonkeyPatch) -> None:
        from snapshotter.engine.gitstore import incoming

        self.count = 0
        real = incoming.IncomingPack.install

        def install(pack: Any, contents: Any) -> None:
            self.count += len(contents.ids)
            real(pack, contents)

        patch.setattr(incoming.IncomingPack, "install", install)


@needs_git
@pytest.mark.parametrize("kind", ["folder", "git-daemon"])
def test_a_fetch_is_not_sent_again_the_snapshots_it_fetched_before_their_host_archived_them(  # type: ignore[no-untyped-def]
    kind: str, tmp_path: Path, ws: Path, make, lowered: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its haves include the held snapshots the last listing named and this one
    does not (archived since): the newest ``HAVES`` (here 2) miss them."""
    from snapshotter.engine.gitstore import negotiation

    monkeypatch.setattr(negotiation, "HAVES", 2)
    with serving(kind, tmp_path) as location:
        snap = make()
        ids: list[str] = []
        _pushes_past_the_threshold(snap, ws, location, 2, ids)
        other = tmp_path / "other"
        other.mkdir()
        with Snapshotter(other, home=tmp_path / "home2") as theirs:
            theirs.fetch(location, name=NAME)
            listed, tip = _remote_state(tmp_path / "snaps.git")
            _pushes_past_the_threshold(snap, ws, location, 1, ids)
            listed_after, tip_after = _remote_state(tmp_path / "snaps.git")
            assert tip_after != tip and listed - listed_after, "the set-up archived snapshots fetched before"
            received = _ObjectsReceived(monkeypatch)
            assert len(theirs.fetch(location, name=NAME).snapshots) == 4
            # 4 new snapshots (commit, tree, blob each), the archive commit and the empty tree (the
            # store's first archive: no tip seen before); none of the archived ones (23 without)
            assert received.count <= 4 * 3 + 2, received.count
            assert sorted(info.id for info in theirs.list()) == sorted(ids)


@needs_git
def test_a_fetch_brings_the_snapshots_of_two_stores_that_archive_alternately(  # type: ignore[no-untyped-def]
    tmp_path: Path, ws: Path, make, lowered: None
) -> None:
    """Each host's chain is walked from its own tip back to the one seen for it."""
    with serving("git-daemon", tmp_path) as location:
        mine = make()
        second_ws = tmp_path / "second"
        second_ws.mkdir()
        second = make(second_ws, home=tmp_path / "home3")
        ids: list[str] = []
        other = tmp_path / "other"
        other.mkdir()
        with Snapshotter(other, home=tmp_path / "home2") as theirs:
            for turn in range(6):
                _pushes_past_the_threshold(mine, ws, location, 1, ids)
                _pushes_past_the_threshold(second, second_ws, location, 1, ids)
                if turn in (0, 3, 5):  # each time some archived since the last fetch
                    theirs.fetch(location, name=NAME)
            archives_listed = [ref for ref in _refs(tmp_path / "snaps.git") if ref.endswith("/archive")]
            assert len(archives_listed) == 2, "both stores archived"
            assert sorted(info.id for info in theirs.list()) == sorted(set(ids))


def _refs(bare: Path) -> list[str]:
    return git(bare, "for-each-ref", "--format=%(refname)", f"refs/snapshotter/{NAME}/").stdout.split()


@needs_git
@pytest.mark.parametrize("kind", ["folder", "git-daemon"])
def test_a_store_that_fetched_anothers_snapshots_pushes_none_of_them_after_the_other_archived_them(  # type: ignore[no-untyped-def]
    kind: str, tmp_path: Path, ws: Path, make, lowered: None
) -> None:
    """Once their host archived them, no ``snapshots/`` ref names them: without the
    ``fetched-from`` record this store would send them back as its own (and its
    ``pushed`` record would then claim them)."""
    bare = tmp_path / "snaps.git"
    with serving(kind, tmp_path) as location:
        snap = make()
        ids: list[str] = []
        _pushes_past_the_threshold(snap, ws, location, 1, ids)
        other = tmp_path / "other"
        other.mkdir()
        with Snapshotter(other, home=tmp_path / "home2") as theirs:
            theirs.fetch(location, name=NAME)
            _pushes_past_the_threshold(snap, ws, location, 2, ids)
            listed, tip = _remote_state(bare)
            assert tip and set(ids[:4]) - listed, "the set-up archived snapshots fetched before"
            (other / "b.txt").write_text("theirs\n")
            own = [theirs.snapshot("theirs").id]
            assert theirs.push(location, name=NAME).snapshots_sent == 1
            assert _remote_state(bare) == (listed | set(own), tip)
            theirs.fetch(location, name=NAME)  # a second fetch adds to the record
            _pushes_past_the_threshold(snap, ws, location, 2, ids)
            listed, tip = _remote_state(bare)
            assert set(ids[4:12]) - listed, "the set-up archived snapshots of the second fetch"
            assert theirs.push(location, name=NAME).snapshots_sent == 0
            assert _remote_state(bare) == (listed, tip)
            record = Path(remotes._pushed_file(theirs._engine_ok().store, remotes.target(location, NAME, None)))
            assert archiving.read_record(record.read_text()).order == tuple(own)


@needs_git
def test_remote_list_counts_the_stores_holding_an_archive(  # type: ignore[no-untyped-def]
    tmp_path: Path, ws: Path, make, lowered: None
) -> None:
    """It cannot count archived snapshots without fetching the archives: it shows
    the listed snapshot refs and how many stores hold an archive there."""
    import json

    from conftest import run_command

    with serving("folder", tmp_path) as location:
        mine = make()
        second_ws = tmp_path / "second"
        second_ws.mkdir()
        second = make(second_ws, home=tmp_path / "home3")
        ids: list[str] = []
        _pushes_past_the_threshold(second, second_ws, location, 1, ids)
        [listed] = Snapshotter.remote_workspaces(location)
        assert (listed.snapshots, listed.hosts, listed.archives) == (4, 1, 0)
        _pushes_past_the_threshold(mine, ws, location, 3, ids)
        [listed] = Snapshotter.remote_workspaces(location)
        assert (listed.snapshots, listed.hosts, listed.archives) == (
            len(_remote_state(tmp_path / "snaps.git")[0]),
            2,
            1,
        )
        _pushes_past_the_threshold(second, second_ws, location, 2, ids)
        [listed] = Snapshotter.remote_workspaces(location)
        assert (listed.hosts, listed.archives) == (2, 2)
        env = {"SNAPSHOTTER_HOME": str(tmp_path / "h")}
        shown = run_command("remote", "list", location, env=env)
        assert (
            shown.returncode == 0
            and shown.stdout == f"{NAME}  {listed.snapshots} snapshots from 2 stores, and the archives of 2 stores\n"
        ), shown
        as_json = run_command("remote", "list", location, "--json", env=env)
        assert json.loads(as_json.stdout)["result"] == [
            {"name": NAME, "snapshots": listed.snapshots, "hosts": 2, "archives": 2}
        ]
