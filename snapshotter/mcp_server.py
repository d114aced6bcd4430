"""``snapshotter mcp``: one workspace's snapshots as tools for an MCP client (stdio).

Needs the optional ``mcp`` extra (``pip install "snapshotter[mcp]"``). The
server is rooted at the workspace it was started for and takes no other path
from the client but files inside it; every result is a JSON object, and every
failure an error result with snapshotter's one-line message.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from . import cliformat, config
from .errors import InvalidInput, SnapshotError
from .snapshotter import Snapshotter
from .watch import watch_available

_Tool = TypeVar("_Tool", bound=Callable[..., Any])


def build_server(workspace: str, flags: Mapping[str, Any]) -> Any:
    """An MCPServer whose tools act on ``workspace`` only."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        raise InvalidInput(
            'the MCP server needs the mcp extra: pip install "snapshotter[mcp]" (".[mcp]" from a checkout)'
        ) from None
    # A server lives for a whole session: with watchdog installed, snapshots walk only what changed.
    options = config.snapshotter_options(config.resolve(workspace, flags))
    snap = Snapshotter(workspace, watch=watch_available(), **options)
    server = MCPServer(
        name="snapshotter",
        instructions=(
            f"Snapshots of {snap.workspace}: take one before editing files, diff to see what changed, "
            "restore (try dry_run first), undo/redo checkpoints, revert a whole turn."
        ),
    )

    def tool(function: _Tool) -> _Tool:
        @functools.wraps(function)  # the SDK reads the parameters from the signature
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except SnapshotError as exc:
                raise ToolError(str(exc)) from None

        server.tool(name=function.__name__)(run)
        return function

    @tool
    def snapshot(message: str = "", label: str | None = None) -> dict[str, Any]:
        """Record the workspace now; returns the snapshot (id, counts, skipped paths)."""
        return cliformat.snapshot_json(snap.snapshot(message, label=label))

    @tool
    def list_snapshots(limit: int = 20) -> dict[str, Any]:
        """Snapshots, newest first."""
        return {"snapshots": [cliformat.snapshot_json(i) for i in snap.list(limit=limit)]}

    @tool
    def diff(from_ref: str, to_ref: str | None = None, patch: bool = True) -> dict[str, Any]:
        """Per-file changes from a snapshot to another, or to the workspace now (to_ref omitted)."""
        return {"files": [cliformat.diff_json(d, with_patch=patch) for d in snap.diff(from_ref, to_ref)]}

    @tool
    def restore(ref: str, files: list[str] | None = None, dry_run: bool = True) -> dict[str, Any]:
        """Make the workspace (or files in it) match a snapshot. dry_run (the default) only shows the plan."""
        for path in files or []:
            if os.path.isabs(path) or ".." in path.replace("\\", "/").split("/"):
                raise SnapshotError(f"{path!r} is not a path inside the workspace")
        return cliformat.restore_json(snap.restore(ref, files, dry_run=dry_run))

    @tool
    def undo() -> dict[str, Any]:
        """Go back to the last checkpoint (the current state is saved for redo)."""
        return cliformat.undo_json(snap.undo())

    @tool
    def redo() -> dict[str, Any]:
        """Return to the state the last undo replaced."""
        return cliformat.undo_json(snap.redo())

    @tool
    def revert_turn(n: int = 1) -> dict[str, Any]:
        """Restore the state before the n-th last agent turn (1 = the last)."""
        return cliformat.restore_json(snap.revert_turn(n))

    return server


def serve(workspace: str, flags: Mapping[str, Any]) -> None:
    build_server(workspace, flags).run("stdio")
