"""A push's state (``remote/pushstate``: what it settled, where the live ends of
its records start) is a cache: a push reads only what is new here from it, and
without it, or with it damaged, does what it did (reads everything), leaving
the remote as a push with it does. Killed at any moment, the next push
completes; a remote that lost this store's refs gets them again; snapshots
retention drops between pushes change nothing. Thresholds lowered
(``ARCHIVE_AFTER`` 6, ``ARCHIVE_BATCH`` 3); bare repositories in folders; git the
oracle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import needs_git, write
from remote_servers import bare_repository
from test_archiving_push import _every_snapshot_reachable, _marked, _remote_state, git

from snapshotter.engine.gitstore import archives, replication
from snapshotter.engine.gitstore.refstore import number_name
from snapshotter.engine.gitstore.store import SNAPSHOTS
from snapshotter.remote import pushstate, remotes

NAME = "archived"  # as ``test_archiving_push``'s helpers read it
pytestmark = needs_git


class _Killed(BaseException):
    """The push's process dying at that point (no handler of ours catches it)."""


@pytest.fixture(autouse=True)
def _low_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archives, "ARCHIVE_AFTER", 6)
    monkeypatch.setattr(archives, "ARCHIVE_BATCH", 3)


def _state(snap: Any, location: Path) -> Path:
    to = remotes.target(str(location), NAME, None)
    return Path(remotes._record_path(snap._engine_ok().store, pushstate.FOLDER, to))


def _take(snap: Any, ws: Path, ids: list[str], count: int) -> None:
    for _ in range(count):
        write(ws, {"a.txt": f"snapshot {len(ids)}\n"})
        ids.append(snap.snapshot(f"{len(ids)}").id)


def _settled(bare: Path, snap: Any, ids: list[str]) -> tuple[set[str], set[str]]:
    """(listed, marked archived): every snapshot reachable, each either listed or archived."""
    _every_snapshot_reachable(bare, ids)
    listed, _ = _remote_state(bare)
    marked = _marked(snap, bare)
    assert not listed & marked and listed | marked == set(ids), (sorted(set(ids) - listed - marked), listed & marked)
    return listed, marked


