"""A hostile agent: symlinks swapped in mid-restore, forged trees, hostile refs, and the store's privacy.

The threat model is in SECURITY.md: the agent may write anything into the
workspace (including symlinks, ``.git`` folders and objects forged straight
into the store); restore must never write outside the workspace or into a
``.git`` folder, and must refuse a hostile tree before writing anything.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from conftest import forge_snapshot, read_tree, write

from snapshotter import InvalidRef, RestoreConflict, SnapshotError, SnapshotNotFound, StoreError, UnsafeTree
from snapshotter.engine.gitstore.objects import MODE_FILE, MODE_TREE
from snapshotter.engine.worktree import hostfs


@pytest.fixture(params=["posix", "windows-simulated"])
def host(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> hostfs.HostFS:
    """Run a test with dir_fd confinement (POSIX) and with lstat checks (Windows)."""
    chosen = hostfs.POSIX if request.param == "posix" else hostfs.WINDOWS_SIMULATED
    monkeypatch.setattr(hostfs, "detect", lambda root: chosen)
    return chosen


def test_a_symlink_swapped_in_for_a_folder_mid_restore_gets_nothing_written_through_it(
    ws: Path, tmp_path: Path, make, host: hostfs.HostFS
) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path / "outside"
    outside.mkdir()
    write(ws, {"a.txt": "a1", "sub/b.txt": "b1", "sub/deeper/c.txt": "c1"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"a.txt": "a2", "sub/b.txt": "b2", "sub/deeper/c.txt": "c2"})
    swapped = []

    def attack(phase: str, done: int, total: int) -> None:
        if phase == "writing" and not swapped:  # after planning, before the first write
            os.rename(ws / "sub", ws / "moved")
            os.symlink(outside, ws / "sub")
            swapped.append(True)

    snap.progress = attack
    with pytest.raises(RestoreConflict, match="refusing to write through it"):
        snap.restore(first.id)
    assert swapped
    assert list(outside.iterdir()) == []


def test_hostile_names_are_refused_at_any_depth(ws: Path, make, host: hostfs.HostFS) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a"})
    snap = make()
    snap.snapshot()
    writer = snap._engine_ok().store.writer
    from snapshotter.engine.gitstore.objects import serialize_tree

    blob = writer.write(b"blob", b"pwned\n")
    bad = writer.write(b"tree", serialize_tree([(b"..", MODE_TREE, writer.write(b"tree", b""))]))
    bad = writer.write(b"tree", serialize_tree([(b"ok.txt", MODE_FILE, blob), (b"deep", MODE_TREE, bad)]))
    forged = forge_snapshot(snap, [(b"b.txt", MODE_FILE, b""), (b"lvl1", MODE_TREE, bad)])
    with pytest.raises(UnsafeTree):
        snap.restore(forged)
    assert read_tree(ws) == {"a.txt": ("file", b"a")}


def test_a_name_with_nul_breaks_the_tree_and_is_refused(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a"})
    snap = make()
    forged = forge_snapshot(snap, [(b"ok.txt", MODE_FILE, b""), (b"x\0y", MODE_FILE, b"")])
    with pytest.raises((UnsafeTree, StoreError)):
        snap.restore(forged)
    assert read_tree(ws) == {"a.txt": ("file", b"a")}


def test_absolute_and_escaping_symlink_targets_are_restored_as_links_never_followed(
    ws: Path, tmp_path: Path, make, host: hostfs.HostFS
) -> None:  # type: ignore[no-untyped-def]
    """A symlink's target is data: restore recreates the link (or, without
    symlinks, a file holding the text) and never writes to where it points."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("untouched")
    snap = make()
    target = snap._engine_ok().store.writer.write(b"blob", os.fsencode(outside / "victim.txt"))
    forged = forge_snapshot(snap, [(b"escape", 0o120000, target)])
    snap.restore(forged)
    assert (outside / "victim.txt").read_text() == "untouched"
    if host.symlinks:
        assert os.readlink(ws / "escape") == str(outside / "victim.txt")
    else:
        assert (ws / "escape").read_bytes() == os.fsencode(outside / "victim.txt")


