"""Safety snapshots count their lines on first request, not while the user waits.

The snapshots the library takes for itself (``pre-restore``, ``pre-undo``,
``pre-redo``, ``pre-revert``) record their file counts at once and defer their
line counts; the counts come out equal to the ones a snapshot taken by the user
records (the same states, snapshotted in a second store), are counted once and
kept beside the store (``line-counts`` in its meta folder), and survive a
compaction that deletes the tree they are counted from.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import GIT, git, git_env, needs_git, run_command, write

from snapshotter import Retention, SnapshotInfo, Snapshotter
from snapshotter.engine.gitstore import trailers
from snapshotter.engine.gitstore.linecounts import FILE_NAME
from snapshotter.engine.session import engine as engine_module
from snapshotter.engine.session import recording
from snapshotter.engine.session import recording as recording_module

Counts = tuple[int, int, int]


def _state_a(ws: Path) -> None:
    write(
        ws,
        {
            "keep.txt": "same\n",
            "mod.txt": "one\ntwo\nthree\n",
            "gone.txt": "a\nb\n",
            "bin/changed.bin": b"\0\1\2" * 50,
            "bin/gone.bin": b"\0xyz",
            "becomes_binary.txt": "text\nlines\n",
            "no_newline.txt": "x\ny",
            "dir/deep/file.py": "def f():\n    return 1\n",
        },
    )
    os.symlink("keep.txt", ws / "link")
    os.symlink("mod.txt", ws / "retarget")


def _state_b(ws: Path) -> None:
    """Adds, deletions, modifications, binary files and symlinks from state A."""
    (ws / "gone.txt").unlink()
    (ws / "bin/gone.bin").unlink()
    shutil.rmtree(ws / "dir")
    (ws / "retarget").unlink()
    os.symlink("keep.txt", ws / "retarget")
    (ws / "link").unlink()
    (ws / "link").write_text("was a link\nnow a file\n")  # a type change
    write(
        ws,
        {
            "mod.txt": "one\n2\nthree\nfour\n",
            "bin/changed.bin": b"\0\3\4" * 60,
            "becomes_binary.txt": b"text\0bytes\n",
            "no_newline.txt": "x\ny\nz",
            "new.txt": "n1\nn2\nn3\n",
            "bin/new.bin": b"\0new",
            "new/nested/file.md": "# title\n\nbody\n",
        },
    )
    os.symlink("new.txt", ws / "newlink")


def _back_to_a(ws: Path) -> None:
    for child in ws.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    _state_a(ws)


def _counts(info: SnapshotInfo) -> Counts:
    return info.files_changed, info.additions, info.deletions


def _raw_message(snap: Snapshotter, info: SnapshotInfo) -> str:
    return snap._engine_ok().store.read_commit(bytes.fromhex(info.id)).message.decode()


def _is_deferred(snap: Snapshotter, info: SnapshotInfo) -> bool:
    return "lines=uncounted" in _raw_message(snap, info)


def _eager(tmp_path: Path, make: Callable[..., Snapshotter], states: list[Callable[[Path], None]]) -> Counts:
    """The counts a user snapshot of the last state records, after user snapshots
    of the states before it, in a store of its own."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    snap = make(mirror, home=tmp_path / "mirror-home")
    info = None
    for state in states:
        state(mirror)
        info = snap.snapshot("eager")
        assert not _is_deferred(snap, info)
    assert info is not None
    return _counts(info)


@pytest.fixture
def counter_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bytes, bytes]]:
    """Every deferred count made (tree, tree counted from)."""
    calls: list[tuple[bytes, bytes]] = []
    real = recording_module.stored_lines

    def counting(store, tree, against, read, marked):  # type: ignore[no-untyped-def]
        calls.append((tree, against))
        return real(store, tree, against, read, marked)

    monkeypatch.setattr(recording_module, "stored_lines", counting)  # the engine imports it when it counts
    return calls


def test_a_pre_restore_snapshot_counts_later_what_a_user_snapshot_counts_at_once(
    ws: Path,
    tmp_path: Path,
    make,
    counter_calls,  # type: ignore[no-untyped-def]
) -> None:
    expected = _eager(tmp_path, make, [_state_a, _state_b])
    assert expected[1] > 0 and expected[2] > 0
    _state_a(ws)
    snap = make()
    first = snap.snapshot("a")
    _state_b(ws)
    restored = snap.restore(first.id)
    safety = snap.get(restored.safety_snapshot_id or "")
    assert safety.label == "pre-restore"
    assert _is_deferred(snap, safety)
    assert _counts(safety) == expected
    assert [_counts(i) for i in snap.list() if i.id == safety.id] == [expected]
    assert len(counter_calls) == 1


