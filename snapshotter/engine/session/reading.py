"""Reading an opened workspace: what changed since the base, and diffs between states.

Neither writes anything: the workspace is scanned without storing objects,
and its side of a diff is read through confined handles, never through a
symlink swapped in since the scan. A file that cannot be read is reported as
unreadable, as last recorded, instead of as deleted.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from snapshotter.engine.compare.diff import ContentLoader, file_diff, status_of, unreadable_diff
from snapshotter.engine.compare.treediff import ScannedTree, StoredTree, TreeSide, changes, entry_at
from snapshotter.engine.gitstore.objects import MODE_LINK, STREAM_THRESHOLD
from snapshotter.engine.session.engine import Engine
from snapshotter.engine.session.selection import normalize_selection, selection_filter
from snapshotter.engine.worktree.fsops import Workspace
from snapshotter.errors import RestoreConflict
from snapshotter.model import ChangeStatus, FileChange, FileDiff, SnapshotInfo

Within = Callable[[str, bool], bool]


def status(engine: Engine, files: Sequence[str | os.PathLike[str]] | None = None) -> list[FileChange]:
    """What differs between the base and the workspace (or ``files`` in it)."""
    within = _within(engine, files)
    current = engine.scan(write=False)
    base_tree = engine.catalog.base_tree()
    base: TreeSide = engine.held(base_tree) or StoredTree(engine.store, base_tree)
    found = [
        FileChange(c.path, status_of(c), c.old[0] if c.old else None, c.new[0] if c.new else None)
        for c in changes(base, ScannedTree(current), within)
    ]
    unreadable = [p for p in current.unreadable() if within is None or within(p, False)]
    if not unreadable:
        return found
    kept = [c for c in found if not _below_any(c.path, unreadable)]
    for path in unreadable:  # kept as last recorded: what the base says it was
        old = entry_at(base, path)
        kept.append(FileChange(path, ChangeStatus.UNREADABLE, old[0] if old else None, None))
    return sorted(kept, key=lambda c: c.path)


def diff(
    engine: Engine,
    old_info: SnapshotInfo,
    new_info: SnapshotInfo | None,
    files: Sequence[str | os.PathLike[str]] | None = None,
) -> list[FileDiff]:
    """Per-file differences from ``old_info`` to ``new_info`` (None: the workspace now)."""
    within = _within(engine, files)
    old: TreeSide = engine.held(bytes.fromhex(old_info.tree_id)) or engine.stored(old_info)
    new: TreeSide
    unreadable: list[str] = []
    workspace = Workspace(engine.workspace, engine.host)
    try:
        if new_info is None:
            current = engine.scan(write=False)
            new, load_new = ScannedTree(current), _workspace_reader(engine, workspace)
            unreadable = [p for p in current.unreadable() if within is None or within(p, False)]
        else:
            new, load_new = engine.stored(new_info), engine.read_stored
        marked = engine.diff_attributes()
        found = [file_diff(c, engine.read_stored, load_new, marked(c.path)) for c in changes(old, new, within)]
    finally:
        workspace.close()
    if not unreadable:
        return found
    kept = [d for d in found if not _below_any(d.path, unreadable)]
    for path in unreadable:
        kept.append(unreadable_diff(path, entry_at(old, path)))
    return sorted(kept, key=lambda d: d.path)


def _within(engine: Engine, files: Sequence[str | os.PathLike[str]] | None) -> Within | None:
    return selection_filter(normalize_selection(engine.workspace, files)) if files is not None else None


def _workspace_reader(engine: Engine, workspace: Workspace) -> ContentLoader:
    """Reads the workspace's side of a diff through ``workspace``: confined, never
    through a symlink swapped in since the scan; unreadable content is empty."""
    symlinks = engine.host.symlinks

    def read(path: str, sha: bytes, mode: int) -> bytes | None:
        try:
            return workspace.read(path, mode == MODE_LINK and symlinks, STREAM_THRESHOLD)
        except (OSError, RestoreConflict):
            return b""

    return read


def _below_any(path: str, folders_or_files: list[str]) -> bool:
    """``path`` is one of them, or lies below one."""
    return any(path == top or path.startswith(top + "/") for top in folders_or_files)
