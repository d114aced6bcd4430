"""guard(): rollback on failure; on_error="warn": agent hooks that never break a turn."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from conftest import GIT, git, git_env, read_tree, write

import snapshotter
from snapshotter import RollbackPerformed, Snapshotter, StoreError


def test_guard_rolls_back_when_the_block_raises(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "original", ".env": "SECRET=1"})
    before = read_tree(ws)
    with pytest.raises(ZeroDivisionError), snapshotter.guard(ws, home=home) as g:
        write(ws, {"a.txt": "broken", "created.txt": "junk", "dir/new.py": "x"})
        (ws / ".env").write_text("SECRET=changed by the agent")  # ignored: not ours to undo
        raise ZeroDivisionError("the agent failed")
    after = read_tree(ws)
    assert after.pop(".env") == ("file", b"SECRET=changed by the agent")
    before.pop(".env")
    assert after == before
    assert g.rolled_back is not None and g.rolled_back.deleted == 2


def test_guard_verification_failure_rolls_back_and_raises(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "ok"})
    with (
        pytest.raises(RollbackPerformed, match="verification failed"),
        snapshotter.guard(ws, verify=lambda: False, home=home),
    ):
        write(ws, {"a.txt": "bad"})
    assert (ws / "a.txt").read_text() == "ok"


def test_guard_keeps_changes_when_verification_passes_or_after_commit(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "v1"})
    with snapshotter.guard(ws, verify=lambda: True, home=home):
        write(ws, {"a.txt": "v2"})
    assert (ws / "a.txt").read_text() == "v2"
    with pytest.raises(KeyError), snapshotter.guard(ws, home=home) as g:
        write(ws, {"a.txt": "v3"})
        g.commit()
        raise KeyError("after commit")
    assert (ws / "a.txt").read_text() == "v3"


def test_manual_rollback_inside_the_block(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "v1"})
    snap = make()
    with snap.guard() as g:
        write(ws, {"a.txt": "v2", "b.txt": "b"})
        result = g.rollback()
        assert result.written == 1 and result.deleted == 1
        assert (ws / "a.txt").read_text() == "v1" and not (ws / "b.txt").exists()


@pytest.mark.skipif(GIT is None, reason="needs git to build the user's own repository")
def test_guard_removes_files_the_agent_staged_and_never_touches_the_users_git(
    ws: Path, home: Path, tmp_path: Path
) -> None:
    env = git_env(tmp_path)
    write(ws, {"tracked.txt": "t\n", ".gitignore": ".env\n", ".env": "SECRET=1\n"})
    git("init", "-q", str(ws), env=env)
    git("-C", str(ws), "add", "-A", env=env)
    git("-C", str(ws), "commit", "-qm", "init", env=env)
    with pytest.raises(RuntimeError), snapshotter.guard(ws, home=home):
        write(ws, {"staged.txt": "agent file\n", "tracked.txt": "changed\n"})
        git("-C", str(ws), "add", "staged.txt", "tracked.txt", env=env)
        index_after_agent = (ws / ".git" / "index").read_bytes()
        git_files = {p: p.stat().st_mtime_ns for p in (ws / ".git").rglob("*") if p.is_file()}
        raise RuntimeError("agent failed")
    assert not (ws / "staged.txt").exists()
    assert (ws / "tracked.txt").read_text() == "t\n"
    assert (ws / ".env").read_text() == "SECRET=1\n"
    assert (ws / ".git" / "index").read_bytes() == index_after_agent
    assert {p: p.stat().st_mtime_ns for p in (ws / ".git").rglob("*") if p.is_file()} == git_files


def test_warn_mode_logs_and_returns_none_or_false(ws: Path, make, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a"})
    snap = make(on_error="warn")
    with caplog.at_level(logging.WARNING, logger="snapshotter"):
        assert snap.restore("no-such-label") is None
        assert snap.get("0" * 40) is None
        assert snap.snapshot(label="bad\nlabel") is None
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 3
    assert (ws / "a.txt").read_text() == "a"
    info = snap.snapshot("works")
    assert info is not None and info.message == "works"


def test_warn_mode_with_an_unusable_workspace_is_inert(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="snapshotter"):
        snap = Snapshotter(tmp_path / "missing", home=tmp_path / "h", on_error="warn")
        assert snap.snapshot() is None
        assert snap.can_undo() is False
        assert snap.undo() is None
    assert any("does not exist" in r.getMessage() for r in caplog.records)


def test_warn_mode_keeps_the_workspace_when_restore_fails(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from snapshotter.engine.worktree import fsops

    write(ws, {"a.txt": "a1", "b.txt": "b1"})
    snap = make(on_error="warn")
    first = snap.snapshot()
    write(ws, {"a.txt": "a2", "b.txt": "b2"})
    before = read_tree(ws)
    real = fsops.Workspace.write_file
    seen: list[str] = []

    def fail_second(self, rel, content, executable):  # type: ignore[no-untyped-def]
        seen.append(rel)
        if len(seen) == 2:
            raise OSError(28, "No space left on device", rel)
        return real(self, rel, content, executable)

    monkeypatch.setattr(fsops.Workspace, "write_file", fail_second)
    assert snap.restore(first.id) is None
    assert read_tree(ws) == before


def test_raise_mode_raises_typed_errors(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    snap.cleanup()
    with pytest.raises(StoreError):
        snap.snapshot()
    assert os.path.isdir(ws)
