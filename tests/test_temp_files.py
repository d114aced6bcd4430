"""``fsutil.new_temp_file``: the store's temporary files as ``tempfile.mkstemp`` makes them, without its imports."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from snapshotter.engine import fsutil
from snapshotter.engine.gitstore.store import TEMP_NAME


def test_each_call_makes_a_new_private_file_open_for_writing(tmp_path: Path) -> None:
    made = [fsutil.new_temp_file(str(tmp_path), ".statcache-", ".tmp") for _ in range(50)]
    try:
        paths = [path for _, path in made]
        assert len(set(paths)) == 50
        for fd, path in made:
            assert os.path.dirname(path) == str(tmp_path)
            assert TEMP_NAME.match(os.path.basename(path))  # upkeep clears it if a crash leaves it
            assert os.write(fd, b"x") == 1
            assert not os.get_inheritable(fd)
            if sys.platform != "win32":
                assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    finally:
        for fd, _ in made:
            os.close(fd)


def test_a_name_already_taken_is_never_opened_and_another_is_drawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``O_EXCL``: a file (or a symlink planted) at the drawn name is left as it is."""
    draws = iter([b"\0" * 6, b"\0" * 6, b"\1" * 6])
    monkeypatch.setattr(fsutil.os, "urandom", lambda n: next(draws))
    taken = tmp_path / ("tmp_obj_" + "00" * 6)
    taken.write_bytes(b"someone's")
    fd, path = fsutil.new_temp_file(str(tmp_path), "tmp_obj_")
    os.close(fd)
    assert path == str(tmp_path / ("tmp_obj_" + "01" * 6))
    assert taken.read_bytes() == b"someone's"


def test_a_folder_that_is_not_there_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        fsutil.new_temp_file(str(tmp_path / "gone"), "tmp_pack_")
