"""The drop-in adapters: documented examples of the seed libraries, and their guarantees.

Examples are the libraries' own documentation with only the import changed and
"/path/to/project"-style placeholders pointed at a temporary folder.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from conftest import GIT, git, git_env, read_tree, write

from snapshotter.compat.praisonai import FileSnapshot, default_snapshot_dir
from snapshotter.compat.qwed import StateGuard


@pytest.fixture(autouse=True)
def _no_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The adapters must work with no git binary at all."""
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("PRAISONAI_HOME", str(tmp_path / "praison-home"))


def test_praisonai_class_docstring_example(ws: Path) -> None:
    write(ws, {"app.py": "x = 1\n"})
    # --- from FileSnapshot's docstring ---
    snapshot = FileSnapshot(str(ws))

    # Track current state
    info = snapshot.track(message="Before refactor")

    # Make changes...
    (ws / "app.py").write_text("x = 2\n")

    # Get diff
    diffs = snapshot.diff(info.commit_hash)

    # Restore if needed
    snapshot.restore(info.commit_hash)
    # --- end ---
    assert [(d.path, d.status, d.additions, d.deletions) for d in diffs] == [("app.py", "modified", 1, 1)]
    assert "-x = 1\n+x = 2\n" in diffs[0].diff_content
    assert (ws / "app.py").read_text() == "x = 1\n"


