"""A restore that only rewrote files gives their folders back their shapes, and that never hides a change.

Writing a file replaces it (unlink, then create), so each folder a restore wrote
to has a new stat, and the next walk would list it again (after a restore of
10,000 files, 5,000 folders: 0.35 s of the next status's 0.6 s). Once it has
written everything, the restore gives such a folder its shape back where its
stat, taken first, has settled, and a listing taken after shows the very entries
its last listing judged (``trust.reshaped``). Each test checks the snapshot after
against a cold one in a fresh store; one checks it against git too, where git is there.

A restore writes in milliseconds here, so its folders have not settled when it
ends: the tests that want them settled let time pass between the restore's
writes and its check (``settling``), as a restore of thousands of files does.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import git_shadow_tree, needs_git, write

from snapshotter import SnapshotInfo, Snapshotter
from snapshotter.engine import fsutil
from snapshotter.engine.session import restoring
from snapshotter.engine.worktree import statcache

FOLDERS = [f"d{i}" for i in range(4)]
WRITTEN = [*FOLDERS, "d0/sub"]
"""The folders every restore between the two versions writes to."""


def _settle() -> None:
    """Let time pass, so folders changed so far have settled (``fsutil.RECENT_NS``)."""
    time.sleep(fsutil.RECENT_NS / 1e9 + 0.03)


def _tree(version: str) -> dict[str, str]:
    files = {f"{folder}/f{j}.txt": f"{folder} {j} {version}\n" for folder in FOLDERS for j in range(3)}
    files.update({"d0/sub/deep.txt": f"deep {version}\n", "root.txt": "root\n", ".gitignore": "*.tmp\n"})
    return files


def _shapes(snap: Snapshotter) -> dict[str, statcache.Shape]:
    return statcache.load(os.path.join(snap.store_path, "snapshotter", "statcache")).shapes


def _cold_tree(ws: Path, home: Path) -> str:
    with Snapshotter(ws, home=home) as cold:
        return cold.snapshot().tree_id


@pytest.fixture
def two_versions(ws: Path, make: Callable[..., Snapshotter]) -> tuple[Snapshotter, SnapshotInfo, SnapshotInfo]:
    """Snapshots A and B of the same names, every file of ``FOLDERS`` rewritten
    between them; an ignored file beside them; the workspace at B, settled."""
    write(ws, {**_tree("a"), "d1/scratch.tmp": "ignored\n"})
    _settle()
    snap = make()
    a = snap.snapshot()
    write(ws, _tree("b"))
    _settle()
    b = snap.snapshot()
    _settle()
    return snap, a, b


@pytest.fixture
def settling(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Callable[[], None]]]:
    """Time passes between a restore's last write and its check of the folders it
    wrote to; each function put in the list runs in between, before that time."""
    between: list[Callable[[], None]] = []
    apply_plan = restoring.apply_plan

    def written_then_settled(*args: object, **kwargs: object) -> None:
        apply_plan(*args, **kwargs)  # type: ignore[arg-type]
        for step in between:
            step()
        _settle()

    monkeypatch.setattr(restoring, "apply_plan", written_then_settled)
    yield between


def test_folders_a_restore_rewrote_are_not_listed_again(two_versions, settling, ws: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    snap, a, _ = two_versions
    snap.restore(a.id)
    assert set(WRITTEN) <= set(_shapes(snap))
    info = snap.snapshot()
    assert snap.last_scan.dirs_listed == 0
    assert info.tree_id == a.tree_id == _cold_tree(ws, tmp_path / "cold")
    assert (ws / "d1" / "scratch.tmp").read_text() == "ignored\n"


@needs_git
def test_the_tree_after_is_gits(two_versions, settling, ws: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    snap, a, b = two_versions
    snap.restore(a.id)
    snap.restore(b.id)
    assert snap.snapshot().tree_id == b.tree_id == git_shadow_tree(ws, tmp_path / "shadow")


def test_folders_written_too_recently_are_listed_again(two_versions, ws: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A restore's check comes right after its writes: no folder written has
    settled, none gets its shape back, and the next walk lists each."""
    snap, a, _ = two_versions
    snap.restore(a.id)
    assert not set(WRITTEN) & set(_shapes(snap))
    info = snap.snapshot()
    assert snap.last_scan.dirs_listed == len(WRITTEN)
    assert info.tree_id == _cold_tree(ws, tmp_path / "cold")


