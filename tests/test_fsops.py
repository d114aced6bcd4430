"""``worktree/fsops.Workspace`` on its own: the confined writes a restore makes,
checked on a real folder (``test_restore.py`` and ``test_hostile.py`` check
them through whole restores). What a mutation run found unchecked: the modes
files and folders are made with, that looking never makes a folder, a read of
more than one chunk, and more folders than the descriptors it keeps open.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
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
    workspace = Workspace(str(tmp_path))
    try:
        assert workspace.lstat("a/b/c.txt") is None
        assert not workspace.remove_dir_if_empty("d/e/f")
        workspace.delete("g/h.txt")
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
        if host.exec_bit:
            changed = _without_waiting(lambda: workspace.set_executable("d/f.txt", True), fifo)
            assert isinstance(changed, RestoreConflict), changed
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
