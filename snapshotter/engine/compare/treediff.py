"""Comparing trees: a stored tree against another, or against a fresh scan.

Both sides are seen through one small interface (a folder's entries by name),
and folders whose tree ids are equal are skipped whole, so comparing two
snapshots that differ in ten files reads a handful of tree objects, not the
whole tree.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from snapshotter.engine.gitstore.objects import EMPTY_TREE, MODE_TREE, parse_tree
from snapshotter.engine.gitstore.store import DAMAGED_OBJECT, Store
from snapshotter.engine.worktree.hostfs import recorded_mode
from snapshotter.engine.worktree.listing import join_path
from snapshotter.engine.worktree.pathnames import NameCheck
from snapshotter.engine.worktree.walkstate import DirNode, git_mode_of
from snapshotter.errors import VERIFY, StoreError, UnsafeTree

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:  # an annotation only: reading stored trees (``log``, ``show``) does not load the walker
    from snapshotter.engine.worktree.walker import Scan

MAX_TREE_DEPTH = 2048
"""Deeper than any path the operating systems we run on can hold (PATH_MAX is 4,096 bytes)."""
MAX_ENTRIES_READ = 20_000_000
"""Entries one stored tree may yield while it is compared, unless told fewer: a
hundred times the default workspace cap (200,000 files and folders)."""
_FS_ENCODING = sys.getfilesystemencoding()
_FS_ERRORS = sys.getfilesystemencodeerrors()
Entry = tuple[int, bytes]
"""(git mode, raw object id)."""


class TreeSide(Protocol):
    """One side of a comparison: folders addressed by an opaque handle."""

    def root(self) -> object: ...

    def tree_id(self, handle: object) -> bytes: ...

    def entries(self, handle: object, path: str = "") -> dict[str, tuple[int, bytes, object]]:
        """name -> (mode, id, handle of the subfolder or None), for the folder at ``path``."""
        ...


class StoredTree:
    """A tree in the store, read object by object as the comparison needs it.

    ``check_names(names, where)`` vets the entry names of every folder read:
    restore refuses hostile names this way, before anything is written, and
    leaves out the names this platform cannot hold (``left_out``: path -> why).
    Reading more than ``budget`` entries in all is refused (UnsafeTree): a
    forged tree can hold the same subtree twice at every level.
    """

    def __init__(
        self, store: Store, tree_id: bytes, check_names: NameCheck | None = None, budget: int = MAX_ENTRIES_READ
    ) -> None:
        self._store = store
        self._root = tree_id
        self._check_names = check_names
        self._budget = budget
        self._read: dict[bytes, tuple[dict[str, tuple[int, bytes, object]], dict[str, str]]] = {}
        self.left_out: dict[str, str] = {}
        """Paths of the tree this platform cannot hold, left out of every folder read, and why."""

    def root(self) -> object:
        return self._root

    def tree_id(self, handle: object) -> bytes:
        assert isinstance(handle, bytes)
        return handle

    def entries(self, handle: object, path: str = "") -> dict[str, tuple[int, bytes, object]]:
        assert isinstance(handle, bytes)
        if handle == EMPTY_TREE:
            return {}
        known = self._read.get(handle)
        if known is None:
            known = self._read[handle] = self._parse(handle)
        found, left_out = known
        self._budget -= len(found) + len(left_out)
        if self._budget < 0:  # a tree holding the same subtree twice at every level doubles each time
            raise UnsafeTree(
                f"tree {self._root.hex()} holds more entries than any workspace; refused "
                "(if the snapshot is genuine, raise max_workspace_entries)"
            )
        for name, reason in left_out.items():
            self.left_out[join_path(path, name)] = reason
        return found

    def _parse(self, handle: bytes) -> tuple[dict[str, tuple[int, bytes, object]], dict[str, str]]:
        """A tree's entries (read once: trees never change), and the names left out of them."""
        try:
            type_num, content = self._store.read_raw(handle)
        except KeyError:
            raise StoreError(f"tree {handle.hex()} is missing from the store", VERIFY) from None
        except DAMAGED_OBJECT as exc:
            raise StoreError(f"tree {handle.hex()} is damaged ({exc})", VERIFY) from None
        if type_num != 2:
            raise StoreError(f"object {handle.hex()} should be a tree; the store is damaged")
        try:
            parsed = parse_tree(content)
        except ValueError:
            raise StoreError(f"tree {handle.hex()} is malformed; the store is damaged") from None
        names = _decoded([name for name, _, _ in parsed])
        found: dict[str, tuple[int, bytes, object]] = {
            name: (mode, sha, sha if mode == MODE_TREE else None) for name, (_, mode, sha) in zip(names, parsed)
        }
        left_out = self._check_names(names, f"tree {handle.hex()}") if self._check_names is not None else {}
        for name in left_out:
            del found[name]
        return found, left_out


