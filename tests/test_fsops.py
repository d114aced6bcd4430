"""``worktree/fsops.Workspace`` on its own: the confined writes a restore makes,
checked on a real folder (``test_restore.py`` and ``test_hostile.py`` check
them through whole restores). What a mutation run found unchecked: the modes
files and folders are made with, that looking never makes a folder, a read of
more than one chunk, and more folders than the descriptors it keeps open; then
(its fourth round) the full paths its refusals name, the descriptors it keeps
and drops (none left after ``close``, none of a folder since replaced), the
folders it made itself, no half-written file after a failed write, and folders
emptied only through descriptors.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from snapshotter import RestoreConflict
from snapshotter.engine.worktree import fsops, hostfs
from snapshotter.engine.worktree.fsops import Workspace

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes and descriptors")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_files_and_folders_are_made_with_gits_modes_less_the_umask(tmp_path: Path, mask: int) -> None:
    """As ``git checkout`` makes them: 0666 or 0777 for a file, 0777 for a
    folder, less the umask."""
    before = os.umask(mask)
    try:
        workspace = Workspace(str(tmp_path))
        try:
            plain = workspace.write_file("new/deeper/plain.txt", b"text\n", executable=False)
            tool = workspace.write_file("new/tool.sh", [b"#!/bin/sh\n", b"true\n"], executable=True)
        finally:
            workspace.close()
    finally:
        os.umask(before)
    assert stat.S_IMODE(plain.st_mode) == stat.S_IMODE(os.lstat(tmp_path / "new/deeper/plain.txt").st_mode)
    assert stat.S_IMODE(plain.st_mode) == 0o666 & ~mask
    assert stat.S_IMODE(tool.st_mode) == 0o777 & ~mask
    for folder in ("new", "new/deeper"):
        assert stat.S_IMODE(os.lstat(tmp_path / folder).st_mode) == 0o777 & ~mask, folder
    assert (tmp_path / "new/tool.sh").read_bytes() == b"#!/bin/sh\ntrue\n"


def test_a_mode_change_sets_gits_modes_less_the_umask(tmp_path: Path) -> None:
    (tmp_path / "f.sh").write_bytes(b"x\n")
    os.chmod(tmp_path / "f.sh", 0o600)
    workspace = Workspace(str(tmp_path))
    try:
        made = workspace.set_executable("f.sh", True)
        assert stat.S_IMODE(made.st_mode) == 0o777 & ~_umask() == fsops.file_mode(True)
        made = workspace.set_executable("f.sh", False)
        assert stat.S_IMODE(made.st_mode) == 0o666 & ~_umask() == fsops.file_mode(False)
    finally:
        workspace.close()
    assert stat.S_IMODE(os.lstat(tmp_path / "f.sh").st_mode) == 0o666 & ~_umask()


def test_the_umask_is_read_as_the_system_reports_it() -> None:
    assert fsops._current_umask() == _umask()


def test_looking_at_a_path_never_makes_its_folders(tmp_path: Path) -> None:
    """Only writing a file or a symlink makes the folders leading to it: a look,
    a delete, a mode change or a read under a missing folder makes none."""
    workspace = Workspace(str(tmp_path))
    try:
        assert workspace.lstat("a/b/c.txt") is None
        assert not workspace.remove_dir_if_empty("d/e/f")
        workspace.delete("g/h.txt")
        with pytest.raises(FileNotFoundError):
            workspace.set_executable("k/l.sh", True)
        with pytest.raises(FileNotFoundError):
            workspace.read("i/j.txt", False, 100)
    finally:
        workspace.close()
    assert list(tmp_path.iterdir()) == []


def test_a_file_larger_than_one_chunk_is_read_whole(tmp_path: Path) -> None:
    content = os.urandom(1 << 20) + b"the second chunk\n"
    (tmp_path / "big.bin").write_bytes(content)
    workspace = Workspace(str(tmp_path))
    try:
        assert workspace.read("big.bin", False, len(content)) == content
        assert workspace.read("big.bin", False, len(content) - 1) is None  # over the limit: not read
    finally:
        workspace.close()


def test_writes_into_more_folders_than_it_keeps_open(tmp_path: Path) -> None:
    """It keeps at most ``_HELD`` folders open, closing the least recently used."""
    count = fsops._HELD * 2 + 3
    workspace = Workspace(str(tmp_path))
    try:
        for n in range(count):
            workspace.write_file(f"f{n}/g/file.txt", b"%d\n" % n, executable=False)
        for n in range(count):  # back into the first ones, closed by now
            workspace.write_file(f"f{n}/second.txt", b"second\n", executable=False)
    finally:
        workspace.close()
    assert all((tmp_path / f"f{n}/g/file.txt").read_bytes() == b"%d\n" % n for n in range(count))
    assert len(list(tmp_path.glob("f*/second.txt"))) == count


HOSTS = {
    "posix": hostfs.POSIX,
    # what detect() gives where os.open has no dir_fd: every operation goes by path
    "posix-without-dir-fd": replace(hostfs.POSIX, dir_fd=False),
    "windows-simulated": hostfs.WINDOWS_SIMULATED,
}


@pytest.fixture(params=list(HOSTS))
def host(request: pytest.FixtureRequest) -> hostfs.HostFS:
    """Folders opened and held (POSIX), or every path checked and used by name."""
    return HOSTS[request.param]


def test_a_file_and_a_symlinks_target_are_read_where_they_stand(tmp_path: Path, host: hostfs.HostFS) -> None:
    """A file's bytes and a symlink's own target, and a symlink asked for as a
    file is refused, never followed to what it points at."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d/f.txt").write_bytes(b"content\n")
    (tmp_path / "secret.txt").write_bytes(b"SECRET\n")
    os.symlink("../secret.txt", tmp_path / "d/link")
    workspace = Workspace(str(tmp_path), host)
    try:
        assert workspace.read("d/f.txt", False, 100) == b"content\n"
        assert workspace.read("d/link", True, 100) == b"../secret.txt"
        with pytest.raises(OSError):
            workspace.read("d/link", False, 100)
    finally:
        workspace.close()


