"""What stands in a restore's way untracked, and which of it the restore replaces.

The rule (SECURITY.md): a restore brings back every path the target holds
unless a rule from outside the agent's reach hides it (the policy: the
default excludes and the caller's ``exclude=``, whether from arguments, flags
or the user's own config file; or a file over the caller's own size cap), or
it is unreadable or not a regular file. The rules the workspace holds (its
``.gitignore`` files, the ``info/exclude`` of its repository, the excludes and
a lower size cap of its ``pyproject.toml`` and ``snapshotter.toml``, a
``pyvenv.cfg`` that makes a folder a virtual environment) can all be written
by the guarded agent, so they never make a restore keep the agent's version.

What the restore replaces that way is tracked for it (``Engine.scan(forced=)``),
so its safety snapshot holds it before anything is written and ``undo`` brings
it back. That is, at a path the target holds: the untracked file or symlink
there (overwritten), one where the target has a folder on the way (deleted),
and the untracked files below a folder where the target has a file (deleted).
What is left is kept (a whole restore) or refused (a selective one, a folder
in the way), as before.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence

from snapshotter.engine.compare.treediff import Change
from snapshotter.engine.session.checkout import parents, untracked_among
from snapshotter.engine.worktree.fsops import Workspace
from snapshotter.engine.worktree.gitrepo import MODE_GITLINK
from snapshotter.engine.worktree.ignore import IgnoreStack
from snapshotter.engine.worktree.listing import GIT_DIR_NAMES
from snapshotter.model import SkippedPath, SkipReason

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:  # annotations only: reading the store (``log``, ``show``) does not load the walker
    from snapshotter.engine.worktree.walker import Scan

SAVEABLE = frozenset([SkipReason.IGNORED, SkipReason.TOO_LARGE])
"""Untracked paths whose content a safety snapshot can hold; unreadable and
special files cannot be saved, so they are never overwritten."""


class Judge:
    """Which untracked paths in a restore's way it replaces: ``policy``, the
    caller's rules alone (``ignore.policy_stack``); ``caller_cap``, the caller's
    own cap on new files; with ``overwrite`` (``overwrite_untracked``) also
    what those keep out, when its content can be saved."""

    def __init__(self, policy: IgnoreStack, caller_cap: int, overwrite: bool) -> None:
        self.policy = policy
        self.caller_cap = caller_cap
        self.overwrite = overwrite

    def replaced(
        self, found: Sequence[Change], scanned: Scan, workspace: Workspace
    ) -> tuple[list[str], list[SkippedPath]]:
        """The untracked paths ``found`` (changes from ``scanned`` to the
        target) would overwrite or delete that the restore tracks and replaces;
        and the untracked paths it would write over (``untracked_among``)."""
        skipped = {item.path: item.reason for item in scanned.kept_as_is()}
        folders: list[str] = []
        over = untracked_among(found, scanned, workspace, folders)
        out: dict[str, None] = {}
        for item in (
            *over,
            *_on_the_way(found, scanned, workspace, skipped),
            *_below(folders, scanned, workspace, skipped),
        ):
            if self._replaces(item, workspace):
                out[item.path] = None
        return list(out), over

    def _replaces(self, item: SkippedPath, workspace: Workspace) -> bool:
        if item.reason not in SAVEABLE:
            return False  # unreadable, special, git's to check out...: left alone
        st = workspace.lstat(item.path)
        if st is None or not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            return False
        if self.overwrite:
            return True
        if item.reason is SkipReason.TOO_LARGE:
            return stat.S_ISLNK(st.st_mode) or st.st_size <= self.caller_cap
        return not self._by_policy(item.path)

    def _by_policy(self, path: str) -> bool:
        """Whether the caller's rules hide ``path`` (a file), or a folder above it."""
        policy = self.policy
        return policy.by_policy(path, False) or any(policy.by_policy(folder, True) for folder in parents(path))


def _on_the_way(
    found: Sequence[Change], scanned: Scan, workspace: Workspace, skipped: dict[str, SkipReason]
) -> Iterator[SkippedPath]:
    """The untracked files and symlinks standing where the target has a folder
    on the way to a path it holds."""
    walked: set[str] = set()
    for change in found:
        if change.new is None or change.new[0] == MODE_GITLINK:
            continue
        for folder in parents(change.path):
            if folder in walked or folder in scanned.nodes:
                break  # the scan walked it: a real folder, and so is every one above it
            walked.add(folder)
            if scanned.entry(folder) is None:
                st = workspace.lstat(folder)
                if st is not None and not stat.S_ISDIR(st.st_mode):
                    yield SkippedPath(folder, _reason(folder, skipped))


def _below(
    folders: Sequence[str], scanned: Scan, workspace: Workspace, skipped: dict[str, SkipReason]
) -> Iterator[SkippedPath]:
    """The files and symlinks below ``folders`` (where the target has a file)
    that the scan did not track; a ``.git`` is never entered or named."""
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(workspace.abspath(folder)):
            rel_dir = os.path.relpath(dirpath, workspace.root).replace(os.sep, "/")
            dirnames[:] = [name for name in dirnames if name not in GIT_DIR_NAMES]
            links = [name for name in dirnames if os.path.islink(os.path.join(dirpath, name))]
            for name in filenames + links:
                path = f"{rel_dir}/{name}"
                if name not in GIT_DIR_NAMES and scanned.entry(path) is None:
                    yield SkippedPath(path, _reason(path, skipped))


def _reason(path: str, skipped: dict[str, SkipReason]) -> SkipReason:
    """Why the scan left ``path`` out: what it recorded of it or a folder above it, else ignored."""
    for at in (path, *parents(path)):
        reason = skipped.get(at)
        if reason is not None:
            return reason
    return SkipReason.IGNORED
