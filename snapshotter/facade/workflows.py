"""The agent-loop calls of :class:`~snapshotter.Snapshotter`: checkpoints, undo
and redo, turns, tool calls, and reverts that keep everyone else's work.

They live apart from ``api`` only to keep each module readable; ``Snapshotter``
inherits them, and every one runs through the same wrapper (``calls.public``).
What each does is in ``history`` (stacks, turns, sessions) and ``attribution``
(whose changes are whose, and reverting them).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Literal, overload

from snapshotter.engine.gitstore.location import canonical_workspace, store_exists, store_path_for
from snapshotter.engine.session.engine import Engine
from snapshotter.errors import InvalidInput, Remedy
from snapshotter.facade import inputs
from snapshotter.facade.calls import public
from snapshotter.options import Options

if TYPE_CHECKING:  # annotations only: reading the history loads no blame, undo or fork values
    from snapshotter.model import (
        BlameResult,
        ConflictMode,
        ForkInfo,
        Hunk,
        RestoreResult,
        RevertResult,
        SessionInfo,
        SnapshotInfo,
        UndoResult,
    )


class Workflows:
    """Checkpoints, undo/redo, turns, tool calls, reverts and forks (see the module's docstring)."""

    _options: Options

    if TYPE_CHECKING:  # Snapshotter's own, which every method here runs through

        def _engine_ok(self) -> Engine: ...

    def _same_settings(self, workspace: str) -> Any:
        """A Snapshotter (of this class) on another folder, with this one's settings."""
        made: Any = type(self)
        return made(workspace, **{knob.name: getattr(self._options, knob.name) for knob in fields(Options)})

    @public(mutates=True)
    def checkpoint(
        self, message: str = "", *, label: str | None = None, metadata: Mapping[str, str] | None = None
    ) -> SnapshotInfo:
        """Snapshot the workspace as an undo point. What could have been redone is
        kept as ``abandoned:<n>`` snapshots (listed, restorable until retention drops them)."""
        from snapshotter.history import undo as history

        engine = self._engine_ok()
        checked = inputs.snapshot_text(message, label, metadata)
        with inputs.moving_label(engine, label):
            return history.checkpoint(engine, *checked)

    @public(failure=False, mutates=True, maintain=False)
    def can_undo(self) -> bool:
        """True if ``undo()`` would change the workspace's checkpoint position."""
        from snapshotter.history import undo as history

        return history.can_undo(self._engine_ok())

    @public(failure=False, mutates=True, maintain=False)
    def can_redo(self) -> bool:
        from snapshotter.history import undo as history

        return history.can_redo(self._engine_ok())

    @public(mutates=True)
    def undo(self) -> UndoResult:
        """Go back to the last checkpoint before the current state (saving it for
        redo). In a named session, revert only that session's changes since
        its last checkpoint, keeping everyone else's (falsy, with the
        conflicts in ``revert``, if they clash and nothing was written)."""
        from snapshotter.history import undo as history

        return history.undo(self._engine_ok())

    @public(mutates=True)
    def redo(self) -> UndoResult:
        """Return to the state the last undo replaced (in a named session: bring
        back exactly the changes it reverted)."""
        from snapshotter.history import undo as history

        return history.redo(self._engine_ok())

    @public(mutates=True)
    def begin_turn(self, message: str = "", *, metadata: Mapping[str, str] | None = None) -> SnapshotInfo:
        """Checkpoint labelled ``pre-turn:<n>`` for the session's next turn number n."""
        from snapshotter.history import undo as history

        return history.begin_turn(self._engine_ok(), *inputs.snapshot_text(message, None, metadata)[::2])

    @public(mutates=True)
    def end_turn(self, message: str = "", *, metadata: Mapping[str, str] | None = None) -> SnapshotInfo:
        """Snapshot labelled ``post-turn:<n>`` for the turn begun last."""
        from snapshotter.history import undo as history

        return history.end_turn(self._engine_ok(), *inputs.snapshot_text(message, None, metadata)[::2])

    @public(mutates=True)
    def tool_snapshot(
        self,
        call_id: str,
        message: str = "",
        *,
        metadata: Mapping[str, str] | None = None,
        writes: Sequence[str | os.PathLike[str]] | None = None,
    ) -> SnapshotInfo:
        """Snapshot labelled ``tool:<call_id>``, before a file-editing tool call.
        With :meth:`tool_done` after it, the call's changes are known exactly:
        reverting the turn (or a session's undo) reverts those, nothing else.
        ``writes``: the files the call says it writes (a file tool's file; ``[]``
        for a tool that only reads), which tells its changes from those of
        another session's call running at the same moment."""
        from snapshotter.history import undo as history

        engine = self._engine_ok()
        text = inputs.snapshot_text(message, None, metadata)
        named = inputs.written(engine, writes)
        return history.tool_snapshot(engine, inputs.call_id(call_id), text[0], {**text[2], **named})

    @public(mutates=True)
    def tool_done(self, call_id: str, message: str = "", *, metadata: Mapping[str, str] | None = None) -> SnapshotInfo:
        """Snapshot labelled ``tool-done:<call_id>``, after the tool call that
        :meth:`tool_snapshot` began (in watch mode, milliseconds)."""
        from snapshotter.history import undo as history

        text = inputs.snapshot_text(message, None, metadata)
        return history.tool_done(self._engine_ok(), inputs.call_id(call_id), text[0], text[2])

    @public(mutates=True, maintain=False)
    def open_turn(self) -> SnapshotInfo | None:
        """This session's turn still open: its ``pre-turn:<n>`` snapshot, or None
        when its newest turn has ended (or it began none)."""
        from snapshotter.history import undo as history

        return history.open_turn(self._engine_ok())

    @public()
    def sessions(self) -> list[SessionInfo]:
        """The named sessions keeping history in this folder's store, the most
        recently active first: each with its agent (if its hooks made it), its
        turns and whether one is open."""
        from snapshotter.history.sessions import sessions

        found = sessions(self._engine_ok())
        return sorted(found, key=lambda info: info.last_activity, reverse=True)

    @public(mutates=True)
    def revert(
        self,
        before: str | SnapshotInfo,
        after: str | SnapshotInfo | None = None,
        *,
        files: Sequence[str | os.PathLike[str]] | None = None,
        dry_run: bool = False,
        conflicts: ConflictMode = "abort",
        hunks: Sequence[str] | None = None,
    ) -> RevertResult:
        """Undo the change from snapshot ``before`` to snapshot ``after`` on the
        workspace as it is now, keeping every other change; with ``hunks`` (ids
        from :meth:`hunks`), only those hunks of it (``HunkNotFound``, nothing
        written, if one is not a hunk of the change as it is now).

        ``after`` by default: the ``post-turn:<n>`` of a ``pre-turn:<n>``, the
        ``tool-done:<id>`` of a ``tool:<id>``, else the next snapshot of the
        same session (not counting the library's own safety snapshots); with
        none, the workspace now. A path the workspace changed since is merged
        three ways; what cannot be merged is a conflict: ``"abort"`` writes
        nothing (the result is falsy), ``"ours"`` keeps the workspace's version
        of those paths and reverts the rest, ``"markers"`` also writes git-style
        conflict markers into the text files that clashed. A ``pre-revert``
        safety snapshot comes first, so a revert can itself be undone.
        """
        from snapshotter.engine.session.reverting import check_conflict_mode
        from snapshotter.history import attribution

        engine = self._engine_ok()
        mode = check_conflict_mode(conflicts)
        first, last = self._change(before, after)
        message = f"before reverting {first.id[:12]}..{last.id[:12] if last is not None else 'now'}"
        return attribution.revert_changes(
            engine,
            [(first, last)],
            files=inputs.paths(files),
            dry_run=bool(dry_run),
            conflicts=mode,
            message=message,
            hunks=inputs.hunk_ids(hunks),
        )

    @public()
    def hunks(
        self,
        before: str | SnapshotInfo,
        after: str | SnapshotInfo | None = None,
        *,
        files: Sequence[str | os.PathLike[str]] | None = None,
        split: bool = False,
    ) -> list[Hunk]:
        """The hunks of the change from ``before`` to ``after`` (its default as
        :meth:`revert` takes it; none: the workspace now), in path order, each
        with the id ``revert(before, after, hunks=[id])`` takes back alone. With
        ``split``, a hunk of several changes is listed as its parts (one change
        each, as ``git add -p`` splits), whose ids a revert takes too."""
        from snapshotter.history import attribution

        first, last = self._change(before, after)
        return attribution.changed_hunks(self._engine_ok(), [(first, last)], inputs.paths(files), bool(split))

    @public()
    def turn_hunks(self, n: int | str | SnapshotInfo = 1, *, split: bool = False) -> list[Hunk]:
        """The hunks of the n-th last turn's own changes (its tool calls, oldest
        first): the ids ``revert_turn(n, hunks=[...])`` takes back alone. ``n``
        may name the turn's pre-turn snapshot instead (a turn of any session)."""
        from snapshotter.history import undo as history

        return history.turn_hunks(self._engine_ok(), self._turn(n), bool(split))

    def _turn(self, n: int | str | SnapshotInfo) -> int | SnapshotInfo:
        """A turn's number as given, or the pre-turn snapshot a ref names: in a
        named session, one of its own turns (naming another's is a mistake); in
        the person's (no session), any session's."""
        if isinstance(n, int):
            return n
        engine = self._engine_ok()
        pre = engine.catalog.get(n)
        if engine.session is not None and pre.session != engine.session:
            raise InvalidInput(f"snapshot {pre.id[:12]} does not begin a turn of session {engine.session}")
        return pre

    @public()
    def blame(self, path: str | os.PathLike[str], *, limit: int = 1000, session: str | None = None) -> BlameResult:
        """Who last changed each line of ``path`` as the workspace holds it now:
        per run of lines, the snapshot whose change made them and whose that
        change was (a session's tool call or turn, a person, unknown, not
        snapshotted yet), followed back through at most ``limit`` snapshots as
        ``git blame`` follows commits (see :class:`~snapshotter.LineOrigin`).
        With ``session``, only the lines that session's changes made."""

        from snapshotter.history import blame as blaming

        return blaming.blame(self._engine_ok(), os.fspath(path), limit, session)

    def _change(
        self, before: str | SnapshotInfo, after: str | SnapshotInfo | None
    ) -> tuple[SnapshotInfo, SnapshotInfo | None]:
        from snapshotter.history import attribution

        engine = self._engine_ok()
        first = engine.catalog.get(before)
        return first, engine.catalog.get(after) if after is not None else attribution.after_of(engine, first)

    @overload
    def revert_turn(
        self,
        n: int | str | SnapshotInfo = 1,
        *,
        reset: Literal[False] = False,
        conflicts: ConflictMode = ...,
        hunks: Sequence[str] | None = ...,
        dry_run: bool = ...,
    ) -> RevertResult: ...
    @overload
    def revert_turn(
        self,
        n: int | str | SnapshotInfo = 1,
        *,
        reset: Literal[True],
        conflicts: ConflictMode = ...,
        hunks: None = ...,
        dry_run: bool = ...,
    ) -> RestoreResult: ...
    @overload
    def revert_turn(
        self,
        n: int | str | SnapshotInfo = 1,
        *,
        reset: bool,
        conflicts: ConflictMode = ...,
        hunks: Sequence[str] | None = ...,
        dry_run: bool = ...,
    ) -> RevertResult | RestoreResult: ...

    @public(mutates=True)
    def revert_turn(
        self,
        n: int | str | SnapshotInfo = 1,
        *,
        reset: bool = False,
        conflicts: ConflictMode = "abort",
        hunks: Sequence[str] | None = None,
        dry_run: bool = False,
    ) -> RevertResult | RestoreResult:
        """Revert the n-th last turn of this session (1 = the last one): its own
        changes (its tool calls, if it bracketed them; else pre-turn to
        post-turn, or to now for a turn still open) go, and every later edit
        stays, as :meth:`revert` does; with ``hunks`` (ids from
        :meth:`turn_hunks`), only those hunks of them. With ``reset=True`` the
        workspace is restored to the state before the turn instead (later edits
        replaced, kept in the safety snapshot), and a ``RestoreResult`` comes back.
        ``dry_run``: what would be written, writing nothing.

        ``n`` may name the turn's pre-turn snapshot instead (an id, a label or a
        ``SnapshotInfo``), a turn of any session: the turn is that session's,
        and what the revert writes (its safety snapshot, its closing one) is
        this Snapshotter's session's, so a person reverting an agent's turn
        finds it in the person's history and undoes it with the person's undo."""
        from snapshotter.engine.session.reverting import check_conflict_mode
        from snapshotter.history import undo as history

        chosen = inputs.hunk_ids(hunks)
        if reset and chosen is not None:
            raise InvalidInput("revert_turn takes hunks= or reset=True, not both: a reset restores the whole turn")
        engine = self._engine_ok()
        turn = self._turn(n)
        return history.revert_turn(engine, turn, bool(reset), check_conflict_mode(conflicts), chosen, bool(dry_run))

    @public()
    def turn_number(self, ref: str | SnapshotInfo) -> int:
        """The ``n`` that :meth:`revert_turn` and :meth:`turn_hunks` take for the
        turn whose ``pre-turn`` snapshot is ``ref`` (a turn of this session)."""
        from snapshotter.history import undo as history

        engine = self._engine_ok()
        return history.turn_number(engine, engine.catalog.get(ref))

    # -- forks ---------------------------------------------------------------------------------

    @public(mutates=True)
    def fork(self, ref: str | SnapshotInfo, dest: str | os.PathLike[str]) -> Any:
        """Make ``dest`` (a new or empty folder outside this workspace) hold
        snapshot ``ref``, with a store of its own that shares this one's objects
        by hard links: made without copying history, and complete whatever this
        store later prunes, collects or cleans up. Returns a Snapshotter on the
        fork (same settings); :meth:`merge` brings its changes back."""
        from snapshotter.history import forks as forking

        engine = self._engine_ok()
        target = engine.catalog.get(ref)
        path = forking.check_destination(engine, dest, self._options.home, target.id)
        return forking.make_fork(engine, target, path, self._options.home, self._same_settings)

    @public(mutates=True)
    def merge(
        self,
        source: str | os.PathLike[str] | SnapshotInfo,
        *,
        base: str | SnapshotInfo | None = None,
        dry_run: bool = False,
        conflicts: ConflictMode = "abort",
    ) -> RevertResult:
        """Bring a fork's changes since its fork point into this workspace, three
        ways, keeping what changed here meanwhile (``source``: the fork's folder;
        its state now is snapshotted first). Or bring any snapshot's changes
        since ``base`` (``source``: a ref here). Conflicts and the result as for
        :meth:`revert`; a ``pre-merge`` safety snapshot comes first.

        A string names a folder if one is there, else a ref."""
        from snapshotter.engine.session.reverting import check_conflict_mode
        from snapshotter.history import forks as forking

        engine = self._engine_ok()
        mode = check_conflict_mode(conflicts)
        start = engine.catalog.get(base) if base is not None else None
        if isinstance(source, os.PathLike) or (isinstance(source, str) and os.path.isdir(source)):
            folder = canonical_workspace(source)
            if not store_exists(store_path_for(folder, self._options.home)):
                raise InvalidInput(f"{folder} has no snapshots in this home: merge needs a fork (see fork())")
            with self._same_settings(folder) as fork:
                return forking.merge_fork(engine, fork, start, bool(dry_run), mode, fork._engine_ok())
        if start is None:
            raise InvalidInput(
                f"{source!r} is no folder, so it names a snapshot: its changes need the snapshot they are counted from",
                Remedy("pass base=", "pass --base REF, or name a fork's folder"),
            )
        return forking.merge_change(engine, start, engine.catalog.get(source), bool(dry_run), mode)

    @public()
    def forks(self) -> list[ForkInfo]:
        """The forks made from this workspace (``fork()``), oldest first."""
        from snapshotter.history import forks as forking

        return forking.forks_of(self._engine_ok())