def _decoded(raw: list[bytes]) -> list[str]:
    """Names as ``os.fsdecode`` gives them: an all-ASCII folder (the usual one) in
    one call for all its names (a name holds no NUL, so the join splits back)."""
    joined = b"\0".join(raw)
    if joined.isascii():
        return joined.decode("ascii").split("\0") if raw else []
    return [name.decode(_FS_ENCODING, _FS_ERRORS) for name in raw]


class ScannedTree:
    """The workspace as one scan saw it."""

    def __init__(self, scan: Scan) -> None:
        self._scan = scan

    def root(self) -> object:
        return self._scan.root

    def tree_id(self, handle: object) -> bytes:
        assert isinstance(handle, DirNode)
        return handle.tree_id if handle.tree_id is not None else EMPTY_TREE

    def entries(self, handle: object, path: str = "") -> dict[str, tuple[int, bytes, object]]:
        assert isinstance(handle, DirNode)
        out: dict[str, tuple[int, bytes, object]] = {
            name: (git_mode_of(record[0]), record[5], None) for name, record in handle.records.items()
        }
        for sub in handle.subdirs:
            if sub.tree_id is not None:
                out[sub.rel.rpartition("/")[2]] = (MODE_TREE, sub.tree_id, sub)
        if handle.extras:
            out.update((name, (mode, sha, None)) for name, (mode, sha) in handle.extras.items())
        return out


@dataclass(frozen=True)
class Change:
    """A path whose entry differs; ``old`` or ``new`` is None when absent."""

    path: str
    old: Entry | None
    new: Entry | None


@dataclass(frozen=True)
class Comparison:
    """The stored tree ``base`` compared with ``scan``: the changes from it,
    and the folders of ``base`` that the comparison read."""

    base: bytes
    scan: Scan
    found: list[Change]
    base_folders: Mapping[str, tuple[int, bytes]]


def entry_at(side: TreeSide, path: str) -> Entry | None:
    """(mode, id) of the file or symlink at ``path`` on one side, or None."""
    handle: object = side.root()
    parts = path.split("/")
    for depth, name in enumerate(parts):
        found = side.entries(handle, "/".join(parts[:depth])).get(name)
        if found is None:
            return None
        mode, sha, sub = found
        if depth == len(parts) - 1:
            return (mode, sha) if mode != MODE_TREE else None
        if mode != MODE_TREE:
            return None
        handle = sub
    return None


def path_in_tree(side: TreeSide, path: str) -> bool:
    """Is there a file, symlink or folder at ``path`` on this side?"""
    handle: object = side.root()
    parts = path.split("/")
    for depth, name in enumerate(parts):
        found = side.entries(handle, "/".join(parts[:depth])).get(name) if handle is not None else None
        if found is None:
            return False
        handle = found[2] if found[0] == MODE_TREE else None
    return True


