"""Spans of a file copied into another by the kernel (``spancopy``), whichever way it takes.

A restore writes a big file's key frame from the pack: its stored blocks,
each a run of bytes 5 bytes apart from the next, between bytes a delta
inserted. The kernel copies them through a pipe (``os.splice``), else with
``os.copy_file_range``, else they are read and written. Every way gives the
same bytes; a pipe smaller than a block (a user over the limit for pipes gets
the default of 16 pages, or less) neither hangs nor loses bytes; a refusal at
any step hands the rest to the next way.
"""

from __future__ import annotations

import errno
import os
import random
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

import pytest

from snapshotter.engine.gitstore import spancopy
from snapshotter.engine.gitstore.spancopy import Span, write_pieces

_SPLICE = getattr(os, "splice", None)
needs_splice = pytest.mark.skipif(_SPLICE is None, reason="no os.splice on this system")


_LENGTHS = [65535] * 20 + [16, 1, 65535, 40000, 3]


def _source(tmp_path: Path) -> tuple[Path, bytes, list[tuple[int, int]]]:
    """A file laid out as stored blocks: 5 bytes of header, then up to 65535 bytes, again and again."""
    rng = random.Random(53)
    data = bytearray(rng.randbytes(7))
    runs = []
    for length in _LENGTHS:
        data += b"HHHHH"
        runs.append((len(data), length))
        data += rng.randbytes(length)
    path = tmp_path / "pack"
    path.write_bytes(data)
    return path, bytes(data), runs


def _pieces(fd: int, data: bytes, runs: list[tuple[int, int]]) -> tuple[list[bytes | Span], bytes]:
    """Spans of a few runs each with bytes between, and the bytes they make."""
    pieces: list[bytes | Span] = [b"first"]
    expected = bytearray(b"first")
    for at in range(0, len(runs), 6):
        part = runs[at : at + 6]
        pieces.append(Span(fd, iter(part)))
        expected += b"".join(data[offset : offset + length] for offset, length in part)
        pieces.append(b"-inserted-%d-" % at)
        expected += pieces[-1]  # type: ignore[operator]
    return pieces, bytes(expected)


def _write(tmp_path: Path, name: str = "out") -> bytes:
    path, data, runs = _source(tmp_path)
    fd = os.open(path, os.O_RDONLY)
    out = os.open(tmp_path / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        pieces, expected = _pieces(fd, data, runs)
        write_pieces(out, pieces)
    finally:
        os.close(out)
        os.close(fd)
    written = (tmp_path / name).read_bytes()
    assert written == expected
    return written


def _calls(monkeypatch: pytest.MonkeyPatch, name: str, refuse: int | None = None, after: int = 0) -> list[int]:
    """Count (bytes) the calls of ``os.<name>``; with ``refuse``, the calls past the first ``after`` raise it."""
    real = getattr(os, name)
    calls: list[int] = []

    def counted(*args: int, **kwargs: int) -> int:
        if refuse is not None and len(calls) >= after:
            calls.append(0)
            raise OSError(refuse, os.strerror(refuse))
        done: int = real(*args, **kwargs)
        calls.append(done)
        return done

    monkeypatch.setattr(os, name, counted)
    return calls


@needs_splice
def test_spans_go_through_a_pipe_byte_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spliced = _calls(monkeypatch, "splice")
    copied = _calls(monkeypatch, "copy_file_range") if hasattr(os, "copy_file_range") else []
    _write(tmp_path)
    assert sum(spliced) == 2 * sum(_LENGTHS)  # into the pipe, out of it
    assert not copied


def _in_time(tmp_path: Path) -> None:
    """``_write``, failed if it has not ended in 20 s (a pipe spliced into while full waits for ever)."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            _write(tmp_path)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            failed.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(20)
    assert not worker.is_alive(), "the copy hangs"
    if failed:
        raise failed[0]


@needs_splice
@pytest.mark.parametrize("pipe_bytes", [1, 4096, 8192, 65536])
def test_a_pipe_smaller_than_a_block_neither_hangs_nor_loses_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pipe_bytes: int
) -> None:
    monkeypatch.setattr(spancopy, "_PIPE_BYTES", pipe_bytes)
    _in_time(tmp_path)


@needs_splice
def test_a_pipe_that_fills_before_its_pages_are_counted_is_emptied_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Were the pages a splice takes counted short, the pipe would fill: its
    writing end does not block, a full pipe is emptied and the splice tried again."""
    monkeypatch.setattr(spancopy, "_PIPE_BYTES", 4096)
    monkeypatch.setattr(spancopy, "_pages", lambda at, length: 0)
    _in_time(tmp_path)


@pytest.mark.parametrize("refusal", ["EINVAL", "ENOSYS", "EXDEV", "EOPNOTSUPP", "EPERM"])
@pytest.mark.parametrize("after", [0, 3])
def test_a_refused_splice_hands_the_rest_to_copy_file_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refusal: str, after: int
) -> None:
    if _SPLICE is None or not hasattr(os, "copy_file_range"):
        pytest.skip("no os.splice or os.copy_file_range on this system")
    spliced = _calls(monkeypatch, "splice", getattr(errno, refusal), after)
    copied = _calls(monkeypatch, "copy_file_range")
    _write(tmp_path)
    assert spliced and copied