@pytest.mark.parametrize("way", ["undo", "redo", "revert"])
def test_undo_redo_and_revert_safety_snapshots_are_counted_on_request_like_eager_ones(
    ws: Path,
    tmp_path: Path,
    make,
    way: str,  # type: ignore[no-untyped-def]
) -> None:
    def state_c(root: Path) -> None:
        write(root, {"mod.txt": "after undo\n", "c.txt": "c\nc\n"})
        (root / "keep.txt").unlink()

    _state_a(ws)
    snap = make()
    if way == "revert":
        snap.begin_turn()
        _state_b(ws)
        snap.revert_turn()
        label, states = "pre-revert", [_state_a, _state_b]
    else:
        snap.checkpoint("a")
        _state_b(ws)
        snap.undo()
        label, states = "pre-undo", [_state_a, _state_b]
        if way == "redo":
            state_c(ws)  # edits after the undo: redo saves them first
            snap.redo()
            # counted from the newest snapshot then: the pre-undo one, which holds state B
            label, states = "pre-redo", [_state_a, _state_b, lambda root: (_back_to_a(root), state_c(root))]
    (safety,) = snap.list(label=label)
    assert _is_deferred(snap, safety)
    assert _counts(safety) == _eager(tmp_path, make, states)


def test_restore_reads_no_blob_for_its_safety_snapshot_lines(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    _state_a(ws)
    snap = make()
    first = snap.snapshot("a")
    _state_b(ws)
    compared: list[str] = []
    real_diff = recording.file_numstat

    def counting_diff(change, load_old, load_new, marked=None):  # type: ignore[no-untyped-def]
        compared.append(change.path)
        return real_diff(change, load_old, load_new, marked)

    monkeypatch.setattr(recording, "file_numstat", counting_diff)
    read: list[str] = []
    real_read = engine_module.Engine.read_for_stats

    def counting_read(self, path, sha, mode):  # type: ignore[no-untyped-def]
        read.append(path)
        return real_read(self, path, sha, mode)

    monkeypatch.setattr(engine_module.Engine, "read_for_stats", counting_read)
    result = snap.restore(first.id)
    assert (compared, read) == ([], [])
    assert result.safety_snapshot_id is not None and result.written > 0
    assert snap.get(result.safety_snapshot_id).additions > 0  # counted now, on request
    assert compared and read


def test_counts_are_counted_once_and_kept_for_other_processes(ws: Path, make, counter_calls) -> None:  # type: ignore[no-untyped-def]
    _state_a(ws)
    snap = make()
    first = snap.snapshot("a")
    _state_b(ws)
    safety_id = snap.restore(first.id).safety_snapshot_id or ""
    assert counter_calls == []  # nothing counted while restoring
    counted = snap.get(safety_id)
    assert len(counter_calls) == 1
    assert snap.get(safety_id) == counted and snap.list()[0] == counted and snap.get(safety_id[:10]) == counted
    assert len(counter_calls) == 1
    kept = Path(snap.store_path, "snapshotter", FILE_NAME).read_text()
    assert kept == f"{safety_id} {counted.additions} {counted.deletions}\n"
    again = make()  # another instance reads the kept counts
    assert again.get(safety_id) == counted and again.list()[0] == counted
    assert len(counter_calls) == 1


def test_damaged_kept_counts_are_counted_again(ws: Path, make, counter_calls) -> None:  # type: ignore[no-untyped-def]
    _state_a(ws)
    snap = make()
    first = snap.snapshot("a")
    _state_b(ws)
    safety_id = snap.restore(first.id).safety_snapshot_id or ""
    counted = snap.get(safety_id)
    path = Path(snap.store_path, "snapshotter", FILE_NAME)
    path.write_text(f"{safety_id} 1\ngarbage\n{safety_id[:20]} 5 5\n")  # torn and damaged lines
    assert make().get(safety_id) == counted
    assert len(counter_calls) == 2


def test_a_store_that_cannot_keep_counts_still_answers(ws: Path, make, counter_calls) -> None:  # type: ignore[no-untyped-def]
    """Counting is a cache: where its file cannot be written (here a folder stands
    in its place), reads still return the counts, kept in memory only."""
    _state_a(ws)
    snap = make()
    first = snap.snapshot("a")
    _state_b(ws)
    safety_id = snap.restore(first.id).safety_snapshot_id or ""
    Path(snap.store_path, "snapshotter", FILE_NAME).mkdir()
    counted = make().get(safety_id)
    assert (counted.additions, counted.deletions) != (0, 0)
    assert [info.id for info in snap.list()][0] == safety_id and snap.get(safety_id) == counted
    assert len(counter_calls) == 2  # one count per instance: nothing could be kept for the other


def test_every_public_result_carries_the_counts(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    _state_a(ws)
    snap = make(retention=Retention(max_snapshots=1, max_age=None, max_store_bytes=None))
    first = snap.snapshot("a")
    _state_b(ws)
    safety_id = snap.restore(first.id).safety_snapshot_id or ""
    expected = _counts(make().get(safety_id))
    for fresh in (lambda s: s.pin(safety_id), lambda s: s.unpin(safety_id), lambda s: s.list(label="pre-restore")[0]):
        assert _counts(fresh(make())) == expected
    checker = make()
    checker.restore(safety_id)  # back to state B: the pre-restore snapshot is the base now
    base = checker.base()
    assert base is not None and base.id == safety_id and _counts(base) == expected
    pruner = make(retention=Retention(max_snapshots=1, max_age=None, max_store_bytes=None, max_undo=1))
    checker.snapshot("newer")  # the pre-restore snapshot is no longer the newest, the base, nor the newest undo point
    pruned = {info.id: _counts(info) for info in pruner.prune(dry_run=True).pruned}
    assert pruned[safety_id] == expected


def test_a_compaction_counts_first_what_it_could_no_longer_count(
    ws: Path,
    tmp_path: Path,
    make,
    counter_calls,  # type: ignore[no-untyped-def]
) -> None:
    def state_c(root: Path) -> None:
        write(root, {"mod.txt": "c\n", "c.txt": "c1\nc2\n"})

    expected = _eager(tmp_path, make, [_state_a, _state_b, state_c])
    _state_a(ws)
    snap = make(retention=Retention.unlimited())
    first = snap.snapshot("a")
    _state_b(ws)
    middle = snap.snapshot("b")
    state_c(ws)
    safety_id = snap.restore(first.id).safety_snapshot_id or ""  # counted from the tree of "b"
    assert counter_calls == []
    pruner = make(retention=Retention(max_snapshots=1, max_age=None, max_store_bytes=None))
    pruned = pruner.prune()  # drops "b" (the pre-restore snapshot is the newest, "a" the base)
    assert [info.id for info in pruned.pruned] == [middle.id]
    assert not snap._engine_ok().store.has_object(bytes.fromhex(middle.tree_id))
    assert len(counter_calls) == 1  # the compaction counted it before deleting "b"'s tree
    assert _counts(make().get(safety_id)) == expected
    assert len(counter_calls) == 1


def test_snapshots_with_counts_in_their_trailer_read_as_before(ws: Path, make, counter_calls) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "1\n2\n"})
    snap = make()
    snap.snapshot("one")
    write(ws, {"a.txt": "1\nx\n3\n", "b.txt": "b\n"})
    second = snap.snapshot("two", label="mine")
    assert _raw_message(snap, second).endswith("Snapshot-Stats: files=2 additions=3 deletions=1\n")
    assert _counts(make().get("mine")) == (2, 3, 1)
    assert counter_calls == []
    store = snap._engine_ok().store
    old = store.read_commit(bytes.fromhex(second.id))  # a commit written before deferred counts existed
    old.message = b"two\n\nSnapshot-Seq: 2\nSnapshot-Label: mine\nSnapshot-Stats: files=2 additions=3 deletions=1\n"
    info, against = trailers.parse_snapshot(old, 2)
    assert against is None and _counts(info) == (2, 3, 1) and info.label == "mine"


