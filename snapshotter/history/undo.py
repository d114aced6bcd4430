"""Undo, redo and turns, kept as numbered refs in the store, per session.

Two stacks of snapshot ids live under ``refs/snapshotter/undo/`` and
``refs/snapshotter/redo/`` (a named session's under
``refs/snapshotter/sessions/<name>/``), so they survive a restart and are
shared by every process that opens the store (callers hold the store lock).
A checkpoint is pushed on the undo stack; the redo side it ends is kept as
``abandoned:<n>`` snapshots, restorable like any other until retention drops
them. Stacks change only after the workspace did: a failed or refused undo
leaves both as they were.

The anonymous session (``session=None``) undoes by restoring: ``undo`` goes
back to the newest checkpoint that differs from the workspace, saving the
workspace first (edits made after the last checkpoint included) so ``redo``
returns to it exactly. A named session shares the folder with others, so it
undoes by reverting (``attribution``): only its own changes since its newest
checkpoint go, and ``redo`` brings exactly those back, three ways both times.

Turns are ``pre-turn:<n>`` checkpoints listed under ``turns/``; ``revert_turn``
reverts a turn's own changes (its tool calls if it bracketed them), keeping
later edits, or with ``reset`` restores the state before it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapshotter.engine.gitstore.historyindex import key_of
from snapshotter.engine.session.engine import Engine
from snapshotter.errors import (
    BEGIN_TURN,
    TURN_NUMBER,
    InvalidInput,
    Remedy,
    SnapshotError,
    SnapshotNotFound,
    StoreError,
)
from snapshotter.history.owners import ABANDONED, POST_RESTORE, POST_TURN, PRE_TURN, TOOL, TOOL_DONE, label_number
from snapshotter.history.stacks import REDO, TURNS, UNDO, entry_info, live_entries, readable, stack_of

if TYPE_CHECKING:  # annotations only: a hook event checkpoints and snapshots, it restores and reverts nothing
    from collections.abc import Sequence

    from snapshotter.history.attribution import Pair, Piece
    from snapshotter.model import ConflictMode, Hunk, RestoreResult, RevertResult, SnapshotInfo, UndoResult

# Restoring, reverting (three-way merges), attribution (line comparisons, tree diffs) and the
# values of results load in the functions that undo, redo or revert (issue #51): every hook event
# imports this module to checkpoint or snapshot, and would pay 15-20 ms for them at its top.

CHECKPOINT_LABEL = "checkpoint"
REDO_TO, POPPED = "redo-to", "undo-popped"
"""A named session's redo entry (its ``post-undo`` snapshot) names, in its
metadata, the state to bring back and the checkpoint its undo took off the stack."""


def checkpoint(engine: Engine, message: str, label: str | None, metadata: dict[str, str]) -> SnapshotInfo:
    info = engine.snapshot(message, label or CHECKPOINT_LABEL, metadata)
    engine.store.push(stack_of(engine, UNDO), bytes.fromhex(info.id))
    _abandon_redo(engine)
    return info


def restored(engine: Engine, result: RestoreResult) -> None:
    """After a restore the caller asked for: the state it replaced (its safety
    snapshot) becomes an undo point, so ``undo`` takes the restore back and
    ``redo`` brings it again. In a named session the restore is closed by a
    ``post-restore`` snapshot too, so its undo, which reverts the session's own
    changes, knows the restore as one. A dry run, or a restore that changed
    nothing, makes no undo point."""
    if result.dry_run or result.safety_snapshot_id is None or not (result.written or result.deleted):
        return
    engine.store.push(stack_of(engine, UNDO), bytes.fromhex(result.safety_snapshot_id))
    _abandon_redo(engine)
    if engine.session is not None:
        from snapshotter.engine.session.reverting import SINCE

        meta = {SINCE: result.safety_snapshot_id}
        engine.snapshot(f"after restoring {result.target_id[:12]}", POST_RESTORE, meta, moves_base=False)


def _abandon_redo(engine: Engine) -> None:
    """Clear the redo stack, keeping each state it could have returned to as a
    snapshot labelled ``abandoned:<n>``: nothing made is lost to a new checkpoint.
    A state an undo point holds too needs no copy: the copy would be the newest
    snapshot, which retention never drops, and crowd out a state held nowhere else."""
    name = stack_of(engine, REDO)
    entries = live_entries(engine, name)
    if not entries:
        return
    held = {entry_info(engine, sha).tree_id for sha in live_entries(engine, stack_of(engine, UNDO), HELD_UNDO_POINTS)}
    number = engine.catalog.index.current().abandoned
    for sha in entries:
        info = entry_info(engine, sha)
        kept = _redo_target(engine, info) if engine.session is not None else info
        if kept is None or kept.tree_id in held:
            continue
        held.add(kept.tree_id)
        number += 1
        engine.relabelled(kept, f"abandoned by a checkpoint: {kept.message}".strip(), f"{ABANDONED}{number}")
    engine.store.clear(name)


HELD_UNDO_POINTS = 100
"""Undo points whose states a checkpoint looks at before keeping an abandoned redo state."""


def can_undo(engine: Engine) -> bool:
    stack = live_entries(engine, stack_of(engine, UNDO), 2)
    if len(stack) >= 2:
        return True
    if not stack:
        return False
    if engine.session is not None:
        return bool(_since(engine, entry_info(engine, stack[-1])))
    return engine.scan(write=False).tree_id.hex() != entry_info(engine, stack[-1]).tree_id


def can_redo(engine: Engine) -> bool:
    return bool(live_entries(engine, stack_of(engine, REDO), 1))


def undo(engine: Engine) -> UndoResult:
    from snapshotter.engine.session.restoring import restore
    from snapshotter.model import UndoResult

    stack = live_entries(engine, stack_of(engine, UNDO), 2)
    if not stack:
        why = "no checkpoint has been taken" if engine.session is None else _NO_POINT_KEPT
        return UndoResult(False, "undo", f"nothing to undo: {why}")
    if engine.session is not None:
        return _session_undo(engine, stack)
    current = engine.scan(write=True)
    top = entry_info(engine, stack[-1])
    at_top = current.tree_id.hex() == top.tree_id
    if at_top and len(stack) < 2:
        return UndoResult(False, "undo", "nothing to undo: the workspace is at the first checkpoint")
    target = entry_info(engine, stack[-2]) if at_top else top
    result = restore(engine, target, current=current, safety_label="pre-undo", safety_message="before undo")
    saved_id = _saved(result)
    if at_top:
        engine.store.pop(UNDO)
    engine.store.push(REDO, bytes.fromhex(saved_id))
    return UndoResult(True, "undo", f"restored checkpoint {target.id[:12]}", target.id, saved_id, result)


def redo(engine: Engine) -> UndoResult:
    from snapshotter.engine.session.restoring import restore
    from snapshotter.model import UndoResult

    stack = live_entries(engine, stack_of(engine, REDO), 1)
    if not stack:
        return UndoResult(False, "redo", "nothing to redo")
    if engine.session is not None:
        return _session_redo(engine, stack)
    target = entry_info(engine, stack[-1])
    current = engine.scan(write=True)
    result = restore(engine, target, current=current, safety_label="pre-redo", safety_message="before redo")
    engine.store.pop(REDO)
    engine.store.push(UNDO, bytes.fromhex(target.id))
    return UndoResult(True, "redo", f"restored {target.id[:12]}", target.id, _saved(result), result)


def _saved(result: RestoreResult) -> str:
    """The one safety snapshot an undo's or a redo's restore took (never a dry run)."""
    if result.safety_snapshot_id is None:
        raise StoreError("the restore saved no safety snapshot")  # a dry run never comes here
    return result.safety_snapshot_id


# -- a named session's undo and redo: its own changes only ---------------------------------


def _since(engine: Engine, checkpoint_info: SnapshotInfo) -> list[Piece]:
    """The session's changes since ``checkpoint_info``, less those that changed nothing."""
    from snapshotter.history.attribution import session_changes

    pieces = session_changes(engine, engine.session, checkpoint_info, None)
    current_tree = engine.scan(write=False).tree_id.hex()
    return [p for p in pieces if p.before.tree_id != (p.after.tree_id if p.after is not None else current_tree)]


