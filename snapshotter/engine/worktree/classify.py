"""The walk's step for each file: unchanged since its stat-cache record, or to hash.

A file whose stat matches its record (and is not racy) keeps its blob id
without being read; a folder whose files all match takes the cache's table of
records whole. The rest are queued to be hashed, or skipped: special files,
new files over ``max_new_file_size``, and new sparse files (``limits.is_sparse``).
"""

from __future__ import annotations

from snapshotter.engine.fsutil import USE_CTIME
from snapshotter.engine.worktree.limits import is_sparse, stored_size
from snapshotter.engine.worktree.packedfolder import PackedItems
from snapshotter.engine.worktree.racy import NOTHING_FRESH, Miss, fresh, unchanged_files
from snapshotter.engine.worktree.readdir import Lstat, Pairs, TrustedItems
from snapshotter.engine.worktree.statcache import Folder
from snapshotter.engine.worktree.walkstate import DirNode, Pending, Walk
from snapshotter.model import SkippedPath, SkipReason

_S_IFMT = 0o170000
_S_IFREG = 0o100000
_S_IFLNK = 0o120000


def classify(walk: Walk, node: DirNode, base: str, pairs: Pairs, lstat: Lstat, fd: int, table: Folder) -> None:
    """Check folder ``node``'s tracked files (``pairs``, whose records come from
    ``table``) and set its records to those that still match."""
    preload = walk.preload
    if (
        preload is not None
        and (type(pairs) is PackedItems or type(pairs) is TrustedItems)
        and preload.may_hold(len(walk.order) - 1)
    ):
        # A folder trusted unchanged (or relisted by the copy) that the preload's copy got to first.
        total = preload.total(table)
        if total is not None:
            _all_matched(walk, node, table, total)
            walk.dirs_preloaded += 1
            return
    if type(pairs) is PackedItems and USE_CTIME and not walk.carry_modes:
        # A folder as loaded, trusted unchanged: checked on the packed bytes,
        # decoding nothing; at the first file that differs, checked below.
        total = pairs.folder.all_match(lstat, fd, walk.cutoff)
        if total is not None:
            _all_matched(walk, node, table, total)
            return
    # With modes carried over from the records every file is examined: its mode is the effective one.
    hits, bytes_seen, misses, missed = unchanged_files(
        pairs, lstat, fd, NOTHING_FRESH if walk.carry_modes else walk.cutoff
    )
    walk.bytes_seen += bytes_seen
    specials: list[str] = []
    if missed or misses:
        prefix = node.rel + "/" if node.rel else ""
        if missed:
            walk.skipped.extend(SkippedPath(prefix + name, SkipReason.VANISHED) for name in missed)
        if misses:
            hits += _examine(walk, node, base, prefix, misses, missed, specials)
    walk.files_seen += hits
    if not missed and hits == len(table):
        node.records = table
        walk.shared_tables += bool(table)
    else:
        node.clean = False
        gone = set(missed + specials)
        node.records = {name: record for name, record in pairs if record is not None and name not in gone}


def _all_matched(walk: Walk, node: DirNode, table: Folder, total: int) -> None:
    """Every file of folder ``node`` matched its record: it shares the cache's table."""
    walk.files_seen += len(table)
    walk.bytes_seen += total
    node.records = table
    walk.shared_tables += bool(table)


def _examine(
    walk: Walk, node: DirNode, base: str, prefix: str, misses: list[Miss], missed: list[str], specials: list[str]
) -> int:
    """Queue the files that did not match their record to be hashed, or skip
    them, adding their names to ``missed`` (or ``specials``). Returns how many
    matched after all, on a host whose files take their mode as recorded (see
    ``hostfs``)."""
    skipped = walk.skipped
    pending = walk.pending
    carry_modes = walk.carry_modes
    forced = walk.forced
    cutoff = walk.cutoff
    seen = hits = bytes_seen = 0
    for name, record, st in misses:
        st_mode = st.st_mode
        rel = prefix + name
        kind = st_mode & _S_IFMT
        if kind != _S_IFREG and kind != _S_IFLNK:
            skipped.append(SkippedPath(rel, SkipReason.SPECIAL))
            specials.append(name)
            continue
        seen += 1
        bytes_seen += stored_size(st)
        key = (st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns if USE_CTIME else 0, st.st_ino)
        recorded = None
        if carry_modes:
            previous_mode = walk.previous_mode
            recorded = record[0] if record is not None else previous_mode(rel) if previous_mode else None
            key = (walk.host.effective_mode(st_mode, recorded), *key[1:])
            if record is not None and record[:5] == key and fresh(st.st_mtime_ns, cutoff):
                seen -= 1
                hits += 1
                continue
        missed.append(name)
        is_link = kind == _S_IFLNK  # a real symlink: read its target, never follow it
        if record is None and not is_link and not forced(rel):
            if st.st_size > walk.max_new_file_size:
                skipped.append(SkippedPath(rel, SkipReason.TOO_LARGE))
                bytes_seen -= stored_size(st)  # left out: it counts toward no cap
                continue
            if not walk.sparse_files and is_sparse(st, base + name):
                skipped.append(SkippedPath(rel, SkipReason.TOO_LARGE, "sparse: mostly holes"))
                bytes_seen -= stored_size(st)
                continue
        pending.append(Pending(node, name, base, is_link, st.st_size, key if is_link else None, recorded, record))
    walk.files_seen += seen
    walk.bytes_seen += bytes_seen
    return hits
