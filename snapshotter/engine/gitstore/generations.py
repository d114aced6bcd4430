"""The store's generation: how many times objects may have been deleted from it.

A cache that lets a writer skip writing an object (the stat cache's blob ids,
its folders' tree ids, watch mode's last scan) is valid only for the generation
it was made in: gc bumps it, under the store lock, before it deletes anything,
so every writer (another instance, another process) drops such caches at its
next scan instead of reusing an id gc removed.

It is kept in ``<store>/snapshotter/generation`` as ASCII digits, read guarded
(``fsutil.read_side_file``: a named pipe or a device there is garbage, never a
hang). Garbage (those, words, a number at or past :data:`GENERATION_LIMIT`)
cannot be counted on, so it is replaced by a fresh generation no cache
carries: the clock's nanoseconds, far above the small numbers a store counts up
to. That write needs no lock: it can only make caches stale, never make a stale
one valid.
"""

from __future__ import annotations

import contextlib
import os
import time

from snapshotter.engine.fsutil import SMALL_FILE_CAP, new_temp_file, read_side_file, sync_folder

FILE_NAME = "generation"
GENERATION_LIMIT = 2**62
"""Generations at or above this are garbage: the stat cache keeps its generation
as a signed 64-bit number (and 2**62 ns from 1970 is not reached before 2116)."""


def current(meta_dir: str) -> int:
    """The generation (0: never bumped); garbage is replaced by a fresh one
    (-1 where the store cannot be written)."""
    number = _read(meta_dir)
    if number >= 0:
        return number
    try:
        return _write(meta_dir, _fresh())
    except OSError:
        return -1


def bump(meta_dir: str) -> int:
    """Start a new generation (hold the store lock); returns its number."""
    number = _read(meta_dir)
    return _write(meta_dir, number + 1 if 0 <= number < GENERATION_LIMIT - 1 else _fresh())


def _read(meta_dir: str) -> int:
    try:
        text = read_side_file(os.path.join(meta_dir, FILE_NAME), SMALL_FILE_CAP, follow=False).strip()
    except FileNotFoundError:
        return 0
    except OSError:
        return -1
    if not (text.isdigit() and len(text) <= 19) or int(text) >= GENERATION_LIMIT:
        return -1  # not ASCII digits, or past what a cache can carry
    return int(text)


def _fresh() -> int:
    return time.time_ns() % GENERATION_LIMIT


def _write(meta_dir: str, number: int) -> int:
    fd, tmp = new_temp_file(meta_dir, ".generation-", ".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(b"%d\n" % number)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, os.path.join(meta_dir, FILE_NAME))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    sync_folder(meta_dir)
    return number