def _session_undo(engine: Engine, stack: list[bytes]) -> UndoResult:
    from snapshotter.engine.session.reverting import SINCE
    from snapshotter.history.attribution import revert_changes, session_changes
    from snapshotter.model import UndoResult

    top = entry_info(engine, stack[-1])
    changes = _since(engine, top)
    popped: SnapshotInfo | None = None
    if not changes:  # nothing since the newest checkpoint: undo what led up to it
        if len(stack) < 2:
            why = "the session has changed nothing since its oldest undo point kept (retention drops the older)"
            return UndoResult(False, "undo", f"nothing to undo: {why}")
        popped, changes = top, session_changes(engine, engine.session, entry_info(engine, stack[-2]), top)
    result = revert_changes(engine, changes, safety_label="pre-undo", message="before undo", closing_label=None)
    if not result.applied:
        return UndoResult(False, "undo", _refused("undo", result), revert=result)
    if result.safety_snapshot_id is None:
        return UndoResult(False, "undo", "nothing to undo: the session's changes are no longer in the workspace")
    if popped is not None:
        engine.store.pop(stack_of(engine, UNDO))
    meta = {REDO_TO: result.safety_snapshot_id, POPPED: popped.id if popped is not None else ""}
    meta[SINCE] = result.safety_snapshot_id  # closes the undo's change, as a tool call's end does
    after = engine.snapshot("after undo", "post-undo", meta, moves_base=False)
    engine.store.push(stack_of(engine, REDO), bytes.fromhex(after.id))
    message = f"reverted {_paths(len(result.reverted) + len(result.merged))} of session {engine.session}"
    return UndoResult(True, "undo", message, after.id, result.safety_snapshot_id, revert=result)


