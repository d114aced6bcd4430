"""The archiving push (docs/remotes.md, "Archives", step 2), killed between its
two rounds, and what its record says: thresholds lowered (e.g. ``ARCHIVE_AFTER``
6, ``ARCHIVE_BATCH`` 3), a bare repository in a folder (or served by ``git
daemon``) as the remote, git the oracle for what it holds.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import GIT, needs_git, write
from remote_servers import bare_repository
from test_archive_push import serving

from snapshotter.engine.gitstore import archives
from snapshotter.engine.gitstore.refstore import number_name
from snapshotter.engine.gitstore.store import SNAPSHOTS
from snapshotter.remote import archiving, remotes

NAME = "archived"


class _Killed(BaseException):
    """The push's process dying at that point (no handler of ours catches it)."""


def git(bare: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert GIT is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run([GIT, "--git-dir", str(bare), *args], capture_output=True, text=True, env=env, check=False)


def _remote_state(bare: Path) -> tuple[set[str], str]:
    """(the ids its ``snapshots/`` refs name, its archive tip or '')."""
    refs = git(bare, "for-each-ref", "--format=%(refname) %(objectname)", f"refs/snapshotter/{NAME}/").stdout
    listed, tip = set(), ""
    for line in refs.splitlines():
        name, sha = line.split()
        if "/snapshots/" in name:
            listed.add(sha)
        elif name.endswith("/archive"):
            tip = sha
    return listed, tip


def _every_snapshot_reachable(bare: Path, ids: list[str]) -> None:
    fsck = git(bare, "fsck", "--strict", "--no-progress")
    assert fsck.returncode == 0 and "missing" not in fsck.stdout + fsck.stderr, fsck.stdout + fsck.stderr
    reachable = set(git(bare, "rev-list", "--all").stdout.split())
    assert set(ids) <= reachable, sorted(set(ids) - reachable)


def _marked(snap: Any, location: Path | str) -> set[str]:
    """The snapshots the store's ``pushed`` record for ``location`` marks archived."""
    record = Path(remotes._pushed_file(snap._engine_ok().store, remotes.target(str(location), NAME, None)))
    return set(archiving.read_record(record.read_text()).archived)


@needs_git
@pytest.mark.parametrize("kind", ["folder", "git-daemon"])
def test_a_push_killed_between_its_rounds_loses_nothing_and_the_next_push_finishes_the_deletes(  # type: ignore[no-untyped-def]
    kind: str, tmp_path: Path, ws: Path, make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after the remote took the archive and the record said so, before
    round 2 deleted a ref: every snapshot is still reachable (archive and refs
    both name those). The next push deletes those refs and makes no new archive."""
    monkeypatch.setattr(archives, "ARCHIVE_AFTER", 6)
    monkeypatch.setattr(archives, "ARCHIVE_BATCH", 3)
    with serving(kind, tmp_path) as location:
        _killed_between_the_rounds(tmp_path / "snaps.git", location, ws, make(), monkeypatch)


def _killed_between_the_rounds(bare: Path, location: str, ws: Path, snap: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ids: list[str] = []
    tips: list[str] = []
    finished = 0
    real = archiving.delete_refs

    def killed(*args: object, **kwargs: object) -> int:
        raise _Killed

    for round_ in range(6):
        for i in range(4):
            write(ws, {"a.txt": f"round {round_} call {i}\n"})
            ids.append(snap.snapshot(f"{round_}.{i}").id)
        gone = _marked(snap, location) if round_ else set()  # archived, their refs deleted by the last push
        monkeypatch.setattr(archiving, "delete_refs", killed)
        try:
            snap.push(location, name=NAME)
        except _Killed:
            pass
        _every_snapshot_reachable(bare, ids)
        listed, tip = _remote_state(bare)
        assert listed == set(ids) - gone, "a killed push deleted no ref"
        monkeypatch.setattr(archiving, "delete_refs", real)
        finishing = snap.push(location, name=NAME)
        _every_snapshot_reachable(bare, ids)
        after, tip_after = _remote_state(bare)
        if tip not in tips:  # the killed push archived: the next one only finishes its deletes
            assert tip_after == tip, "the push that finishes the deletes makes no new archive"
            finished += 1
        assert finishing.snapshots_sent == 0
        marked = _marked(snap, location)
        assert not after & marked, "no snapshots/ ref of an archived snapshot is left"
        assert after | marked == set(ids) and len(after) <= 6 + 4
        tips += [tip, tip_after]
    assert finished >= 3, tips  # the threshold was crossed again and again, each time killed
    logged = git(bare, "log", "--all", "--format=%H %s").stdout.splitlines()
    assert sum(1 for line in logged if line.endswith("snapshotter archive")) == len(set(tips) - {""})


@needs_git
def test_a_push_killed_before_its_record_says_archived_archives_them_again_and_loses_nothing(  # type: ignore[no-untyped-def]
    tmp_path: Path, ws: Path, make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after the remote took round 1, before the record was written: the
    next push archives the same snapshots again into a newer archive over the
    first (20 bytes each, never a loss), then deletes their refs."""
    monkeypatch.setattr(archives, "ARCHIVE_AFTER", 6)
    monkeypatch.setattr(archives, "ARCHIVE_BATCH", 3)
    bare = tmp_path / "snaps.git"
    bare_repository(bare)
    snap = make()
    ids: list[str] = []
    for i in range(7):
        write(ws, {"a.txt": f"call {i}\n"})
        ids.append(snap.snapshot(f"{i}").id)
    snap.push(str(bare), name=NAME)
    write(ws, {"a.txt": "one more\n"})
    ids.append(snap.snapshot("one more").id)
    real = remotes._append_text

    def killed_at_the_record(path: str, text: str) -> None:
        if "archived" in text:
            raise _Killed
        real(path, text)

    monkeypatch.setattr(remotes, "_append_text", killed_at_the_record)
    with pytest.raises(_Killed):
        snap.push(str(bare), name=NAME)
    _every_snapshot_reachable(bare, ids)
    listed, first_tip = _remote_state(bare)
    assert first_tip and listed == set(ids)
    monkeypatch.setattr(remotes, "_append_text", real)
    snap.push(str(bare), name=NAME)
    _every_snapshot_reachable(bare, ids)
    listed, tip = _remote_state(bare)
    assert git(bare, "rev-parse", f"{tip}^1").stdout.strip() == first_tip
    assert listed == set(ids[3:])


@needs_git
def test_a_push_whose_archive_is_refused_sends_its_snapshots_and_deletes_nothing(  # type: ignore[no-untyped-def]
    tmp_path: Path, ws: Path, make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Round 2 only once the remote took ``archive``: an archive ref moved since
    the push listed it (here: one the listing missed) is refused, the new
    snapshots still go, no record line says archived and every ref stays."""
    from snapshotter.engine.gitstore import replication

    monkeypatch.setattr(archives, "ARCHIVE_AFTER", 2)
    monkeypatch.setattr(archives, "ARCHIVE_BATCH", 2)
    bare = tmp_path / "snaps.git"
    bare_repository(bare)
    snap = make()
    ids: list[str] = []
    for i in range(3):
        write(ws, {"a.txt": f"call {i}\n"})
        ids.append(snap.snapshot(f"{i}").id)
    snap.push(str(bare), name=NAME)
    write(ws, {"a.txt": "more\n"})
    ids.append(snap.snapshot("more").id)
    snap.push(str(bare), name=NAME)  # 3 listed: archives 2 of them
    listed, tip = _remote_state(bare)
    assert tip and listed == set(ids[2:]) and _marked(snap, bare) == set(ids[:2])
    for i in range(2):
        write(ws, {"a.txt": f"again {i}\n"})
        ids.append(snap.snapshot(f"again {i}").id)
    snap.push(str(bare), name=NAME)  # 2 listed, not over: sends 2
    real = replication.remote_refs

    def missing_the_archive(*args: Any, **kwargs: Any) -> replication.Refs:
        return {name: sha for name, sha in real(*args, **kwargs).items() if not name.endswith(b"/archive")}

    monkeypatch.setattr(replication, "remote_refs", missing_the_archive)
    write(ws, {"a.txt": "last\n"})
    ids.append(snap.snapshot("last").id)
    done = snap.push(str(bare), name=NAME)  # 4 listed: would archive 2 over "no archive"
    monkeypatch.setattr(replication, "remote_refs", real)
    assert done.snapshots_sent == 1
    listed, tip_after = _remote_state(bare)
    assert tip_after == tip and listed == set(ids[2:]) and _marked(snap, bare) == set(ids[:2])
    _every_snapshot_reachable(bare, ids)


@needs_git
def test_a_pruning_push_keeps_the_records_order_and_its_archived_lines(  # type: ignore[no-untyped-def]
    tmp_path: Path, ws: Path, make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prune rewrites the record whole: archived lines stay archived (their
    snapshots are never pushed back) and the order stays the order pushed."""
    monkeypatch.setattr(archives, "ARCHIVE_AFTER", 2)
    monkeypatch.setattr(archives, "ARCHIVE_BATCH", 2)
    bare = tmp_path / "snaps.git"
    bare_repository(bare)
    snap = make()
    ids: list[str] = []
    for i in range(5):
        write(ws, {"a.txt": f"call {i}\n"})
        ids.append(snap.snapshot(f"{i}").id)
    snap.push(str(bare), name=NAME)
    snap.push(str(bare), name=NAME)  # 5 listed: archives the oldest 2
    assert _marked(snap, bare) == set(ids[:2])
    store = snap._engine_ok().store  # retention dropping ids[3], as upkeep drops it: its ref goes
    seq = next(n for n, sha in store.snapshot_refs().items() if sha.hex() == ids[3])
    store.refs.delete({number_name(SNAPSHOTS, seq): bytes.fromhex(ids[3])})
    done = snap.push(str(bare), name=NAME, prune=True)
    assert done.pruned == 1
    record = Path(remotes._pushed_file(snap._engine_ok().store, remotes.target(str(bare), NAME, None)))
    order = archiving.read_record(record.read_text())
    assert order.order == (ids[0], ids[1], ids[2], ids[4]) and order.archived == set(ids[:2])
    assert snap.push(str(bare), name=NAME).snapshots_sent == 0
    listed, _ = _remote_state(bare)
    assert listed == {ids[2], ids[4]}


def test_the_oldest_are_archived_first_even_from_a_record_written_sorted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A record of a release before archives lists its ids sorted, in no order of
    age: those the store no longer holds go first (retention dropped the
    oldest), then the held ones in the order taken; the archive names them so."""
    monkeypatch.setattr(archives, "ARCHIVE_AFTER", 3)
    monkeypatch.setattr(archives, "ARCHIVE_BATCH", 3)
    ids = [f"{n:040x}" for n in (5, 1, 4, 2, 3)]  # taken in this order; ids[0] dropped here since
    record = archiving.read_record("".join(f"{sha}\n" for sha in sorted(ids)))
    prefix = b"refs/snapshotter/n/snapshots/"
    there = {prefix + sha.encode(): sha.encode() for sha in ids}
    taken = {sha: n for n, sha in enumerate(ids[1:])}
    step = archiving.choose(record, there, prefix, b"refs/snapshotter/n/hosts/h/archive", 0, taken=taken)
    assert step.snapshots == (ids[0], ids[1], ids[2])
    assert step.tip is not None and archives.read_archive(step.extra[1][2]) == archives.Archive(
        None, tuple(bytes.fromhex(sha) for sha in ids[:3])
    )
