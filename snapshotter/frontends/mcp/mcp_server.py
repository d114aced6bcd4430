"""``snapshotter mcp``: one workspace's snapshots as tools for an MCP client (stdio).

Needs the optional ``mcp`` extra (``pip install ".[mcp]"`` in a checkout).
The server is rooted at the workspace it was started for and takes no other
path from the client but files inside it; every result is a JSON object, and
every failure (an undo with nothing to undo included) an error result with
snapshotter's one-line message. Warnings the library logs during a call (a
label moved to a new snapshot, a setting ignored) come back in the result's
``warnings`` list.
"""

import functools
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from snapshotter import __version__
from snapshotter.engine.worktree.watch import watch_available
from snapshotter.errors import InvalidInput, SnapshotError
from snapshotter.facade.api import Snapshotter
from snapshotter.frontends.shared import config, rendering
from snapshotter.model import RevertResult, UndoResult

_Tool = TypeVar("_Tool", bound=Callable[..., Any])
PAGE_MOST = 500
"""The most snapshots one ``list_snapshots`` call lists: a long history is read a page at a time."""
INSTALL_HINT = 'the MCP server needs the mcp extra: in a checkout of this project, pip install ".[mcp]"'


def build_server(workspace: str, flags: Mapping[str, Any]) -> Any:
    """An MCPServer whose tools act on ``workspace`` only."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        raise InvalidInput(INSTALL_HINT) from None
    canonical, settings = config.locate(workspace, flags)
    logger = logging.getLogger("snapshotter")
    for warning in settings.warnings:
        logger.warning("%s", warning)
    # A server lives for a whole session: with watchdog installed, snapshots walk only what changed.
    options = config.snapshotter_options(settings)
    snap = Snapshotter(canonical, watch=watch_available(), **options)
    others: dict[str, Snapshotter] = {}

    def of(session: str | None) -> Snapshotter:
        """The server's Snapshotter, or one working in another ``session`` of the same folder."""
        if session is None or session == snap.session:
            return snap
        if session not in others:
            others[session] = Snapshotter(canonical, **{**options, "session": session})
        return others[session]

    server = MCPServer(
        name="snapshotter",
        version=__version__,
        instructions=(
            f"Snapshots of {snap.workspace}. Call begin_turn before a turn's edits and end_turn after; "
            "tool_snapshot before a file-editing tool; checkpoint for an undo point. status and diff show "
            "what changed since the base (@, what the folder was last made equal to); restore (dry_run "
            "first), undo/redo checkpoints, revert_turn a turn's own changes (later edits stay), revert any "
            "change. Agents sharing the folder pass their own session. Refs: id, id prefix, label, @, @~N."
        ),
    )

    from typing import Annotated, Literal

    from mcp.types import ToolAnnotations
    from pydantic import Field

    Message = Annotated[str, Field(description="a one-line message stored with the snapshot")]
    Label = Annotated[str | None, Field(description="a label, usable wherever a ref is (moves if in use)")]
    Session = Annotated[
        str | None, Field(description="the session (agent) to act for, sharing the folder; omit for the server's")
    ]
    Ref = Annotated[str, Field(description="a snapshot: id, id prefix (7+ hex), label, @ (the base) or @~N")]
    Files = Annotated[list[str] | None, Field(description="only these paths or folders, relative to the workspace")]
    CallId = Annotated[str, Field(description="the tool call's id, the same before and after it")]
    Conflicts = Annotated[
        Literal["abort", "ours", "markers"],
        Field(description="edits that clash: abort (write nothing), ours (keep them), markers (git-style markers)"),
    ]
    DryRun = Annotated[bool, Field(description="only say what would change; write nothing")]

    def tool(
        *, read_only: bool = False, destructive: bool = False, idempotent: bool = False
    ) -> Callable[[_Tool], _Tool]:
        """Register a tool, its failures as error results with the one-line message, and the
        warnings logged during the call in the result. ``read_only``: it changes nothing;
        ``destructive``: it may overwrite or delete files in the workspace (always after
        a safety snapshot); ``idempotent``: calling it twice is calling it once."""

        def register(function: _Tool) -> _Tool:
            @functools.wraps(function)  # the SDK reads the parameters from the signature
            def run(*args: Any, **kwargs: Any) -> Any:
                caught = rendering.CaughtWarnings()
                logger.addHandler(caught)
                try:
                    result = function(*args, **kwargs)
                except SnapshotError as exc:
                    raise ToolError(exc.for_mcp()) from None
                finally:
                    logger.removeHandler(caught)
                if caught.messages and isinstance(result, dict):
                    result = {**result, "warnings": caught.messages}
                return result

            hints = ToolAnnotations(
                read_only_hint=read_only,
                destructive_hint=destructive if not read_only else False,
                idempotent_hint=idempotent or read_only,
                open_world_hint=function.__name__ == "push",
            )
            server.tool(name=function.__name__, annotations=hints)(run)
            return function

        return register

    def moved(outcome: UndoResult) -> dict[str, Any]:
        if not outcome.ok:  # "nothing to undo" is a failure the agent must see, not a quiet success
            raise SnapshotError(outcome.message)
        return rendering.undo_json(outcome)

    def reverted(result: RevertResult) -> dict[str, Any]:
        if not result.applied and not result.dry_run:  # conflicts: nothing was written, and the agent must know
            found = ", ".join(f"{c.path} ({c.reason.value}: {c.detail})" for c in result.conflicts[:10])
            raise SnapshotError(f"nothing was written: conflicts at {found}; pass conflicts='ours' or 'markers'")
        return rendering.revert_json(result)

    @tool()
    def snapshot(message: Message = "", label: Label = None) -> dict[str, Any]:
        """Record the workspace now; returns the snapshot (id, counts, skipped paths)."""
        return rendering.snapshot_json(snap.snapshot(message, label=label))

    @tool()
    def checkpoint(message: Message = "", label: Label = None, session: Session = None) -> dict[str, Any]:
        """Record an undo point (undo returns to it); what could be redone is kept as abandoned:<n> snapshots."""
        return rendering.snapshot_json(of(session).checkpoint(message, label=label))

    @tool()
    def begin_turn(message: Message = "", session: Session = None) -> dict[str, Any]:
        """Call before a turn's first edit: a checkpoint labelled pre-turn:<n>, where revert_turn starts."""
        return rendering.snapshot_json(of(session).begin_turn(message))

    @tool()
    def end_turn(message: Message = "", session: Session = None) -> dict[str, Any]:
        """Call after a turn's last edit: a snapshot labelled post-turn:<n>."""
        return rendering.snapshot_json(of(session).end_turn(message))

    @tool()
    def tool_snapshot(call_id: CallId, message: Message = "", session: Session = None) -> dict[str, Any]:
        """Call before a file-editing tool runs: a snapshot labelled tool:<call_id>."""
        return rendering.snapshot_json(of(session).tool_snapshot(call_id, message))

    @tool()
    def tool_done(call_id: CallId, message: Message = "", session: Session = None) -> dict[str, Any]:
        """Call after that tool ran: tool-done:<call_id>. Bracketed calls are exactly what reverts undo."""
        return rendering.snapshot_json(of(session).tool_done(call_id, message))

    @tool(read_only=True)
    def status(files: Files = None) -> dict[str, Any]:
        """What changed since the base (the snapshot the workspace was last made equal to)."""
        return {"changes": [rendering.change_json(c) for c in snap.status(files)]}

    @tool(read_only=True)
    def show(ref: Ref = "@") -> dict[str, Any]:
        """One snapshot's details: id, message, label, session, counts, metadata."""
        return rendering.snapshot_json(snap.get(ref))

    @tool(read_only=True)
    def list_snapshots(
        limit: Annotated[int, Field(description=f"how many, newest first (1 to {PAGE_MOST})", ge=1, le=PAGE_MOST)] = 20,
        session: Annotated[str | None, Field(description='only this session\'s ("" for the anonymous one)')] = None,
        before: Annotated[
            str | None, Field(description="only those older than this ref: the last id listed, for the next page")
        ] = None,
    ) -> dict[str, Any]:
        """Snapshots, newest first (a page: more is true when older ones remain; pass the last id as before
        for the next page); with session, only that session's."""
        found = snap.list(limit=limit + 1, session=session, before=before)
        return {"snapshots": [rendering.snapshot_json(i) for i in found[:limit]], "more": len(found) > limit}

    @tool(read_only=True)
    def sessions() -> dict[str, Any]:
        """The named sessions keeping history in this folder, newest activity first: each one's name (pass it
        as session), agent, the agent's own session id, turns, whether a turn is open, last activity."""
        return rendering.sessions_json(snap.sessions())

    @tool(read_only=True)
    def diff(
        from_ref: Annotated[str | None, Field(description="from this snapshot (default: the base, @)")] = None,
        to_ref: Annotated[str | None, Field(description="to this snapshot (default: the workspace now)")] = None,
        files: Files = None,
        patch: Annotated[bool, Field(description="include each file's unified diff")] = True,
    ) -> dict[str, Any]:
        """Per-file changes from a snapshot to another, or to the workspace now, with line counts."""
        found = snap.diff(from_ref, to_ref, files=files)
        return {"files": [rendering.diff_json(d, with_patch=patch) for d in found]}

    @tool(destructive=True)
    def restore(
        ref: Ref,
        files: Files = None,
        dry_run: Annotated[bool, Field(description="only show the plan (the default); false writes")] = True,
        overwrite_untracked: Annotated[
            bool, Field(description="also replace ignored or too-large files in the way (saved first)")
        ] = False,
    ) -> dict[str, Any]:
        """Make the workspace (or files in it) match a snapshot. dry_run (the default) only shows the plan.
        Untracked files in the way that the workspace's own rules hide are saved, then replaced; the rest
        (the caller's excludes, too large, unreadable) are kept and listed; overwrite_untracked replaces the
        ignored and too-large ones after saving them in the safety snapshot too. undo takes it back."""
        found = snap.restore(ref, files, dry_run=dry_run, overwrite_untracked=overwrite_untracked)
        return rendering.restore_json(found)

    @tool(destructive=True)
    def undo(session: Session = None) -> dict[str, Any]:
        """Take back the last restore, or go back to the last checkpoint (the current state is saved for
        redo); in a session, revert only that session's own changes since its last checkpoint."""
        return moved(of(session).undo())

    @tool(destructive=True)
    def redo(session: Session = None) -> dict[str, Any]:
        """Return to the state the last undo replaced."""
        return moved(of(session).redo())

    @tool(destructive=True)
    def revert_turn(
        n: Annotated[int, Field(description="the n-th last turn (1 = the last)", ge=1)] = 1,
        reset: Annotated[bool, Field(description="restore the state before the turn instead")] = False,
        conflicts: Conflicts = "abort",
        session: Session = None,
    ) -> dict[str, Any]:
        """Revert the n-th last turn's own changes, keeping later edits; reset restores the state before
        the turn instead."""
        worker = of(session)
        if reset:
            return rendering.restore_json(worker.revert_turn(n, reset=True))
        return reverted(worker.revert_turn(n, conflicts=conflicts))

    @tool(destructive=True)
    def revert(
        before: Annotated[str, Field(description="the change's start: a ref")],
        after: Annotated[str | None, Field(description="its end (default: the next snapshot of the session)")] = None,
        files: Files = None,
        dry_run: DryRun = False,
        conflicts: Conflicts = "abort",
    ) -> dict[str, Any]:
        """Undo the change from snapshot before to after (post-turn:<n> for pre-turn:<n>) on the workspace as
        it is now, keeping every other change."""
        found = snap.revert(before, after, files=files, dry_run=dry_run, conflicts=conflicts)
        return reverted(found)

    @tool(read_only=True)
    def list_hunks(
        before: Annotated[str, Field(description="the change's start: a ref (pre-turn:<n>, tool:<id>, an id...)")],
        after: Annotated[str | None, Field(description="its end (default: as revert takes it; none: now)")] = None,
        files: Files = None,
        split: Annotated[bool, Field(description="list each hunk's changes apart (as git add -p's s)")] = False,
    ) -> dict[str, Any]:
        """The hunks of the change before -> after, each with an id (PATH:DIGEST) revert_hunks takes back
        alone; an id means the same hunk in any later call while the change is unchanged."""
        found = snap.hunks(before, after, files=files, split=split)
        return {"hunks": [rendering.plain_json(h) for h in found]}

    @tool(destructive=True)
    def revert_hunks(
        before: Annotated[str, Field(description="the change's start, as for list_hunks")],
        hunks: Annotated[list[str], Field(description="hunk ids from list_hunks")],
        after: Annotated[str | None, Field(description="its end, as for list_hunks")] = None,
        dry_run: DryRun = False,
        conflicts: Conflicts = "abort",
    ) -> dict[str, Any]:
        """Take back only the chosen hunks of the change before -> after, keeping every other line and every
        later edit (three ways, as revert); a hunk id that is not one of the change's now is an error, nothing
        written."""
        return reverted(snap.revert(before, after, dry_run=dry_run, conflicts=conflicts, hunks=hunks))

    @tool(read_only=True)
    def blame(
        path: Annotated[str, Field(description="a file the folder tracks, relative to it")],
        session: Annotated[str | None, Field(description="only the lines this session's changes made")] = None,
    ) -> dict[str, Any]:
        """Who last changed each line of a file: runs of lines, each with the snapshot, session, agent, turn
        and tool call whose change made them (or person, unknown, workspace: not snapshotted yet)."""

        return rendering.blame_json(snap.blame(path, session=session))

    @tool()
    def push(
        remote: Annotated[str | None, Field(description="must be the remote the server was started with")] = None,
        name: Annotated[str | None, Field(description="the namespace there (default: the folder's)")] = None,
    ) -> dict[str, Any]:
        """Send this folder's snapshots to the git remote the server was started with, under
        refs/snapshotter/NAME/; no other remote is taken from the client."""
        if remote is not None and remote != snap.remote:
            raise SnapshotError("push goes to the remote the server was started with; another one is refused")
        return rendering.plain_json(snap.push(name=name, credentials=config.credentials(os.environ)))

    return server


def serve(workspace: str, flags: Mapping[str, Any]) -> None:
    build_server(workspace, flags).run("stdio")
