"""A Snapshotter whose types say what ``on_error="warn"`` does: None can come back.

With ``on_error="warn"`` (for agent hooks that must never break a turn) a
failing call logs a warning and returns None (False for ``can_undo`` and
``can_redo``). ``Snapshotter``'s own annotations speak of the raising mode,
where a call returns its result or raises. :func:`forgiving` opens the same
object in warn mode, typed as :class:`ForgivingSnapshotter`: each public call
with the same parameters and its result ``| None``, so a type checker makes
the caller look before using it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from snapshotter.facade.api import Snapshotter
from snapshotter.model import ConflictMode, RestoreResult, RevertResult, ScanStats

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _or_none(method: Callable[Concatenate[Any, _P], _R]) -> Callable[Concatenate[Any, _P], _R | None]:
    """``method`` as warn mode gives it: the same parameters, its result or None."""
    return cast(Callable[Concatenate[Any, _P], "_R | None"], method)


def _as_is(method: Callable[Concatenate[Any, _P], _R]) -> Callable[Concatenate[Any, _P], _R]:
    """``method`` as it is in either mode (it never raises, or only as it would anyway)."""
    return method


class ForgivingSnapshotter:
    """What :func:`forgiving` returns, for type checkers: a :class:`Snapshotter`
    in ``on_error="warn"`` mode, whose calls return their result or None. At
    run time it is a plain Snapshotter: this class only describes it, and is
    never made."""

    snapshot = _or_none(Snapshotter.snapshot)
    list = _or_none(Snapshotter.list)
    get = _or_none(Snapshotter.get)
    base = _or_none(Snapshotter.base)
    status = _or_none(Snapshotter.status)
    diff = _or_none(Snapshotter.diff)
    restore = _or_none(Snapshotter.restore)
    prune = _or_none(Snapshotter.prune)
    gc = _or_none(Snapshotter.gc)
    pin = _or_none(Snapshotter.pin)
    unpin = _or_none(Snapshotter.unpin)
    verify = _or_none(Snapshotter.verify)
    store_stats = _or_none(Snapshotter.store_stats)
    cleanup = _or_none(Snapshotter.cleanup)
    checkpoint = _or_none(Snapshotter.checkpoint)
    undo = _or_none(Snapshotter.undo)
    redo = _or_none(Snapshotter.redo)
    begin_turn = _or_none(Snapshotter.begin_turn)
    end_turn = _or_none(Snapshotter.end_turn)
    tool_snapshot = _or_none(Snapshotter.tool_snapshot)
    tool_done = _or_none(Snapshotter.tool_done)
    revert = _or_none(Snapshotter.revert)
    fork = _or_none(Snapshotter.fork)
    merge = _or_none(Snapshotter.merge)
    forks = _or_none(Snapshotter.forks)
    open_turn = _or_none(Snapshotter.open_turn)
    sessions = _or_none(Snapshotter.sessions)
    hunks = _or_none(Snapshotter.hunks)
    blame = _or_none(Snapshotter.blame)
    turn_hunks = _or_none(Snapshotter.turn_hunks)
    turn_number = _or_none(Snapshotter.turn_number)
    push = _or_none(Snapshotter.push)
    fetch = _or_none(Snapshotter.fetch)
    snapshot_async = _as_is(Snapshotter.snapshot_async)
    push_async = _as_is(Snapshotter.push_async)
    set_root = _as_is(Snapshotter.set_root)
    guard = _as_is(Snapshotter.guard)
    close = _as_is(Snapshotter.close)
    cache_saved_after = _as_is(Snapshotter.cache_saved_after)

    can_undo = _as_is(Snapshotter.can_undo)  # False when the call failed, as when there is nothing to undo
    can_redo = _as_is(Snapshotter.can_redo)
    workspace: str
    store_path: str
    session: str | None
    watching: bool
    last_scan: ScanStats
    progress: Callable[[str, int, int], None] | None

    def in_session(self, session: str | None) -> ForgivingSnapshotter:
        """This one working in another session, on the same open store (see ``Snapshotter.in_session``)."""
        return cast(ForgivingSnapshotter, cast(Snapshotter, self).in_session(session))

    def revert_turn(
        self,
        n: int = 1,
        *,
        reset: bool = False,
        conflicts: ConflictMode = "abort",
        hunks: Sequence[str] | None = None,
        dry_run: bool = False,
    ) -> RevertResult | RestoreResult | None:
        """A RevertResult (a RestoreResult with ``reset=True``), or None."""
        return cast(Snapshotter, self).revert_turn(n, reset=reset, conflicts=conflicts, hunks=hunks, dry_run=dry_run)

    def __enter__(self) -> ForgivingSnapshotter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def forgiving(workspace: str | os.PathLike[str], **options: Any) -> ForgivingSnapshotter:
    """``Snapshotter(workspace, on_error="warn", **options)``, typed as it behaves:
    every call returns its result or, having logged why it failed, None."""
    return cast(ForgivingSnapshotter, Snapshotter(workspace, **{**options, "on_error": "warn"}))
