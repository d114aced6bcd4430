"""``snapshotter mcp``: one workspace's snapshots as tools for an MCP client (stdio).

Needs the optional ``mcp`` extra (``pip install ".[mcp]"`` in a checkout).
The server is rooted at the workspace it was started for and takes no other
path from the client but files inside it; every result is a JSON object, and
every failure (an undo with nothing to undo included) an error result with
snapshotter's one-line message. Warnings the library logs during a call (a
label moved to a new snapshot, a setting ignored) come back in the result's
``warnings`` list.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from snapshotter import __version__
from snapshotter.api import Snapshotter
from snapshotter.errors import InvalidInput, SnapshotError
from snapshotter.frontends import config, remote_commands, rendering
from snapshotter.model import ConflictMode, RevertResult, UndoResult
from snapshotter.worktree.watch import watch_available

_Tool = TypeVar("_Tool", bound=Callable[..., Any])
INSTALL_HINT = 'the MCP server needs the mcp extra: pip install ".[mcp]" in a checkout of snapshotter'


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

    def tool(function: _Tool) -> _Tool:
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

        server.tool(name=function.__name__)(run)
        return function

    def moved(outcome: UndoResult) -> dict[str, Any]:
        if not outcome.ok:  # "nothing to undo" is a failure the agent must see, not a quiet success
            raise SnapshotError(outcome.message)
        return rendering.undo_json(outcome)

    def reverted(result: RevertResult) -> dict[str, Any]:
        if not result.applied and not result.dry_run:  # conflicts: nothing was written, and the agent must know
            found = ", ".join(f"{c.path} ({c.reason.value}: {c.detail})" for c in result.conflicts[:10])
            raise SnapshotError(f"nothing was written: conflicts at {found}; pass conflicts='ours' or 'markers'")
        return rendering.revert_json(result)

    @tool
    def snapshot(message: str = "", label: str | None = None) -> dict[str, Any]:
        """Record the workspace now; returns the snapshot (id, counts, skipped paths)."""
        return rendering.snapshot_json(snap.snapshot(message, label=label))

    @tool
    def checkpoint(message: str = "", label: str | None = None, session: str | None = None) -> dict[str, Any]:
        """Record an undo point (undo returns to it); what could be redone is kept as abandoned:<n> snapshots."""
        return rendering.snapshot_json(of(session).checkpoint(message, label=label))

    @tool
    def begin_turn(message: str = "", session: str | None = None) -> dict[str, Any]:
        """Call before a turn's first edit: a checkpoint labelled pre-turn:<n>, where revert_turn starts."""
        return rendering.snapshot_json(of(session).begin_turn(message))

    @tool
    def end_turn(message: str = "", session: str | None = None) -> dict[str, Any]:
        """Call after a turn's last edit: a snapshot labelled post-turn:<n>."""
        return rendering.snapshot_json(of(session).end_turn(message))

    @tool
    def tool_snapshot(call_id: str, message: str = "", session: str | None = None) -> dict[str, Any]:
        """Call before a file-editing tool runs: a snapshot labelled tool:<call_id>."""
        return rendering.snapshot_json(of(session).tool_snapshot(call_id, message))

    @tool
    def tool_done(call_id: str, message: str = "", session: str | None = None) -> dict[str, Any]:
        """Call after that tool ran: tool-done:<call_id>. Bracketed calls are exactly what reverts undo."""
        return rendering.snapshot_json(of(session).tool_done(call_id, message))

    @tool
    def status(files: list[str] | None = None) -> dict[str, Any]:
        """What changed since the base (the snapshot the workspace was last made equal to)."""
        return {"changes": [rendering.change_json(c) for c in snap.status(files)]}

    @tool
    def show(ref: str = "@") -> dict[str, Any]:
        """One snapshot's details (ref: id, id prefix, label, @ or @~N)."""
        return rendering.snapshot_json(snap.get(ref))

    @tool
    def list_snapshots(limit: int = 20, session: str | None = None) -> dict[str, Any]:
        """Snapshots, newest first; with session, only that session's ("" for the anonymous one)."""
        return {"snapshots": [rendering.snapshot_json(i) for i in snap.list(limit=limit, session=session)]}

    @tool
    def diff(
        from_ref: str | None = None, to_ref: str | None = None, files: list[str] | None = None, patch: bool = True
    ) -> dict[str, Any]:
        """Per-file changes from a snapshot (default: the base, @) to another, or to the workspace now."""
        found = snap.diff(from_ref, to_ref, files=files)
        return {"files": [rendering.diff_json(d, with_patch=patch) for d in found]}

    @tool
    def restore(
        ref: str, files: list[str] | None = None, dry_run: bool = True, overwrite_untracked: bool = False
    ) -> dict[str, Any]:
        """Make the workspace (or files in it) match a snapshot. dry_run (the default) only shows the plan.
        Untracked files in the way (ignored, too large, unreadable) are kept and listed; overwrite_untracked
        replaces the ignored and too-large ones after saving them in the safety snapshot."""
        found = snap.restore(ref, files, dry_run=dry_run, overwrite_untracked=overwrite_untracked)
        return rendering.restore_json(found)

    @tool
    def undo(session: str | None = None) -> dict[str, Any]:
        """Go back to the last checkpoint (the current state is saved for redo); in a session, revert only
        that session's changes since its last checkpoint."""
        return moved(of(session).undo())

    @tool
    def redo(session: str | None = None) -> dict[str, Any]:
        """Return to the state the last undo replaced."""
        return moved(of(session).redo())

    @tool
    def revert_turn(
        n: int = 1, reset: bool = False, conflicts: str = "abort", session: str | None = None
    ) -> dict[str, Any]:
        """Revert the n-th last turn's own changes (1 = the last), keeping later edits; edits that clash are
        conflicts: abort (write nothing), ours (keep them), markers (conflict markers). reset restores the
        state before the turn instead."""
        worker = of(session)
        if reset:
            return rendering.restore_json(worker.revert_turn(n, reset=True))
        return reverted(worker.revert_turn(n, conflicts=cast(ConflictMode, conflicts)))

    @tool
    def push(remote: str | None = None, name: str | None = None) -> dict[str, Any]:
        """Send this folder's snapshots to the configured git remote (or ``remote``, which the server's
        settings must allow: only remotes set by whoever started the server), under refs/snapshotter/NAME/."""
        if remote is not None and remote != snap.remote:
            raise SnapshotError("push goes to the remote the server was started with; another one is refused")
        return rendering.plain_json(snap.push(name=name, credentials=remote_commands.credentials(os.environ)))

    @tool
    def revert(
        before: str,
        after: str | None = None,
        files: list[str] | None = None,
        dry_run: bool = False,
        conflicts: str = "abort",
    ) -> dict[str, Any]:
        """Undo the change from snapshot before to after (default: the next one, e.g. post-turn:<n> for
        pre-turn:<n>) on the workspace as it is now, keeping every other change."""
        found = snap.revert(before, after, files=files, dry_run=dry_run, conflicts=cast(ConflictMode, conflicts))
        return reverted(found)

    return server


def serve(workspace: str, flags: Mapping[str, Any]) -> None:
    build_server(workspace, flags).run("stdio")