@needs_splice
@pytest.mark.parametrize("pipe_bytes", [4096, 1 << 20])
def test_a_file_that_takes_no_splice_gets_the_pipe_read_and_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pipe_bytes: int
) -> None:
    """Bytes already in the pipe when the file refuses them are not lost."""
    real = os.splice
    refused: list[int] = []

    def into_pipe_only(src: int, dst: int, count: int, *args: int) -> int:
        if not args:  # out of the pipe, into the file
            refused.append(count)
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        return real(src, dst, count, *args)

    monkeypatch.setattr(os, "splice", into_pipe_only)
    monkeypatch.setattr(spancopy, "_PIPE_BYTES", pipe_bytes)
    _write(tmp_path)
    assert refused


@pytest.mark.parametrize("missing", [("splice",), ("splice", "copy_file_range")])
def test_without_the_kernel_calls_the_spans_are_read_and_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: Iterable[str]
) -> None:
    for name in missing:
        monkeypatch.delattr(os, name, raising=False)
    _write(tmp_path)


def test_a_pack_shorter_than_its_spans_is_an_error_not_a_short_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _, runs = _source(tmp_path)
    for way in ("splice", "copy_file_range", "read"):
        if way != "splice":
            monkeypatch.delattr(os, "splice", raising=False)
        if way == "read":
            monkeypatch.delattr(os, "copy_file_range", raising=False)
        fd = os.open(path, os.O_RDONLY)
        out = os.open(tmp_path / way, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with pytest.raises(OSError) as raised:
                write_pieces(out, [Span(fd, iter([*runs, (path.stat().st_size - 10, 20)]))])
            assert raised.value.errno == errno.EIO
        finally:
            os.close(out)
            os.close(fd)


@pytest.mark.parametrize("size", [1, 5 << 20])
def test_the_disk_reserved_first_leaves_the_file_its_bytes_alone(tmp_path: Path, size: int) -> None:
    """The size given is reserved on disk before the copy (``fallocate``
    where there is one); the file's size stays what was written, were the
    size given too big."""
    path, data, runs = _source(tmp_path)
    fd = os.open(path, os.O_RDONLY)
    out = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        pieces, expected = _pieces(fd, data, runs)
        write_pieces(out, pieces, size)
        assert os.fstat(out).st_size == len(expected)
    finally:
        os.close(out)
        os.close(fd)
    assert (tmp_path / "out").read_bytes() == expected


def test_a_reserved_file_has_its_blocks_and_no_size(tmp_path: Path) -> None:
    out = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        reserved = spancopy.reserve(out, 5 << 20)
        found = os.fstat(out)
    finally:
        os.close(out)
    if sys.platform.startswith("linux") and sys.maxsize > 1 << 32 and not reserved:
        assert _refuses(tmp_path), "Linux has fallocate, and this file system takes it"
    assert found.st_size == 0
    assert not reserved or found.st_blocks * 512 >= 5 << 20


def _refuses(folder: Path) -> bool:
    """Whether the file system refuses ``fallocate`` (asked through ctypes, as ``reserve`` does not)."""
    import ctypes

    probe = os.open(folder / "probe", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        return int(ctypes.CDLL(None).fallocate(probe, 1, ctypes.c_int64(0), ctypes.c_int64(4096))) != 0
    finally:
        os.close(probe)
