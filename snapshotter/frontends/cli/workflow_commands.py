"""The command line's agent-loop commands: ``checkpoint``, ``undo``, ``redo``,
``turn``, ``tool``, ``revert``, ``fork``, ``merge`` and ``forks`` (the grammar is
in ``arguments``; ``cli`` runs the rest).

Each returns (its JSON result, a function printing its text). A revert that
conflicts and wrote nothing is a failure (exit 5, the result in the JSON
error), never a silent success; one that wrote conflict markers exits 1, as
``git merge`` does, so a script never takes the markers for a clean result.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from snapshotter.errors import SnapshotNotFound
from snapshotter.frontends.cli import line_commands, words
from snapshotter.frontends.cli.line_commands import Ask
from snapshotter.frontends.shared import rendering
from snapshotter.frontends.shared.failures import EXIT_ERROR, EXIT_REFUSED, CommandFailed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from snapshotter.facade.api import Snapshotter
    from snapshotter.model import RevertResult, UndoResult

NAMES = frozenset({"checkpoint", "undo", "redo", "turn", "tool", "revert", "fork", "merge", "forks"})
"""The commands this module runs (``cli`` holds the same set, to dispatch without importing this module)."""
Printer = Callable[[str], None]


def dispatch(
    name: str, snap: Snapshotter, args: argparse.Namespace, say: Printer, ask: Ask | None = None
) -> tuple[Any, Callable[[], None]]:
    """Run the agent-loop command ``name``; ``say`` prints one line, ``ask``
    asks a person at a terminal (None: nobody can be asked)."""
    f = rendering
    if name == "checkpoint":
        point = snap.checkpoint(args.message, label=args.label, metadata=dict(args.meta) or None)
        return f.snapshot_json(point), lambda: say(f.snapshot_line(point))
    if name in ("undo", "redo"):
        outcome = snap.undo() if name == "undo" else snap.redo()
        if not outcome.ok:
            refused = outcome.revert is not None and bool(outcome.revert.conflicts)
            code = EXIT_REFUSED if refused else 1
            said = outcome.message if refused else outcome.message + elsewhere(snap, agent_flag=False)
            raise CommandFailed("Conflict" if refused else "NothingToDo", said, f.undo_json(outcome), code)
        return f.undo_json(outcome), lambda: _lines(say, _undo_lines(outcome, snap.session))
    if name == "turn":
        if args.agent is not None:
            from snapshotter.frontends.cli.agent_commands import newest_session_of

            snap = snap.in_session(newest_session_of(snap, args.agent))
        try:
            return _turn(snap, args, say, ask)
        except SnapshotNotFound as error:
            hint = elsewhere(snap, agent_flag=True) if isinstance(args.n, int) else ""
            if not hint:
                raise
            raise SnapshotNotFound(f"{error}{hint}") from None
    if name == "tool":
        info = snap.tool_snapshot(args.call_id) if args.action == "begin" else snap.tool_done(args.call_id)
        return f.snapshot_json(info), lambda: say(f.snapshot_line(info))
    if name == "revert":
        before, after, paths = args.before, args.after, args.paths
        ranged = words.split_range(snap, before)
        if ranged is not None:  # BEFORE..AFTER: a second word is a path
            (before, after), paths = ranged, [*([after] if after else []), *paths]
        files = words.paths(os.path.abspath(args.workspace), paths) or None
        chosen = line_commands.pick(args, lambda split: snap.hunks(before, after, files=files, split=split), ask, say)
        if chosen == []:
            return None, lambda: say("no hunk chosen; nothing was written")
        result = snap.revert(before, after, files=files, dry_run=args.dry_run, conflicts=args.conflicts, hunks=chosen)
        return _reverted(result, say)
    if name == "fork":
        with snap.fork(args.ref, args.dest) as forked:
            made = {"path": forked.workspace, "store": forked.store_path, "fork_point": snap.get(args.ref).id}
        return made, lambda: say(f"forked {made['fork_point'][:12]} into {made['path']}")
    if name == "merge":
        source = args.source if args.base is not None else _folder_or_ref(args.source)
        merged = snap.merge(source, base=args.base, dry_run=args.dry_run, conflicts=args.conflicts)
        return _reverted(merged, say, taken="take")
    if name == "forks":
        found = snap.forks()
        rows = [f"{k.fork_point_id[:12]}  {k.path}{'' if k.exists else '  (gone)'}" for k in found]
        return [rendering.plain_json(k) for k in found], lambda: _lines(say, rows)
    raise AssertionError(f"not an agent-loop command: {name}")


def _turn(snap: Snapshotter, args: argparse.Namespace, say: Printer, ask: Ask | None) -> tuple[Any, Callable[[], None]]:
    """``turn begin|end|revert|hunks`` in ``snap``'s session; a turn named by its
    pre-turn snapshot may be another session's (what a revert writes is ``snap``'s)."""
    f = rendering
    n = args.n
    if args.action == "hunks":
        listed = snap.turn_hunks(n)
        return [f.plain_json(h) for h in listed], lambda: _lines(say, line_commands.hunk_lines(listed))
    if args.action == "revert":
        if args.reset and (args.hunk or args.patch):
            line_commands.pick(args, lambda split: [], None, say)  # refuses: a reset restores the whole turn
        if args.reset:
            restored = snap.revert_turn(n, reset=True, dry_run=args.dry_run)
            return f.restore_json(restored), lambda: _lines(say, f.restore_lines(restored))
        chosen = line_commands.pick(args, lambda split: snap.turn_hunks(n, split=split), ask, say)
        if chosen == []:
            return None, lambda: say("no hunk chosen; nothing was written")
        return _reverted(snap.revert_turn(n, conflicts=args.conflicts, hunks=chosen, dry_run=args.dry_run), say)
    info = snap.begin_turn() if args.action == "begin" else snap.end_turn()
    return f.snapshot_json(info), lambda: say(f.snapshot_line(info))


def _undo_lines(outcome: UndoResult, session: str | None) -> list[str]:
    """An undo or redo as a restore or revert prints it (a path a line, the
    totals), its own message, then the command that goes back: what it
    overwrote and deleted is one ``redo`` (or ``undo``) away."""
    if outcome.restore is not None:
        listed = rendering.restore_lines(outcome.restore)
    elif outcome.revert is not None:
        listed = rendering.revert_lines(outcome.revert)
    else:
        listed = []
    listed = [line for line in listed if not line.startswith("undo with: ")]  # the way back is said below
    back = "redo" if outcome.action == "undo" else "undo"
    flag = f"--session {session} " if session is not None else ""
    return [*listed, outcome.message, f"{back} with: snapshotter {flag}{back}"]


def elsewhere(snap: Snapshotter, agent_flag: bool) -> str:
    """Where the folder's own history (the anonymous session) has nothing to
    take back but agent sessions keep theirs: which there are, and the flag
    that reaches one (``""``: in a session already, or none here)."""
    if snap.session is not None:
        return ""
    found = snap.sessions()
    if not found:
        return ""
    named = [f"{s.name} ({s.agent + ', ' if s.agent else ''}{rendering.plural(s.turns, 'turn')})" for s in found[:3]]
    more = f" and {len(found) - 3} more (`snapshotter sessions`)" if len(found) > 3 else ""
    agent = next((s.agent for s in found if s.agent), None)
    how = f"--agent {agent} (its newest session) or " if agent_flag and agent else ""
    return (
        f" in the folder's own history; the agent sessions here keep their own: {', '.join(named)}{more};"
        f" reach one with {how}--session NAME"
    )


def _folder_or_ref(source: str) -> str:
    """A merge's source as the library takes it: an existing folder, or a ref."""
    return os.path.abspath(source) if os.path.isdir(source) else source


def _reverted(result: RevertResult, say: Printer, taken: str = "revert") -> tuple[Any, Callable[[], None]]:
    if not result.applied and not result.dry_run:
        shown = ", ".join(f"{c.path} ({c.reason.value})" for c in result.conflicts[:5])
        more = f" and {len(result.conflicts) - 5} more" if len(result.conflicts) > 5 else ""
        raise CommandFailed(
            "Conflict",
            f"nothing was written: conflicts at {shown}{more}; pass --conflicts ours or --conflicts markers",
            rendering.revert_json(result),
            EXIT_REFUSED,
        )
    if result.marked and not result.dry_run:
        undo = (
            f" (undo with: snapshotter restore {result.safety_snapshot_id[:12]})" if result.safety_snapshot_id else ""
        )
        raise CommandFailed(
            "ConflictMarkers",
            f"wrote conflict markers into {', '.join(result.marked)}: resolve them, then snapshot{undo}",
            rendering.revert_json(result),
            EXIT_ERROR,
        )
    return rendering.revert_json(result), lambda: _lines(say, rendering.revert_lines(result, taken))


def _lines(say: Printer, lines: list[str]) -> None:
    for line in lines:
        say(line)
