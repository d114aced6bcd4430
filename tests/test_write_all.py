"""``fsutil.write_all``: every part written, in order, in as few system calls as the host allows.

A big file's key frame is written through it a segment (1 MiB) at a time
rather than a block header and a block at a time: the page cache then keeps
the pack in large folios, and a restore copying from it took 0.39 s a GiB
instead of 0.45 s. Its writes are checked here against a real file: parts
over the host's limit of buffers per call, a system call that takes only a
few bytes at a time, and a host without ``writev`` (Windows).
"""

from __future__ import annotations

import errno
import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_big_restore import _chain_pack

from snapshotter import Retention, Snapshotter
from snapshotter.engine import fsutil

_REAL_WRITEV = getattr(os, "writev", None)
needs_writev = pytest.mark.skipif(_REAL_WRITEV is None, reason="no os.writev here (Windows)")


def _written(tmp: Path, parts: list[bytes | memoryview]) -> bytes:
    path = tmp / "out.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"head:")  # written at the file's position, after what is there
        fsutil.write_all(fd, parts)
    finally:
        os.close(fd)
    return path.read_bytes()


def _parts(rng: random.Random, count: int, small: bool = False) -> list[bytes | memoryview]:
    made: list[bytes | memoryview] = []
    for index in range(count):
        data = rng.randbytes(rng.choice((0, 1, 5, 17, 300) if small else (0, 1, 5, 17, 4096, 65535)))
        made.append(memoryview(data)[1:] if index % 3 == 0 and data else data)
    return made


@given(st.lists(st.binary(max_size=300), max_size=40))
@settings(max_examples=60, deadline=None)
def test_every_part_is_written_in_order(tmp_path_factory: pytest.TempPathFactory, parts: list[bytes]) -> None:
    tmp = tmp_path_factory.mktemp("parts")
    assert _written(tmp, list(parts)) == b"head:" + b"".join(parts)


def test_more_parts_than_one_call_takes_are_written_in_batches(tmp_path: Path) -> None:
    parts = _parts(random.Random(7), 3000)
    assert len(parts) > fsutil._IOV_MAX
    assert _written(tmp_path, parts) == b"head:" + b"".join(bytes(p) for p in parts)


@needs_writev
@pytest.mark.parametrize("most", [1, 3, 4096, 70_000])
def test_a_call_that_takes_only_some_bytes_is_followed_by_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, most: int
) -> None:
    calls: list[int] = []

    def short(fd: int, buffers: list[memoryview]) -> int:
        taken: list[memoryview] = []
        left = most
        for buffer in buffers:
            if not left:
                break
            taken.append(buffer[:left])
            left -= len(taken[-1])
        assert _REAL_WRITEV is not None
        assert len(calls) < 100_000, "the same bytes written again and again"
        done = _REAL_WRITEV(fd, taken)
        calls.append(done)
        return done

    monkeypatch.setattr(fsutil, "_WRITEV", short)
    parts = _parts(random.Random(most), 60, small=most < 4096)
    assert _written(tmp_path, parts) == b"head:" + b"".join(bytes(p) for p in parts)
    assert len(calls) > 1


def test_without_writev_the_parts_are_joined_and_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fsutil, "_WRITEV", None)
    parts = _parts(random.Random(11), 200)
    assert _written(tmp_path, parts) == b"head:" + b"".join(bytes(p) for p in parts)
    assert _written(tmp_path, []) == b"head:"


@needs_writev
def test_a_call_that_writes_nothing_is_an_error_not_a_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fsutil, "_WRITEV", lambda fd, buffers: 0)
    with pytest.raises(OSError) as raised:
        _written(tmp_path, [b"some bytes"])
    assert raised.value.errno == errno.EIO


@needs_writev
def test_a_key_frame_is_written_a_segment_at_a_time(
    ws: Path, make: Callable[..., Snapshotter], monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes: list[int] = []

    def counted(fd: int, buffers: list[memoryview]) -> int:
        assert _REAL_WRITEV is not None
        done = _REAL_WRITEV(fd, buffers)
        sizes.append(done)
        return done

    monkeypatch.setattr(fsutil, "_WRITEV", counted)
    content = random.Random(3).randbytes(10 << 20) + b"tail"
    (ws / "db.bin").write_bytes(content)
    snap = make(max_new_file_size=1 << 30, retention=Retention.unlimited())
    snapshot = snap.snapshot("key frame").id
    pack = _chain_pack(snap)
    assert sum(sizes) == pack.stat().st_size  # the whole pack went through it
    assert sum(size >= 1 << 20 for size in sizes) == 10  # each segment in one call, not 34
    assert len(sizes) < 20
    (ws / "db.bin").unlink()
    snap.restore(snapshot)
    assert (ws / "db.bin").read_bytes() == content
