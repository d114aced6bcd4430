"""The user's own git repository, read and never written: where it is, which files
its index tracks, where its ``info/exclude`` is.

git keeps a file it tracks whatever the ignore rules say, so a snapshot does too:
the paths in the index of the repository the workspace is (or lies inside) are
tracked. The workspace may be the repository's root, a folder inside it (an
agent rooted at ``packages/app`` of a monorepo), or a linked worktree or
submodule checkout whose ``.git`` is a file naming its git folder. The search
goes up from the workspace and stops at the filesystem's root or at a mount
boundary, as git does without ``GIT_DISCOVERY_ACROSS_FILESYSTEM``; unlike git,
it passes over a repository at a refused root (the home, say) above the workspace.

Every file here is read guarded (``fsutil.read_side_file``: without blocking,
a regular file only, up to a cap): a named pipe or a link to a device planted
as a ``.git`` file, ``commondir`` or index (the workspace's repository's, or
a nested one's) is skipped as unreadable, never waited on.

The index is read with our own parser (versions 2 to 4): it needs the paths,
and the few entries the working tree does not hold (a submodule's gitlink, a
file outside a sparse checkout, see :class:`IndexEntry`); dulwich's full parse
took 0.95 s for 100,000 entries here against 0.06 s. A missing, unreadable,
damaged or unsupported index (a split index) is a warning, and the snapshot
goes on with the ignore rules alone.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
import os
import struct
from dataclasses import dataclass

from snapshotter.engine.fsutil import SMALL_FILE_CAP, read_side_file
from snapshotter.engine.gitstore.location import is_refused_root
from snapshotter.engine.worktree.ignorelines import warn_once

log = logging.getLogger("snapshotter")

_SIGNATURE = b"DIRC"
INDEX_CAP = 1 << 30
"""The largest index read. git's index takes about 96 bytes a file (measured:
9.6 MB for 100,000 files), so 1 GiB is some 11 million files, past the biggest
monorepos' indexes; a bigger one is a warning (the ignore rules alone decide).
Its signature is checked first, so a sparse file of zeros costs nothing."""
_EXTENDED = 0x4000
_SKIP_WORKTREE = 0x4000
"""In an entry's extended flags (index version 3 and up): outside the sparse checkout."""
_NAME_MASK = 0x0FFF
_GITLINK = b"\x00\x00\xe0\x00"
"""Mode 160000 as the index stores it: a submodule's commit."""
MODE_GITLINK = 0o160000


@dataclass(frozen=True)
class IndexEntry:
    """An entry of the user's index that the working tree may not hold, which
    ``git add -A`` keeps all the same: a submodule's gitlink (``mode`` 160000,
    ``sha`` its commit), kept while its folder is there but not checked out;
    a file marked skip-worktree (outside a sparse checkout), kept while it is
    absent. ``path`` is relative to the workspace."""

    path: bytes
    mode: int
    sha: bytes
    skip_worktree: bool


@dataclass(frozen=True)
class UserRepository:
    """The repository a workspace belongs to."""

    root: str
    """The folder holding its ``.git`` (the top of its working tree)."""
    git_dir: str
    """This working tree's git folder: its index lives here."""
    common_dir: str
    """The git folder its worktrees share: ``info/exclude`` lives here."""
    prefix: str
    """The workspace's path below ``root``, posix style ("" when it is the root)."""

    @property
    def index_path(self) -> str:
        return os.path.join(self.git_dir, "index")

    @property
    def exclude_path(self) -> str:
        return os.path.join(self.common_dir, "info", "exclude")


