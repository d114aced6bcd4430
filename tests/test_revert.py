"""revert(): undo one change on the workspace as it is now, keeping every other change.

git is the oracle for the merges (``git merge-file`` with ours = the workspace,
base = the change's far end, theirs = its near end); everything else is
checked byte for byte on real folders.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import contents, git_merge_file, needs_git, write

from snapshotter import ConflictReason, InvalidInput, RestoreResult, RevertResult, Snapshotter

LINES = [f"line {i}: {'alpha beta gamma'[: i % 16]}\n" for i in range(100)]


def edited(lines: list[str], start: int, end: int, tag: str) -> str:
    return "".join(f"{tag} {i}\n" if start <= i < end else line for i, line in enumerate(lines))


def workspace_merge(tmp: Path, ours: bytes, base: bytes, theirs: bytes) -> tuple[bytes, int]:
    """git's merge of a revert: ours the workspace, base the change's far end, theirs its near end."""
    return git_merge_file(tmp, ours, base, theirs, ("workspace", "reverted"))


def clash(ws: Path, snap: Snapshotter) -> tuple[str, str]:
    """A change to lines 0-9 of shared.py (and to plain.py), then the workspace's own
    edit of lines 5-14: (before, after) of the change, whose revert clashes there."""
    write(ws, {"shared.py": "".join(LINES), "plain.py": "p1\n"})
    before = snap.snapshot()
    write(ws, {"shared.py": edited(LINES, 0, 10, "agent"), "plain.py": "p2\n"})
    after = snap.snapshot()
    write(ws, {"shared.py": edited(LINES, 5, 15, "person")})
    return before.id, after.id


def test_a_later_edit_elsewhere_survives(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"f1.py": "one\n", "other.py": "x\n"})
    snap = make()
    before = snap.snapshot("before")
    write(ws, {"f1.py": "two\n", "new.py": "added\n"})
    after = snap.snapshot("after")
    write(ws, {"other.py": "a person's edit\n"})
    result = snap.revert(before.id, after.id)
    assert isinstance(result, RevertResult) and result
    assert (ws / "f1.py").read_text() == "one\n" and not (ws / "new.py").exists()
    assert (ws / "other.py").read_text() == "a person's edit\n"
    assert result.reverted == ("f1.py", "new.py") and result.conflicts == () and result.merged == ()
    assert result.safety_snapshot_id is not None


@needs_git
def test_drifted_text_is_merged_as_git_merge_file_merges_it(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"shared.py": "".join(LINES)})
    snap = make()
    before = snap.snapshot()
    write(ws, {"shared.py": edited(LINES, 0, 10, "agent")})
    after = snap.snapshot()
    write(ws, {"shared.py": edited(LINES, 0, 10, "agent").replace("line 55", "person 55")})
    ours = (ws / "shared.py").read_bytes()
    expected, conflicts = workspace_merge(
        tmp_path / "oracle", ours, edited(LINES, 0, 10, "agent").encode(), "".join(LINES).encode()
    )
    assert conflicts == 0
    result = snap.revert(before.id, after.id)
    assert result.merged == ("shared.py",) and not result.conflicts
    assert (ws / "shared.py").read_bytes() == expected
    assert b"person 55" in expected and b"agent 3" not in expected


@needs_git
def test_overlapping_edits_conflict_and_nothing_is_written(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    before, after = clash(ws, snap)
    state = contents(ws)
    listed = len(snap.list(limit=None))
    result = snap.revert(before, after)
    assert not result and not result.applied
    assert [(c.path, c.reason) for c in result.conflicts] == [("shared.py", ConflictReason.CONTENT)]
    assert contents(ws) == state, "abort must write nothing"
    assert result.safety_snapshot_id is None and len(snap.list(limit=None)) == listed
    _, git_conflicts = workspace_merge(
        tmp_path / "oracle", state["shared.py"], edited(LINES, 0, 10, "agent").encode(), "".join(LINES).encode()
    )
    assert git_conflicts > 0


@needs_git
def test_markers_mode_writes_what_git_merge_file_writes(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    before, after = clash(ws, snap)
    ours = (ws / "shared.py").read_bytes()
    expected, conflicts = workspace_merge(
        tmp_path / "oracle", ours, edited(LINES, 0, 10, "agent").encode(), "".join(LINES).encode()
    )
    result = snap.revert(before, after, conflicts="markers")
    assert result.applied and result.marked == ("shared.py",) and conflicts > 0
    assert (ws / "shared.py").read_bytes() == expected
    assert (ws / "plain.py").read_text() == "p1\n"  # the clean path is reverted too


def test_ours_mode_keeps_the_workspace_version_of_conflicts_only(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    before, after = clash(ws, snap)
    result = snap.revert(before, after, conflicts="ours")
    assert result.applied and result.reverted == ("plain.py",) and result.marked == ()
    assert (ws / "shared.py").read_text() == edited(LINES, 5, 15, "person")
    assert (ws / "plain.py").read_text() == "p1\n"


@pytest.mark.parametrize("kind", ["binary", "symlink", "file-to-folder", "deleted", "modify-deleted"])
def test_drift_that_cannot_be_merged_is_a_conflict(ws: Path, make, kind: str) -> None:  # type: ignore[no-untyped-def]
    if kind == "symlink" and sys.platform == "win32":
        pytest.skip("no symlinks here")
    write(ws, {"f": b"\x00bin one" if kind == "binary" else "one\n", "keep.txt": "k\n"})
    if kind == "symlink":
        (ws / "f").unlink()
        os.symlink("target-one", ws / "f")
    snap = make()
    before = snap.snapshot()
    if kind == "binary":
        write(ws, {"f": b"\x00bin two"})
    elif kind == "symlink":
        (ws / "f").unlink()
        os.symlink("target-two", ws / "f")
    elif kind == "modify-deleted":
        (ws / "f").unlink()
    else:
        write(ws, {"f": "two\n"})
    after = snap.snapshot()
    if kind == "binary":
        write(ws, {"f": b"\x00bin three"})
    elif kind == "symlink":
        (ws / "f").unlink()
        os.symlink("target-three", ws / "f")
    elif kind == "file-to-folder":
        (ws / "f").unlink()
        write(ws, {"f/inside.txt": "now a folder\n"})
    elif kind == "deleted":
        (ws / "f").unlink()
    elif kind == "modify-deleted":
        write(ws, {"f": "recreated differently\n"})
    state = contents(ws)
    result = snap.revert(before.id, after.id)
    expected = {
        "binary": ConflictReason.BINARY,
        "symlink": ConflictReason.SYMLINK,
        "file-to-folder": ConflictReason.TYPE,
        "deleted": ConflictReason.DELETED,
        "modify-deleted": ConflictReason.CONTENT,
    }[kind]
    assert [c.reason for c in result.conflicts] == [expected], result
    assert contents(ws) == state


def test_exec_bit_chosen_both_ways_is_a_mode_conflict(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """With two values an exec bit can only clash where both sides made the file:
    the change deleted it, and the workspace made it again with the other bit."""
    if sys.platform == "win32":
        pytest.skip("no exec bit here")
    write(ws, {"run.sh": "echo one\n", "keep": "k\n"})
    os.chmod(ws / "run.sh", 0o755)
    snap = make()
    before = snap.snapshot()
    (ws / "run.sh").unlink()
    after = snap.snapshot()
    write(ws, {"run.sh": "echo one\n"})  # again, not executable
    result = snap.revert(before.id, after.id)
    assert [c.reason for c in result.conflicts] == [ConflictReason.MODE]
    assert not os.access(ws / "run.sh", os.X_OK)


def test_dry_run_writes_nothing_and_says_what_it_would_do(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "1\n", "b.txt": "b\n"})
    snap = make()
    before = snap.snapshot()
    write(ws, {"a.txt": "2\n", "c.txt": "new\n"})
    after = snap.snapshot()
    write(ws, {"b.txt": "edited since\n"})
    state, listed = contents(ws), len(snap.list(limit=None))
    result = snap.revert(before.id, after.id, dry_run=True)
    assert result.dry_run and not result.applied and result.reverted == ("a.txt", "c.txt")
    assert contents(ws) == state and len(snap.list(limit=None)) == listed


def test_a_revert_is_undone_by_restoring_its_safety_snapshot(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "1\n", "d/b.txt": "b\n"})
    snap = make()
    before = snap.snapshot()
    write(ws, {"a.txt": "2\n", "d/c.txt": "new\n"})
    after = snap.snapshot()
    write(ws, {"d/b.txt": "edited since\n"})
    state = contents(ws)
    result = snap.revert(before.id, after.id)
    assert contents(ws) != state
    assert result.safety_snapshot_id is not None
    snap.restore(result.safety_snapshot_id)
    assert contents(ws) == state


def test_untracked_files_in_the_way_are_never_touched(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"notes.txt": "tracked\n", "keep.txt": "k\n"})
    snap = make()
    before = snap.snapshot()
    (ws / "notes.txt").unlink()
    after = snap.snapshot()
    write(ws, {".gitignore": "notes.txt\n", "notes.txt": "my private notes, ignored now\n"})
    result = snap.revert(before.id, after.id)
    assert [(c.path, c.reason) for c in result.conflicts] == [("notes.txt", ConflictReason.UNTRACKED)]
    assert (ws / "notes.txt").read_text() == "my private notes, ignored now\n"


def test_folders_emptied_by_the_revert_go_and_deleted_files_come_back(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"gone.txt": "old\n", "keep.txt": "k\n"})
    snap = make()
    before = snap.snapshot()
    (ws / "gone.txt").unlink()
    write(ws, {"pkg/sub/new.py": "x\n"})
    after = snap.snapshot()
    result = snap.revert(before.id, after.id)
    assert (ws / "gone.txt").read_text() == "old\n"
    assert not (ws / "pkg").exists()
    assert set(result.reverted) == {"gone.txt", "pkg/sub/new.py"}


def test_files_limits_the_revert(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "1\n", "b.txt": "1\n"})
    snap = make()
    before = snap.snapshot()
    write(ws, {"a.txt": "2\n", "b.txt": "2\n"})
    after = snap.snapshot()
    result = snap.revert(before.id, after.id, files=["a.txt"])
    assert result.reverted == ("a.txt",)
    assert (ws / "a.txt").read_text() == "1\n" and (ws / "b.txt").read_text() == "2\n"


def test_default_after_is_the_turn_end_the_tool_done_or_the_next_snapshot(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"f": "0\n", "g": "0\n", "h": "0\n"})
    snap = make()
    pre = snap.begin_turn()
    write(ws, {"f": "1\n"})
    snap.end_turn()
    write(ws, {"g": "1\n"})
    tool = snap.tool_snapshot("c1")
    write(ws, {"h": "1\n"})
    snap.tool_done("c1")
    write(ws, {"f": "1\n", "g": "2\n"})
    assert snap.revert(pre.id).reverted == ("f",)  # pre-turn -> post-turn
    assert (ws / "f").read_text() == "0\n" and (ws / "g").read_text() == "2\n"
    assert snap.revert(tool.id).reverted == ("h",)  # tool -> tool-done
    plain = snap.snapshot("plain")
    write(ws, {"g": "3\n"})
    nxt = snap.snapshot("next")
    write(ws, {"h": "later\n"})
    assert snap.revert(plain.id).reverted == ("g",)  # the next snapshot, not the workspace now
    assert (ws / "h").read_text() == "later\n"
    last = snap.snapshot("last")
    write(ws, {"g": "4\n"})
    assert snap.revert(last.id).reverted == ("g",) and (ws / "g").read_text() == "2\n" != nxt.id  # none after: now


def test_revert_turn_keeps_a_persons_later_edit_and_reset_restores(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"agent.py": "a0\n", "mine.txt": "m0\n", "shared.py": "".join(LINES)})
    snap = make()
    snap.begin_turn()
    write(ws, {"agent.py": "a1\n", "shared.py": edited(LINES, 0, 5, "agent")})
    snap.end_turn()
    write(ws, {"mine.txt": "a person's edit\n", "shared.py": edited(LINES, 0, 5, "agent").replace("line 80", "me 80")})
    result = snap.revert_turn()
    assert isinstance(result, RevertResult) and result.merged == ("shared.py",)
    assert (ws / "agent.py").read_text() == "a0\n"
    assert (ws / "mine.txt").read_text() == "a person's edit\n"
    assert (ws / "shared.py").read_text() == "".join(LINES).replace("line 80", "me 80")
    reset = snap.revert_turn(reset=True)
    assert isinstance(reset, RestoreResult)
    assert (ws / "mine.txt").read_text() == "m0\n"  # reset: the folder as it was before the turn


def test_revert_of_a_turn_still_open_runs_to_now(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"f": "0\n"})
    snap = make()
    snap.begin_turn()
    write(ws, {"f": "1\n", "g": "new\n"})
    result = snap.revert_turn()
    assert result and (ws / "f").read_text() == "0\n" and not (ws / "g").exists()


def test_bad_arguments_are_refused(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"f": "0\n"})
    snap: Snapshotter = make()
    first = snap.snapshot()
    with pytest.raises(InvalidInput):
        snap.revert(first.id, conflicts="theirs")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        snap.revert_turn(conflicts="nope")  # type: ignore[call-overload]


@needs_git
def test_a_revert_equals_git_revert_of_the_same_commit(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """The same three states as commits in a real repository (the change B on A, a
    person's later commit C): ``git revert --no-commit B`` on C, file for file."""
    from conftest import GIT, git_env

    assert GIT is not None
    repo = tmp_path / "oracle-repo"
    env = git_env(tmp_path)

    def git(*args: str) -> None:
        subprocess.run([GIT, "-C", str(repo), *args], env=env, check=True, capture_output=True)

    def commit(files: dict[str, str], gone: tuple[str, ...] = ()) -> None:
        write(repo, files)
        for rel in gone:
            (repo / rel).unlink()
        git("add", "-A")
        git("commit", "-q", "-m", "state")

    a = {"f.py": "".join(LINES), "keep.txt": "k\n", "old.txt": "to be deleted by the change\n"}
    b = {"f.py": edited(LINES, 0, 10, "agent"), "g.py": "added by the change\n"}
    c = {"f.py": edited(LINES, 0, 10, "agent").replace("line 55", "person 55"), "keep.txt": "person\n"}
    repo.mkdir()
    git("init", "-q")
    commit(a)
    commit(b, gone=("old.txt",))
    commit(c)
    git("revert", "--no-commit", "HEAD~1")
    write(ws, a)
    snap = make()
    before = snap.snapshot()
    write(ws, b)
    (ws / "old.txt").unlink()
    after = snap.snapshot()
    write(ws, c)
    result = snap.revert(before.id, after.id)
    assert result and not result.conflicts
    assert contents(ws) == {k: v for k, v in contents(repo).items() if not k.startswith(".git/")}


def _file_then_folder(root: Path, step: int) -> None:
    """State ``step`` of a change that turns file ``p`` into folder ``p`` (``p/x.py``)."""
    if step == 0:
        write(root, {"keep.txt": "k\n", "p": "a file\n"})
    else:
        (root / "p").unlink()
        write(root, {"p/x.py": "in the folder\n"})


@needs_git
@pytest.mark.parametrize("conflicts", ["abort", "ours"])
def test_reverting_a_file_turned_folder_puts_the_file_back_as_git_revert_does(
    ws: Path, tmp_path: Path, make, conflicts: str
) -> None:  # type: ignore[no-untyped-def]
    """Nothing moved since the change: its revert deletes ``p/x.py`` and writes
    ``p`` (no conflict), file for file as ``git revert --no-commit`` does."""
    from conftest import git, git_env

    repo, env = tmp_path / "oracle-repo", git_env(tmp_path)
    repo.mkdir()
    git("init", "-q", cwd=repo, env=env)
    snap = make()
    ids = []
    for step in (0, 1):
        _file_then_folder(repo, step)
        git("add", "-A", cwd=repo, env=env)
        git("commit", "-qm", f"state {step}", cwd=repo, env=env)
        _file_then_folder(ws, step)
        ids.append(snap.snapshot().id)
    git("revert", "--no-commit", "HEAD", cwd=repo, env=env)
    result = snap.revert(ids[0], ids[1], conflicts=conflicts)  # type: ignore[arg-type]
    assert result.conflicts == () and result.reverted == ("p", "p/x.py"), result
    assert contents(ws) == {k: v for k, v in contents(repo).items() if not k.startswith(".git/")}
    assert contents(ws) == {"keep.txt": b"k\n", "p": b"a file\n"}


def test_a_folder_the_workspace_turned_into_a_file_is_a_conflict(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """The change edited ``d/x.py``; the workspace then made ``d`` a file: the
    revert has nowhere to put ``d/x.py`` and writes nothing."""
    write(ws, {"d/x.py": "one\n", "keep.txt": "k\n"})
    snap = make()
    before = snap.snapshot()
    write(ws, {"d/x.py": "two\n", "keep.txt": "k2\n"})
    after = snap.snapshot()
    (ws / "d/x.py").unlink()
    (ws / "d").rmdir()
    write(ws, {"d": "a file now\n"})
    state = contents(ws)
    result = snap.revert(before.id, after.id)
    assert [(c.path, c.reason) for c in result.conflicts] == [("d/x.py", ConflictReason.TYPE)], result
    assert not result.applied
    assert contents(ws) == state


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_an_untracked_file_or_symlink_where_a_folder_would_go_is_an_untracked_conflict(
    ws: Path, tmp_path: Path, make, kind: str
) -> None:  # type: ignore[no-untyped-def]
    """The change deleted ``d/f.txt``; ``d`` is now an ignored file, or an ignored
    symlink to a folder outside: recreating ``d/f.txt`` would replace it or write
    through it. A conflict, so abort writes nothing and ours reverts the rest."""
    if kind == "symlink" and sys.platform == "win32":
        pytest.skip("no symlinks here")
    outside = tmp_path / "outside"
    outside.mkdir()
    write(ws, {"keep.txt": "k1\n", "d/f.txt": "tracked\n"})
    snap = make()
    before = snap.snapshot()
    (ws / "d/f.txt").unlink()
    (ws / "d").rmdir()
    write(ws, {"keep.txt": "k2\n"})
    after = snap.snapshot()
    write(ws, {".gitignore": "/d\n"})
    if kind == "symlink":
        os.symlink(outside, ws / "d")
    else:
        write(ws, {"d": "ignored private notes\n"})
    state, listed = contents(ws), len(snap.list(limit=None))
    untracked = [("d/f.txt", ConflictReason.UNTRACKED)]
    dry = snap.revert(before.id, after.id, dry_run=True)
    assert [(c.path, c.reason) for c in dry.conflicts] == untracked and dry.reverted == ("keep.txt",)
    result = snap.revert(before.id, after.id)
    assert [(c.path, c.reason) for c in result.conflicts] == untracked and not result.applied
    assert contents(ws) == state and len(snap.list(limit=None)) == listed
    kept = snap.revert(before.id, after.id, conflicts="ours")
    assert kept.applied and kept.reverted == ("keep.txt",) and [c.path for c in kept.conflicts] == ["d/f.txt"]
    assert contents(ws) == {**state, "keep.txt": b"k1\n"} and list(outside.iterdir()) == []