_NO_POINT_KEPT = "the session has no undo point (none taken yet, or dropped by retention with what undoing it needs)"


def _redo_target(engine: Engine, entry: SnapshotInfo) -> SnapshotInfo | None:
    try:
        return engine.catalog.get(entry.metadata.get(REDO_TO, ""))
    except SnapshotError:
        return None


def _session_redo(engine: Engine, stack: list[bytes]) -> UndoResult:
    from snapshotter.engine.session.reverting import Step, bring_in
    from snapshotter.engine.worktree.pathnames import names_checker
    from snapshotter.history.attribution import closing
    from snapshotter.model import UndoResult

    after = entry_info(engine, stack[-1])
    target = _redo_target(engine, after)
    if target is None:
        engine.store.pop(stack_of(engine, REDO))
        return UndoResult(False, "redo", "nothing to redo: the state to bring back was dropped")
    check = names_checker(engine.host)
    step = Step(engine.stored(after, check_names=check), engine.stored(target, check_names=check))
    result = bring_in(
        engine,
        [step],
        safety_label="pre-redo",
        message="before redo",
        labels=("workspace", "redone"),
        closing_label=closing(engine, "post-redo"),
    )
    if not result.applied:
        return UndoResult(False, "redo", _refused("redo", result), revert=result)
    engine.store.pop(stack_of(engine, REDO))
    popped = after.metadata.get(POPPED, "")
    if popped and readable(engine, bytes.fromhex(popped)):
        engine.store.push(stack_of(engine, UNDO), bytes.fromhex(popped))
    message = f"brought back {_paths(len(result.reverted) + len(result.merged))} of session {engine.session}"
    return UndoResult(True, "redo", message, target.id, result.safety_snapshot_id, revert=result)


def _refused(action: str, result: RevertResult) -> str:
    shown = ", ".join(f"{c.path} ({c.reason.value})" for c in result.conflicts[:5])
    more = f" and {len(result.conflicts) - 5} more" if len(result.conflicts) > 5 else ""
    return f"{action} refused, nothing was written: conflicts at {shown}{more}"


# -- turns -------------------------------------------------------------------------------


def _last_turn(engine: Engine) -> int:
    """The number of the session's newest turn (0: none). Read from its pre-turn's
    label, not counted: retention drops old turns from the stack, and a count
    would give a new turn a number already used, or its post-turn the wrong one."""
    stack = live_entries(engine, stack_of(engine, TURNS), 1)
    if not stack:
        return 0
    top = entry_info(engine, stack[-1])
    number = label_number(top.label, PRE_TURN)
    number = label_number(top.metadata.get("turn"), "") if number is None else number
    return _turns_kept(engine) if number is None else number


def begin_turn(engine: Engine, message: str, metadata: dict[str, str]) -> SnapshotInfo:
    number = _last_turn(engine) + 1
    info = checkpoint(
        engine, message or f"before turn {number}", f"{PRE_TURN}{number}", {"turn": str(number), **metadata}
    )
    engine.store.push(stack_of(engine, TURNS), bytes.fromhex(info.id))
    return info


def end_turn(engine: Engine, message: str, metadata: dict[str, str]) -> SnapshotInfo:
    number = _last_turn(engine)
    if number == 0:
        raise InvalidInput("no turn has begun", BEGIN_TURN)
    return engine.snapshot(message or f"after turn {number}", f"{POST_TURN}{number}", {"turn": str(number), **metadata})


def tool_snapshot(engine: Engine, call_id: str, message: str, metadata: dict[str, str]) -> SnapshotInfo:
    return engine.snapshot(message, f"{TOOL}{call_id}", metadata)


def tool_done(engine: Engine, call_id: str, message: str, metadata: dict[str, str]) -> SnapshotInfo:
    """The snapshot that closes tool call ``call_id``'s bracket (its ``tool:`` snapshot opened it)."""
    opened = engine.catalog.labelled(f"{TOOL}{call_id}")
    if opened is None or opened.session != engine.session:
        raise InvalidInput(
            f"no tool call {call_id!r} was begun in this session",
            Remedy(
                "call tool_snapshot first",
                f"run `snapshotter tool begin {call_id}` before the tool call",
                "call tool_snapshot first",
            ),
        )
    return engine.snapshot(message or f"after tool call {call_id}", f"{TOOL_DONE}{call_id}", metadata)