def find_repository(workspace: str, stop_at: str | None = None) -> UserRepository | None:
    """The repository ``workspace`` is, or lies inside; None if there is none (or
    none below ``stop_at``, when given). A repository whose root is a folder
    refused as a workspace (a home made a repository of its dotfiles, ``git init
    ~``) is not the repository of a folder below it: its ignore rules (often
    ``*``) and its index are about the home, and would make a project's
    snapshots silently empty."""
    try:
        device = os.stat(workspace).st_dev
    except OSError:
        return None
    folder = workspace
    while True:
        found = _git_dir_of(folder) if folder == workspace or not is_refused_root(folder) else None
        if found is not None:
            git_dir, common_dir = found
            rel = os.path.relpath(workspace, folder)
            return UserRepository(folder, git_dir, common_dir, "" if rel == "." else rel.replace(os.sep, "/"))
        parent = os.path.dirname(folder)
        if parent == folder or folder == stop_at:
            return None
        try:
            if os.stat(parent).st_dev != device:
                return None  # a mount boundary: git stops here too
        except OSError:
            return None
        folder = parent


def _git_dir_of(folder: str) -> tuple[str, str] | None:
    """(git dir, common dir) if ``folder`` holds a ``.git`` folder, or a ``.git``
    file saying ``gitdir: PATH`` (linked worktrees, submodules)."""
    dot_git = os.path.join(folder, ".git")
    try:
        if os.path.isdir(dot_git):
            git_dir = dot_git
        elif os.path.isfile(dot_git):
            text = read_side_file(dot_git, SMALL_FILE_CAP).decode("utf-8", "surrogateescape").strip()
            if not text.startswith("gitdir:"):
                return None
            git_dir = os.path.normpath(os.path.join(folder, text[len("gitdir:") :].strip()))
            if not os.path.isdir(git_dir):
                return None
        else:
            return None
        common = git_dir
        try:
            named = read_side_file(os.path.join(git_dir, "commondir"), SMALL_FILE_CAP).strip()
            if named:
                common = os.path.normpath(os.path.join(git_dir, named.decode("utf-8", "surrogateescape")))
        except OSError:
            pass
        return git_dir, common
    except OSError:
        return None


@dataclass(frozen=True)
class TrackedPaths:
    """Paths a repository's index tracks, below the workspace, sorted as git sorts
    them (bytes), so that a question costs a binary search."""

    paths: tuple[bytes, ...]
    checksum: bytes
    """Changes whenever the set of paths may have changed."""
    absent: tuple[IndexEntry, ...] = ()
    """Gitlinks and skip-worktree entries: what ``git add -A`` keeps unchecked out."""

    @classmethod
    def of(cls, paths: list[bytes] | tuple[bytes, ...], absent: tuple[IndexEntry, ...] = ()) -> TrackedPaths:
        ordered = tuple(sorted(set(paths)))
        return cls(ordered, hashlib.sha1(b"\0".join(ordered)).digest(), absent)

    def merged(self, other: TrackedPaths) -> TrackedPaths:
        merged = TrackedPaths.of(self.paths + other.paths, self.absent + other.absent)
        return TrackedPaths(merged.paths, hashlib.sha1(self.checksum + other.checksum).digest(), merged.absent)

    def below(self, folder: str) -> TrackedPaths:
        """These paths as seen from the workspace, for a repository rooted at ``folder`` in it."""
        prefix = os.fsencode(folder) + b"/"
        absent = tuple(IndexEntry(prefix + e.path, e.mode, e.sha, e.skip_worktree) for e in self.absent)
        return TrackedPaths(tuple(prefix + path for path in self.paths), self.checksum + prefix, absent)

    def has(self, path: str) -> bool:
        """Is the file ``path`` (workspace-relative) tracked?"""
        key = os.fsencode(path)
        at = bisect.bisect_left(self.paths, key)
        return at < len(self.paths) and self.paths[at] == key

    def has_below(self, folder: str) -> bool:
        """Does any tracked path lie below ``folder``?"""
        key = os.fsencode(folder) + b"/"
        at = bisect.bisect_left(self.paths, key)
        return at < len(self.paths) and self.paths[at].startswith(key)


