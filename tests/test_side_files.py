"""Side files (settings, the user's git files, the store's own files) are read so
that nothing planted at their path can hang us or fill memory: ``fsutil.read_side_file``."""

from __future__ import annotations

import os
import sys

import pytest

from snapshotter.fsutil import FileTooLarge, NotARegularFile, read_side_file, read_side_text

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="named pipes and /dev/zero are POSIX")


def test_a_regular_file_is_read_whole(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_bytes(b"a = 1\n")
    assert read_side_file(str(path)) == b"a = 1\n"
    assert read_side_text(str(path)) == "a = 1\n"


def test_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_side_file(str(tmp_path / "nothing"))


@posix_only
def test_a_named_pipe_is_refused_at_once_not_waited_on(tmp_path):
    path = tmp_path / "pyproject.toml"
    os.mkfifo(path)
    with pytest.raises(NotARegularFile, match="named pipe"):
        read_side_file(str(path))


@posix_only
def test_a_link_to_dev_zero_is_refused_not_read_forever(tmp_path):
    path = tmp_path / "config"
    os.symlink("/dev/zero", path)
    with pytest.raises(NotARegularFile, match="device"):
        read_side_file(str(path))


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(OSError):
        read_side_file(str(tmp_path))


def test_a_file_past_the_cap_is_refused(tmp_path):
    path = tmp_path / "big"
    path.write_bytes(b"x" * 101)
    with pytest.raises(FileTooLarge):
        read_side_file(str(path), cap=100)
    assert read_side_file(str(path), cap=101) == b"x" * 101


@posix_only
def test_a_symlink_is_refused_where_links_are_not_followed(tmp_path):
    (tmp_path / "real").write_bytes(b"x")
    os.symlink("real", tmp_path / "link")
    assert read_side_file(str(tmp_path / "link")) == b"x"
    with pytest.raises(OSError):
        read_side_file(str(tmp_path / "link"), follow=False)