def _damaged(text: str, kind: str) -> str:
    lines = text.splitlines()
    if kind == "garbage":
        return "not a state\n"
    if kind == "cut short":
        return text[: len(text) // 2]
    if kind == "past the end":
        return "\n".join(f"pushed 99999 99999 {'0' * 40}" if line.startswith("pushed") else line for line in lines)
    if kind == "a number never reached":
        return "\n".join("seq 99999" if line.startswith("seq ") else line for line in lines)
    if kind == "another digest":
        return "\n".join(line[:-40] + "f" * 40 if line.startswith("pushed") else line for line in lines)
    assert kind == "another archive"
    return "\n".join(f"archive {'e' * 40}" if line.startswith("archive") else line for line in lines)


KINDS = ["garbage", "cut short", "past the end", "a number never reached", "another digest", "another archive"]


def test_a_push_without_its_state_or_with_it_damaged_leaves_the_remote_as_one_with_it(
    tmp_path: Path, ws: Path, make: Any
) -> None:
    """One store, three remotes: pushed to with the state kept, deleted before
    each push, damaged before each push (each kind in turn). After every round
    the three hold the same snapshot refs and archived the same snapshots."""
    snap = make()
    kept, gone, bad = (bare_repository(tmp_path / f"{n}.git") for n in ("kept", "gone", "bad"))
    ids: list[str] = []
    for kind in KINDS * 2:
        _take(snap, ws, ids, 4)
        snap.push(str(kept), name=NAME)
        assert _state(snap, kept).is_file(), "a push keeps its state"
        _state(snap, gone).unlink(missing_ok=True)
        snap.push(str(gone), name=NAME)
        if _state(snap, bad).is_file():
            _state(snap, bad).write_text(_damaged(_state(snap, bad).read_text(), kind))
        snap.push(str(bad), name=NAME)
        results = [_settled(bare, snap, ids) for bare in (kept, gone, bad)]
        assert results[0] == results[1] == results[2], kind
    assert _marked(snap, kept), "the threshold was crossed"


def test_a_remote_that_lost_this_stores_refs_gets_them_again(tmp_path: Path, ws: Path, make: Any) -> None:
    """Someone deleted the namespace's ``snapshots/`` refs: the next push (with a
    state that says they were there) sends every one that is not archived again."""
    snap = make()
    bare = bare_repository(tmp_path / "r.git")
    ids: list[str] = []
    for _ in range(3):
        _take(snap, ws, ids, 4)
        snap.push(str(bare), name=NAME)
    assert _state(snap, bare).is_file()
    listed, _ = _settled(bare, snap, ids)
    for sha in listed:
        git(bare, "update-ref", "-d", f"refs/snapshotter/{NAME}/snapshots/{sha}")
    git(bare, "gc", "--prune=now", "--quiet")
    _take(snap, ws, ids, 1)
    snap.push(str(bare), name=NAME)
    _settled(bare, snap, ids)


@pytest.mark.parametrize("call", [1, 2])
def test_a_push_killed_inside_send_leaves_what_the_next_push_completes(
    tmp_path: Path, ws: Path, make: Any, monkeypatch: pytest.MonkeyPatch, call: int
) -> None:
    """Killed at the ``call``-th exchange with the remote (1: round 1, the pack
    and refs; 2: round 2, the deletes of what it archived), push after push:
    the next push leaves every snapshot listed or archived, none both."""
    snap = make()
    bare = bare_repository(tmp_path / "r.git")
    ids: list[str] = []
    real = replication.send
    for _ in range(6):
        _take(snap, ws, ids, 4)
        calls = [0]

        def killed(*args: Any, counted: list[int] = calls, **kwargs: Any) -> Any:
            counted[0] += 1
            if counted[0] == call:
                raise _Killed
            return real(*args, **kwargs)

        monkeypatch.setattr(replication, "send", killed)
        try:
            snap.push(str(bare), name=NAME)
        except _Killed:
            pass
        monkeypatch.setattr(replication, "send", real)
        snap.push(str(bare), name=NAME)
        _settled(bare, snap, ids)
    assert _marked(snap, bare)


def test_snapshots_dropped_here_between_pushes_change_nothing_a_push_does(tmp_path: Path, ws: Path, make: Any) -> None:
    """Retention drops snapshots here between pushes (some pushed, some never):
    a push sends what is left of the new ones, a pruning push deletes the refs
    of those it made there and dropped, and the pushes after it go on."""
    snap = make()
    bare = bare_repository(tmp_path / "r.git")
    store = snap._engine_ok().store
    ids: list[str] = []

    def drop(sha: str) -> None:
        seq = next(n for n, found in store.iter_snapshot_ids() if found.hex() == sha)
        store.refs.delete({number_name(SNAPSHOTS, seq): bytes.fromhex(sha)})

    _take(snap, ws, ids, 4)
    snap.push(str(bare), name=NAME)
    _take(snap, ws, ids, 4)
    drop(ids[1])  # pushed, then dropped here
    drop(ids[5])  # never pushed
    snap.push(str(bare), name=NAME)
    listed, _ = _remote_state(bare)
    assert listed == set(ids) - {ids[5]} - _marked(snap, bare)
    done = snap.push(str(bare), name=NAME, prune=True)
    assert done.pruned == (0 if ids[1] in _marked(snap, bare) else 1)
    _take(snap, ws, ids, 4)
    drop(ids[-1])
    snap.push(str(bare), name=NAME)
    listed, _ = _remote_state(bare)
    marked = _marked(snap, bare)
    assert listed == set(ids) - {ids[1], ids[5], ids[-1]} - marked
    assert set(ids) - {ids[5], ids[-1]} <= set(git(bare, "rev-list", "--all").stdout.split()) | {ids[1]}


def test_a_snapshot_left_out_is_judged_again_by_each_push(tmp_path: Path, ws: Path, make: Any) -> None:
    """A snapshot a push left out (too large) is judged again by the next: once
    the limit allows it, it goes, though later snapshots were settled since."""
    bare = bare_repository(tmp_path / "r.git")
    snap = make(max_push_file_size=1000)
    ids: list[str] = []
    _take(snap, ws, ids, 2)
    write(ws, {"big.bin": "x" * 5000})
    big = snap.snapshot("big").id
    write(ws, {"big.bin": "small\n"})
    ids.append(snap.snapshot("after").id)
    first = snap.push(str(bare), name=NAME, skip_refused=True)
    assert big in {entry.id for entry in first.skipped}
    _take(snap, ws, ids, 2)
    again = snap.push(str(bare), name=NAME, skip_refused=True)
    assert big in {entry.id for entry in again.skipped} and again.snapshots_sent == 2
    snap.close()
    allowed = make(max_push_file_size=0)
    assert allowed.push(str(bare), name=NAME).snapshots_sent == 1
    listed, _ = _remote_state(bare)
    assert big in listed | _marked(allowed, bare)


def test_a_push_between_a_fetchs_record_and_its_refs_never_sends_those_snapshots_back(
    tmp_path: Path, ws: Path, make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A push of this store runs while a fetch of it is between writing
    ``fetched-from`` and adding the new snapshots' refs (a background push, say):
    it does not see them, and the push after it, once the other store archived
    them there, sends none of them back as this store's."""
    from snapshotter.engine.gitstore import store as store_module
    from snapshotter.engine.gitstore.store import Store

    monkeypatch.setattr(archives, "ARCHIVE_AFTER", 2)
    monkeypatch.setattr(archives, "ARCHIVE_BATCH", 2)
    bare = bare_repository(tmp_path / "r.git")
    theirs = make()
    (tmp_path / "ours").mkdir()
    ours = make(tmp_path / "ours")
    write(tmp_path / "ours", {"b.txt": "ours\n"})
    ours.snapshot("ours")
    ours.push(str(bare), name=NAME)
    fetched: list[str] = []
    _take(theirs, ws, fetched, 4)
    theirs.push(str(bare), name=NAME)
    real = store_module.Store.add_snapshot_ref
    checks = remotes.PushChecks(ours._push_checks(False).policy, 0)

    def push_first(store: Any, seq: int, sha: bytes) -> bool:
        monkeypatch.setattr(store_module.Store, "add_snapshot_ref", real)
        other = Store.open_or_create(ours.store_path, ours._engine_ok().workspace)
        try:
            remotes.push(other, remotes.target(str(bare), NAME, None), checks, prune=False)
        finally:
            other.close()
        return real(store, seq, sha)

    monkeypatch.setattr(store_module.Store, "add_snapshot_ref", push_first)
    assert len(ours.fetch(str(bare), name=NAME).snapshots) == 4
    _take(theirs, ws, fetched, 4)
    for _ in range(3):
        theirs.push(str(bare), name=NAME)  # one archiving step a push
    listed, _ = _remote_state(bare)
    assert not set(fetched[:4]) & listed, "the other store archived them"
    assert ours.push(str(bare), name=NAME).snapshots_sent == 0
    listed, _ = _remote_state(bare)
    assert not set(fetched[:4]) & listed
