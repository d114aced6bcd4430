"""Which folder a command acts on, and where its store is: ``where``, the note a
command prints when the folder is not the one it ran in, the first snapshot's
hint.

A command run in a subfolder acts on the folder found above it (a store there,
or the root of the git repository around it): a whole restore or a first
snapshot then covers more than the folder the person stands in, so the command
line says which, on stderr (never in a ``--json`` document's stream).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from snapshotter.engine.gitstore.location import canonical_workspace, store_exists, store_path_for
from snapshotter.errors import SnapshotError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def elsewhere(args: argparse.Namespace, workspace: str) -> str | None:
    """``workspace`` if it is not the folder the command ran in (``-C DIR``: DIR), else None."""
    try:
        begun = canonical_workspace(os.path.abspath(args.workspace))
    except SnapshotError:
        return None
    return workspace if workspace != begun else None


def note(args: argparse.Namespace, workspace: str) -> str:
    """The line saying a command acts on a folder above the one it ran in ("": it does not)."""
    if args.json or args.command in ("watch", "config") or elsewhere(args, workspace) is None:
        return ""
    return f"snapshotter: acting on {workspace}, the folder snapshotted around this one\n"


def restore_question(
    args: argparse.Namespace, workspace: str, written: int, deleted: int, target: str
) -> tuple[str, str]:
    """What a whole restore asks a person, and says where nobody can be asked;
    naming the folder when it is not the one the command ran in."""
    folder = f" of {workspace}" if elsewhere(args, workspace) else ""
    return (
        f"restore {target[:12]}{folder}: write {written}, delete {deleted} files?",
        f"a full restore{folder} would write {written} and delete {deleted} files",
    )


def store_or_none(name: str, workspace: str, home: str | None) -> str | None:
    """The store of ``workspace``, or None when the locations overlap: opening
    the folder then refuses it, in the order the library checks (an unsafe
    root before a home inside it); ``where`` refuses at once."""
    try:
        return store_path_for(workspace, home)
    except SnapshotError:
        if name == "where":
            raise
        return None


def where(args: argparse.Namespace, workspace: str, store: str) -> tuple[Any, Callable[[], str]]:
    """``where``: the store (``--workspace``: the folder it snapshots), as a JSON
    result and the text line."""
    found = {"workspace": workspace, "store": store, "exists": store_exists(store)}
    if args.folder:
        return found, lambda: workspace
    return found, lambda: store if found["exists"] else f"{store} (not created yet)"


def first_snapshot_hint(workspace: str, store: str, above: bool) -> str:
    """What the first snapshot of a folder says after its line (``above``: the
    folder is not the one the command ran in, so it is named)."""
    folder = workspace if above else "this folder"
    return (
        f"snapshotter: the first snapshot of {folder}; its store is {store}\n"
        "  next: edit files, then `snapshotter status`, `snapshotter diff`, `snapshotter restore @ --dry-run`\n"
    )
