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
from pathlib import Path

import pytest

from snapshotter.engine.worktree import fsops
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
