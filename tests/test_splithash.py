"""Hashing on two cores: a forked copy hashes the tail of the queue into a
pack of its own (``worktree.splithash``). The snapshot must be what one core
(and git) makes of the folder, every object readable, and a copy that fails
must cost nothing but time.

``MIN_FILES`` is lowered so that a few hundred files fork too.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import (
    alone_in_this_process,
    contents,
    deny_reading,
    git,
    git_shadow_tree,
    needs_git,
    needs_second_core,
    no_child_left,
    write,
)

from snapshotter import Snapshotter
from snapshotter.engine.gitstore.objectwriter import ObjectWriter
from snapshotter.engine.worktree import hashing, splithash
from snapshotter.model import SkipReason

pytestmark = needs_second_core

FILES = 300


@pytest.fixture(autouse=True)
def _eager(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(splithash, "MIN_FILES", 0)
    alone_in_this_process()


def _files() -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {f"src/m{i // 30}/f{i}.py": f"line {i}\n" * (i % 7 + 1) for i in range(FILES)}
    files["bin/blob.dat"] = bytes(range(256)) * 8
    files["big/huge.txt"] = "x" * (1 << 20) + "\n"  # stays with the walk's threads
    files["docs/empty.txt"] = ""
    return files


def _packs(snap: Snapshotter) -> list[str]:
    return sorted(name for name in os.listdir(Path(snap.store_path) / "objects" / "pack") if name.endswith(".pack"))


def test_a_cold_snapshot_on_two_cores_is_the_one_core_snapshot(ws: Path, home: Path, tmp_path: Path) -> None:
    write(ws, _files())
    (ws / "src/m0/run.sh").write_text("#!/bin/sh\n")
    (ws / "src/m0/run.sh").chmod(0o755)
    os.symlink("m0/f0.py", ws / "src/link.py")
    with Snapshotter(ws, home=home) as snap:
        info = snap.snapshot()
        stats = snap.last_scan
        assert stats.files_hashed == FILES + 5
        assert FILES // 3 < stats.files_hashed_forked < FILES, "the copy's share"
        assert len(_packs(snap)) == 2, "the walk's pack and the copy's"
    with Snapshotter(ws, home=tmp_path / "alone", second_core=False) as alone:
        one = alone.snapshot()
        assert alone.last_scan.files_hashed_forked == 0
    assert info.tree_id == one.tree_id
    assert (info.files_changed, info.additions, info.deletions) == (one.files_changed, one.additions, one.deletions)
    assert no_child_left()


def test_every_object_the_copy_wrote_restores(ws: Path, home: Path) -> None:
    write(ws, _files())
    before = contents(ws)
    with Snapshotter(ws, home=home) as snap:
        info = snap.snapshot()
        assert snap.last_scan.files_hashed_forked > 0
        shutil.rmtree(ws / "src")
        snap.restore(info.id)
    assert contents(ws) == before


@needs_git
def test_the_tree_is_gits_and_the_store_passes_fsck(ws: Path, home: Path, tmp_path: Path) -> None:
    write(ws, _files())
    with Snapshotter(ws, home=home) as snap:
        info = snap.snapshot()
        assert snap.last_scan.files_hashed_forked > 0
        store = snap.store_path
    assert info.tree_id == git_shadow_tree(ws, tmp_path / "shadow")
    git("--git-dir", str(store), "fsck", "--strict", "--no-dangling")


def test_a_file_the_copy_cannot_read_is_skipped_as_alone(
    ws: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(ws, _files())
    deny_reading(monkeypatch, "f299.py")  # the tail of the queue: the copy's
    with Snapshotter(ws, home=home) as snap:
        info = snap.snapshot()
        assert snap.last_scan.files_hashed_forked > 0
    with Snapshotter(ws, home=tmp_path / "alone", second_core=False) as alone:
        one = alone.snapshot()
    assert [(s.path, s.reason) for s in info.skipped] == [(s.path, s.reason) for s in one.skipped]
    assert ("src/m9/f299.py", SkipReason.UNREADABLE) in [(s.path, s.reason) for s in info.skipped]
    assert info.tree_id == one.tree_id


def test_a_copy_that_fails_leaves_its_share_to_the_walk(
    ws: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy's answers count only once its pack is in place: one that dies
    before costs time, never an object missing from the store."""

    def broken(self: ObjectWriter) -> ObjectWriter:  # only the copy makes a sibling
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ObjectWriter, "sibling", broken)
    write(ws, _files())
    with Snapshotter(ws, home=home) as snap:
        info = snap.snapshot()
        assert snap.last_scan.files_hashed == FILES + 3
        assert snap.last_scan.files_hashed_forked == 0
        assert len(_packs(snap)) == 1
        shutil.rmtree(ws / "src")
        snap.restore(info.id)
    with Snapshotter(ws, home=tmp_path / "alone", second_core=False) as alone:
        assert alone.snapshot().tree_id == info.tree_id
    assert no_child_left()


def test_a_copy_that_dies_half_way_counts_for_nothing(
    ws: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It sent its first results, then died with its pack unfinished: the
    walk must not take one of them, since their objects are in no pack."""
    parent = os.getpid()
    real = hashing._hash_one
    done = [0]

    def dying(item, writer, write):  # type: ignore[no-untyped-def]
        if os.getpid() != parent:
            done[0] += 1
            if done[0] == 20:
                os._exit(3)
        return real(item, writer, write)

    monkeypatch.setattr(hashing, "_hash_one", dying)
    monkeypatch.setattr(splithash, "_FLUSH", 1)  # each result sent as soon as found
    write(ws, _files())
    with Snapshotter(ws, home=home) as snap:
        info = snap.snapshot()
        assert snap.last_scan.files_hashed == FILES + 3
        assert snap.last_scan.files_hashed_forked == 0
        shutil.rmtree(ws / "src")
        snap.restore(info.id)
        pack_dir = Path(snap.store_path) / "objects" / "pack"
        assert [name for name in os.listdir(pack_dir) if name.startswith("tmp_pack_")], "the copy's unfinished pack"
    with Snapshotter(ws, home=tmp_path / "alone", second_core=False) as alone:
        assert alone.snapshot().tree_id == info.tree_id
    assert no_child_left()


def test_the_option_turns_it_off(ws: Path, home: Path) -> None:
    write(ws, _files())
    with Snapshotter(ws, home=home, second_core=False) as snap:
        snap.snapshot()
        assert snap.last_scan.files_hashed_forked == 0
        assert len(_packs(snap)) == 1
