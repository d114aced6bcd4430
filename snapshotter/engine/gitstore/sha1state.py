"""A SHA-1 whose state can be kept and taken up again later, in another process.

A chain pack ends with the SHA-1 of everything before its last bytes (see
``chainpack``): appending a version would hash the whole pack again, a key
frame of a gigabyte included, though only the last bytes changed. hashlib
cannot hand out its state; OpenSSL's own SHA-1 (``SHA1_Init``,
``SHA1_Update``, ``SHA1_Final`` on a ``SHA_CTX``, the same library hashlib
uses, already loaded in this process) can, through ``ctypes``: the state after
the part of a pack that never changes is kept beside the store, and an append
hashes only what it writes. The library is found among those the process has
loaded (``/proc/self/maps``, dyld's image list, ``_hashlib``'s folder), never by
running a program, and is used only if it hashes a test vector as hashlib
does, with its state taken out and put back; otherwise (no OpenSSL, another
layout) ``available()`` is False and the caller hashes the whole pack.

The state as kept (``export``) is the same on every machine: the five words,
the length in bits, and the bytes of an unfinished block.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import os
import struct
import sys
from typing import Any

_CTX = struct.Struct("=5I2I64sI")
"""``SHA_CTX``: h0..h4, Nl, Nh (the length in bits), the unfinished block, its length."""
_KEPT = struct.Struct(">5IQ")


class _Library:
    def __init__(self, lib: Any) -> None:
        self.init = lib.SHA1_Init
        self.update = lib.SHA1_Update
        self.final = lib.SHA1_Final
        self.update.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
        self.init.argtypes = [ctypes.c_void_p]
        self.final.argtypes = [ctypes.c_void_p, ctypes.c_void_p]


_found: list[_Library | None] = []


def _candidates() -> list[str]:
    """Paths of the libcrypto this process has loaded (hashlib loaded it)."""
    import _hashlib  # noqa: F401 - makes sure OpenSSL is loaded

    paths: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                path = line.rstrip("\n").split(" ")[-1]
                if "libcrypto" in os.path.basename(path) and path not in paths:
                    paths.append(path)
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            dyld = ctypes.CDLL(None)
            dyld._dyld_get_image_name.restype = ctypes.c_char_p
            for index in range(dyld._dyld_image_count()):
                name = os.fsdecode(dyld._dyld_get_image_name(index) or b"")
                if "libcrypto" in os.path.basename(name):
                    paths.append(name)
        except (OSError, AttributeError):
            pass
    if os.name == "nt":
        import _hashlib as module

        folder = os.path.dirname(getattr(module, "__file__", "") or "")
        paths += sorted(glob.glob(os.path.join(folder, "libcrypto-*.dll")))
    return paths


def _load() -> _Library | None:
    for path in _candidates():
        try:
            library = _Library(ctypes.CDLL(path))
        except (OSError, AttributeError):
            continue
        if _works(library):
            return library
    return None


def _works(library: _Library) -> bool:
    """Whether the library hashes as hashlib does, its state taken out and put back midway."""
    data = bytes(range(256)) * 41 + b"tail"
    try:
        for cut in (0, 1, 63, 64, 65, 1000, len(data)):
            first = Sha1State(library=library)
            first.update(data[:cut])
            second = Sha1State(first.export(), library=library)
            second.update(data[cut:])
            if second.digest() != hashlib.sha1(data).digest():
                return False
    except (ValueError, OSError, struct.error):
        return False
    return True


def library() -> _Library | None:
    if not _found:
        _found.append(_load())
    return _found[0]


def available() -> bool:
    """Whether a SHA-1 state can be kept and taken up again here."""
    return library() is not None


class Sha1State:
    """A SHA-1 begun afresh, or taken up from a state ``export`` gave."""

    def __init__(self, state: bytes | None = None, library: _Library | None = None) -> None:
        found = library or globals()["library"]()
        if found is None:
            raise ValueError("no SHA-1 whose state can be taken up again here")
        self._library = found
        self._ctx = ctypes.create_string_buffer(_CTX.size + 64)  # room to spare past the known layout
        found.init(self._ctx)
        if state is not None:
            self._restore(state)

    def _restore(self, state: bytes) -> None:
        if len(state) < _KEPT.size or len(state) >= _KEPT.size + 64:
            raise ValueError("not a SHA-1 state")
        *words, bits = _KEPT.unpack_from(state)
        pending = state[_KEPT.size :]
        if bits % 8 or (bits // 8) % 64 != len(pending):
            raise ValueError("not a SHA-1 state")
        raw = _CTX.pack(*words, bits & 0xFFFFFFFF, bits >> 32, pending.ljust(64, b"\0"), len(pending))
        ctypes.memmove(self._ctx, raw, _CTX.size)

    def update(self, data: bytes | bytearray | memoryview) -> None:
        if isinstance(data, memoryview):
            data = data.tobytes() if data.readonly else bytearray(data)
        if not data:
            return
        if isinstance(data, bytes):  # the bytes object's own buffer, not a copy (the GIL is let go meanwhile)
            self._library.update(self._ctx, ctypes.c_char_p(data), len(data))
        else:
            self._library.update(self._ctx, ctypes.addressof(ctypes.c_char.from_buffer(data)), len(data))

    def export(self) -> bytes:
        *words, low, high, block, count = _CTX.unpack_from(self._ctx.raw)
        pending: bytes = block[:count]
        return _KEPT.pack(*words, (high << 32) | low) + pending

    def digest(self) -> bytes:
        scratch = ctypes.create_string_buffer(self._ctx.raw, len(self._ctx.raw))
        out = ctypes.create_string_buffer(20)
        self._library.final(out, scratch)
        return bytes(out.raw)
