"""Recording a written scan: its numstat against the newest snapshot, then its commit.

A snapshot commit carries (files changed, lines added, lines deleted) from the
snapshot before it. When a restore records the state it replaces, the newest
snapshot is often the very one it restores: the comparison the restore made
of its target with the scan is handed in (``compared``), so the same trees
are not compared again for the counts.

A safety snapshot (``record(..., count_lines=False)``) records its file count
only: its lines are counted on first request by :func:`stored_lines`, through
the same :func:`count_lines` as here, from the tree its commit names (see
``engine/gitstore/linecounts.py`` for where they are kept).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from snapshotter.engine.compare.diff import ContentLoader, Marks, file_numstat, no_marks
from snapshotter.engine.compare.treediff import Change, Comparison, ScannedTree, StoredTree, changes
from snapshotter.engine.gitstore import trailers
from snapshotter.engine.gitstore.catalog import Catalog
from snapshotter.engine.gitstore.objects import EMPTY_TREE
from snapshotter.engine.gitstore.store import Store
from snapshotter.engine.worktree.walkstate import git_mode_of
from snapshotter.model import SnapshotInfo

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:  # annotations only: reading the store (``log``, ``show``) does not load the walker
    from snapshotter.engine.worktree.walker import Scan

Numstat = tuple[int, int, int]
"""(files changed, lines added, lines deleted)."""


@dataclass(frozen=True)
class Recorded:
    """The snapshot that holds a scan."""

    info: SnapshotInfo


def numstat(
    store: Store,
    current: Scan,
    base: bytes,
    read: ContentLoader,
    compared: Comparison | None = None,
    *,
    lines: bool = True,
    marked: Marks = no_marks,
) -> tuple[Numstat, list[Change]]:
    """The numstat from the stored tree ``base`` to ``current``, and the changes
    it counted (a first snapshot: only the files not hashed on the way);
    blobs are read through ``read``. ``compared``, a comparison of a stored
    tree with this very scan made already: if that tree is ``base``, it is
    taken as it is. Without ``lines`` only files are counted (no blob is
    read): 0 lines; ``marked``: the ``.gitattributes`` verdicts (``-diff``
    counts no lines)."""
    if base == EMPTY_TREE:  # a first snapshot: every file is added, and no tree is compared
        files, additions, to_count = _all_added(current, marked)
    elif compared is not None and compared.base == base and compared.scan is current:
        to_count = compared.found
        files, additions = len(to_count), 0
    else:
        to_count = changes(StoredTree(store, base), ScannedTree(current))  # no tree read back
        files, additions = len(to_count), 0
    if not lines:
        return (files, 0, 0), to_count
    added, deletions = count_lines(to_count, read, current.line_counts, marked)
    return (files, additions + added, deletions), to_count


def count_lines(
    to_count: Iterable[Change],
    read: ContentLoader,
    line_counts: Mapping[bytes, int | None] | None = None,
    marked: Marks = no_marks,
) -> tuple[int, int]:
    """(lines added, lines deleted) over ``to_count``, git's numstat. An added
    blob whose lines are in ``line_counts`` (a scan hashed it) is not read back."""
    additions = deletions = 0
    for change in to_count:
        verdict = marked(change.path)
        if verdict:
            continue  # binary by its attributes: no lines
        added = change.new[1] if change.old is None and change.new is not None else None
        if verdict is None and line_counts and added is not None and added in line_counts:
            additions += line_counts[added] or 0  # added: no need to read it back
            continue
        added_lines, deleted_lines = file_numstat(change, read, read, verdict)
        additions += added_lines
        deletions += deleted_lines
    return additions, deletions


def stored_lines(
    store: Store, tree: bytes, against: bytes, read: ContentLoader, marked: Marks = no_marks
) -> tuple[int, int]:
    """The deferred line counts of a snapshot of ``tree`` recorded against
    ``against``: what :func:`numstat` would have counted when it was taken."""
    return count_lines(changes(StoredTree(store, against), StoredTree(store, tree)), read, None, marked)


def _all_added(current: Scan, marked: Marks) -> tuple[int, int, list[Change]]:
    """A first snapshot's files, the lines of those this scan hashed, and the
    files it did not hash (their lines are read back)."""
    line_counts = current.line_counts
    additions = 0
    to_count: list[Change] = []
    for path, record in current.tracked_records():
        lines = line_counts.get(record[5], -1)
        verdict = marked(path)
        if verdict:
            continue  # binary by its attributes
        if lines == -1 or (lines is None and verdict is False):  # not hashed, or text whatever its bytes: read it
            to_count.append(Change(path, None, (git_mode_of(record[0]), record[5])))
        else:
            additions += lines or 0
    return current.tracked_count(), additions, to_count


def commit(
    store: Store,
    catalog: Catalog,
    current: Scan,
    message: str,
    label: str | None,
    metadata: dict[str, str],
    stats: Numstat,
    when: datetime,
    uncounted_against: bytes | None = None,
    session: str | None = None,
    moves_base: bool = True,
) -> SnapshotInfo:
    """Write the snapshot commit of ``current`` and its ref (the next free
    number, whatever other writers took), and make it the base (unless not
    ``moves_base``: a snapshot the library takes for itself). With
    ``uncounted_against`` its lines are not counted yet (see ``trailers``)."""
    seq = store.next_seq()
    while True:
        sha = store.write_commit(
            trailers.build_commit(
                current.tree_id,
                message,
                seq=seq,
                label=label,
                metadata=metadata,
                stats=stats,
                skipped=current.skipped,
                when=when,
                uncounted_against=uncounted_against,
                session=session,
            )
        )
        if store.add_snapshot_ref(seq, sha):
            break
        seq += 1  # another writer took this number; take the next one
    if moves_base:
        store.set_base(sha)
    return catalog.info(seq, sha)


def commit_copy(
    store: Store, catalog: Catalog, info: SnapshotInfo, message: str, label: str, when: datetime, session: str | None
) -> SnapshotInfo:
    """A new snapshot of ``info``'s tree under another message and label (its
    counts and skipped paths as recorded), without walking anything."""
    seq = store.next_seq()
    stats = (info.files_changed, info.additions, info.deletions)
    while True:
        sha = store.write_commit(
            trailers.build_commit(
                bytes.fromhex(info.tree_id),
                message,
                seq=seq,
                label=label,
                metadata=dict(info.metadata),
                stats=stats,
                skipped=list(info.skipped),
                when=when,
                session=session,
            )
        )
        if store.add_snapshot_ref(seq, sha):
            return catalog.info(seq, sha)
        seq += 1
