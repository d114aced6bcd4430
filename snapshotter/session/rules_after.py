"""The ignore rules a restore leaves behind, and what they would track.

A restore writes ``.gitignore`` files back with everything else, so the rules
that judge the folder afterwards may not be today's. A file ignored only
because the agent added a rule after the target (``*.log`` over a recorded
``x.log``) would stay as the agent wrote it, and then show as modified the
moment the target's rules are back. So a path in the target's way is kept as
untracked only if it is untracked both now and under the rules the restore
writes back; the others are tracked for the restore (their content saved in
its safety snapshot first) and restored.

The rules afterwards are, folder by folder: the target's ``.gitignore`` where
the restore writes that file (a whole restore, or one whose selection holds
it), else the workspace's as it stands (outside the selection, or untracked and
so kept); above them the same policy, outer ``.gitignore`` files and
``info/exclude`` as now, which no restore writes. The policy (defaults and the
caller's ``exclude=``) is the same before and after, so a secret it excludes
is never taken in this way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence

from snapshotter.compare.treediff import Change, StoredTree, entry_at
from snapshotter.gitstore.objects import MODE_EXEC, MODE_FILE
from snapshotter.model import SkippedPath, SkipReason
from snapshotter.worktree.ignore import MAX_IGNORE_FILE_BYTES, IgnoreSource, IgnoreStack
from snapshotter.worktree.walker import Scan

IGNORE_FILE = ".gitignore"


def touches_rules(found: Sequence[Change]) -> bool:
    """Whether a change set writes, changes or deletes any ``.gitignore``."""
    return any(change.path.rpartition("/")[2] == IGNORE_FILE for change in found)


def tracked_after(
    untracked: Sequence[SkippedPath],
    rules: RulesAfter,
    size_cap: int,
    size_of: Callable[[str], int | None],
) -> list[str]:
    """The paths among ``untracked`` (in the target's way) that are ignored now
    but that the rules afterwards track: neither ignored then nor over the new
    file size cap (``size_cap``, 0: none); ``size_of``: a file's or symlink's
    size, None for anything else (a folder, a special file: never taken in)."""
    out = []
    for item in untracked:
        if item.reason is not SkipReason.IGNORED or rules.ignores(item.path):
            continue
        size = size_of(item.path)
        if size is None or (size_cap and size > size_cap):
            continue
        out.append(item.path)
    return out


class RulesAfter:
    """The ignore rules of the folder once a restore of ``target`` is done
    (see the module's docstring). ``base``: the sources that apply everywhere
    (``root_stack``); ``chunks``: a stored blob's content, piece by piece;
    ``within``: the restore's selection, None for all."""

    def __init__(
        self,
        workspace: str,
        base: IgnoreStack,
        target: StoredTree,
        chunks: Callable[[bytes], Iterable[bytes]],
        scanned: Scan,
        within: Callable[[str, bool], bool] | None,
    ) -> None:
        self.workspace = workspace
        self.target = target
        self.chunks = chunks
        self.scanned = scanned
        self.within = within
        self._stacks: dict[str, IgnoreStack] = {"": base.push(self._source(""))}

    def ignores(self, path: str) -> bool:
        """Whether ``path`` (a file) is ignored afterwards: it, or a folder above it."""
        parts = path.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if self._stack("/".join(parts[: depth - 1])).is_ignored(folder, True):
                return True
        return self._stack("/".join(parts[:-1])).is_ignored(path, False)

    def _stack(self, folder: str) -> IgnoreStack:
        found = self._stacks.get(folder)
        if found is None:
            found = self._stack(folder.rpartition("/")[0]).push(self._source(folder))
            self._stacks[folder] = found
        return found

    def _source(self, folder: str) -> IgnoreSource:
        rel = f"{folder}/{IGNORE_FILE}" if folder else IGNORE_FILE
        written = self.within is None or self.within(rel, False)
        if written:
            entry = entry_at(self.target, rel)
            if entry is not None:
                if entry[0] not in (MODE_FILE, MODE_EXEC):
                    return IgnoreSource(())  # a symlinked .gitignore is not followed, as in git
                return IgnoreSource.from_bytes(self._stored(entry[1]), folder, rel)
            if self.scanned.entry(rel) is not None:
                return IgnoreSource(())  # tracked now and not in the target: the restore deletes it
        return IgnoreSource.from_file(os.path.join(self.workspace, *rel.split("/")), folder)

    def _stored(self, sha: bytes) -> bytes:
        """A stored ignore file's lines, as many as ``read_ignore_file`` would
        read of it in the workspace (whole lines within its cap)."""
        data = bytearray()
        for chunk in self.chunks(sha):
            data += chunk
            if len(data) > MAX_IGNORE_FILE_BYTES:
                return bytes(data[: data.rfind(b"\n", 0, MAX_IGNORE_FILE_BYTES) + 1])
        return bytes(data)
