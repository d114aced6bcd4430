"""The compiled stat loop (``_statmatch``) answers exactly as ``PackedFolder.all_match`` in Python.

``all_match`` runs the C loop when it is given ``os.stat`` itself and the
extension was built; any other callable runs the Python loop. Each case here
asks both the same question, on real folders and on packed bytes made to be
wrong in every way a damaged cache file could be: a difference is a file the
walk would take unchanged without reading it, or read for nothing.
(tests/test_record_match.py runs its field-by-field cases on both loops too.)
"""

from __future__ import annotations

import os
import shutil
import struct
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_record_match import _packed

from snapshotter.engine.worktree import packedfolder
from snapshotter.engine.worktree.packedfolder import RECORD, PackedFolder, Record

BLOB = b"\2" * 20
FAR_NS = 2**62
PAST_NS = 1_500_000_000_123_456_789

compiled = pytest.mark.skipif(packedfolder._compiled_all_match is None, reason="the stat loop is not compiled here")


def in_python(name: str, **kwargs: Any) -> os.stat_result:
    """``os.stat`` by another name: ``all_match`` runs its Python loop."""
    return os.stat(name, **kwargs)


def _records(folder: Path) -> dict[str, Record]:
    records = {}
    for name in sorted(os.listdir(folder)):
        s = os.lstat(folder / name)
        records[name] = (s.st_mode, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino, BLOB)
    return records


def _answers(table: PackedFolder, folder: Path, cutoff: int = FAR_NS) -> tuple[int | None, int | None]:
    fd = os.open(folder, os.O_RDONLY)
    try:
        return table.all_match(os.stat, fd, cutoff), table.all_match(in_python, fd, cutoff)
    finally:
        os.close(fd)


def compiler_here() -> bool:
    """Whether setup.py could build the C loop now: a C compiler on PATH and Python's
    headers, not Windows, and ``SNAPSHOTTER_PURE`` not set."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    pure = os.environ.get("SNAPSHOTTER_PURE", "") not in ("", "0")
    return sys.platform != "win32" and shutil.which(compiler) is not None and headers.exists() and not pure


def test_the_stat_loop_is_compiled_where_a_compiler_and_pythons_headers_are_found() -> None:
    """setup.py builds it as optional: a broken build would only be slower, so it is checked here."""
    if not compiler_here():
        pytest.skip("no C compiler or no Python headers here, or SNAPSHOTTER_PURE: the Python loop runs")
    assert packedfolder._compiled_all_match is not None


NAME = st.text(st.characters(codec="utf-8", exclude_characters="/\0"), min_size=1, max_size=12).filter(
    lambda name: name not in (".", "..")
)
CHANGE = st.sampled_from(["none", "content", "mode", "mtime", "gone", "symlink", "future", "replaced"])


@compiled
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.sets(NAME, min_size=1, max_size=8), changes=st.lists(CHANGE, min_size=1, max_size=8))
def test_both_loops_agree_on_real_folders_changed_in_every_way(
    tmp_path_factory: pytest.TempPathFactory, names: set[str], changes: list[str]
) -> None:
    where = tmp_path_factory.mktemp("agree")
    folder = where / "d"
    folder.mkdir()
    for index, name in enumerate(sorted(names)):
        (folder / name).write_bytes(b"x" * index)
        os.utime(folder / name, ns=(PAST_NS, PAST_NS))
    table = _packed(where, _records(folder))
    assert _answers(table, folder) == (sum(range(len(names))),) * 2
    for name, change in zip(sorted(names), changes):
        path = folder / name
        if change == "content":
            path.write_bytes(b"changed")
        elif change == "mode":
            path.chmod(0o755)
        elif change == "mtime":
            os.utime(path, ns=(PAST_NS, PAST_NS + 1))
        elif change == "gone":
            path.unlink()
        elif change == "symlink":
            path.unlink()
            path.symlink_to("elsewhere")
        elif change == "future":
            os.utime(path, ns=(PAST_NS, FAR_NS + 1))
        elif change == "replaced":  # a new inode, everything else put back
            data = path.read_bytes()
            path.unlink()
            path.write_bytes(data)
            os.utime(path, ns=(PAST_NS, PAST_NS))
    compiled_answer, python_answer = _answers(table, folder)
    assert compiled_answer == python_answer
    assert (compiled_answer is None) == any(change != "none" for change in changes[: len(names)])


@compiled
def test_both_loops_agree_on_names_that_are_not_utf8_and_on_symlinks(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / os.fsdecode(b"\xff\xfe-latin.txt")).write_bytes(b"odd")
    (folder / "link").symlink_to("nowhere")  # its own stat, not a target's: it has none
    (folder / "plain").write_bytes(b"1234")
    table = _packed(tmp_path, _records(folder))
    assert _answers(table, folder) == (3 + len("nowhere") + 4,) * 2


@compiled
def test_both_loops_agree_at_and_around_the_racy_cutoff(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "f").write_bytes(b"abc")
    os.utime(folder / "f", ns=(PAST_NS, PAST_NS))
    table = _packed(tmp_path, _records(folder))
    for cutoff, expected in [(PAST_NS, None), (PAST_NS + 1, 3), (PAST_NS - 1, None), (-(2**63), None)]:
        assert _answers(table, folder, cutoff) == (expected, expected)
    fd = os.open(folder, os.O_RDONLY)
    try:  # outside the C loop's int64: the Python loop answers
        assert table.all_match(os.stat, fd, 2**64) == 3 and table.all_match(os.stat, fd, -(2**70)) is None
    finally:
        os.close(fd)


def _damaged(table: PackedFolder, how: str) -> PackedFolder:
    """``table``'s bytes, or its offsets, made wrong as a damaged cache file could be."""
    body, names_at, names_end, records_at, count = (
        table._body,
        table._names_at,
        table._names_end,
        table._records_at,
        table._count,
    )
    if how == "no-final-nul":
        body = body[: names_end - 1] + b"x" + body[names_end:]
    elif how == "records-cut":
        body = body[: records_at + RECORD.size * count - 30]
    elif how == "records-past-the-end":
        records_at = len(body) + 100
    elif how == "names-empty":
        names_end = names_at + 1
    elif how == "names-none":
        names_end = names_at
    elif how == "names-past-the-end":
        names_end = len(body) + 10
    elif how == "more-names-than-records":
        body = body[:names_at] + b"extra\0" + body[names_at:]
        names_end += 6
        records_at += 6
    elif how == "count-zero":
        count = 0
    return PackedFolder(body, names_at, names_end, records_at, count)


