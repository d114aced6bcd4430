"""Which of some snapshots this store holds, for a fetch, without reading
every snapshot ref here (issue #50: a fetch of 10 read all 100,000 to know
which of the ~2,000 listed it held).

An id with no object here is not held (another store's snapshot: the common
case). The others are looked for among the newest refs (``packed-refs`` read
from its end; at most :data:`BOUND`, stopping once all are found): there is
what this store pushed lately, which the remote lists. Each one not found
there is looked up on its own: a snapshot commit whose own number
(``Snapshot-Seq``) names it here. What is left, an object here without a ref
at its number (fetched here and numbered otherwise, a fetch killed before its
refs, a snapshot dropped and not collected yet), is looked for in every ref
(``exact``), or counted as not held (for haves, where claiming fewer costs
bytes, never correctness).
"""

from __future__ import annotations

from collections.abc import Collection

from snapshotter.engine.gitstore.store import Store

BOUND = 4096
"""The newest snapshot refs looked through for the ids asked about."""


def held(store: Store, ids: Collection[bytes], exact: bool = True) -> set[bytes]:
    """Of ``ids`` (hex), those a snapshot ref here names (see the module's docstring)."""
    left = {name for name in ids if store.has_object(bytes.fromhex(name.decode("ascii")))}
    found: set[bytes] = set()
    if not left:
        return found
    for count, (_, sha) in enumerate(store.iter_snapshot_ids()):
        if not left or count >= BOUND:
            break
        name = sha.hex().encode()
        if name in left:
            found.add(name)
            left.discard(name)
    unsure: set[bytes] = set()
    for name in left:
        raw = bytes.fromhex(name.decode("ascii"))
        seq = store.recorded_seq(raw)
        if seq is not None and store.snapshot_id(seq) == raw:
            found.add(name)
        elif seq is not None:
            unsure.add(name)
    if unsure and exact:
        found |= unsure & {sha.hex().encode() for _, sha in store.iter_snapshot_ids()}
    return found