def test_praisonai_docs_examples(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(ws, {"main.py": "print('hi')\n", "src/config.py": "A = 1\n", "src/utils.py": "def f(): pass\n"})
    project = str(ws)
    # --- docs: basic usage ---
    snapshot = FileSnapshot(project)
    info = snapshot.track(message="Initial state")
    print(f"Snapshot: {info.commit_hash[:8]}")
    (ws / "main.py").write_text("print('changed')\n")
    diffs = snapshot.diff(info.commit_hash)
    for d in diffs:
        print(f"{d.status}: {d.path}")
    snapshot.restore(info.commit_hash)
    assert (ws / "main.py").read_text() == "print('hi')\n"
    # --- docs: comparing snapshots ---
    snapshot = FileSnapshot(project)
    snap1 = snapshot.track(message="Before refactoring")
    with open(os.path.join(project, "main.py"), "a") as f:
        f.write("\n# New code")
    snap2 = snapshot.track(message="After refactoring")
    diffs = snapshot.diff(snap1.commit_hash, snap2.commit_hash)
    for d in diffs:
        print(f"{d.path}: +{d.additions}/-{d.deletions}")
    # --- docs: restore specific files ---
    snapshot = FileSnapshot(project)
    initial = snapshot.track()
    write(ws, {"src/config.py": "A = 2\n", "src/utils.py": "changed\n", "main.py": "kept\n"})
    snapshot.restore(initial.commit_hash, files=["src/config.py", "src/utils.py"])
    # --- docs: listing ---
    for info in snapshot.list_snapshots(limit=10):
        print(f"{info.commit_hash[:8]} — {info.message} ({info.files_changed} files)")
    out = capsys.readouterr().out
    assert re.search(r"^Snapshot: [0-9a-f]{8}$", out, re.M)
    assert "modified: main.py" in out and "main.py: +2/-0" in out
    assert (ws / "src/config.py").read_text() == "A = 1\n" and (ws / "main.py").read_text() == "kept\n"
    assert "After refactoring (1 files)" in out


def test_praisonai_restore_keeps_what_their_matcher_misses(ws: Path) -> None:
    """build/, .env* and /secrets are gitignore rules their name-only matcher gets wrong."""
    write(ws, {".gitignore": "build/\n.env*\n/secrets\n", "app.py": "v1\n"})
    snapshot = FileSnapshot(str(ws))
    first = snapshot.track("before")
    write(
        ws,
        {
            "build/out.o": "compiled",
            ".env.local": "SECRET=1",
            "secrets": "token",
            "app.py": "v2\n",
            "new.py": "new\n",
        },
    )
    assert snapshot.restore(first.commit_hash) is True
    assert (ws / "build/out.o").read_text() == "compiled"
    assert (ws / ".env.local").read_text() == "SECRET=1"
    assert (ws / "secrets").read_text() == "token"
    assert (ws / "app.py").read_text() == "v1\n" and not (ws / "new.py").exists()


def test_praisonai_home_no_changes_and_failures(ws: Path, tmp_path: Path) -> None:
    write(ws, {"a": "1"})
    snapshot = FileSnapshot(str(ws), session_id="s-9", user_name="Ann", user_email="ann@example.com")
    assert snapshot.shadow_path.startswith(str(tmp_path / "praison-home" / "snapshots"))
    assert default_snapshot_dir() == str(tmp_path / "praison-home" / "snapshots")
    first = snapshot.track("first")
    same = snapshot.track("again")
    assert same.message == "No changes" and same.commit_hash == first.commit_hash
    assert snapshot.restore("0" * 40) is False
    assert snapshot.diff("nope") == []
    listed = snapshot.list_snapshots()
    assert [i.session_id for i in listed] == ["s-9"] and isinstance(listed[0].created_at, float)
    assert FileSnapshot(str(ws)).get_current_hash() == first.commit_hash


def test_qwed_docs_example(ws: Path) -> None:
    write(ws, {"app.py": "ok\n", ".env": "SECRET=1\n"})
    verification_passed = False
    messages = []
    # --- docs: StateGuard quick start (import changed, path pointed at a real folder) ---
    guard = StateGuard(workspace_path=str(ws))

    # Take a snapshot before the agent runs
    snapshot = guard.create_pre_execution_snapshot()

    # ... let the agent execute and modify files ...
    write(ws, {"app.py": "broken\n", "rogue.txt": "left behind\n", ".env": "SECRET=agent\n"})

    # If verification fails, roll back
    if not verification_passed:
        success = guard.rollback(snapshot)
        if success:
            messages.append("Workspace restored to pre-execution state")
    # --- end ---
    assert messages == ["Workspace restored to pre-execution state"]
    assert re.fullmatch(r"[0-9a-f]{40}", snapshot)
    assert (ws / "app.py").read_text() == "ok\n" and not (ws / "rogue.txt").exists()
    assert (ws / ".env").read_text() == "SECRET=agent\n"  # ignored: never touched


def test_qwed_seed_behaviour_without_git(tmp_path: Path) -> None:
    """The seed tests' assertions that still hold when no git repository is required."""
    with pytest.raises(ValueError, match="Invalid workspace path"):
        StateGuard(str(tmp_path / "missing"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError):
        StateGuard(str(tmp_path / "file"))
    folder = tmp_path / "plain"  # not a git repository: fine here
    folder.mkdir()
    guard = StateGuard(str(folder))
    assert guard.workspace == folder.resolve()
    test_file = folder / "test.txt"
    test_file.write_text("initial")
    tree_hash = guard.create_pre_execution_snapshot()
    assert len(tree_hash) == 40
    test_file.write_text("malicious agent modification")
    rogue_file = folder / "rogue.txt"
    rogue_file.write_text("left behind")
    assert guard.rollback(tree_hash) is True
    assert test_file.read_text() == "initial"
    assert not rogue_file.exists()
    assert guard.rollback("invalid_hash_string_here_with_semicolon;") is False
    assert guard.rollback("a" * 40) is False
    assert guard.rollback(tree_hash.upper()) is False
    assert guard.rollback(tree_hash + "\n") is False
    assert guard.rollback(None) is False  # type: ignore[arg-type]


@pytest.mark.skipif(GIT is None, reason="needs git to build the user's own repository")
def test_qwed_never_touches_the_index_and_removes_staged_agent_files(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", os.path.dirname(GIT))  # git for building the fixture only
    env = git_env(tmp_path)
    write(ws, {"tracked.txt": "t\n", ".gitignore": ".env\n", ".env": "SECRET=1\n"})
    git("init", "-q", str(ws), env=env)
    git("-C", str(ws), "add", "-A", env=env)
    git("-C", str(ws), "commit", "-qm", "init", env=env)
    index_before = (ws / ".git" / "index").read_bytes()
    guard = StateGuard(str(ws))
    tree_hash = guard.create_pre_execution_snapshot()
    assert (ws / ".git" / "index").read_bytes() == index_before  # nothing staged by us
    assert tree_hash == git("-C", str(ws), "write-tree", env=env).strip()  # same tree id as git's
    write(ws, {"staged.txt": "agent\n", "tracked.txt": "agent edit\n"})
    git("-C", str(ws), "add", "staged.txt", env=env)
    index_after_agent = (ws / ".git" / "index").read_bytes()
    assert guard.rollback(tree_hash) is True
    assert not (ws / "staged.txt").exists()
    assert (ws / "tracked.txt").read_text() == "t\n"
    assert (ws / ".env").read_text() == "SECRET=1\n"
    assert (ws / ".git" / "index").read_bytes() == index_after_agent
    assert read_tree(ws)[".gitignore"] == ("file", b".env\n")


def test_praisonai_ids_are_per_object_as_in_the_original_and_commit_hash_is_the_key(ws: Path) -> None:
    """praisonaiagents 1.7 builds every SnapshotInfo with ``id=uuid4()`` (``track``
    and ``list_snapshots`` alike), so ``info.id`` never finds a snapshot again;
    the adapter keeps that (a drop-in), and says ``commit_hash`` is the stable key."""
    write(ws, {"a.txt": "a\n"})
    snapshot = FileSnapshot(str(ws))
    made = snapshot.track("one")
    listed = [info.commit_hash for info in snapshot.list_snapshots()]
    again = [info.commit_hash for info in snapshot.list_snapshots()]
    assert listed == again and made.commit_hash in listed and snapshot.get_current_hash() == made.commit_hash
    assert made.commit_hash in [d.commit_hash for d in snapshot.list_snapshots()]
    assert snapshot.restore(made.commit_hash)
    docs = (Path(__file__).parent.parent / "docs" / "integrations.md").read_text()
    for text in (docs, sys.modules[FileSnapshot.__module__].__doc__ or ""):
        assert "commit_hash" in text and "SnapshotInfo.id" in text, text[:200]