def tracked_paths(repository: UserRepository) -> TrackedPaths | None:
    """The paths the repository's index tracks below the workspace, relative to it;
    None (with a warning once) when the index cannot be used."""
    path = repository.index_path
    try:
        data = read_side_file(path, INDEX_CAP, starts_with=_SIGNATURE)
    except FileNotFoundError:
        return None  # nothing added yet: nothing tracked
    except OSError as exc:
        warn_once(
            (path, "unreadable"), "cannot read %s (%s); tracked files follow the ignore rules alone", path, exc.strerror
        )
        return None
    try:
        absent: list[IndexEntry] = []
        paths = parse_index(data, absent)
    except ValueError as exc:
        warn_once((path, str(exc)), "%s: %s; tracked files follow the ignore rules alone", path, exc)
        return None
    prefix = repository.prefix.encode("utf-8", "surrogateescape") + b"/" if repository.prefix else b""
    if prefix:
        start = bisect.bisect_left(paths, prefix)
        end = bisect.bisect_left(paths, prefix[:-1] + b"0")  # "0" follows "/" in byte order
        paths = [p[len(prefix) :] for p in paths[start:end]]
        absent = [
            IndexEntry(e.path[len(prefix) :], e.mode, e.sha, e.skip_worktree)
            for e in absent
            if e.path.startswith(prefix)
        ]
    return TrackedPaths(tuple(paths), data[-20:] + prefix, tuple(absent))


def parse_index(data: bytes, absent: list[IndexEntry] | None = None) -> list[bytes]:
    """The paths of a git index (versions 2, 3 and 4), in its order (sorted);
    its gitlinks and skip-worktree entries go to ``absent``, if given.

    ValueError for anything else: not an index, a damaged one (its trailing
    SHA-1 is checked), a version we do not know, or a split index, whose
    entries live partly in another file.
    """
    if len(data) < 32 or data[:4] != _SIGNATURE:
        raise ValueError("not a git index")
    if len(data) > INDEX_CAP:
        raise ValueError("index larger than 1 GiB")
    if hashlib.sha1(data[:-20]).digest() != data[-20:]:
        raise ValueError("the index is damaged (its checksum does not match)")
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        raise ValueError(f"index version {version} is not supported")
    paths: list[bytes] = []
    position = 12
    previous = b""
    end_of_entries = len(data) - 20
    find = data.find
    try:
        for _ in range(count):
            entry = position
            flags = (data[position + 60] << 8) | data[position + 61]
            name_at = position + 62
            if version >= 3 and flags & _EXTENDED:
                name_at += 2
            if version == 4:
                strip, name_at = _varint(data, name_at)
                end = find(b"\0", name_at, end_of_entries)
                if end < 0 or strip > len(previous):
                    raise ValueError("the index is damaged")
                path = previous[: len(previous) - strip] + data[name_at:end]
                position = end + 1
            else:
                length = flags & _NAME_MASK
                end = find(b"\0", name_at, end_of_entries) if length == _NAME_MASK else name_at + length
                if end < 0 or end > end_of_entries:
                    raise ValueError("the index is damaged")
                path = data[name_at:end]
                position += ((end - position) // 8 + 1) * 8  # the name is padded with 1 to 8 NULs
            if absent is not None:
                skip = version >= 3 and flags & _EXTENDED and data[entry + 62] << 8 & _SKIP_WORKTREE
                if skip or data[entry + 24 : entry + 28] == _GITLINK:
                    mode = struct.unpack_from(">I", data, entry + 24)[0]
                    absent.append(IndexEntry(path, mode, data[entry + 40 : entry + 60], bool(skip)))
            paths.append(path)
            previous = path
    except IndexError:
        raise ValueError("the index is damaged (entries end early)") from None
    if _has_extension(data, position, end_of_entries, b"link"):
        raise ValueError("a split index is not supported")
    return paths


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """git's offset varint (``decode_varint``): 7 bits a byte, each continuation adding one."""
    byte = data[at]
    value = byte & 0x7F
    at += 1
    while byte & 0x80:
        byte = data[at]
        value = ((value + 1) << 7) | (byte & 0x7F)
        at += 1
    return value, at


def _has_extension(data: bytes, position: int, end: int, name: bytes) -> bool:
    while position + 8 <= end:
        signature = data[position : position + 4]
        size = struct.unpack_from(">I", data, position + 4)[0]
        if signature == name:
            return True
        position += 8 + size
    return False
