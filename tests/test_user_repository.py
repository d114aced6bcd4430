"""The user's own git repository, read and never written: files its index tracks are
recorded whatever the ignore rules say, as `git add -A` in that repository would;
a workspace inside a repository gets the .gitignore files above it and its
info/exclude; linked worktrees use their repository's; git is the oracle."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest
from conftest import git, git_env, needs_git, tree_modes, write

from snapshotter import Snapshotter
from snapshotter.engine.worktree.gitrepo import find_repository, parse_index

pytestmark = needs_git


def _repo(path: Path, tmp_path: Path) -> dict[str, str]:
    env = git_env(tmp_path)
    path.mkdir(parents=True, exist_ok=True)
    git("init", "-q", str(path), env=env)
    return env


def _commit(repo: Path, env: dict[str, str], *force: str) -> None:
    git("add", "-A", cwd=repo, env=env)
    if force:
        git("add", "-f", *force, cwd=repo, env=env)
    git("commit", "-q", "-m", "c", cwd=repo, env=env)


def _git_add_all_tree(repo: Path, tmp_path: Path, env: dict[str, str], prefix: str = "") -> str:
    """What `git add -A && git write-tree` gives in a copy of the user's repository
    (a copy: the user's own index is never written), for ``prefix`` below its root."""
    copy = tmp_path / f"copy-{len(list(tmp_path.iterdir()))}"
    shutil.copytree(repo, copy, symlinks=True)
    git("add", "-A", cwd=copy, env=env)
    tree = git("write-tree", cwd=copy, env=env).strip()
    if prefix:
        tree = git("rev-parse", f"{tree}:{prefix}", cwd=copy, env=env).strip()
    return tree


def _index_bytes(repo: Path) -> bytes:
    return (repo / ".git" / "index").read_bytes()


def test_tracked_files_are_recorded_whatever_the_ignore_rules_say(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    env = _repo(repo, tmp_path)
    write(repo, {".gitignore": "*.yml\nbuild/\n", ".gitlab-ci.yml": "ci\n", "src/a.py": "a\n", "build/keep.txt": "k\n"})
    _commit(repo, env, ".gitlab-ci.yml", "build/keep.txt")
    write(repo, {"local.yml": "untracked\n", "build/out.o": "obj\n"})
    index_before = _index_bytes(repo)
    with Snapshotter(repo, home=home, use_default_excludes=False) as snap:
        info = snap.snapshot()
        recorded = set(tree_modes(snap, info.tree_id))
    assert {".gitlab-ci.yml", "build/keep.txt"} <= recorded
    assert "local.yml" not in recorded and "build/out.o" not in recorded
    assert info.tree_id == _git_add_all_tree(repo, tmp_path, env)
    assert _index_bytes(repo) == index_before  # never written


def test_a_change_of_the_index_is_seen_by_the_next_snapshot(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    env = _repo(repo, tmp_path)
    write(repo, {".gitignore": "*.log\nout/\n", "a.txt": "a\n", "keep.log": "k\n", "out/x.bin": "x\n"})
    _commit(repo, env, "keep.log")
    with Snapshotter(repo, home=home, use_default_excludes=False) as snap:
        first = set(tree_modes(snap, snap.snapshot().tree_id))
        assert "keep.log" in first and "out/x.bin" not in first
        snap.snapshot()  # the folders settle: the next scans trust their stat
        git("rm", "-q", "--cached", "keep.log", cwd=repo, env=env)  # tracked no more: ignored again
        git("add", "-f", "out/x.bin", cwd=repo, env=env)  # tracked now, in a folder the rules ignore
        second = set(tree_modes(snap, snap.snapshot().tree_id))
        assert "keep.log" not in second and "out/x.bin" in second
        assert snap.snapshot().tree_id == _git_add_all_tree(repo, tmp_path, env)
    with Snapshotter(repo, home=home, use_default_excludes=False) as fresh:  # a new process reads the same
        assert set(tree_modes(fresh, fresh.snapshot().tree_id)) == second


def test_the_callers_excludes_and_the_defaults_still_win_over_the_index(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    env = _repo(repo, tmp_path)
    write(repo, {".env": "SECRET=1\n", "notes.tmp": "t\n", "a.txt": "a\n"})
    _commit(repo, env)
    with Snapshotter(repo, home=home, exclude=["*.tmp"]) as snap:
        recorded = set(tree_modes(snap, snap.snapshot().tree_id))
    assert recorded == {"a.txt"}  # tracked, but never stored: secrets and what the caller excluded


def test_a_workspace_inside_a_repository_gets_the_rules_above_it(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "mono"
    env = _repo(repo, tmp_path)
    write(
        repo,
        {
            ".gitignore": "dist/\n*.cache\n",
            "packages/.gitignore": "!keep.cache\ngenerated/\n",
            "packages/app/src/main.py": "m\n",
            "packages/app/dist/bundle.js": "b\n",
            "packages/app/x.cache": "c\n",
            "packages/app/keep.cache": "kept by the negation below the root\n",
            "packages/app/generated/g.py": "g\n",
            "packages/app/tracked.cache": "tracked\n",
        },
    )
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("secret-notes.txt\n")
    write(repo, {"packages/app/secret-notes.txt": "s\n"})
    _commit(repo, env, "packages/app/tracked.cache")
    workspace = repo / "packages" / "app"
    found = find_repository(str(workspace))
    assert found is not None and found.prefix == "packages/app" and found.root == str(repo)
    with Snapshotter(workspace, home=home, use_default_excludes=False) as snap:
        info = snap.snapshot()
        recorded = set(tree_modes(snap, info.tree_id))
    assert recorded == {"src/main.py", "keep.cache", "tracked.cache"}
    assert info.tree_id == _git_add_all_tree(repo, tmp_path, env, prefix="packages/app")


def test_a_linked_worktree_uses_its_repositorys_exclude_and_its_own_index(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "main"
    env = _repo(repo, tmp_path)
    write(repo, {".gitignore": "*.out\n", "a.txt": "a\n", "tracked.out": "t\n"})
    _commit(repo, env, "tracked.out")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("private/\n")
    worktree = tmp_path / "wt"
    git("worktree", "add", "-q", str(worktree), cwd=repo, env=env)
    write(worktree, {"private/p.txt": "p\n", "b.out": "untracked\n"})
    assert (worktree / ".git").is_file()
    with Snapshotter(worktree, home=home, use_default_excludes=False) as snap:
        info = snap.snapshot()
        recorded = set(tree_modes(snap, info.tree_id))
    assert recorded == {".gitignore", "a.txt", "tracked.out"}  # private/ by the shared exclude, b.out by the rules


def test_a_symlinked_info_exclude_is_followed(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    _repo(repo, tmp_path)
    shared = tmp_path / "shared-exclude"
    shared.write_text("*.secret\n")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    target = repo / ".git" / "info" / "exclude"
    target.unlink(missing_ok=True)
    os.symlink(shared, target)
    write(repo, {"a.txt": "a\n", "b.secret": "s\n"})
    with Snapshotter(repo, home=home, use_default_excludes=False) as snap:
        assert set(tree_modes(snap, snap.snapshot().tree_id)) == {"a.txt"}


@pytest.mark.parametrize("damage", ["truncated", "garbage", "split"])
def test_an_index_that_cannot_be_read_is_a_warning_and_the_rules_apply(
    tmp_path: Path, home: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    repo = tmp_path / "repo"
    env = _repo(repo, tmp_path)
    write(repo, {".gitignore": "*.log\n", "a.txt": "a\n", "keep.log": "k\n"})
    _commit(repo, env, "keep.log")
    index = repo / ".git" / "index"
    if damage == "truncated":
        index.write_bytes(index.read_bytes()[:-30])
    elif damage == "garbage":
        index.write_bytes(b"not an index at all")
    else:
        git("-c", "core.splitIndex=true", "update-index", "--split-index", cwd=repo, env=env)
    with caplog.at_level(logging.WARNING, logger="snapshotter"), Snapshotter(repo, home=home) as snap:
        recorded = set(tree_modes(snap, snap.snapshot().tree_id))
    if damage == "split":
        assert "split index" in caplog.text
    else:
        assert "index" in caplog.text
    assert recorded == {".gitignore", "a.txt"}  # the rules alone: keep.log is ignored


def test_index_versions_parse_alike(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    env = _repo(repo, tmp_path)
    write(repo, {f"dir{i % 3}/sub/file{i}.txt": f"{i}\n" for i in range(40)})
    write(repo, {"a-long-" + "x" * 200 + "/" + "y" * 200: "long names\n"})
    _commit(repo, env)
    expected = git("ls-files", "-z", cwd=repo, env=env).encode().split(b"\0")[:-1]
    for version in ("2", "3", "4"):
        git("update-index", f"--index-version={version}", cwd=repo, env=env)
        assert parse_index(_index_bytes(repo)) == expected, version


def test_a_nested_repositorys_index_counts_for_its_own_folder(tmp_path: Path, home: Path) -> None:
    workspace = tmp_path / "ws"
    write(workspace, {"top.txt": "t\n"})
    nested = workspace / "vendor" / "lib"
    env = _repo(nested, tmp_path)
    write(nested, {".gitignore": "*.gen\n", "api.gen": "generated, but tracked\n", "src.c": "c\n"})
    _commit(nested, env, "api.gen")
    write(nested, {"other.gen": "untracked\n"})
    with Snapshotter(workspace, home=home, use_default_excludes=False) as snap:
        recorded = set(tree_modes(snap, snap.snapshot().tree_id))
        assert recorded == {"top.txt", "vendor/lib/.gitignore", "vendor/lib/api.gen", "vendor/lib/src.c"}
        git("rm", "-q", "--cached", "api.gen", cwd=nested, env=env)
        assert "vendor/lib/api.gen" not in set(tree_modes(snap, snap.snapshot().tree_id))
    git("add", "-f", "other.gen", cwd=nested, env=env)
    with Snapshotter(workspace, home=home, use_default_excludes=False) as fresh:  # known from the last process
        assert "vendor/lib/other.gen" in set(tree_modes(fresh, fresh.snapshot().tree_id))
