"""What a fetch tells a server before the pack comes: the commits it wants,
the refs it asks to be listed, and the commits this store has ("haves"), each
bounded by what is fetched, never by the length of the history (issue #50).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from snapshotter.engine.gitstore.store import Store
from snapshotter.engine.gitstore.wirebudget import Meter

HAVES = 256
"""The most "haves" a fetch tells the server: this store's newest snapshots.
Every snapshot is a parentless commit, so each have stands for its own tree
only; the newest ones hold what a fetch of newer work shares with this store
(git's own client gives up after 256 haves in vain). All of them made a fetch
of 10 snapshots send 5 MB of haves at 100,000 (issue #50)."""


class Haves:
    """dulwich's graph walker over this store: its newest :data:`HAVES`
    snapshot commits, newest first, as the "haves" a server sends less for
    (every commit of a store is a snapshot a ref names, so no parents need
    walking). Only those refs are read (``iter_snapshot_ids`` is lazy)."""

    def __init__(self, store: Store) -> None:
        newest = itertools.islice(store.iter_snapshot_ids(), HAVES)
        self._left = [sha.hex().encode() for _, sha in newest]

    def __next__(self) -> bytes | None:
        return self._left.pop(0) if self._left else None

    next = __next__

    def ack(self, sha: bytes) -> None:
        return None

    def nak(self) -> None:
        return None


def nearest_held(store: Store, listed: frozenset[bytes]) -> frozenset[bytes]:
    """The commits a push takes the remote to hold (hex, of ``listed``): those
    of this store's newest snapshots that the remote's refs name, up to
    :data:`HAVES` of them, looked for among the newest ``4 * HAVES``. What
    they reach is not sent; an object of an older snapshot that a new one
    shares again is sent again, which costs bytes, never correctness. All of
    them made a push of 10 snapshots read the trees of every snapshot the
    remote held (5,800 objects at 3,000 snapshots; issue #50)."""
    found: set[bytes] = set()
    for _, sha in itertools.islice(store.iter_snapshot_ids(), 4 * HAVES):
        name = sha.hex().encode()
        if name in listed:
            found.add(name)
            if len(found) >= HAVES:
                break
    return frozenset(found)


def listing(refs: Mapping[bytes, bytes], wanted: set[bytes]) -> list[bytes]:
    """What a fetch asks a protocol v2 server to list before it sends the pack
    (``ls-refs`` with ``ref-prefix``; a v0 server lists every ref whatever is
    asked): the refs naming the commits ``wanted``, up to :data:`HAVES` of them,
    else the part of their names they all share. Without it the server listed
    every ref it holds, one per snapshot: 1.4 MB at 10,000 (issue #50)."""
    names = sorted(name for name, sha in refs.items() if sha in wanted)
    if len(names) <= HAVES:
        return names
    first, last = names[0], names[-1]  # sorted: what these two share, all share
    shared = next((i for i, (a, b) in enumerate(zip(first, last)) if a != b), min(len(first), len(last)))
    return [first[:shared]]


def wanting(wanted: list[bytes], meter: Meter) -> Any:
    """dulwich's ``determine_wants``: the commits to fetch, whatever the remote
    advertises. Called once the advertisement is read: a pack comes next."""

    def determine_wants(refs: object, depth: int | None = None) -> list[bytes]:
        meter.expect_pack()
        return list(wanted)

    return determine_wants
