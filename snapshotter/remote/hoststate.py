"""What a push keeps of this store's state on a remote, under its own
``refs/snapshotter/<name>/hosts/<host id>/`` folder (issue #50).

The base, the pins, and the newest :data:`KEPT_ENTRIES` entries of the
store's own undo, redo and turns stacks and of those of its
:data:`KEPT_SESSIONS` most recently active sessions, each ref named by the
entry's number here (so a new entry is one ref more there and the oldest
kept one ref less, not every ref renamed). Pushing every entry of every
session made one ref about every 9 snapshots of hook-driven work (some
11,000 at 100,000 snapshots), all listed by every push: the cost of the
history again, which archives take away from the snapshot refs. Nothing
reads these refs back: sessions, labels and turns travel inside the
commits, and every snapshot stays on the remote, named by its own
``snapshots/`` ref or an archive. The refs a push no longer keeps there
(older entries, older sessions) are deleted by it, as any of this store's
state refs it no longer holds.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from snapshotter.engine.gitstore.store import Store

STACKS = ("undo", "redo", "turns")
KEPT_SESSIONS = 16
"""The sessions whose stacks a push keeps: the most recently active."""
KEPT_ENTRIES = 100
"""The entries kept of each stack, newest first: as many undo points as
``Retention.max_undo`` protects by default."""


def state_refs(store: Store, prefix: bytes, taken: Mapping[str, int]) -> dict[bytes, bytes]:
    """This store's base, pins and kept stack entries as refs under ``prefix``
    (ref name -> hex id). ``taken``: the numbers of this store's newest
    snapshots (hex id -> number; a push looks at as many as it needs, see
    ``pushstate.scan``), which rank its sessions."""
    out: dict[bytes, bytes] = {}
    base = store.base()
    if base is not None:
        out[prefix + b"base"] = base.hex().encode()
    for sha in store.pinned():
        out[prefix + b"pins/" + sha.hex().encode()] = sha.hex().encode()
    stacks = [*STACKS, *(f"sessions/{s}/{n}" for s in newest_sessions(store, taken) for n in STACKS)]
    for name in stacks:
        for number, sha in itertools.islice(store.iter_stack(name), KEPT_ENTRIES):  # newest first
            out[prefix + name.encode() + b"/%04d" % number] = sha.hex().encode()
    return out


def newest_sessions(store: Store, taken: Mapping[str, int]) -> list[str]:
    """The :data:`KEPT_SESSIONS` sessions whose stacks' tops are the newest
    snapshots here (one ref read a stack, no commit read); a session whose tops
    are not in ``taken`` (retention dropped them, or older than those looked
    at) counts as the oldest."""
    found = session_tops(store)

    def last_active(session: str) -> int:
        return max((taken.get(top, -1) for top in found[session]), default=-1)

    return sorted(found, key=lambda s: (last_active(s), s), reverse=True)[:KEPT_SESSIONS]


def session_tops(store: Store) -> dict[str, list[str]]:
    """Each session's stacks' tops (hex): what ranks it (one ref read a stack)."""
    found: dict[str, list[str]] = {}
    for session in store.sessions():
        tops = (store.stack_top(f"sessions/{session}/{stack}", 1) for stack in STACKS)
        found[session] = [top[0].hex() for top in tops if top]
    return found
