"""``snapshotter mcp``: one workspace's snapshots as tools for an MCP client (stdio).

Needs the optional ``mcp`` extra (``pip install "workspace-snapshotter[mcp]"``).
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
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from snapshotter import __version__
from snapshotter.api import Snapshotter
from snapshotter.errors import InvalidInput, SnapshotError
from snapshotter.frontends import config, rendering
from snapshotter.gitstore.location import canonical_workspace
from snapshotter.model import UndoResult
from snapshotter.worktree.watch import watch_available

_Tool = TypeVar("_Tool", bound=Callable[..., Any])
INSTALL_HINT = 'the MCP server needs the mcp extra: pip install "workspace-snapshotter[mcp]" (".[mcp]" from a checkout)'


def build_server(workspace: str, flags: Mapping[str, Any]) -> Any:
    """An MCPServer whose tools act on ``workspace`` only."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        raise InvalidInput(INSTALL_HINT) from None
    canonical = canonical_workspace(workspace)
    settings = config.resolve(canonical, flags)
    logger = logging.getLogger("snapshotter")
    for warning in settings.warnings:
        logger.warning("%s", warning)
    # A server lives for a whole session: with watchdog installed, snapshots walk only what changed.
    snap = Snapshotter(canonical, watch=watch_available(), **config.snapshotter_options(settings))
    server = MCPServer(
        name="snapshotter",
        version=__version__,
        instructions=(
            f"Snapshots of {snap.workspace}. Call begin_turn before a turn's edits and end_turn after; "
            "tool_snapshot before a file-editing tool; checkpoint for an undo point. status and diff show "
            "what changed since the base (@, what the folder was last made equal to); restore (dry_run "
            "first), undo/redo checkpoints, revert_turn a whole turn. Refs: id, id prefix, label, @, @~N."
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

    @tool
    def snapshot(message: str = "", label: str | None = None) -> dict[str, Any]:
        """Record the workspace now; returns the snapshot (id, counts, skipped paths)."""
        return rendering.snapshot_json(snap.snapshot(message, label=label))

    @tool
    def checkpoint(message: str = "", label: str | None = None) -> dict[str, Any]:
        """Record an undo point (undo returns to it); clears what could be redone."""
        return rendering.snapshot_json(snap.checkpoint(message, label=label))

    @tool
    def begin_turn(message: str = "") -> dict[str, Any]:
        """Call before a turn's first edit: a checkpoint labelled pre-turn:<n>, what revert_turn goes back to."""
        return rendering.snapshot_json(snap.begin_turn(message))

    @tool
    def end_turn(message: str = "") -> dict[str, Any]:
        """Call after a turn's last edit: a snapshot labelled post-turn:<n>."""
        return rendering.snapshot_json(snap.end_turn(message))

    @tool
    def tool_snapshot(call_id: str, message: str = "") -> dict[str, Any]:
        """Call before a file-editing tool runs: a snapshot labelled tool:<call_id>."""
        return rendering.snapshot_json(snap.tool_snapshot(call_id, message))

    @tool
    def status(files: list[str] | None = None) -> dict[str, Any]:
        """What changed since the base (the snapshot the workspace was last made equal to)."""
        return {"changes": [rendering.change_json(c) for c in snap.status(files)]}

    @tool
    def show(ref: str = "@") -> dict[str, Any]:
        """One snapshot's details (ref: id, id prefix, label, @ or @~N)."""
        return rendering.snapshot_json(snap.get(ref))

    @tool
    def list_snapshots(limit: int = 20) -> dict[str, Any]:
        """Snapshots, newest first."""
        return {"snapshots": [rendering.snapshot_json(i) for i in snap.list(limit=limit)]}

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
    def undo() -> dict[str, Any]:
        """Go back to the last checkpoint (the current state is saved for redo)."""
        return moved(snap.undo())

    @tool
    def redo() -> dict[str, Any]:
        """Return to the state the last undo replaced."""
        return moved(snap.redo())

    @tool
    def revert_turn(n: int = 1) -> dict[str, Any]:
        """Restore the state before the n-th last agent turn (1 = the last)."""
        return rendering.restore_json(snap.revert_turn(n))

    return server


def serve(workspace: str, flags: Mapping[str, Any]) -> None:
    build_server(workspace, flags).run("stdio")