@pytest.mark.parametrize(
    "ref",
    ["../../etc/passwd", "refs/heads/main", "HEAD", "-rf", "a" * 41, "deadbeef\n", "x\0y", "", "   ", "@{-1}"],
)
def test_user_refs_are_validated_before_use(ws: Path, make, ref: str) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a"})
    snap = make()
    snap.snapshot()
    with pytest.raises((InvalidRef, SnapshotNotFound)):
        snap.restore(ref)
    with pytest.raises((InvalidRef, SnapshotNotFound)):
        snap.diff(ref)
    assert (ws / "a.txt").read_text() == "a"


def test_the_store_is_readable_by_its_owner_only(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {f"d{i}/f{j}.txt": f"{i}{j}" for i in range(10) for j in range(10)})
    snap = make()
    snap.snapshot()
    (ws / "d0/f0.txt").write_text("changed")
    snap.snapshot()
    snap.checkpoint()
    snap.gc()
    store = Path(snap.store_path)
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.parent.stat().st_mode) == 0o700
    for dirpath, dirnames, filenames in os.walk(store):
        for name in dirnames + filenames:
            mode = stat.S_IMODE(os.lstat(os.path.join(dirpath, name)).st_mode)
            assert mode & 0o077 == 0, f"{os.path.join(dirpath, name)} has mode {mode:o}"


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="POSIX descriptors")
def test_the_walker_never_lists_a_folder_through_a_symlink(tmp_path: Path) -> None:
    """A folder swapped for a symlink after its parent was listed is refused, not
    followed: what lies outside the workspace is never read into a snapshot."""
    from snapshotter.engine.worktree import listing

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not yours\n")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "sub").symlink_to(outside, target_is_directory=True)
    with pytest.raises(OSError):
        listing.open_folder(str(tmp_path / "ws" / "sub"), is_root=False)
    fd = listing.open_folder(str(tmp_path / "ws"), is_root=True)
    try:
        entries = listing.list_folder(str(tmp_path / "ws"), fd)
        assert [e.name for e in entries] == ["sub"] and entries[0].is_symlink()
    finally:
        if fd >= 0:
            os.close(fd)


