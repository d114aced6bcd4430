"""Entries of the user's index that the working tree does not hold, kept as
``git add -A`` keeps them.

- **A submodule not checked out**: its folder is there, without a ``.git`` of
  its own (``git submodule deinit``, a clone without ``--recurse-submodules``).
  git keeps its gitlink (mode 160000, the commit) and ignores whatever lies in
  the folder; so does a snapshot, so its tree id stays git's. A submodule that
  is checked out is snapshotted file by file, as before: the store then holds
  its content, and a restore can bring it back. A folder that is gone takes
  its gitlink with it, as in git.
- **A file outside a sparse checkout** (skip-worktree in the index), absent:
  git keeps it in the index, so ``git status`` does not call it deleted. A
  snapshot keeps it as the newest snapshot recorded it, as it keeps an
  unreadable file: its content is not on disk, and copying it from the user's
  object store would fill the store with the part of the repository the user
  chose not to check out. One never recorded stays out.

A restore or revert neither writes nor deletes either (``not-checked-out`` in
its ``kept``): checking them out is the user's git's job.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence

from snapshotter.engine.worktree.gitrepo import MODE_GITLINK, IndexEntry
from snapshotter.engine.worktree.walkstate import DirNode, Walk

Recorded = Callable[[str], "tuple[int, bytes] | None"]
"""path -> (git mode, id) in the newest snapshot, or None."""


def add_unchecked(walk: Walk, absent: Sequence[IndexEntry], recorded: Recorded | None) -> list[str]:
    """Add the ``absent`` entries that apply to the walk's folders (making the
    folders the workspace does not have); return the paths added."""
    added: list[str] = []
    for entry in absent:
        rel = os.fsdecode(entry.path)
        parts = rel.split("/")
        if "" in parts or ".." in parts or ".git" in parts:
            continue  # no index git writes holds such a path; a forged one is not followed
        full = os.path.join(walk.workspace, *parts)
        if entry.mode == MODE_GITLINK and not entry.skip_worktree:
            if not _unpopulated(full):
                continue
            found: tuple[int, bytes] | None = (MODE_GITLINK, entry.sha)
            _drop_below(walk, rel)
        elif os.path.lexists(full) or recorded is None:
            continue  # on disk: the walk took it as it is
        else:
            found = recorded(rel)
        folder, _, name = rel.rpartition("/")
        node = _node(walk, folder) if found is not None else None
        if node is None or found is None or name in node.records:
            continue
        if any(sub.rel == rel for sub in node.subdirs):
            continue  # a folder stands there, with tracked files of its own
        if node.extras is None:
            node.extras = {}
        node.extras[name] = found
        node.clean = False
        added.append(rel)
    return added


def _unpopulated(full: str) -> bool:
    """A folder that is not a checked-out repository (no ``.git`` in it)."""
    try:
        if not stat.S_ISDIR(os.lstat(full).st_mode):
            return False
    except OSError:
        return False
    return not os.path.lexists(os.path.join(full, ".git"))


def _drop_below(walk: Walk, rel: str) -> None:
    """Forget the folder ``rel`` and what the walk found in it: git takes a
    gitlink's folder for the gitlink, whatever lies in it."""
    if rel not in walk.nodes:
        return
    below = rel + "/"
    gone = {key for key in walk.nodes if key == rel or key.startswith(below)}
    parent = walk.nodes.get(rel.rpartition("/")[0])
    if parent is not None:
        parent.subdirs = [sub for sub in parent.subdirs if sub.rel != rel]
        parent.clean = False
    for key in gone:
        del walk.nodes[key]
    walk.order = [node for node in walk.order if node.rel not in gone]


def _node(walk: Walk, folder: str) -> DirNode | None:
    """The walk's node of ``folder``, made (with its parents) if the workspace
    does not have it; None where a file stands on the way."""
    node = walk.nodes.get(folder)
    if node is not None:
        return node
    parent = _node(walk, folder.rpartition("/")[0])
    name = folder.rpartition("/")[2]
    if parent is None or name in parent.records or (parent.extras and name in parent.extras):
        return None
    node = DirNode(folder, rules=parent.rules, clean=False)
    parent.subdirs.append(node)
    parent.clean = False
    walk.nodes[folder] = node
    walk.order.append(node)  # after its parent: its tree is made first
    return node
