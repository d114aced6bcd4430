"""A fetch looks up only the listed snapshots its last fetch from there did not
see listed (``remote/holdings``), not every snapshot ref here (issue #50). It
still never adds a snapshot twice, brings again what a fetch killed before its
refs left out, and does not bring back what retention dropped here. Bare
repositories in folders as remotes; git the oracle where it helps.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import needs_git, write
from remote_servers import bare_repository

from snapshotter.engine.gitstore import store as store_module
from snapshotter.engine.gitstore.refstore import number_name
from snapshotter.engine.gitstore.store import SNAPSHOTS
from snapshotter.remote import holdings

NAME = "held"
pytestmark = needs_git


class _Killed(BaseException):
    """The fetch's process dying at that point (no handler of ours catches it)."""


def _take(snap: Any, ws: Path, count: int, what: str) -> list[str]:
    ids = []
    for n in range(count):
        write(ws, {"a.txt": f"{what} {n}\n"})
        ids.append(snap.snapshot(f"{what} {n}").id)
    return ids


def _held(snap: Any) -> Counter[str]:
    return Counter(sha.hex() for _, sha in snap._engine_ok().store.iter_snapshot_ids())


def test_a_fetch_killed_before_its_refs_leaves_nothing_the_next_fetch_skips(
    tmp_path: Path, ws: Path, make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after the pack was in and before the new snapshots' refs: the
    next fetch brings every one of them, once."""
    bare = bare_repository(tmp_path / "r.git")
    theirs = make()
    (tmp_path / "ours").mkdir()
    ours = make(tmp_path / "ours")
    first = _take(theirs, ws, 3, "first")
    theirs.push(str(bare), name=NAME)
    assert len(ours.fetch(str(bare), name=NAME).snapshots) == 3
    more = _take(theirs, ws, 3, "more")
    theirs.push(str(bare), name=NAME)

    def killed(*args: Any, **kwargs: Any) -> bool:
        raise _Killed

    monkeypatch.setattr(store_module.Store, "add_snapshot_ref", killed)
    with pytest.raises(_Killed):
        ours.fetch(str(bare), name=NAME)
    monkeypatch.undo()
    assert set(_held(ours)) == set(first)
    got = ours.fetch(str(bare), name=NAME)
    assert sorted(info.id for info in got.snapshots) == sorted(more)
    assert _held(ours) == Counter(first + more)


def test_a_snapshot_dropped_here_after_a_fetch_saw_it_is_not_brought_back(tmp_path: Path, ws: Path, make: Any) -> None:
    """Retention dropped a fetched snapshot here: the next fetch brings the new
    ones only (it brought every dropped one back, reading every ref here to
    know); this store's own snapshots listed there are never fetched."""
    bare = bare_repository(tmp_path / "r.git")
    theirs = make()
    (tmp_path / "ours").mkdir()
    ours = make(tmp_path / "ours")
    first = _take(theirs, ws, 3, "first")
    theirs.push(str(bare), name=NAME)
    write(tmp_path / "ours", {"b.txt": "ours\n"})
    own = ours.snapshot("ours").id
    ours.push(str(bare), name=NAME)
    ours.fetch(str(bare), name=NAME)
    store = ours._engine_ok().store
    seq = next(n for n, sha in store.iter_snapshot_ids() if sha.hex() == first[0])
    store.refs.delete({number_name(SNAPSHOTS, seq): bytes.fromhex(first[0])})
    more = _take(theirs, ws, 2, "more")
    theirs.push(str(bare), name=NAME)
    got = ours.fetch(str(bare), name=NAME)
    assert sorted(info.id for info in got.snapshots) == sorted(more)
    assert _held(ours) == Counter([own, *first[1:], *more])


@pytest.mark.parametrize("bound", [holdings.BOUND, 0])
def test_snapshots_fetched_from_one_remote_are_not_added_again_from_another(
    tmp_path: Path, ws: Path, make: Any, monkeypatch: pytest.MonkeyPatch, bound: int
) -> None:
    """Another store pushed the same snapshots to two remotes; this store, with
    snapshots of its own (so it numbers them otherwise than their commits
    say), fetches from one, then from the other, whose listing it never saw:
    nothing is added twice. ``bound`` 0: none is found among the newest refs,
    each is looked up on its own (its number names another snapshot here)."""
    monkeypatch.setattr(holdings, "BOUND", bound)
    one, two = bare_repository(tmp_path / "one.git"), bare_repository(tmp_path / "two.git")
    theirs = make()
    (tmp_path / "ours").mkdir()
    ours = make(tmp_path / "ours")
    for n in range(4):
        write(tmp_path / "ours", {"b.txt": f"ours {n}\n"})
        ours.snapshot(f"ours {n}")
    ids = _take(theirs, ws, 3, "theirs")
    theirs.push(str(one), name=NAME)
    theirs.push(str(two), name=NAME)
    assert len(ours.fetch(str(one), name=NAME).snapshots) == 3
    assert ours.fetch(str(two), name=NAME).snapshots == ()
    counts = _held(ours)
    assert all(counts[sha] == 1 for sha in ids) and len(counts) == 7