@compiled
@pytest.mark.parametrize(
    "how",
    [
        "no-final-nul",
        "records-cut",
        "records-past-the-end",
        "names-empty",
        "names-none",
        "names-past-the-end",
        "more-names-than-records",
        "count-zero",
    ],
)
def test_a_damaged_table_never_vouches_for_a_file_the_python_loop_would_read(tmp_path: Path, how: str) -> None:
    """The C loop may say "check it yourself" (None) where Python would not, never the reverse:
    None only costs a read."""
    folder = tmp_path / "d"
    folder.mkdir()
    for name in ("a", "b", "c"):
        (folder / name).write_bytes(name.encode() * 3)
    (folder / "extra").write_bytes(b"e")
    records = _records(folder)
    del records["extra"]
    table = _damaged(_packed(tmp_path, records), how)
    try:
        python_answer: int | None = _answers(table, folder)[1]
    except (ValueError, struct.error, UnicodeDecodeError):
        python_answer = None
    compiled_answer = _answers(table, folder)[0]
    assert compiled_answer is None or compiled_answer == python_answer
    if how == "count-zero":
        assert compiled_answer == python_answer == 0
    if how in ("records-cut", "records-past-the-end", "names-empty", "names-none"):
        assert compiled_answer is None


def test_any_other_stat_runs_the_python_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A walk that answers stats from a listing (``readdir.lstat_known``) keeps its own stats."""
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "f").write_bytes(b"abc")
    table = _packed(tmp_path, _records(folder))
    asked: list[str] = []

    def counting(name: str, **kwargs: Any) -> os.stat_result:
        asked.append(name)
        return os.stat(name, **kwargs)

    fd = os.open(folder, os.O_RDONLY)
    try:
        assert table.all_match(counting, fd, FAR_NS) == 3
    finally:
        os.close(fd)
    assert asked == ["f"]
