"""The folder-trust rule: when a folder's own stat may vouch for its listing.

Creating, removing or renaming an entry changes its folder's mtime and ctime,
so a folder whose own (mtime, ctime, inode) still equal those seen when it was
last listed holds the same entries as then. The walk then does not list it
again: its tracked files are the names in its stat-cache table, which it
``lstat``s as usual (git's "untracked cache" does the same). This module is the
one place that decides when that holds; the walk's steps only ask it.

- Settled. Timestamps advance by clock ticks: a folder changed again within the
  tick of a change seen by a listing keeps the stat that listing saw. A stat
  vouches only for a listing taken well after the folder's last change
  (``fsutil.settled``), and a shape whose ctime is at or above the stat cache's
  racy cutoff is not trusted (the ctime, unlike the mtime, cannot be set back).
- Shape. What is kept of a folder listed (``statcache.Shape``): its stat, taken
  before the listing (a change made while listing makes the shape stale, never
  wrong), the fingerprint of the rules inside it (under other rules the
  verdicts may differ), whether it has a ``.gitignore``, and its tracked
  subfolders. A shape holds only while the folder's table has a record for
  every file listed.
  Under other rules (a ``.gitignore`` above changed), a folder that ignored
  nothing is judged again from its shape and table, and listed only if the new
  rules ignore one of its entries.
- After a restore. Writing a file replaces it (unlink, then create), which
  changes its folder's stat, so a restore drops the shapes of the folders it
  wrote to. Where it only rewrote files, it gives each such folder its shape
  back once it has written everything (``reshaped``): the folder's stat, taken
  first, must have settled, and a listing taken after it must find the very
  entries its last listing judged (the same digest of names and kinds under
  the same rules), each file in its table. Otherwise the folder stays without
  a shape, and the next walk lists it: listing 5,000 folders again after a
  restore of 10,000 files cost the next status 0.35 s of its 0.6 s.
- Relisting. A folder without a shape (a restore wrote to it) is listed
  again; where the preload's copy already listed it under the very stat the
  walk sees now and found only the files of its table, the walk takes that
  listing if those names are the ones it last judged under the same rules,
  with nothing ignored (``same_names``; see ``preload``).
- Prelisting. The size check of a new store lists every folder; the store's
  first scan takes those whose stat has not changed since instead of listing
  them again (only which entries exist is trusted: every file is read afresh).
- Tracked paths. When the paths tracked whatever the rules say (the user's git
  index) changed, folders holding ignored names are listed again: which of
  those names are tracked may have changed.
- Off with ``trust_folders`` (the ``trust_folder_mtimes`` option) where folder
  mtimes lie, and wherever folders are not listed through a descriptor
  (Windows, where ``st_ctime`` is the creation time besides): the stat must be
  the open folder's own, taken before its listing.

``fsutil.settled`` stays the plain timestamp predicate, since the store also
uses it for its refs; everything about trusting a folder is here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from snapshotter.engine.fsutil import settled, stat_key
from snapshotter.engine.worktree.defaults import VENV_MARKER
from snapshotter.engine.worktree.ignore import IgnoreStack
from snapshotter.engine.worktree.listing import LIST_BY_FD, list_folder, listing_key, open_folder, own_rules
from snapshotter.engine.worktree.packedfolder import names_of
from snapshotter.engine.worktree.statcache import Folder, Shape, StatCache


class FolderStat(Protocol):
    """What the rule reads of a folder's own stat: an ``os.stat_result``, or the
    stat the preload's copy saw (``preload.Seen``)."""

    @property
    def st_mtime_ns(self) -> int: ...
    @property
    def st_ctime_ns(self) -> int: ...
    @property
    def st_ino(self) -> int: ...


def same_stat(own: FolderStat, mtime_ns: int, ctime_ns: int, inode: int) -> bool:
    """Whether a folder's stat still shows the (mtime, ctime, inode) seen before."""
    return own.st_ctime_ns == ctime_ns and own.st_mtime_ns == mtime_ns and own.st_ino == inode


def shape_of(
    own: os.stat_result, rules: IgnoreStack, gitignore: bool, dirs: list[str], walk_began_ns: int
) -> Shape | None:
    """The shape of a folder just listed, from its stat taken before the listing
    (a change made while listing makes the shape stale, never wrong); None if
    the folder changed too recently to be trusted by its stat."""
    if not settled(own, walk_began_ns):
        return None
    return (own.st_mtime_ns, own.st_ctime_ns, own.st_ino, rules.fingerprint, gitignore, tuple(dirs))


