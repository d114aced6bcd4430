"""What a push sends of a big file kept as deltas: its delta, as stored.

A version in a chain pack (``chainpack``) goes as a ``REF_DELTA`` of its base
where the remote holds the base or the same pack sends it (a thin pack, as git
sends one: the receiving side completes it), not as the whole file again. The
delta is sent as it is stored (CRC-checked), and only once the version it
makes has been read through and found to match its id (a push sends only true
objects), a piece at a time: never whole in memory.
"""

from __future__ import annotations

from collections.abc import Callable

from dulwich.pack import UnpackedObject

from snapshotter.engine.gitstore import bigfacts
from snapshotter.engine.gitstore.inflate import ObjectTooLarge
from snapshotter.engine.gitstore.objects import STREAM_THRESHOLD
from snapshotter.engine.gitstore.packread import StoredEntries
from snapshotter.engine.gitstore.packs import entry_header
from snapshotter.engine.gitstore.store import Store

_REF_DELTA = 7


class DeltaSender:
    """The chain packs' deltas of one push; ``known(sha)``: whether the remote
    holds ``sha`` or this push sends it."""

    def __init__(self, store: Store, known: Callable[[bytes], bool]) -> None:
        self._store = store
        self._known = known
        chains = [base for base in store.packs.bases() if bigfacts.is_chain(base)]
        self._entries = StoredEntries(chains, store.packs.index) if chains else None

    def entry(self, kind: int, sha: bytes) -> UnpackedObject | None:
        """``sha`` as a delta entry to send, or None (send it the usual way)."""
        if kind != 3 or self._entries is None:
            return None
        try:
            found = self._entries.get(sha)
        except ObjectTooLarge:
            return None  # a key frame: whole, streamed the usual way
        if found is None or found.kind != 6 or found.base is None or not self._known(found.base):
            return None
        if self._store.blob_size(sha) <= STREAM_THRESHOLD:
            return None
        for _ in self._store.blob_chunks(sha):  # read through and checked against its id: only true objects leave
            pass
        unpacked = UnpackedObject(_REF_DELTA, sha=sha, delta_base=found.base, decomp_len=found.size)
        unpacked.comp_chunks = [entry_header(_REF_DELTA, found.size) + found.base, found.data]
        return unpacked

    def close(self) -> None:
        if self._entries is not None:
            self._entries.close()
