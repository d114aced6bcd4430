"""Entries of the user's index that the working tree does not hold: a submodule
not checked out keeps its gitlink, a file outside a sparse checkout is not taken
as deleted. git is the oracle (``git add -A && git write-tree``, ``git status``)."""

from __future__ import annotations

from pathlib import Path

from conftest import git, git_env, needs_git, write

from snapshotter import SkipReason


def kept(result: object) -> dict[str, str]:
    return {item.path: item.reason.value for item in result.kept}  # type: ignore[attr-defined]


def git_tree(ws: Path, env: dict[str, str]) -> str:
    git("add", "-A", cwd=ws, env=env)
    return git("write-tree", cwd=ws, env=env).strip()


@needs_git
def test_a_submodule_not_checked_out_keeps_its_gitlink(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    env = git_env(tmp_path)
    inner = tmp_path / "inner"
    inner.mkdir()
    git("init", "-q", cwd=inner, env=env)
    write(inner, {"lib.c": "int x;\n"})
    git("add", "-A", cwd=inner, env=env)
    git("commit", "-q", "-m", "inner", cwd=inner, env=env)
    git("init", "-q", cwd=ws, env=env)
    write(ws, {"app.c": "int main;\n"})
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sm", cwd=ws, env=env)
    git("commit", "-q", "-m", "outer", cwd=ws, env=env)
    git("submodule", "deinit", "-q", "-f", "sm", cwd=ws, env=env)
    assert (ws / "sm").is_dir() and not any((ws / "sm").iterdir())
    snap = make()
    first = snap.snapshot()
    assert first.tree_id == git_tree(ws, env)  # the gitlink is in both
    write(ws, {"sm/stray.txt": "git ignores what lies in a gitlink's folder\n"})
    assert snap.snapshot().tree_id == git_tree(ws, env) == first.tree_id
    assert snap.status() == []
    (ws / "sm/stray.txt").unlink()
    (ws / "sm").rmdir()  # the folder gone: git stages the gitlink's deletion, and so does a snapshot
    gone = snap.snapshot()
    assert gone.tree_id == git_tree(ws, env) != first.tree_id
    result = snap.restore(first.id)  # a restore does not check submodules out
    assert kept(result) == {"sm": "not-checked-out"} and not (ws / "sm").exists()
    git("reset", "-q", cwd=ws, env=env)


@needs_git
def test_files_outside_a_sparse_checkout_are_not_taken_as_deleted(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    env = git_env(tmp_path)
    git("init", "-q", cwd=ws, env=env)
    write(ws, {"a/one.txt": "1\n", "b/two.txt": "2\n", "b/deep/three.txt": "3\n", "top.txt": "t\n"})
    git("add", "-A", cwd=ws, env=env)
    git("commit", "-q", "-m", "all", cwd=ws, env=env)
    snap = make()
    everything = snap.snapshot()
    git("sparse-checkout", "set", "a", cwd=ws, env=env)
    assert not (ws / "b").exists() and (ws / "a/one.txt").exists()
    narrowed = snap.snapshot()
    assert narrowed.tree_id == everything.tree_id == git_tree(ws, env)
    assert snap.status() == [] and snap.diff(everything.id) == []
    write(ws, {"a/one.txt": "1 changed\n"})
    edited = snap.snapshot()
    assert edited.tree_id == git_tree(ws, env) and edited.files_changed == 1
    result = snap.restore(everything.id)
    assert (ws / "a/one.txt").read_text() == "1\n" and not (ws / "b").exists()  # the sparse checkout holds
    assert kept(result) == {}  # the same entries: nothing to leave undone
    git("reset", "-q", cwd=ws, env=env)  # the index as committed again (git_tree staged the edit)
    assert git("status", "--porcelain", cwd=ws, env=env) == ""
    git("sparse-checkout", "disable", cwd=ws, env=env)
    assert snap.status() == [] and (ws / "b/two.txt").read_text() == "2\n"


@needs_git
def test_a_restore_leaves_files_outside_the_sparse_checkout_alone(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    env = git_env(tmp_path)
    git("init", "-q", cwd=ws, env=env)
    write(ws, {"a/one.txt": "1\n", "b/two.txt": "2\n"})
    snap = make()
    old = snap.snapshot()
    write(ws, {"b/two.txt": "2 committed later\n"})
    git("add", "-A", cwd=ws, env=env)
    git("commit", "-q", "-m", "all", cwd=ws, env=env)
    snap.snapshot()
    git("sparse-checkout", "set", "a", cwd=ws, env=env)
    result = snap.restore(old.id)
    assert not (ws / "b").exists()
    assert kept(result) == {"b/two.txt": "not-checked-out"}
    assert SkipReason("not-checked-out") is SkipReason.NOT_CHECKED_OUT


@needs_git
def test_a_store_made_after_the_sparse_checkout_holds_only_what_is_there(ws: Path, tmp_path: Path, make) -> None:  # type: ignore[no-untyped-def]
    """The one place a snapshot is not git's tree: content never on disk is not
    copied from the user's object store (see ``engine/worktree/unchecked.py``)."""
    env = git_env(tmp_path)
    git("init", "-q", cwd=ws, env=env)
    write(ws, {"a/one.txt": "1\n", "b/two.txt": "2\n"})
    git("add", "-A", cwd=ws, env=env)
    git("commit", "-q", "-m", "all", cwd=ws, env=env)
    git("sparse-checkout", "set", "a", cwd=ws, env=env)
    snap = make()
    first = snap.snapshot()
    assert first.files_changed == 1 and first.tree_id != git_tree(ws, env)
    assert snap.status() == [] and not (ws / "b").exists()