class KnownStat:
    """What the first scan reads of a file's ``lstat`` taken by the size check.
    Kept for every file of a new workspace until the walk reaches its folder:
    an ``os.stat_result`` holds about 650 bytes with its numbers, this about 200."""

    __slots__ = ("st_blocks", "st_ctime_ns", "st_ino", "st_mode", "st_mtime_ns", "st_size")

    def __init__(self, st: os.stat_result) -> None:
        self.st_mode, self.st_size, self.st_mtime_ns, self.st_ctime_ns, self.st_ino = stat_key(st)  # shared ints
        self.st_blocks: int | None = getattr(st, "st_blocks", None)


@dataclass(frozen=True)
class Listed:
    """One folder as the size check listed it: its own stat, taken before the
    listing, its entries, and the ``lstat`` of each file it counted."""

    own: os.stat_result
    entries: list[os.DirEntry[str]]
    stats: dict[str, KnownStat]


@dataclass
class Prelisting:
    """What the size check of a new store listed, for the store's first scan.

    A folder whose stat still equals the one taken before its listing (and
    had settled then, as for shapes) holds the same entries: the scan takes
    them instead of listing and ``lstat``ing the folder again. Only which
    entries exist is trusted this way; every file is read afresh when hashed.
    """

    began_ns: int
    folders: dict[str, Listed] = field(default_factory=dict)

    def take(self, rel: str, own: os.stat_result) -> Listed | None:
        """Folder ``rel``'s listing, if its stat ``own`` shows it unchanged (each is taken once)."""
        listed = self.folders.pop(rel, None)
        if listed is None or not settled(own, self.began_ns):
            return None
        before = listed.own
        return listed if same_stat(own, before.st_mtime_ns, before.st_ctime_ns, before.st_ino) else None


class FolderTrust:
    """The rule as one walk applies it: which folders it may take unlisted, and
    the shapes it leaves for the next walk."""

    __slots__ = ("began_ns", "cutoff", "listings", "own_stat", "prelisting", "shapes", "tracked_moved")

    def __init__(
        self, cache: StatCache, cutoff: int, trust_folders: bool, tracked: bytes, prelisting: Prelisting | None
    ) -> None:
        self.began_ns = time.time_ns()  # the filesystem's clock, for local filesystems
        self.cutoff = cutoff
        trusted = trust_folders and LIST_BY_FD
        self.own_stat: Callable[[int], os.stat_result | None] = os.fstat if trusted else _no_stat
        """The stat of a folder open as a descriptor, taken before it is listed,
        if that stat may vouch for anything; else None (see the module's docstring)."""
        self.shapes = cache.shapes if trust_folders else {}
        self.listings = cache.listings
        self.tracked_moved = cache.tracked != tracked
        """The tracked paths changed since the cache: folders holding ignored names are listed again."""
        self.prelisting = prelisting

    def unchanged(
        self, own: FolderStat, rel: str, rules: IgnoreStack, base: str, table: Folder
    ) -> tuple[Shape, IgnoreStack, tuple[bytes, frozenset[str]]] | None:
        """Folder ``rel``'s shape, the rules inside it and its ignore verdicts, if
        it still holds the entries its shape recorded; else None: list it.

        Creating, removing or renaming an entry changes a folder's mtime and ctime.
        A shape whose ctime is at or above the cutoff is racy: the folder may have
        changed again within the same clock tick (the ctime, unlike the mtime,
        cannot be set back). A shape recorded under other rules may have other
        verdicts: see :meth:`_judged_again`.
        """
        known = self.listings.get(rel)
        if known is None or (self.tracked_moved and known[1]):
            return None
        shape = self.shapes.get(rel)
        # Racy: ``racy.fresh``, inlined (once per folder of every walk).
        if shape is None or shape[1] >= self.cutoff or not same_stat(own, shape[0], shape[1], shape[2]):
            return None
        inner = own_rules(rules, shape[4], rel, base)
        if inner.fingerprint == shape[3]:
            return shape, inner, known
        return _judged_again(shape, inner, known, rel, table)

    def same_names(
        self, rel: str, rules: IgnoreStack, base: str, names: list[str]
    ) -> tuple[IgnoreStack, tuple[bytes, frozenset[str]]] | None:
        """The rules inside folder ``rel`` and its ignore verdicts, if a listing
        that found exactly ``names`` (files only) is the listing the last walk
        judged under the same rules, and it ignored none of them; else None."""
        known = self.listings.get(rel)
        if known is None or known[1]:
            return None
        inner = own_rules(rules, ".gitignore" in names, rel, base)
        return (inner, known) if listing_key(inner.fingerprint, sorted(names)) == known[0] else None

    def prelisted(self, rel: str, own: os.stat_result) -> Listed | None:
        """The size check's listing of folder ``rel``, if it still holds."""
        return self.prelisting.take(rel, own) if self.prelisting is not None else None

    def shape(
        self, own: os.stat_result, rules: IgnoreStack, gitignore: bool, dirs: list[str], prelisted: bool
    ) -> Shape | None:
        """The shape of a folder just listed (by the size check if ``prelisted``)."""
        began = self.prelisting.began_ns if prelisted and self.prelisting is not None else self.began_ns
        return shape_of(own, rules, gitignore, dirs, began)


