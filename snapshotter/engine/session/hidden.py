"""Paths a new snapshot stops tracking because a rule in the workspace now hides them.

A ``.gitignore`` line, an ``info/exclude`` line, an exclude in the workspace's
settings files or a planted ``pyvenv.cfg`` takes a file out of every later
snapshot without a word, and the guarded agent can write any of them. A
restore still brings such a file back (``in_the_way``), but the edits made to
it meanwhile are in no snapshot. So when a snapshot no longer tracks a path
the snapshot before it tracked, and the path is still there, the rule that
hides it is found and named in a warning: one per file holding such rules.
The caller's own rules (the default excludes, ``exclude=``) are not named:
the caller set them.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Sequence

from snapshotter.engine.compare.treediff import Change
from snapshotter.engine.worktree.defaults import VENV_MARKER
from snapshotter.engine.worktree.gitrepo import UserRepository
from snapshotter.engine.worktree.ignore import IgnoreSource, IgnoreStack, option_rules
from snapshotter.options import Options

log = logging.getLogger("snapshotter")

SHOWN = 3
"""Paths named per rule file; the rest are counted."""


def warn(workspace: str, options: Options, repository: UserRepository | None, found: Sequence[Change]) -> None:
    """Warn about the paths ``found`` (changes from the newest snapshot to a new
    one) deletes that are still files or symlinks in ``workspace``, naming the
    file whose rule hides them."""
    still = _still_there(workspace, [change.path for change in found if change.new is None])
    if not still:
        return
    rules = _Rules(workspace, option_rules(workspace, options, repository))
    by_file: dict[str, list[str]] = {}
    for path in still:
        origin = rules.hidden_by(path)
        if origin is not None:
            by_file.setdefault(origin, []).append(path)
    for origin, paths in by_file.items():
        shown = ", ".join(paths[:SHOWN]) + (f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else "")
        them = "it" if len(paths) == 1 else "them"
        log.warning(
            "%s, tracked until now, %s left out of this snapshot: %s hides %s (a rule inside the workspace; "
            "a restore still brings %s back, but edits to %s are not recorded)",
            shown,
            "is" if len(paths) == 1 else "are",
            origin,
            them,
            them,
            them,
        )


def _still_there(workspace: str, paths: Sequence[str]) -> list[str]:
    """The files and symlinks among ``paths`` that are still there; a folder gone
    (a tree deleted whole) costs one look, not one per file it held."""
    folders: dict[str, bool] = {"": True}
    out = []
    for path in paths:
        folder = path.rpartition("/")[0]
        there = folders.get(folder)
        if there is None:
            there = folders[folder] = os.path.isdir(os.path.join(workspace, *folder.split("/")))
        if there and _on_disk(workspace, path):
            out.append(path)
    return out


def _on_disk(workspace: str, path: str) -> bool:
    try:
        st = os.lstat(os.path.join(workspace, *path.split("/")))
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)


class _Rules:
    """The ignore rules of each folder, read from the workspace as the walk reads them."""

    def __init__(self, workspace: str, root: IgnoreStack) -> None:
        self.workspace = workspace
        self.stacks: dict[str, IgnoreStack] = {"": root.push(self._gitignore(""))}

    def hidden_by(self, path: str) -> str | None:
        """The file holding the rule from inside the workspace that hides ``path``
        (or a folder above it); None if none does, or the caller's rules do."""
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            at, parent = "/".join(parts[:depth]), "/".join(parts[: depth - 1])
            stack = self._stack(parent)
            if parent and stack.excludes_environments and _on_disk(self.workspace, f"{parent}/{VENV_MARKER}"):
                return os.path.join(self.workspace, *parent.split("/"), VENV_MARKER)
            source = stack.ignored_by(at, depth < len(parts))
            if source is not None:
                return None if source.policy else source.origin
        return None

    def _stack(self, folder: str) -> IgnoreStack:
        found = self.stacks.get(folder)
        if found is None:
            found = self._stack(folder.rpartition("/")[0]).push(self._gitignore(folder))
            self.stacks[folder] = found
        return found

    def _gitignore(self, folder: str) -> IgnoreSource:
        return IgnoreSource.from_file(os.path.join(self.workspace, *folder.split("/"), ".gitignore"), folder)
