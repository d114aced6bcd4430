"""Writing on two cores: a forked copy deletes and writes the second half of
a restore's files (``session.splitwrite``). The workspace and the stat cache must end as
one core leaves them; a copy that fails or dies must cost nothing but time;
a restore that fails must stop the copy before it puts the workspace back.

``MIN_FILES`` is lowered so that a few hundred files fork too. Which process
wrote a file is logged by pid to a file outside the workspace.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import alone_in_this_process, contents, needs_second_core, no_child_left, read_tree, write

from snapshotter import Snapshotter
from snapshotter.engine.fsutil import stat_key
from snapshotter.engine.session import splitwrite
from snapshotter.engine.worktree.fsops import Workspace
from snapshotter.errors import WorkspaceError

pytestmark = needs_second_core

FILES = 300


@pytest.fixture(autouse=True)
def _eager(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(splitwrite, "MIN_FILES", 0)
    alone_in_this_process()


def _files(version: int) -> dict[str, str | bytes]:
    return {f"src/m{i // 30}/f{i}.py": f"v{version} line {i}\n" * (i % 7 + 1) for i in range(FILES)}


def _log_writers(monkeypatch: pytest.MonkeyPatch, log: Path, hook: Callable[[int], None] | None = None) -> None:
    """Log the pid of every process writing a file (and call ``hook`` with
    how many files this process wrote so far, before it writes one more)."""
    real = Workspace.write_file
    count = [0]
    owner = [os.getpid()]

    def logged(self: Workspace, rel: str, content: object, executable: bool) -> os.stat_result:
        if os.getpid() != owner[0]:  # a fresh count in the copy
            owner[0], count[0] = os.getpid(), 0
        if hook is not None:
            hook(count[0])
        count[0] += 1
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)
        return real(self, rel, content, executable)  # type: ignore[arg-type]

    monkeypatch.setattr(Workspace, "write_file", logged)


def _writers(log: Path) -> dict[int, int]:
    out: dict[int, int] = {}
    for line in log.read_text().split():
        out[int(line)] = out.get(int(line), 0) + 1
    return out


def _two_versions(ws: Path, snap: Snapshotter) -> tuple[str, dict[str, tuple[str, bytes]]]:
    """Snapshot version 1 (with an executable and a symlink), then change every file to version 2."""
    write(ws, _files(1))
    (ws / "src/m0/run.sh").write_text("#!/bin/sh\n")
    (ws / "src/m0/run.sh").chmod(0o755)
    os.symlink("m0/f0.py", ws / "src/link.py")
    first = snap.snapshot("one")
    before = read_tree(ws)
    write(ws, _files(2))
    (ws / "src/m0/run.sh").write_text("#!/bin/sh\necho two\n")
    (ws / "src/link.py").unlink()
    os.symlink("m1/f31.py", ws / "src/link.py")
    (ws / "src/m3/new.py").write_text("only in two\n")
    return first.id, before


def test_a_restore_on_two_cores_writes_what_one_core_writes(
    ws: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "writers.log"
    _log_writers(monkeypatch, log)
    with Snapshotter(ws, home=home) as snap:
        target, before = _two_versions(ws, snap)
        result = snap.restore(target)
        assert read_tree(ws) == before
        assert (result.written, result.deleted) == (FILES + 2, 1)
        writers = _writers(log)
        assert len(writers) == 2, "this process and its copy"
        assert writers[os.getpid()] == (FILES + 1) // 2, "the first half is this process's"
        engine = snap._engine
        assert engine is not None
        records = dict(engine._cache.paths())  # type: ignore[union-attr]
        for path in result.written_paths:
            assert records[path][:5] == stat_key(os.lstat(ws / path)), path
    assert no_child_left()


def test_one_core_when_asked(ws: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "writers.log"
    _log_writers(monkeypatch, log)
    with Snapshotter(ws, home=home, second_core=False) as snap:
        target, before = _two_versions(ws, snap)
        snap.restore(target)
    assert read_tree(ws) == before
    assert list(_writers(log)) == [os.getpid()]


@pytest.mark.parametrize("how", ["fails", "is killed"])
def test_a_copy_that_fails_leaves_its_half_to_the_restore(
    ws: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    parent = os.getpid()

    def breaks(done: int) -> None:
        if os.getpid() != parent and done == 40:
            if how == "fails":
                raise OSError(28, "No space left on device")
            os.kill(os.getpid(), signal.SIGKILL)

    log = tmp_path / "writers.log"
    _log_writers(monkeypatch, log, breaks)
    with Snapshotter(ws, home=home) as snap:
        target, before = _two_versions(ws, snap)
        snap.restore(target)
        assert read_tree(ws) == before
        writers = _writers(log)
        assert writers[parent] > FILES // 2 + 80, "the copy's unfinished half, and what it had not reported"
        engine = snap._engine
        assert engine is not None
        for path, record in engine._cache.paths():  # type: ignore[union-attr]
            assert record[:5] == stat_key(os.lstat(ws / path)), path
        assert snap.snapshot().tree_id == snap.get(target).tree_id
    assert no_child_left()


def test_a_restore_that_fails_stops_its_copy_and_puts_everything_back(
    ws: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy is stopped before the workspace is put back: nothing it
    writes lands after the put-back, which would leave a half-restored file."""
    parent = os.getpid()
    failing = [True]

    def breaks(done: int) -> None:
        if os.getpid() == parent and done == 100 and failing[0]:
            failing[0] = False  # putting back writes on
            raise PermissionError(13, "Permission denied")

    _log_writers(monkeypatch, tmp_path / "writers.log", breaks)
    with Snapshotter(ws, home=home) as snap:
        target, _ = _two_versions(ws, snap)
        now = contents(ws)
        with pytest.raises(WorkspaceError, match="Permission denied"):
            snap.restore(target)
        assert contents(ws) == now
        assert no_child_left()
    assert contents(ws) == now


def test_deletions_are_shared_too(ws: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Undoing a turn that made many files deletes them on two cores, then
    removes the folders they leave empty."""
    log = tmp_path / "deleters.log"
    real = Workspace.delete

    def logged(self: Workspace, rel: str) -> None:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)
        real(self, rel)

    monkeypatch.setattr(Workspace, "delete", logged)
    write(ws, {"keep.txt": "kept\n"})
    with Snapshotter(ws, home=home) as snap:
        target = snap.snapshot().id
        write(ws, _files(1))
        snap.snapshot()
        result = snap.restore(target)
    assert result.deleted == FILES
    assert read_tree(ws) == {"keep.txt": ("file", b"kept\n")}
    assert sorted(os.listdir(ws)) == ["keep.txt"], "the emptied folders are gone"
    deleters = _writers(log)
    assert len(deleters) == 2 and deleters[os.getpid()] == FILES // 2
    assert no_child_left()
