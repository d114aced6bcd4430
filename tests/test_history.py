"""Undo/redo, turns, labels and metadata: the agent workflow layer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import read_tree, write

from snapshotter import InvalidInput, SnapshotNotFound


def test_undo_then_redo_is_byte_identical_including_edits_after_the_last_checkpoint(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "v1\n", "keep.txt": "k\n"})
    snap = make()
    snap.checkpoint("start")
    write(ws, {"a.txt": "v2\n", "new.txt": "n\n"})
    os.symlink("a.txt", ws / "link")
    (ws / "keep.txt").chmod(0o755)
    edited = read_tree(ws)  # no checkpoint for these edits
    assert snap.can_undo() and not snap.can_redo()
    result = snap.undo()
    assert result.ok and bool(result) and result.action == "undo"
    assert read_tree(ws) == {"a.txt": ("file", b"v1\n"), "keep.txt": ("file", b"k\n")}
    assert snap.can_redo()
    again = snap.redo()
    assert again.ok and read_tree(ws) == edited
    assert not snap.can_redo()


def test_undo_walks_back_through_checkpoints_and_redo_forward(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    states = []
    for i in range(3):
        write(ws, {"f.txt": f"{i}\n", f"only{i}.txt": "x"})
        snap.checkpoint(f"c{i}")
        states.append(read_tree(ws))
    assert snap.undo().ok and read_tree(ws) == states[1]
    assert snap.undo().ok and read_tree(ws) == states[0]
    first = snap.undo()
    assert not first.ok and "first checkpoint" in first.message
    assert read_tree(ws) == states[0]
    assert snap.redo().ok and read_tree(ws) == states[1]
    assert snap.redo().ok and read_tree(ws) == states[2]
    nothing = snap.redo()
    assert not nothing.ok and nothing.message == "nothing to redo"


def test_a_new_checkpoint_after_undo_clears_redo(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    write(ws, {"f": "1"})
    snap.checkpoint()
    write(ws, {"f": "2"})
    snap.checkpoint()
    snap.undo()
    assert snap.can_redo()
    write(ws, {"f": "3"})
    snap.checkpoint()
    assert not snap.can_redo()
    assert not snap.redo().ok


def test_nothing_to_undo_is_reported_not_faked(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    result = snap.undo()
    assert not result.ok and result.restore is None and "no checkpoint" in result.message
    assert not snap.can_undo()
    write(ws, {"f": "1"})
    snap.checkpoint()
    assert not snap.can_undo()  # at the only checkpoint, no edits
    write(ws, {"f": "2"})
    assert snap.can_undo()


def test_undo_and_redo_survive_a_new_process(ws: Path, home: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"f.txt": "one\n"})
    snap = make()
    snap.checkpoint()
    write(ws, {"f.txt": "two\n"})
    snap.close()
    code = (
        "import sys; from snapshotter import Snapshotter;"
        "s = Snapshotter(sys.argv[1], home=sys.argv[2]); r = s.undo(); print(r.ok, r.target_id)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ws), str(home)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "True"
    assert (ws / "f.txt").read_text() == "one\n"
    fresh = make()
    assert fresh.can_redo()
    assert fresh.redo().ok and (ws / "f.txt").read_text() == "two\n"


def test_turns_labels_and_revert(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    write(ws, {"f": "before turn 1"})
    pre1 = snap.begin_turn()
    write(ws, {"f": "during turn 1"})
    tool = snap.tool_snapshot("call_7")
    post1 = snap.end_turn()
    pre2 = snap.begin_turn(metadata={"model": "m"})
    write(ws, {"f": "during turn 2", "g": "new"})
    snap.end_turn()
    assert (pre1.label, post1.label, pre2.label, tool.label) == (
        "pre-turn:1",
        "post-turn:1",
        "pre-turn:2",
        "tool:call_7",
    )
    assert dict(pre2.metadata) == {"turn": "2", "model": "m"}
    assert snap.get("pre-turn:1").id == pre1.id and snap.get("tool:call_7").id == tool.id
    result = snap.revert_turn()  # the state before the last turn
    assert (ws / "f").read_text() == "during turn 1" and not (ws / "g").exists()
    assert result.safety_snapshot_id is not None
    snap.revert_turn(2)
    assert (ws / "f").read_text() == "before turn 1"
    with pytest.raises(SnapshotNotFound):
        snap.revert_turn(3)
    with pytest.raises(InvalidInput):
        snap.revert_turn(0)
    snap.restore("post-turn:2")  # labels resolve wherever a ref is accepted
    assert (ws / "g").read_text() == "new"


def test_end_turn_without_begin_is_an_error(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInput):
        make().end_turn()


def test_metadata_is_stored_in_the_commit_and_filterable(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    a = snap.snapshot("a", metadata={"session": "s1", "tool_call": "c1"})
    b = snap.snapshot("b", metadata={"session": "s2"})
    c = snap.snapshot("c", metadata={"session": "s1", "model": "x"}, label="mine")
    assert [i.id for i in snap.list(metadata={"session": "s1"})] == [c.id, a.id]
    assert [i.id for i in snap.list(metadata={"session": "s1", "model": "x"})] == [c.id]
    assert [i.id for i in snap.list(label="mine")] == [c.id]
    assert snap.list(metadata={"session": "nope"}) == []
    assert b.metadata["session"] == "s2"
    reread = make().get(a.id)  # parsed back from the commit in a fresh instance
    assert dict(reread.metadata) == {"session": "s1", "tool_call": "c1"}


def test_set_root_switches_history_and_leaves_the_old_root_alone(tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    first, second = tmp_path / "one", tmp_path / "two"
    write(first, {"f": "first v1"})
    write(second, {"f": "second v1"})
    snap = make(first)
    snap.checkpoint()
    write(first, {"f": "first v2"})
    assert snap.set_root(first) is True  # same root: keeps everything
    assert snap.can_undo()
    assert snap.set_root(second) is True
    assert snap.workspace == str(second.resolve())
    assert not snap.can_undo()  # the new root's own (empty) history
    snap.checkpoint()
    write(second, {"f": "second v2"})
    assert snap.undo().ok
    assert (second / "f").read_text() == "second v1"
    assert (first / "f").read_text() == "first v2"  # untouched
    assert snap.set_root(tmp_path / "missing") is False
    assert snap.set_root(first / "f") is False
    assert snap.workspace == str(second.resolve())  # failure keeps the current root
    assert snap.set_root(first) and snap.undo().ok
    assert (first / "f").read_text() == "first v1"


def test_failed_restore_puts_the_workspace_back_and_reports_failure(
    ws: Path, make, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from snapshotter.engine.worktree import fsops

    write(ws, {"a.txt": "a1", "b.txt": "b1", "c.txt": "c1"})
    snap = make()
    snap.checkpoint()
    write(ws, {"a.txt": "a2", "b.txt": "b2", "c.txt": "c2"})
    before = read_tree(ws)
    real = fsops.Workspace.write_file
    calls = {"n": 0}

    def flaky(self, rel: str, content: bytes, executable: bool):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 2:
            raise PermissionError(13, "Permission denied", rel)
        return real(self, rel, content, executable)

    monkeypatch.setattr(fsops.Workspace, "write_file", flaky)
    with pytest.raises(Exception) as caught:
        snap.undo()
    assert "Permission denied" in str(caught.value)
    monkeypatch.setattr(fsops.Workspace, "write_file", real)
    assert read_tree(ws) == before  # the half-done undo was put back
    assert snap.can_undo() and not snap.can_redo()  # stacks unchanged


def test_can_undo_says_what_undo_does_when_a_point_was_dropped_elsewhere(ws: Path, home: Path, make) -> None:  # type: ignore[no-untyped-def]
    """can_undo() was True while undo() raised 'is a commit, not a snapshot'."""
    from snapshotter import Retention, SnapshotNotFound

    write(ws, {"a.txt": "1\n"})
    snap = make(retention=Retention.unlimited())
    first = snap.checkpoint()
    write(ws, {"a.txt": "2\n"})
    snap.snapshot()
    store = snap._engine_ok().store
    store.remove_snapshot_ref(first.sequence, bytes.fromhex(first.id))  # dropped by another process
    assert snap.can_undo() is False  # the only undo point is gone
    assert snap.undo().ok is False
    with pytest.raises(SnapshotNotFound, match="was dropped"):
        snap.get(first.id)