def _without_waiting(call: object, fifo: Path) -> BaseException | object:
    """``call()``'s result or error; fails the test if it waits for a writer on
    ``fifo`` (then opens one so the blocked thread ends)."""
    outcome: list[BaseException | object] = []

    def run() -> None:
        try:
            outcome.append(call())  # type: ignore[operator]
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # a writer at last: the open returns
        worker.join()
        pytest.fail("opening a FIFO waited for a writer")
    return outcome[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_a_fifo_in_place_of_a_file_is_refused_without_waiting_for_a_writer(tmp_path: Path, host: hostfs.HostFS) -> None:
    """A FIFO swapped in for a file after the scan: opening it to read (or to
    change its mode) would wait until something writes to it; it is opened
    without waiting and refused, never read."""
    (tmp_path / "d").mkdir()
    fifo = tmp_path / "d/f.txt"
    os.mkfifo(fifo)
    workspace = Workspace(str(tmp_path), host)
    try:
        read = _without_waiting(lambda: workspace.read("d/f.txt", False, 100), fifo)
        assert isinstance(read, OSError) and not isinstance(read, FileNotFoundError), read
        assert (read.strerror, read.filename) == ("not a regular file", "d/f.txt")  # what a diff reports
        if host.exec_bit:
            changed = _without_waiting(lambda: workspace.set_executable("d/f.txt", True), fifo)
            assert isinstance(changed, RestoreConflict), changed
            assert str(changed) == f"{fifo} is no longer a regular file; retry"
    finally:
        workspace.close()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_writes_modes_symlinks_and_deletes_on_every_host(tmp_path: Path, host: hostfs.HostFS) -> None:
    """The confined operations a restore makes, by descriptor or by path: new
    folders, files over old ones, the exec bit (where the host has one), a
    symlink (a file holding its target where the host has none), deletes and
    emptied folders."""
    (tmp_path / "old").mkdir()
    (tmp_path / "old/f.txt").write_bytes(b"old\n")
    (tmp_path / "old/gone.txt").write_bytes(b"gone\n")
    workspace = Workspace(str(tmp_path), host)
    try:
        workspace.write_file("old/f.txt", b"new\n", executable=False)
        workspace.write_file("a/b/tool.sh", [b"#!/bin/sh\n", b"true\n"], executable=False)
        made = workspace.set_executable("a/b/tool.sh", True)
        workspace.write_symlink("a/link", b"b/tool.sh")
        workspace.delete("old/gone.txt")
        workspace.delete("old/never-there.txt")
        assert not workspace.remove_dir_if_empty("old")  # f.txt is still there
        workspace.delete("old/f.txt")
        assert workspace.remove_dir_if_empty("old")
        assert workspace.lstat("old") is None and workspace.lstat("a/b/tool.sh") is not None
    finally:
        workspace.close()
    assert (tmp_path / "a/b/tool.sh").read_bytes() == b"#!/bin/sh\ntrue\n"
    assert not (tmp_path / "old").exists()
    if host.exec_bit:
        assert stat.S_IMODE(made.st_mode) == stat.S_IMODE(os.lstat(tmp_path / "a/b/tool.sh").st_mode)
        assert stat.S_IMODE(made.st_mode) == fsops.file_mode(True)
    else:
        assert stat.S_IMODE(os.lstat(tmp_path / "a/b/tool.sh").st_mode) == fsops.file_mode(False)
    if host.symlinks:
        assert os.readlink(tmp_path / "a/link") == "b/tool.sh"
    else:
        assert not (tmp_path / "a/link").is_symlink() and (tmp_path / "a/link").read_bytes() == b"b/tool.sh"


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"))


def test_no_folder_descriptor_stays_open_after_close(tmp_path: Path) -> None:
    """Writes into nested folders and folders side by side, again and again,
    keep each folder's descriptor (the root's too) once: after ``close`` none is
    left open (a restore in a long-lived process, the watcher or the MCP server,
    would otherwise run out of them)."""
    before = _open_descriptors()
    workspace = Workspace(str(tmp_path))
    try:
        for round_ in range(3):
            for n, folder in enumerate(("a/b/c", "a/b", "z", "a/d/e", "a/b/c", "y/x")):
                workspace.write_file(f"{folder}/f{round_}{'x' * n}.txt", b"%d\n" % round_, executable=False)
            workspace.set_executable("a/b/c/f0.txt", round_ % 2 == 0)
            assert workspace.read("a/d/e/f0xxx.txt", False, 100) == b"0\n"
    finally:
        workspace.close()
    assert _open_descriptors() == before
    assert (tmp_path / "a/b/c/f2.txt").read_bytes() == b"2\n"


@pytest.mark.parametrize("blocker", ["symlink", "file"])
def test_a_symlink_or_file_in_place_of_a_folder_is_named_by_its_full_path(
    tmp_path: Path, host: hostfs.HostFS, blocker: str
) -> None:
    """The refusal names the component in the way (not the file being written,
    nor a folder above), the same on every host."""
    root = tmp_path / "ws"
    (root / "a").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    if blocker == "symlink":
        os.symlink(tmp_path / "outside", root / "a/in-the-way")
    else:
        (root / "a/in-the-way").write_bytes(b"a file\n")
    workspace = Workspace(str(root), host)
    try:
        with pytest.raises(RestoreConflict) as refused:
            workspace.write_file("a/in-the-way/deeper/f.txt", b"x\n", executable=False)
    finally:
        workspace.close()
    assert str(refused.value) == (
        f"{root / 'a/in-the-way'} is a symlink or a file, not a folder; refusing to write through it"
    )
    assert list((tmp_path / "outside").iterdir()) == []


def test_a_folder_holding_files_is_not_replaced_and_is_named(tmp_path: Path, host: hostfs.HostFS) -> None:
    """A file to be written where a folder holds files (untracked ones: the plan
    checked the tracked) is refused by the folder's full path; nothing in it goes."""
    (tmp_path / "a/d/empty").mkdir(parents=True)
    (tmp_path / "a/d/notes.txt").write_bytes(b"mine\n")
    workspace = Workspace(str(tmp_path), host)
    try:
        with pytest.raises(RestoreConflict) as refused:
            workspace.write_file("a/d", b"a file now\n", executable=False)
    finally:
        workspace.close()
    assert str(refused.value) == (f"{tmp_path / 'a/d'} is a folder holding untracked files; move them and retry")
    assert (tmp_path / "a/d/notes.txt").read_bytes() == b"mine\n"


def test_a_file_put_into_a_folder_it_made_is_refused_not_replaced_at_every_depth(tmp_path: Path) -> None:
    """A folder this Workspace made was empty; a file found in it later was put
    there by someone else meanwhile: the exclusive create refuses to replace it
    and names it by its full path (``Workspace._made``)."""
    workspace = Workspace(str(tmp_path))
    try:
        workspace.write_file("n/e/w/f.txt", b"restored\n", executable=False)
        for rel in ("n/x.txt", "n/e/y.txt", "n/e/w/z.txt"):
            (tmp_path / rel).write_bytes(b"someone else's\n")
        for rel in ("n/x.txt", "n/e/y.txt", "n/e/w/z.txt"):
            with pytest.raises(RestoreConflict) as refused:
                workspace.write_file(rel, b"restored\n", executable=False)
            assert str(refused.value) == f"{tmp_path / rel} appeared while it was being restored; retry"
    finally:
        workspace.close()
    for rel in ("n/x.txt", "n/e/y.txt", "n/e/w/z.txt"):
        assert (tmp_path / rel).read_bytes() == b"someone else's\n", rel


def test_a_folder_replaced_by_a_file_is_never_written_through_afterwards(tmp_path: Path, host: hostfs.HostFS) -> None:
    """Once a folder of empty folders is replaced by a file, the descriptors kept
    for it and the folders in it are dropped: a write below the file is refused
    as through a file, and once the file is gone a write makes a new folder."""
    workspace = Workspace(str(tmp_path), host)
    try:
        workspace.write_file("a/b/f.txt", b"in a folder\n", executable=False)
        workspace.delete("a/b/f.txt")
        workspace.write_file("a", b"a file now\n", executable=False)
        assert (tmp_path / "a").read_bytes() == b"a file now\n"
        with pytest.raises(RestoreConflict, match="is a symlink or a file, not a folder"):
            workspace.write_file("a/x.txt", b"x\n", executable=False)
        workspace.delete("a")
        workspace.write_file("a/b/g.txt", b"a folder again\n", executable=False)
    finally:
        workspace.close()
    assert (tmp_path / "a/b/g.txt").read_bytes() == b"a folder again\n"
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b"]


def test_a_folder_it_made_and_removed_is_not_taken_as_its_own_when_it_comes_back(tmp_path: Path) -> None:
    """A folder made by this Workspace and then removed with the folder above it,
    made again by someone else: a file in it is replaced as any other file in
    the workspace, not refused as one that appeared in a folder of ours."""
    workspace = Workspace(str(tmp_path))
    try:
        workspace.write_file("a/b/f.txt", b"in a folder\n", executable=False)
        workspace.delete("a/b/f.txt")
        workspace.write_file("a", b"a file now\n", executable=False)
        workspace.delete("a")
        (tmp_path / "a/b").mkdir(parents=True)
        (tmp_path / "a/b/x.txt").write_bytes(b"old\n")
        workspace.write_file("a/b/x.txt", b"restored\n", executable=False)
    finally:
        workspace.close()
    assert (tmp_path / "a/b/x.txt").read_bytes() == b"restored\n"


class _StreamBroke(Exception):
    """What a content stream raises part-way (a blob that cannot be read to its end)."""


def test_a_write_that_fails_part_way_leaves_no_half_written_file(tmp_path: Path, host: hostfs.HostFS) -> None:
    """The error reaches the caller as it was raised, and the file begun is
    removed: no half-written file is left for the user to take as restored."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d/f.txt").write_bytes(b"old\n")

    def pieces() -> Iterator[bytes]:
        yield b"the first half\n"
        raise _StreamBroke("the blob ended early")

    workspace = Workspace(str(tmp_path), host)
    try:
        for rel in ("d/f.txt", "new/g.txt"):
            with pytest.raises(_StreamBroke):
                workspace.write_file(rel, pieces(), executable=False)
            assert workspace.lstat(rel) is None, rel
    finally:
        workspace.close()
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == []
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == []


def test_emptied_folders_are_removed_where_the_folder_was_opened_never_through_a_symlink(tmp_path: Path) -> None:
    """A folder of empty folders to be replaced by a file is emptied through
    descriptors: when the folder above it is swapped for a symlink after it was
    opened (mid-restore), nothing is removed where the symlink points."""
    root = tmp_path / "ws"
    (root / "a/x/y").mkdir(parents=True)
    (tmp_path / "outside/x/y").mkdir(parents=True)
    workspace = Workspace(str(root))
    try:
        workspace.write_file("a/f.txt", b"opens a\n", executable=False)
        os.rename(root / "a", root / "a-moved")
        os.symlink(tmp_path / "outside", root / "a")
        workspace.write_file("a/x", b"a file now\n", executable=False)
    finally:
        workspace.close()
    assert (tmp_path / "outside/x/y").is_dir()
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == ["x"]
    assert (root / "a-moved/x").read_bytes() == b"a file now\n"  # written into the folder it had opened


def _unremovable(path: Path) -> Callable[[], None]:
    """Make the file ``path`` impossible to remove (its folder read-only; for
    root, which ignores that, the file immutable); returns the undo."""
    if os.geteuid() != 0:
        os.chmod(path.parent, 0o555)
        return lambda: os.chmod(path.parent, 0o755)
    if not sys.platform.startswith("linux"):
        pytest.skip("root elsewhere than Linux: no way to refuse an unlink")
    import fcntl
    import struct

    get_flags, set_flags, immutable = 0x80086601, 0x40086602, 0x10  # FS_IOC_[GS]ETFLAGS, FS_IMMUTABLE_FL

    def flip(on: bool) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            (flags,) = struct.unpack("i", fcntl.ioctl(fd, get_flags, b"\0" * 4))
            flags = flags | immutable if on else flags & ~immutable
            fcntl.ioctl(fd, set_flags, struct.pack("i", flags))
        finally:
            os.close(fd)

    try:
        flip(True)
    except OSError as error:
        pytest.skip(f"the immutable flag cannot be set here: {error}")
    return lambda: flip(False)


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_a_file_that_cannot_be_removed_is_reported_never_looked_for_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replacing a file the system refuses to remove fails with that refusal;
    the removal goes through the folder's descriptor, never by the bare name
    (which would remove a namesake in the process's current folder)."""
    root = tmp_path / "ws"
    (root / "d").mkdir(parents=True)
    (root / "d/f.txt").write_bytes(b"kept\n")
    elsewhere = tmp_path / "current"
    elsewhere.mkdir()
    (elsewhere / "f.txt").write_bytes(b"a namesake\n")
    monkeypatch.chdir(elsewhere)
    undo = _unremovable(root / "d/f.txt")
    workspace = Workspace(str(root))
    try:
        with pytest.raises(PermissionError):
            workspace.write_file("d/f.txt", b"new\n", executable=False)
    finally:
        workspace.close()
        undo()
    assert (root / "d/f.txt").read_bytes() == b"kept\n"
    assert (elsewhere / "f.txt").read_bytes() == b"a namesake\n"
