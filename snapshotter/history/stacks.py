"""The stacks of history as the store keeps them: their names, and the entries still restorable.

Undo, redo and turns are stacks of snapshot ids under ``refs/snapshotter/``
(``undo``, ``redo``, ``turns``; a named session's under ``sessions/<name>/``).
``undo`` changes them; ``anchors`` reads them to know what retention must keep;
``maintenance`` lists them all. Reading an entry checks that its snapshot is
still there: one dropped or damaged is taken off the stack as it is met.
"""

from __future__ import annotations

from snapshotter.engine.session.engine import Engine
from snapshotter.errors import SnapshotError
from snapshotter.model import SnapshotInfo

UNDO, REDO, TURNS = "undo", "redo", "turns"
STACKS = (UNDO, REDO, TURNS)
SESSIONS = "sessions/"


def stack_of(engine: Engine, name: str) -> str:
    """The store's name of this engine's session's stack ``name``."""
    return name if engine.session is None else f"{SESSIONS}{engine.session}/{name}"


def all_stacks(engine: Engine) -> list[str]:
    """Every stack name of the store: the anonymous session's and each named one's."""
    return [*STACKS, *(f"{SESSIONS}{name}/{stack}" for name in engine.store.sessions() for stack in STACKS)]


def entry_info(engine: Engine, sha: bytes) -> SnapshotInfo:
    """The snapshot a stack entry names (``SnapshotNotFound`` if it is gone)."""
    return engine.catalog.get(sha.hex())


def live_entries(engine: Engine, name: str, count: int | None = None) -> list[bytes]:
    """A stack's newest ``count`` entries (None: all) that are still snapshots one
    can restore, bottom first, read from the top (so a call that needs the top
    two reads two, however deep the stack); an entry whose snapshot was dropped
    (by another process, or a store from before dropping cleaned the stacks) or
    is damaged is removed on the way, so what ``can_undo`` and ``can_redo``
    promise is what ``undo`` and ``redo`` do. Hold the store lock."""
    live: list[bytes] = []
    dead: set[bytes] = set()
    for _, sha in engine.store.iter_stack(name):
        if count is not None and len(live) >= count:
            break
        seq = engine.store.seq_of(sha)
        if seq is not None and readable(engine, sha, seq):
            live.append(sha)
        else:
            dead.add(sha)
    if dead:
        engine.store.drop_from_stacks([name], dead)
    return live[::-1]


def readable(engine: Engine, sha: bytes, seq: int | None = None) -> bool:
    """Whether the snapshot ``sha`` (numbered ``seq`` if known) can still be read."""
    try:
        engine.catalog.info(seq, sha) if seq is not None else entry_info(engine, sha)
        return True
    except SnapshotError:
        return False