def _turns_kept(engine: Engine) -> int:
    return sum(1 for _ in engine.store.iter_stack(stack_of(engine, TURNS)))


def turn_pair(engine: Engine, n: int) -> Pair:
    """The n-th last turn of the session: (its pre-turn snapshot, its post-turn
    snapshot, or None while the turn is still open). Reads the turns stack's
    top n entries and the snapshots taken since that turn began."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise InvalidInput(f"turns are counted back from 1 (the last turn), not {n!r}", TURN_NUMBER)
    turns = engine.store.stack_top(stack_of(engine, TURNS), n)
    if n > len(turns):
        recorded = f"{len(turns)} turn is" if len(turns) == 1 else f"{len(turns)} turns are"
        raise SnapshotNotFound(f"only {recorded} recorded; cannot revert {n}")
    return _closed_by(engine, entry_info(engine, turns[0]))


def turn_begun_at(engine: Engine, pre: SnapshotInfo) -> Pair:
    """The turn ``pre`` (a pre-turn snapshot, of any session) began: (pre, its
    post-turn snapshot, or None while the turn is still open)."""
    if not (pre.label or "").startswith(PRE_TURN):
        raise InvalidInput(f"snapshot {pre.id[:12]} does not begin a turn (its label is not pre-turn:N)")
    return _closed_by(engine, pre)


def _closed_by(engine: Engine, pre: SnapshotInfo) -> Pair:
    facts = engine.catalog.index.current().sessions.get(key_of(pre.session))
    if facts is not None and facts.open_turn() == (pre.sequence, pre.id):
        return pre, None  # the session's newest turn snapshot: nothing after it to look through
    wanted = POST_TURN + (pre.label or "")[len(PRE_TURN) :]
    post = [
        info
        for info in engine.catalog.newest_first_down_to(pre.sequence)
        if info.label == wanted and info.session == pre.session
    ]
    return pre, (min(post, key=lambda info: info.sequence) if post else None)


def revert_turn(
    engine: Engine,
    n: int | SnapshotInfo,
    reset: bool,
    conflicts: ConflictMode,
    hunks: Sequence[str] | None = None,
    dry_run: bool = False,
) -> RestoreResult | RevertResult:
    """Revert the n-th last turn's own changes (with ``hunks``, only those of
    them), keeping every later edit; with ``reset``, restore the state before
    it instead (later edits replaced). ``dry_run``: say what would be written.
    ``n`` may be the turn's pre-turn snapshot instead, of any session: the turn
    is that session's, what is written is this engine's session's."""
    from snapshotter.engine.session.restoring import restore
    from snapshotter.history.attribution import revert_changes, session_changes

    pre, post = turn_pair(engine, n) if isinstance(n, int) else turn_begun_at(engine, n)
    if reset:
        result = restore(engine, pre, safety_label="pre-revert", dry_run=dry_run)
        if not dry_run:
            restored(engine, result)
        return result
    turn = (pre.label or "")[len(PRE_TURN) :]
    pairs = session_changes(engine, pre.session, pre, post)
    return revert_changes(
        engine, pairs, conflicts=conflicts, message=f"before reverting turn {turn}", hunks=hunks, dry_run=dry_run
    )


def turn_number(engine: Engine, pre: SnapshotInfo) -> int:
    """The n that ``revert_turn(n)`` takes for the turn ``pre`` (its pre-turn snapshot) began."""
    sha = bytes.fromhex(pre.id)
    for place, (_, found) in enumerate(engine.store.iter_stack(stack_of(engine, TURNS)), 1):
        if found == sha:
            return place
    raise InvalidInput(f"snapshot {pre.id[:12]} does not begin a turn of this session")


def turn_hunks(engine: Engine, n: int | SnapshotInfo, split: bool = False) -> list[Hunk]:
    """The hunks of the n-th last turn's own changes (or of the turn a pre-turn
    snapshot began): what ``revert_turn(n, hunks=...)`` takes."""
    from snapshotter.history.attribution import changed_hunks, session_changes

    pre, post = turn_pair(engine, n) if isinstance(n, int) else turn_begun_at(engine, n)
    return changed_hunks(engine, session_changes(engine, pre.session, pre, post), None, split)


def open_turn(engine: Engine) -> SnapshotInfo | None:
    """The pre-turn snapshot of the session's newest turn if it has not ended yet."""
    if not live_entries(engine, stack_of(engine, TURNS), 1):
        return None
    pre, post = turn_pair(engine, 1)
    return pre if post is None else None


def _paths(count: int) -> str:
    return f"{count} path" if count == 1 else f"{count} paths"