def test_a_chmod_only_restore_never_changes_a_hard_linked_file_elsewhere(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """The mode change went through a hard link into .git/hooks before."""
    if not hasattr(os, "link"):
        pytest.skip("no hard links here")
    write(ws, {"tool.sh": "#!/bin/sh\necho hi\n"})
    snap = make()
    (ws / "tool.sh").chmod(0o755)
    executable = snap.snapshot()
    (ws / "tool.sh").chmod(0o644)
    hooks = ws / ".git" / "hooks"
    hooks.mkdir(parents=True)
    os.link(ws / "tool.sh", hooks / "pre-commit")  # the same file, under .git too
    result = snap.restore(executable.id)
    assert result.written_paths == ("tool.sh",)
    assert os.stat(ws / "tool.sh").st_mode & 0o100
    assert stat.S_IMODE(os.stat(hooks / "pre-commit").st_mode) == 0o644  # untouched
    assert (ws / "tool.sh").read_text() == (hooks / "pre-commit").read_text() == "#!/bin/sh\necho hi\n"
    assert os.stat(hooks / "pre-commit").st_nlink == 1  # the workspace's name is a file of its own now


def _chmod_only_restore(ws: Path, make) -> tuple[object, str]:  # type: ignore[no-untyped-def]
    """A snapshot with ``tool.sh`` executable, the file's exec bit taken away
    since: restoring it changes only its mode, after writing ``a.txt`` (edited
    since too; a restore's writes come before its mode changes, and each is
    reported to ``progress``). Returns the instance and the snapshot's id."""
    write(ws, {"tool.sh": "#!/bin/sh\necho hi\n", "a.txt": "one\n"})
    (ws / "tool.sh").chmod(0o755)
    snap = make()
    executable = snap.snapshot().id
    (ws / "tool.sh").chmod(0o644)
    write(ws, {"a.txt": "two\n"})
    return snap, executable


def _victim(tmp_path: Path) -> Path:
    """A file outside the workspace, as a hostile symlink's target."""
    victim = tmp_path / "outside" / "victim.sh"
    write(victim.parent, {victim.name: "not the workspace's\n"})
    victim.chmod(0o644)
    return victim


def test_a_chmod_only_restore_never_changes_the_mode_through_a_symlink_swapped_in_for_the_file(
    ws: Path, tmp_path: Path, make, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """After planning, before the chmod (as the first file is written), the
    file becomes a symlink to a file outside: the file is opened without
    following it, so nothing is changed there."""
    monkeypatch.setattr(hostfs, "detect", lambda root: hostfs.POSIX)
    snap, executable = _chmod_only_restore(ws, make)
    victim = _victim(tmp_path)
    swapped = []

    def attack(phase: str, done: int, total: int) -> None:
        if phase == "writing" and not swapped:
            os.rename(ws / "tool.sh", tmp_path / "moved.sh")
            os.symlink(victim, ws / "tool.sh")
            swapped.append(True)

    snap.progress = attack
    try:
        snap.restore(executable)
    except SnapshotError:
        pass  # refusing (a typed error) is fine; changing the victim is not
    assert swapped
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_a_chmod_only_restore_changes_the_opened_file_even_if_a_symlink_replaces_its_name(
    ws: Path, tmp_path: Path, make, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The file is swapped for a symlink to a file outside just after it was
    opened: the mode is set on the open file (``fchmod``), never by its name,
    which would follow the symlink."""
    from snapshotter.engine.worktree import fsops

    monkeypatch.setattr(hostfs, "detect", lambda root: hostfs.POSIX)
    snap, executable = _chmod_only_restore(ws, make)
    victim = _victim(tmp_path)
    inode = os.stat(ws / "tool.sh").st_ino
    swapped = []

    class SwapOnOpen:
        """``fsops``'s ``os``: the real one, whose ``fstat`` of the opened
        ``tool.sh`` swaps it first (the attacker's move, at the worst moment)."""

        def __getattr__(self, name: str) -> object:
            return getattr(os, name)

        @staticmethod
        def fstat(fd: int) -> os.stat_result:
            if not swapped and os.fstat(fd).st_ino == inode:
                os.rename(ws / "tool.sh", tmp_path / "moved.sh")
                os.symlink(victim, ws / "tool.sh")
                swapped.append(True)
            return os.fstat(fd)

    monkeypatch.setattr(fsops, "os", SwapOnOpen())
    try:
        snap.restore(executable)
    except SnapshotError:
        pass  # refusing (a typed error) is fine; changing the victim is not
    assert swapped
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert (tmp_path / "moved.sh").stat().st_mode & 0o100, "the mode went to the file that was opened"


@pytest.mark.parametrize("swap", ["file", "folder"])
def test_diff_never_reads_through_a_symlink_swapped_in_after_the_scan(
    ws: Path, tmp_path: Path, make, monkeypatch: pytest.MonkeyPatch, swap: str
) -> None:  # type: ignore[no-untyped-def]
    from snapshotter.engine.session import engine as engine_module

    outside = tmp_path / "outside"
    write(outside, {"a.txt": "SECRET\n", "sub/a.txt": "SECRET\n"})
    write(ws, {"sub/a.txt": "one\n"})
    snap = make()
    first = snap.snapshot()
    (ws / "sub/a.txt").write_text("two\n")
    real_scan = engine_module.Engine.scan

    def scan_then_swap(self, **kwargs):  # type: ignore[no-untyped-def]
        found = real_scan(self, **kwargs)
        if swap == "file":
            (ws / "sub/a.txt").unlink()
            os.symlink(outside / "a.txt", ws / "sub/a.txt")
        else:
            os.rename(ws / "sub", tmp_path / "moved")
            os.symlink(outside / "sub", ws / "sub")
        return found

    monkeypatch.setattr(engine_module.Engine, "scan", scan_then_swap)
    diffs = snap.diff(first.id)
    assert [d.path for d in diffs] == ["sub/a.txt"]
    assert "SECRET" not in diffs[0].patch
