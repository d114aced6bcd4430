"""Undo, redo and turns, kept as numbered refs in the store.

Two stacks of snapshot ids live under ``refs/snapshotter/undo/`` and
``refs/snapshotter/redo/``, so they survive a restart and are shared by every
process that opens the store (callers hold the store lock). A checkpoint is
pushed on the undo stack and clears the redo stack. ``undo`` goes back to the
newest checkpoint that differs from the workspace, saving the workspace first
(edits made after the last checkpoint included) so ``redo`` returns to it
exactly. Stacks change only after the restore succeeded: a failed undo leaves
both the workspace and the stacks as they were.

Turns are ``pre-turn:<n>`` checkpoints listed under ``refs/snapshotter/turns/``,
so ``revert_turn(n)`` finds the state before the n-th last turn.
"""

from __future__ import annotations

from snapshotter.errors import BEGIN_TURN, InvalidInput, SnapshotError, SnapshotNotFound
from snapshotter.model import RestoreResult, SnapshotInfo, UndoResult
from snapshotter.session.engine import Engine
from snapshotter.session.restoring import restore

UNDO, REDO, TURNS = "undo", "redo", "turns"
CHECKPOINT_LABEL = "checkpoint"


def _info(engine: Engine, sha: bytes) -> SnapshotInfo:
    return engine.catalog.get(sha.hex())


def checkpoint(engine: Engine, message: str, label: str | None, metadata: dict[str, str]) -> SnapshotInfo:
    info = engine.snapshot(message, label or CHECKPOINT_LABEL, metadata)
    engine.store.push(UNDO, bytes.fromhex(info.id))
    engine.store.clear(REDO)
    return info


def _live(engine: Engine, name: str) -> list[bytes]:
    """A stack's entries that are still snapshots one can restore; an entry whose
    snapshot was dropped (by another process, or a store from before dropping
    cleaned the stacks) or is damaged is removed, so what ``can_undo`` and
    ``can_redo`` promise is what ``undo`` and ``redo`` do. Hold the store lock."""
    stack = engine.store.stack(name)
    snapshots = set(engine.store.snapshot_refs().values())
    live = []
    for sha in stack:
        if sha in snapshots and _readable(engine, sha):
            live.append(sha)
        else:
            engine.store.drop_from_stack(name, sha)
    return live


def _readable(engine: Engine, sha: bytes) -> bool:
    try:
        _info(engine, sha)
        return True
    except SnapshotError:
        return False


def can_undo(engine: Engine) -> bool:
    stack = _live(engine, UNDO)
    if len(stack) >= 2:
        return True
    if not stack:
        return False
    return engine.scan(write=False).tree_id.hex() != _info(engine, stack[-1]).tree_id


def can_redo(engine: Engine) -> bool:
    return bool(_live(engine, REDO))


def undo(engine: Engine) -> UndoResult:
    stack = _live(engine, UNDO)
    if not stack:
        return UndoResult(False, "undo", "nothing to undo: no checkpoint has been taken")
    current = engine.scan(write=True)
    top = _info(engine, stack[-1])
    at_top = current.tree_id.hex() == top.tree_id
    if at_top and len(stack) < 2:
        return UndoResult(False, "undo", "nothing to undo: the workspace is at the first checkpoint")
    target = _info(engine, stack[-2]) if at_top else top
    saved = engine.save_state(current, "before undo", "pre-undo", save_cache=False).info  # the restore saves it
    result = restore(engine, target, current=current)
    if at_top:
        engine.store.pop(UNDO)
    engine.store.push(REDO, bytes.fromhex(saved.id))
    return UndoResult(True, "undo", f"restored checkpoint {target.id[:12]}", target.id, saved.id, result)


def redo(engine: Engine) -> UndoResult:
    stack = _live(engine, REDO)
    if not stack:
        return UndoResult(False, "redo", "nothing to redo")
    target = _info(engine, stack[-1])
    current = engine.scan(write=True)
    saved = engine.save_state(current, "before redo", "pre-redo", save_cache=False).info  # the restore saves it
    result = restore(engine, target, current=current)
    engine.store.pop(REDO)
    engine.store.push(UNDO, bytes.fromhex(target.id))
    return UndoResult(True, "redo", f"restored {target.id[:12]}", target.id, saved.id, result)


def begin_turn(engine: Engine, message: str, metadata: dict[str, str]) -> SnapshotInfo:
    number = len(engine.store.stack(TURNS)) + 1
    info = checkpoint(
        engine, message or f"before turn {number}", f"pre-turn:{number}", {"turn": str(number), **metadata}
    )
    engine.store.push(TURNS, bytes.fromhex(info.id))
    return info


def end_turn(engine: Engine, message: str, metadata: dict[str, str]) -> SnapshotInfo:
    number = len(engine.store.stack(TURNS))
    if number == 0:
        raise InvalidInput("no turn has begun", BEGIN_TURN)
    return engine.snapshot(message or f"after turn {number}", f"post-turn:{number}", {"turn": str(number), **metadata})


def revert_turn(engine: Engine, n: int) -> RestoreResult:
    turns = engine.store.stack(TURNS)
    if not isinstance(n, int) or n < 1:
        raise InvalidInput("revert_turn(n) takes n >= 1 (1 = the last turn)")
    if n > len(turns):
        raise SnapshotNotFound(f"only {len(turns)} turns are recorded; cannot revert {n}")
    return restore(engine, _info(engine, turns[-n]), safety_label="pre-revert")