@pytest.mark.parametrize(
    "intruder",
    ["d1/new.txt", "d1/new.tmp", "d2/f0.txt/", "d3/new/"],
    ids=["a file", "an ignored file", "a file swapped for a folder", "a folder"],
)
def test_an_entry_changed_while_the_restore_wrote_is_seen(  # type: ignore[no-untyped-def]
    two_versions, settling, ws: Path, tmp_path: Path, intruder: str
) -> None:
    """Another process changes a folder after the restore wrote to it, before its
    check: the listing differs from the one judged last, so the folder gets no
    shape, and the next walk lists it and sees the change."""
    snap, a, _ = two_versions
    path = ws / intruder.rstrip("/")

    def intrude() -> None:
        if intruder.endswith("/"):
            path.unlink(missing_ok=True)
            path.mkdir()
            (path / "inside.txt").write_text("inside\n")
        else:
            path.write_text("not the restore's\n")

    settling.append(intrude)
    snap.restore(a.id)
    folder = intruder.split("/")[0]
    assert folder not in _shapes(snap)
    assert set(FOLDERS) - {folder} <= set(_shapes(snap))
    info = snap.snapshot()
    assert snap.last_scan.dirs_listed >= 1
    assert info.tree_id == _cold_tree(ws, tmp_path / "cold")


def test_a_restore_that_adds_or_removes_a_file_leaves_that_folder_to_be_listed(  # type: ignore[no-untyped-def]
    two_versions, settling, ws: Path, tmp_path: Path
) -> None:
    snap, a, _ = two_versions
    write(ws, {"d2/added.txt": "added\n"})
    (ws / "d3" / "f1.txt").unlink()
    _settle()
    snap.snapshot()
    _settle()
    snap.restore(a.id)  # takes d2/added.txt away and brings d3/f1.txt back
    shapes = _shapes(snap)
    assert "d2" not in shapes and "d3" not in shapes
    assert {"d0", "d1"} <= set(shapes)
    info = snap.snapshot()
    assert snap.last_scan.dirs_listed == 2
    assert info.tree_id == a.tree_id == _cold_tree(ws, tmp_path / "cold")


def test_a_change_after_the_restore_in_a_folder_given_its_shape_is_seen(  # type: ignore[no-untyped-def]
    two_versions, settling, ws: Path, tmp_path: Path
) -> None:
    snap, a, _ = two_versions
    snap.restore(a.id)
    assert "d0" in _shapes(snap)
    write(ws, {"d0/later.txt": "later\n"})
    (ws / "d3" / "f2.txt").unlink()
    info = snap.snapshot()
    assert snap.last_scan.dirs_listed == 2
    assert info.tree_id == _cold_tree(ws, tmp_path / "cold")


def test_a_folder_whose_rules_the_restore_changed_is_judged_again(  # type: ignore[no-untyped-def]
    ws: Path, make: Callable[..., Snapshotter], settling, tmp_path: Path
) -> None:
    """The shape given back keeps the rules its folder was listed under: where
    the restore wrote a ``.gitignore`` above, the next walk judges it again."""
    write(ws, {**_tree("a"), ".gitignore": "*.log\n", "d1/x.log": "log\n"})
    _settle()
    snap = make()
    a = snap.snapshot()
    write(ws, {**_tree("b"), ".gitignore": "*.tmp\n"})
    _settle()
    snap.snapshot()
    _settle()
    snap.restore(a.id)
    info = snap.snapshot()
    assert info.tree_id == a.tree_id == _cold_tree(ws, tmp_path / "cold")


def test_an_ignored_file_a_selective_restore_wrote_over_leaves_its_folder_to_be_listed(  # type: ignore[no-untyped-def]
    ws: Path, make: Callable[..., Snapshotter], settling, tmp_path: Path
) -> None:
    """A file only a workspace rule hides, in the way of the target's: the restore
    saves it, writes the target's and records it, while the folder's listing is the
    one judged last. The folder's table then holds an ignored file: no shape is given
    back, or the next walk would take that file for tracked."""
    write(ws, {**_tree("a"), "d1/settings.local": "old\n"})
    _settle()
    snap = make()
    a = snap.snapshot()
    write(ws, {".gitignore": "*.tmp\nsettings.local\n", "d1/settings.local": "the agent's\n"})
    _settle()
    snap.snapshot()
    _settle()
    snap.restore(a.id, files=["d1/settings.local"])
    assert (ws / "d1" / "settings.local").read_text() == "old\n"
    assert "d1" not in _shapes(snap)
    info = snap.snapshot()
    assert info.tree_id == _cold_tree(ws, tmp_path / "cold")