def test_user_snapshots_count_lines_at_once(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    _state_a(ws)
    snap = make()
    snap.snapshot("a")
    _state_b(ws)
    infos = [snap.snapshot("b"), snap.checkpoint("c"), snap.begin_turn(), snap.end_turn()]
    write(ws, {"tool.txt": "t\n"})
    infos.append(snap.tool_snapshot("call-1"))
    with snap.guard():
        write(ws, {"guarded.txt": "g\n"})
    guarded = snap.list(label="guard")
    assert guarded
    infos += guarded
    assert not any(_is_deferred(snap, info) for info in infos)


@needs_git
def test_a_store_with_kept_counts_passes_git_fsck_strict(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    _state_a(ws)
    snap = make()
    first = snap.snapshot("a")
    _state_b(ws)
    safety_id = snap.restore(first.id).safety_snapshot_id or ""
    snap.get(safety_id)
    assert Path(snap.store_path, "snapshotter", FILE_NAME).is_file()
    env = git_env(tmp_path)
    git("--git-dir", snap.store_path, "fsck", "--strict", "--no-dangling", env=env)
    snap.gc()
    git("--git-dir", snap.store_path, "fsck", "--strict", "--no-dangling", env=env)
    assert GIT is not None and safety_id in git("--git-dir", snap.store_path, "log", "--all", "--format=%H", env=env)


def test_the_command_line_shows_counted_lines(ws: Path, home: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    expected = _eager(tmp_path, make, [_state_a, _state_b])
    _state_a(ws)
    snap = make()
    first = snap.snapshot("a")
    _state_b(ws)
    safety_id = snap.restore(first.id).safety_snapshot_id or ""
    snap.close()
    environment = {"SNAPSHOTTER_HOME": str(home)}
    shown = json.loads(run_command("show", safety_id, "--json", "-C", str(ws), env=environment).stdout)["result"]
    logged = json.loads(run_command("log", "--json", "-C", str(ws), env=environment).stdout)["result"]
    listed = [e for e in logged if e["id"] == safety_id]
    assert len(listed) == 1
    for entry in [shown, *listed]:
        assert (entry["files_changed"], entry["additions"], entry["deletions"]) == expected
