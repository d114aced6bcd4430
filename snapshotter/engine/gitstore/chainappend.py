"""Appending a version to a chain pack in place, and putting back one a crash cut short.

An append writes the new delta's entry where the first free place was, the
remaining places after it and a new trailer (see ``chainpack``); nothing
before that point changes. In order:

1. everything is prepared aside: the entry, the new trailer (the SHA-1 taken
   up from its kept state, or the pack hashed again on a thread while the file
   was read: ``PackDigest``) and the new index, synced;
2. a journal (``chain-append-<old name>``) records the old size and the old
   bytes from the first free place on (the places and trailer: a few KiB), synced;
3. the pack is renamed out of git's sight (``chain-tmp-*``), its index set
   aside (``chain-old-*``): a reader missing an object while a journal exists
   looks again (``objectstore``);
4. the new bytes are written there, synced; the pack is renamed to its new
   checksum's name and the new index put in place; the journal goes.

The next process to open the store after a crash (``chainjournal.settle``, the
store lock taken without waiting, or the next writer, ``recover``) completes an append
whose pack and index are both in place, and otherwise puts the pack back as it
was, byte for byte. A pack with another hard link (shared with a fork) is
never written to. Appends are made under the store lock, one at a time in a
process.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any

from snapshotter.engine.fsutil import sync_folder, unlink_quietly
from snapshotter.engine.gitstore import sha1state
from snapshotter.engine.gitstore.bigfacts import PREFIX
from snapshotter.engine.gitstore.chainjournal import JOURNAL, OLD_INDEX, TMP, roll_back
from snapshotter.engine.gitstore.chainpack import (
    Tip,
    drop_state,
    index_bytes,
    keep_state,
    kept_state,
    write_file,
)
from snapshotter.engine.gitstore.inflate import PIECE
from snapshotter.engine.gitstore.packread import PackFile
from snapshotter.engine.gitstore.packs import OFS_DELTA, entry_header, offset_bytes
from snapshotter.errors import StoreError

_append_lock = threading.Lock()


def _stage(name: str) -> None:
    """Called between the steps of an append: the crash tests' seam (a test
    process replaces it to stop, and be killed, at one of them)."""


class PackDigest:
    """The SHA-1 of a chain pack up to its first free place, the state at which
    an append takes it up: the kept state at once, or else the pack hashed again
    on a thread (started at once, while the new version is still being read)."""

    def __init__(self, tip: Tip, states_dir: str) -> None:
        self.tip = tip
        self.states_dir = states_dir
        self._failed: BaseException | None = None
        self._stop = False
        self._thread: threading.Thread | None = None
        state = kept_state(states_dir, tip.base, tip.end) if sha1state.available() else None
        self._digest: Any
        if state is not None:
            try:
                self._digest = sha1state.Sha1State(state)
                return
            except ValueError:
                pass
        self._digest = sha1state.Sha1State() if sha1state.available() else hashlib.sha1()
        self._thread = threading.Thread(target=self._run, name="snapshotter-rehash", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            pack = PackFile(self.tip.base + ".pack")
            try:
                at, end = 0, self.tip.end
                while at < end and not self._stop:
                    chunk = pack.read_at(min(PIECE, end - at), at)
                    if not chunk:
                        raise OSError("the chain pack is shorter than it was")
                    self._digest.update(chunk)
                    at += len(chunk)
            finally:
                pack.close()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            self._failed = exc

    def cancel(self) -> None:
        self._stop = True
        if self._thread is not None:
            self._thread.join()

    def ready(self) -> Any:
        """The SHA-1 at the first free place (waiting for the thread if one runs)."""
        if self._thread is not None:
            self._thread.join()
        if self._failed is not None or self._stop:
            raise StoreError(f"cannot read the chain pack {os.path.basename(self.tip.base)}: {self._failed}")
        return self._digest


def append(digest: PackDigest, sha: bytes, delta_size: int, delta: IO[bytes]) -> str | None:
    """Append ``sha`` as an offset delta (``delta``: its zlib stream, of a delta
    ``delta_size`` bytes long) of the version at ``digest.tip``; returns the
    pack's new path less ``.pack``, or None if the pack may not be written
    (another hard link, or it could not be renamed: the caller starts a new
    chain). The delta is read from its file twice, never held whole. Hold the
    store lock."""
    tip = digest.tip
    pack_dir = os.path.dirname(tip.base)
    head = entry_header(OFS_DELTA, delta_size) + offset_bytes(tip.end - tip.offset)
    with open(tip.base + ".pack", "rb") as handle:
        handle.seek(tip.end)
        old_tail = handle.read()  # the free places and the trailer: a few KiB
    if len(old_tail) != tip.size - tip.end:
        return None
    first, rest = _places(tip, old_tail)

    def entry() -> Iterator[bytes]:
        yield head
        delta.seek(0)
        while chunk := delta.read(PIECE):
            yield chunk

    sha1 = digest.ready()
    crc = 0
    length = 0
    for piece in entry():
        crc = zlib.crc32(piece, crc)
        length += len(piece)
        sha1.update(piece)
    state = sha1.export() if isinstance(sha1, sha1state.Sha1State) else None
    sha1.update(rest)
    checksum = sha1.digest()
    shift = length - first
    entries = [e for e in tip.entries if e[0] != tip.free[0]]
    entries = [(found, at + shift if at > tip.end else at, check) for found, at, check in entries]
    entries.append((sha, tip.end, crc))
    new_base = os.path.join(pack_dir, PREFIX + checksum.hex())
    with _append_lock:
        done = _apply(tip, pack_dir, new_base, entry, rest + checksum, old_tail, index_bytes(entries, checksum))
    if not done:
        return None
    if state is not None:
        keep_state(digest.states_dir, new_base, tip.end + length, state)
    drop_state(digest.states_dir, tip.base)
    return new_base


def _places(tip: Tip, tail: bytes) -> tuple[int, bytes]:
    """(the first free place's length, the bytes of the other places) from the old tail."""
    free = set(tip.free)
    offsets = sorted(at for found, at, _ in tip.entries if found in free)
    first = (offsets[1] if len(offsets) > 1 else tip.size - 20) - tip.end
    return first, tail[first:-20]


def _apply(
    tip: Tip,
    pack_dir: str,
    new_base: str,
    entry: Callable[[], Iterator[bytes]],
    after: bytes,
    old_tail: bytes,
    index: bytes,
) -> bool:
    old_name = os.path.basename(tip.base)
    journal = os.path.join(pack_dir, JOURNAL + old_name)
    tmp_pack = os.path.join(pack_dir, TMP + old_name)
    kept_index = os.path.join(pack_dir, OLD_INDEX + old_name)
    new_index_tmp = new_base + ".idx.tmp"
    record = {
        "old": old_name,
        "size": tip.size,
        "end": tip.end,
        "tail": old_tail.hex(),
        "new": os.path.basename(new_base),
    }
    try:
        write_file(new_index_tmp, index)
        write_file(journal, json.dumps(record).encode())
        sync_folder(pack_dir)
        _stage("journal")
        os.rename(tip.base + ".pack", tmp_pack)
    except OSError:
        unlink_quietly(new_index_tmp)
        unlink_quietly(journal)
        return False
    try:
        os.rename(tip.base + ".idx", kept_index)
        _stage("aside")
        with open(tmp_pack, "r+b") as handle:
            if os.fstat(handle.fileno()).st_nlink != 1:
                raise _Shared
            handle.seek(tip.end)
            for piece in entry():
                handle.write(piece)
            handle.flush()
            _stage("writing")
            handle.write(after)
            handle.truncate()
            handle.flush()
            os.fsync(handle.fileno())
        _stage("written")
        os.rename(tmp_pack, new_base + ".pack")
        _stage("renamed")
        os.rename(new_index_tmp, new_base + ".idx")
        sync_folder(pack_dir)
        _stage("indexed")
    except (OSError, _Shared):
        roll_back(pack_dir, record)
        return False
    unlink_quietly(kept_index)
    unlink_quietly(journal)
    return True


class _Shared(Exception):
    """The pack turned out to have another hard link."""
