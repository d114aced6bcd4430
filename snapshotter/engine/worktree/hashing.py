"""The walk's last step: object ids for what it found.

The files queued as changed are hashed (big ones on worker threads: hashlib and
zlib release the GIL), then trees are built bottom-up; a folder whose entries
all came from the stat cache reuses its cached tree id. With ``write`` the
objects are stored, many of them into one pack; without it ids are only computed.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterator

from snapshotter.engine.gitstore.bigfacts import fits
from snapshotter.engine.gitstore.objects import MODE_TREE, describe_lines, object_id, serialize_tree
from snapshotter.engine.gitstore.objectwriter import FileChanged, Hashed, ObjectWriter
from snapshotter.engine.worktree.splithash import SplitHashing
from snapshotter.engine.worktree.statcache import Record, StatCache
from snapshotter.engine.worktree.walkstate import DirNode, Pending, Walk, git_mode_of
from snapshotter.model import SkippedPath, SkipReason

_THREAD_MIN_SIZE = 1 << 20
_WORKERS = 4

Progress = Callable[[int, int], None]


def write_objects(
    walk: Walk, writer: ObjectWriter, write: bool, line_counts: dict[bytes, int | None], progress: Progress | None
) -> tuple[int, int]:
    """Hash the walk's pending files and give every folder its tree id; returns
    (files hashed, bytes hashed). ``line_counts`` receives each new blob's lines."""
    # A scan's new objects go to one pack: a pack and its index cost three fsyncs
    # however many objects they hold, where loose objects cost two each (the file
    # and its folder): 60 for 10 files changed, 0.2 s of a 0.25 s snapshot here.
    # Packs pile up no faster than snapshots that change something, and upkeep
    # merges them geometrically past 20 (``consolidation``).
    changes = bool(walk.pending) or any(not node.clean for node in walk.order)
    batch = writer.batch() if write and changes else contextlib.nullcontext()
    with batch:
        counts = _hash_pending(walk, writer, write, line_counts, progress)
        _build_trees(walk.order, walk.cache, writer, write)
    return counts


def _hash_one(item: Pending, writer: ObjectWriter, write: bool) -> Hashed:
    if item.link_key is not None:
        target = os.fsencode(os.readlink(item.path))
        sha = writer.write(b"blob", target) if write else object_id(b"blob", target)
        return Hashed(sha, item.link_key, len(target), describe_lines(target))
    if write and writer.big_files is not None and fits(item.size):
        from snapshotter.engine.worktree.bigfile import store_big_file  # a big file: its modules load here

        found = store_big_file(item.path, writer.big_files(), item.record[5] if item.record is not None else None)
        if found is not None:
            return found
    return writer.hash_file(item.path, write)


def _skip_reason(exc: BaseException) -> SkipReason:
    if isinstance(exc, FileChanged):
        return SkipReason.CHANGING
    if isinstance(exc, OSError) and exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EISDIR):
        return SkipReason.VANISHED
    return SkipReason.UNREADABLE


def _hash_pending(
    walk: Walk,
    writer: ObjectWriter,
    write: bool,
    line_counts: dict[bytes, int | None],
    progress: Progress | None,
) -> tuple[int, int]:
    pending = walk.pending
    skipped = walk.skipped
    forced = walk.forced
    max_new_file_size = walk.max_new_file_size
    host = walk.host

    def run(item: Pending) -> Hashed | BaseException:
        try:
            return _hash_one(item, writer, write)
        except (OSError, FileChanged) as exc:  # the workspace file; store failures are StoreError
            return exc

    # Many small files: a forked copy hashes the tail of the queue (see splithash).
    # Made before any thread is, since a fork copies only the calling thread.
    split = None
    if walk.split:
        split = SplitHashing.start(pending, writer, write, _hash_one, _skip_reason, _THREAD_MIN_SIZE)
    # Threads pay only for big files: for small ones the GIL hand-offs cost
    # more than hashing and compressing (measured: 2x slower on 2 cores).
    big = [item for item in pending if item.size >= _THREAD_MIN_SIZE]
    pool = None
    if len(big) >= 2:  # only then: a walk that hashes no big file loads no thread pool
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="snapshotter-hash")
    futures = {id(item): pool.submit(run, item) for item in big} if pool is not None else {}

    def outcomes() -> Iterator[Hashed | BaseException | SkipReason]:
        for index, item in enumerate(pending):
            if split is not None:
                if split.owns(index):
                    found = split.result(index, writer)
                    yield found if found is not None else run(item)
                    continue
                if index % 64 == 0:
                    split.receive()  # the pipe holds only 64 KiB: keep the copy going
            future = futures.get(id(item))
            yield future.result() if future is not None else run(item)

    hashed = 0
    total = 0
    try:
        for item, result in zip(pending, outcomes()):
            if not isinstance(result, Hashed):
                reason = result if isinstance(result, SkipReason) else _skip_reason(result)
                skipped.append(SkippedPath(item.rel, reason))
                if reason is SkipReason.UNREADABLE and item.record is not None:
                    _own_records(item.node)[item.name] = item.record  # kept as last recorded, never dropped
                continue
            # A new file that grew past the cap since its lstat; forced paths are tracked whatever their size.
            if item.new and not item.is_link and result.size > max_new_file_size and not forced(item.rel):
                skipped.append(SkippedPath(item.rel, SkipReason.TOO_LARGE))
                continue
            key = result.key
            if host.needs_recorded_modes:
                key = (host.effective_mode(key[0], item.recorded), *key[1:])
            _own_records(item.node)[item.name] = (*key, result.sha)
            line_counts[result.sha] = result.lines
            hashed += 1
            total += result.size
            if progress is not None:
                progress(hashed, len(pending))
    finally:
        if split is not None:
            split.stop()
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    walk.hashed_forked = split.hashed if split is not None else 0
    return hashed, total


def _own_records(node: DirNode) -> dict[str, Record]:
    """Folder ``node``'s records, to change: a folder with a file to hash was
    given a table of its own by ``classify`` (a shared one would be copied)."""
    records = node.records
    if not isinstance(records, dict):
        records = node.records = dict(records)
    return records


def _build_trees(order: list[DirNode], cache: StatCache, writer: ObjectWriter, write: bool) -> None:
    """Give every folder its tree id, children before parents."""
    cached_dirs = cache.dirs
    for node in reversed(order):
        extras = node.extras
        count = len(node.records) + (len(extras) if extras else 0)
        clean = node.clean
        for sub in node.subdirs:
            if sub.tree_id is not None:
                count += 1
            clean = clean and sub.clean
        record = cached_dirs.get(node.rel)
        # "clean" must mean "same tree id as cached", or a parent would reuse a
        # stale id for a folder whose entries were all hits but one went away.
        if count == 0:  # nothing tracked: contributes no entry, so the parent's count decides
            node.tree_id = None
            continue
        node.clean = clean = clean and record is not None and record[0] == count
        if clean and record is not None:
            node.tree_id = record[1]
            continue
        entries = [(os.fsencode(name), git_mode_of(record[0]), record[5]) for name, record in node.records.items()]
        if extras:
            entries.extend((os.fsencode(name), mode, sha) for name, (mode, sha) in extras.items())
        entries.extend(
            (os.fsencode(sub.rel.rpartition("/")[2]), MODE_TREE, sub.tree_id)
            for sub in node.subdirs
            if sub.tree_id is not None
        )
        content = serialize_tree(entries)
        node.tree_id = writer.write(b"tree", content) if write else object_id(b"tree", content)
