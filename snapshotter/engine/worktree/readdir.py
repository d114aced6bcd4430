"""The walk's first step in each folder: what it holds, and where to go next.

A folder's tracked entries come from its last listing where ``trust`` says the
folder's own stat vouches for it (or from the size check's listing, for a new
store's first scan), else from listing it now (``listing``). Its subfolders are
then queued, or, in an incremental walk, taken whole from the previous scan
where nothing changed below them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, ItemsView, Iterator

from snapshotter.engine.fsutil import FileStat
from snapshotter.engine.worktree.ignore import IgnoreStack
from snapshotter.engine.worktree.listing import has_gitignore, list_folder, own_rules, tracked_entries
from snapshotter.engine.worktree.packedfolder import PackedFolder, names_of
from snapshotter.engine.worktree.statcache import Folder, Listings, Record
from snapshotter.engine.worktree.trust import KnownStat
from snapshotter.engine.worktree.walkstate import DirNode, Walk
from snapshotter.model import SkippedPath

Lstat = Callable[..., FileStat]
Pairs = Collection[tuple[str, Record | None]]
"""Each tracked file of a folder, and its stat-cache record if any."""
Contents = tuple[IgnoreStack, list[str], set[str], Pairs, Lstat]
"""A folder's inner rules, tracked subfolders, subfolders the rules ignore but
tracked paths lie below, tracked files, and how to ``lstat`` them."""
Queued = tuple[DirNode, str, IgnoreStack, bool]
"""A folder to visit: its node, path, inherited rules, and whether an incremental
walk may still reuse what lies below it."""


class TrustedItems(ItemsView[str, Record]):
    """The records of a folder trusted unchanged whose table is decoded: its
    files are the table's names (a ``PackedFolder``'s are ``PackedItems``)."""

    def __init__(self, table: Folder) -> None:
        super().__init__(table)
        self.table = table

    def __iter__(self) -> Iterator[tuple[str, Record]]:
        return iter(self.table.items())


def read_folder(
    walk: Walk, node: DirNode, path: str, base: str, rules: IgnoreStack, fd: int, table: Folder
) -> Contents | None:
    """The tracked contents of folder ``node`` (open as ``fd`` where folders are
    listed through descriptors, its records ``table``); None if it cannot be listed."""
    trust = walk.trust
    own = trust.own_stat(fd)
    if own is not None:
        vouched = trust.unchanged(own, node.rel, rules, base, table)
        if vouched is not None:  # the table's names are its files: no listing
            shape, inner, known = vouched
            dirs = list(shape[5])
            rescued = {name for name in dirs if name in known[1]} if known[1] else set()
            walk.listings[node.rel] = known
            walk.listing_hits[0] += 1
            walk.shape_hits += 1
            node.shape = shape
            pairs = table.items() if isinstance(table, PackedFolder) else TrustedItems(table)
            return inner, dirs, rescued, pairs, os.stat  # only a folder open as ``fd`` is trusted
        if walk.preload is not None and node.rel not in trust.shapes and walk.preload.relisted(table, own):
            relisted = _relisted(walk, node, base, rules, own, table)
            if relisted is not None:
                return relisted
    return _list(walk, node, path, base, rules, fd, own, table)


def take_vouched(
    walk: Walk, node: DirNode, base: str, rules: IgnoreStack, table: Folder, may_reuse: bool, stack: list[Queued]
) -> int:
    """Folder ``node`` (path ``base``), if the preload's copy vouched for it and
    the walk trusts it as it would with the folder open: its stat is the one
    the copy saw, and every file matched its record there. Its subfolders are
    queued and its records are ``table``, as ``read_folder`` and ``classify``
    would leave them, with no descriptor opened. Returns the entries it holds,
    or -1: visit it as usual (its verdict has not come, or says no)."""
    preload = walk.preload
    found = preload.vouched(table) if preload is not None else None
    if found is None:
        return -1
    total, seen = found
    vouched = walk.trust.unchanged(seen, node.rel, rules, base, table)
    if vouched is None:
        return -1
    shape, inner, known = vouched
    dirs = list(shape[5])
    walk.listings[node.rel] = known
    walk.listing_hits[0] += 1
    walk.shape_hits += 1
    walk.dirs_preloaded += 1
    node.shape = shape
    node.listed = len(table)
    node.records = table
    walk.files_seen += len(table)
    walk.bytes_seen += total
    walk.shared_tables += 1
    if dirs:
        rescued = {name for name in dirs if name in known[1]} if known[1] else set()
        descend(walk, node, base, inner, dirs, rescued, may_reuse, stack)
    return len(dirs) + len(table)


def _relisted(
    walk: Walk, node: DirNode, base: str, rules: IgnoreStack, own: os.stat_result, table: Folder
) -> Contents | None:
    """Folder ``node`` as the preload's copy listed it under its stat ``own``
    (the files of ``table``, no folder), if the walk would judge that listing
    as it did last time; else None: list it."""
    names = names_of(table)
    found = walk.trust.same_names(node.rel, rules, base, names)
    if found is None:
        return None
    inner, known = found
    walk.dirs_listed += 1
    walk.listed.add(node.rel)
    walk.listings[node.rel] = known
    walk.listing_hits[0] += 1
    node.shape = walk.trust.shape(own, inner, ".gitignore" in names, [], False)
    pairs = table.items() if isinstance(table, PackedFolder) else TrustedItems(table)
    return inner, [], set(), pairs, os.stat  # classify takes the copy's verdict


def _list(
    walk: Walk,
    node: DirNode,
    path: str,
    base: str,
    rules: IgnoreStack,
    fd: int,
    own: os.stat_result | None,
    table: Folder,
) -> Contents | None:
    walk.dirs_listed += 1
    known = walk.trust.prelisted(node.rel, own) if own is not None else None
    try:
        entries = known.entries if known is not None else list_folder(path, fd)
    except OSError:
        return None
    gitignore = has_gitignore(entries)
    rules = own_rules(rules, gitignore, node.rel, base)
    rescued: set[str] = set()
    dirs, files = tracked_entries(
        entries,
        node.rel,
        rules,
        walk.cache.listings,
        walk.listings,
        walk.listing_hits,
        walk.unsafe_names,
        rescued,
        walk.repos_found,
    )
    walk.listed.add(node.rel)
    table_get = (table.as_dict() if isinstance(table, PackedFolder) else table).get  # a C lookup per entry
    pairs = [(entry.name, table_get(entry.name)) for entry in files]
    if own is not None:
        node.shape = walk.trust.shape(own, rules, gitignore, dirs, known is not None)
    lstat = lstat_in(fd, files) if known is None else lstat_known(known.stats)
    return rules, dirs, rescued, pairs, lstat


def descend(
    walk: Walk,
    node: DirNode,
    base: str,
    rules: IgnoreStack,
    dirs: list[str],
    rescued: set[str],
    may_reuse: bool,
    stack: list[Queued],
) -> None:
    """Queue folder ``node``'s subfolders ``dirs``, or graft those an
    incremental walk may take whole from the previous scan."""
    prefix = node.rel + "/" if node.rel else ""
    fingerprint = rules.fingerprint
    previous_nodes = walk.previous_nodes
    on_the_way = walk.on_the_way
    deep = walk.deep
    for name in dirs:
        rel = prefix + name
        if may_reuse and rel not in on_the_way and rel not in deep:
            old = previous_nodes.get(rel)
            if old is not None and old.rules == fingerprint:
                node.subdirs.append(old)
                walk.grafted.append(old)
                continue
        child = DirNode(rel, rules=fingerprint)
        node.subdirs.append(child)
        walk.nodes[rel] = child
        inner = rules.inside(rel) if name in rescued else rules
        stack.append((child, base + name, inner, may_reuse and rel not in deep))


def lstat_known(stats: dict[str, KnownStat]) -> Lstat:
    """``os.stat`` answered from the size check's stats where it took one. Those
    only say which files are there and their kind: each file is read afresh
    when hashed, its record taken then, and its size checked again."""

    def known(name: str, dir_fd: int, follow_symlinks: bool) -> FileStat:
        found = stats.get(name)
        return found if found is not None else os.stat(name, dir_fd=dir_fd, follow_symlinks=follow_symlinks)

    return known


def lstat_in(fd: int, entries: list[os.DirEntry[str]]) -> Lstat:
    """``os.stat``, for a folder open as ``fd`` (called with ``dir_fd``; a partial
    costs 10% more per file), else a lookup in its listing's ``entries`` (on
    Windows the listing carries every entry's stat for free)."""
    if fd >= 0:
        return os.stat
    by_name = {entry.name: entry for entry in entries}

    def from_listing(name: str, dir_fd: int, follow_symlinks: bool) -> os.stat_result:
        return by_name[name].stat(follow_symlinks=follow_symlinks)

    return from_listing


def forget_gone_subdirs(
    before: DirNode,
    now: DirNode,
    nodes: dict[str, DirNode],
    listings: Listings,
    forgotten: list[DirNode],
) -> None:
    """Drop what an incremental scan copied from subfolders that are no longer there
    (deleted, ignored now, or turned into a file); those dropped go to ``forgotten``."""
    present = {sub.rel for sub in now.subdirs}
    stack = [sub for sub in before.subdirs if sub.rel not in present]
    while stack:
        gone = stack.pop()
        if nodes.get(gone.rel) is gone:
            del nodes[gone.rel]
            forgotten.append(gone)
        listings.pop(gone.rel, None)
        stack.extend(gone.subdirs)


def skips_below(skipped: list[SkippedPath], grafted: list[DirNode]) -> Iterator[SkippedPath]:
    """The previous scan's skipped paths inside the folders an incremental scan reused."""
    reused = {node.rel for node in grafted}
    for item in skipped:
        path = item.path
        while path:
            if path in reused:
                yield item
                break
            path = path.rpartition("/")[0]