def changes(
    old: TreeSide,
    new: TreeSide,
    within: Callable[[str, bool], bool] | None = None,
    new_folders: dict[str, tuple[int, bytes]] | None = None,
    old_folders: dict[str, tuple[int, bytes]] | None = None,
) -> list[Change]:
    """Every file-level difference from ``old`` to ``new``, sorted by path.

    ``within(path, is_dir)`` may limit the comparison to part of the tree; it
    is asked about folders too, and a folder it refuses is not entered.
    ``new_folders`` and ``old_folders``, if given, receive each folder of that
    side that was read: path -> (number of entries, tree id).

    The walk is iterative and bounded: a forged tree can nest without end, so
    nesting deeper than ``MAX_TREE_DEPTH`` refuses the comparison (UnsafeTree)
    instead of growing; a stored side counts what it reads (``StoredTree``).
    """
    out: list[Change] = []
    stack: list[tuple[str, int, object | None, object | None]] = [("", 0, old.root(), new.root())]
    while stack:
        prefix, depth, old_handle, new_handle = stack.pop()
        if old_handle is not None and new_handle is not None and old.tree_id(old_handle) == new.tree_id(new_handle):
            continue
        if depth > MAX_TREE_DEPTH:
            raise UnsafeTree(f"a snapshot's folders nest deeper than {MAX_TREE_DEPTH} levels (at {prefix[:200]}...)")
        old_entries = old.entries(old_handle, prefix) if old_handle is not None else {}
        new_entries = new.entries(new_handle, prefix) if new_handle is not None else {}
        if new_folders is not None and new_handle is not None:
            new_folders[prefix] = (len(new_entries), new.tree_id(new_handle))
        if old_folders is not None and old_handle is not None:
            old_folders[prefix] = (len(old_entries), old.tree_id(old_handle))
        differ = [name for name, entry in new_entries.items() if old_entries.get(name) != entry]
        differ.extend(name for name in old_entries if name not in new_entries)
        for name in differ:  # equal entries (same mode and id, or the same subtree) are no change
            path = join_path(prefix, name)
            a = old_entries.get(name)
            b = new_entries.get(name)
            a_dir = a is not None and a[0] == MODE_TREE
            b_dir = b is not None and b[0] == MODE_TREE
            if within is not None and not within(path, a_dir or b_dir):
                continue
            if a_dir or b_dir:
                if a_dir and b_dir and a is not None and b is not None and a[1] == b[1]:
                    continue
                stack.append((path, depth + 1, a[2] if a_dir and a else None, b[2] if b_dir and b else None))
            a_file = (a[0], a[1]) if a is not None and not a_dir else None
            b_file = (b[0], b[1]) if b is not None and not b_dir else None
            if a_file != b_file:
                out.append(Change(path, a_file, b_file))
    out.sort(key=lambda c: c.path)
    return out if within is None else _drop_unselected(out, within)


def _drop_unselected(found: list[Change], within: Callable[[str, bool], bool]) -> list[Change]:
    """Keep a change at a path that is only on the way to a selected one (a
    file where the other side has a folder) only if it must go for something
    selected to be written below it; the path itself was not asked for."""
    written_below = {p for c in found if c.new is not None for p in _parents(c.path)}
    return [c for c in found if within(c.path, False) or (c.new is None and c.path in written_below)]


def _parents(path: str) -> Iterator[str]:
    while "/" in path:
        path = path.rpartition("/")[0]
        yield path


class RecordedModes:
    """``path -> st_mode`` as a stored tree recorded it, read folder by folder
    on demand: where the filesystem cannot show exec bits or symlinks, the
    walker takes a new-to-the-cache file's mode from the newest snapshot."""

    def __init__(self, store: Store, tree_id: bytes) -> None:
        self._tree = StoredTree(store, tree_id)
        self._folders: dict[str, dict[str, tuple[int, bytes, object]]] = {}

    def __call__(self, path: str) -> int | None:
        folder, _, name = path.rpartition("/")
        entry = self._folder(folder).get(name)
        if entry is None or entry[0] == MODE_TREE:
            return None
        return recorded_mode(entry[0])

    def entry(self, path: str) -> Entry | None:
        """(git mode, id) of the file or symlink the tree holds at ``path``, or None."""
        folder, _, name = path.rpartition("/")
        found = self._folder(folder).get(name)
        return (found[0], found[1]) if found is not None and found[0] != MODE_TREE else None

    def _folder(self, rel: str) -> dict[str, tuple[int, bytes, object]]:
        found = self._folders.get(rel)
        if found is not None:
            return found
        if not rel:
            handle: object = self._tree.root()
        else:
            parent, _, name = rel.rpartition("/")
            entry = self._folder(parent).get(name)
            handle = entry[2] if entry is not None and entry[0] == MODE_TREE else None
        try:
            found = self._tree.entries(handle, rel) if handle is not None else {}
        except StoreError:
            found = {}  # a damaged snapshot cannot vouch for modes: new files get the default
        self._folders[rel] = found
        return found