def _judged_again(
    shape: Shape, inner: IgnoreStack, known: tuple[bytes, frozenset[str]], rel: str, table: Folder
) -> tuple[Shape, IgnoreStack, tuple[bytes, frozenset[str]]] | None:
    """The shape of an unchanged folder whose rules changed (a restore wrote a
    ``.gitignore`` above it back: every folder below has other rules), if the
    new rules ignore none of its entries either; else None: list it.

    Its entries are known without listing it: its stat is the shape's, so they
    are those listed then, and as nothing was ignored then (``known``) they are
    the files of its table and the subfolders of its shape. Judging those names
    afresh is what listing it would do, less the listing: after a restore over
    a changed root ``.gitignore``, a monorepo's next scan listed all its 12,900
    folders again."""
    if known[1]:
        return None  # ignored names then: their kinds are not kept, so list it
    files, dirs = names_of(table), shape[5]
    prefix = rel + "/" if rel else ""
    if inner.excludes_environments and VENV_MARKER in files and rel:
        return None
    if any(inner.by_rules(prefix + name, False) for name in files):
        return None
    if any(inner.by_rules(prefix + name, True) for name in dirs):
        return None
    names = sorted([*files, *(name + "/" for name in dirs)])
    return (*shape[:3], inner.fingerprint, *shape[4:]), inner, (listing_key(inner.fingerprint, names), frozenset())


def reshaped(root: str, before: Mapping[str, Shape], cache: StatCache) -> int:
    """Give back its shape to each folder a restore wrote to (``before``: the
    shapes before it; ``cache``: with the restore's records, which dropped the
    shapes of the folders they are in), where the folder still holds the entries
    its last listing judged; how many got one (see the module's docstring).

    The folder's stat is taken before it is listed, as a walk takes it, and must
    have settled by the time this began: a change made after the stat changes it.
    The listing must have the digest of the one the cache kept under the shape's
    rules (the same names, of the same kinds), and the folder's table must hold
    exactly the files listed that those rules did not ignore: a file the rules
    ignore but the restore wrote over (in the way of the target) leaves its
    folder to be listed, as does one tracked whatever the rules say."""
    if not LIST_BY_FD:
        return 0
    began_ns = time.time_ns()
    shapes, listings = cache.shapes, cache.listings
    below = root.rstrip(os.sep) + os.sep
    count = 0
    for rel, shape in before.items():
        known = listings.get(rel)
        if rel in shapes or known is None:
            continue  # not written to; or no verdicts kept to compare with
        path = below + rel.replace("/", os.sep) if rel else root
        try:
            fd = open_folder(path, not rel)
        except OSError:
            continue
        try:
            own = os.fstat(fd)
            if not settled(own, began_ns):
                continue
            entries = list_folder(path, fd)
            names = [entry.name + "/" if entry.is_dir(follow_symlinks=False) else entry.name for entry in entries]
        except OSError:
            continue
        finally:
            os.close(fd)
        names.sort()
        if listing_key(shape[3], names) != known[0]:
            continue
        tracked = {name for name in names if name[-1:] != "/" and name not in known[1]}
        table = cache.folder(rel)
        if len(table) != len(tracked) or not tracked.issuperset(table):
            continue  # a record of an ignored file (written over as in the way), or one missing
        shapes[rel] = (own.st_mtime_ns, own.st_ctime_ns, own.st_ino, *shape[3:])
        count += 1
    return count


def _no_stat(fd: int) -> None:
    return None


class Visited(Protocol):
    """A folder as a walk left it (``walkstate.DirNode``)."""

    @property
    def shape(self) -> Shape | None: ...
    @property
    def records(self) -> Folder: ...
    @property
    def listed(self) -> int: ...


def lasting_shapes(nodes: Mapping[str, Visited]) -> dict[str, Shape]:
    """Folder -> its shape, for the next stat cache: a shape holds only while its
    folder's table has a record for every file listed."""
    return {rel: node.shape for rel, node in nodes.items() if node.shape and len(node.records) == node.listed}
