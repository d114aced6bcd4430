"""What the user's own git indexes track below the workspace, read only when they change.

A file a user's repository tracks is snapshotted even where an ignore rule
says otherwise. The indexes that count are the one of the repository the
workspace is (or lies in) and those of the repositories nested below it,
which the walk finds only in the folders it lists: their places are kept in
the store, for the next process.
"""

from __future__ import annotations

import os

from snapshotter.engine.fsutil import read_side_file
from snapshotter.engine.worktree import statcache
from snapshotter.engine.worktree.gitrepo import TrackedPaths, UserRepository, find_repository, tracked_paths

_NESTED = "nested-repositories"
"""Folders below the workspace holding a repository of their own, one per line."""
NESTED_CAP = 16 << 20
"""The list of nested repositories, read guarded: a line is a relative path of
some tens of bytes, so 16 MiB is hundreds of thousands of repositories; a bigger
or unusable file is taken as empty (a full walk finds them again)."""


class UserIndexes:
    """The tracked paths of one workspace's user repositories (see the module docstring)."""

    def __init__(self, workspace: str, repository: UserRepository | None, meta_dir: str) -> None:
        self._workspace = workspace
        self._repository = repository
        self._nested_path = os.path.join(meta_dir, _NESTED)
        self._read: dict[str, tuple[tuple[int, ...], TrackedPaths | None]] = {}
        self._nested: tuple[str, ...] | None = None

    def tracked(self, nested: tuple[str, ...]) -> TrackedPaths | None:
        """The paths the user's git indexes track below the workspace: the index of
        the repository the workspace is (or lies in), and those of the ``nested``
        repositories below it, each for its own folder. An index is read again
        only when its file changed."""
        found: TrackedPaths | None = None
        places = [(self._repository, "")] if self._repository is not None else []
        for rel in nested:
            inner = find_repository(os.path.join(self._workspace, *rel.split("/")), stop_at=self._workspace)
            if inner is not None and inner.prefix == "":
                places.append((inner, rel))
        for repository, rel in places:
            paths = self._index_of(repository)
            if paths is not None:
                paths = paths.below(rel) if rel else paths
                found = paths if found is None else found.merged(paths)
        return found

    def _index_of(self, repository: UserRepository) -> TrackedPaths | None:
        try:
            st = os.stat(repository.index_path)
            stamp: tuple[int, ...] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = ()
        known = self._read.get(repository.index_path)
        if known is None or known[0] != stamp:
            known = self._read[repository.index_path] = (stamp, tracked_paths(repository) if stamp else None)
        return known[1]

    def nested(self) -> tuple[str, ...]:
        """The nested repositories the last walk found (relative posix paths)."""
        if self._nested is None:
            try:
                text = read_side_file(self._nested_path, NESTED_CAP, follow=False).decode("utf-8", "surrogateescape")
                self._nested = tuple(line for line in text.split("\n") if line)
            except OSError:
                self._nested = ()  # none yet, or unusable: the next walk finds them again
        return self._nested

    def save_nested(self, found: tuple[str, ...]) -> None:
        """Remember the nested repositories for the next process (the walk sees them
        only in the folders it lists). A lost write costs one extra scan, no more."""
        self._nested = found
        try:
            statcache.write_atomically(self._nested_path, "\n".join(found).encode())
        except OSError:
            pass
