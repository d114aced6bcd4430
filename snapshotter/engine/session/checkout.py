"""Restore: plan what to write and delete, check it all, then apply it.

The plan compares the target tree with a fresh scan of the workspace, skipping
folders whose tree ids agree. Only paths the scan tracks can be deleted, so
ignored, too-large, unreadable and other untracked files are never touched.
Every target path is validated before anything is written; a path that would
leave the workspace refuses the whole restore.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from snapshotter.engine.compare.treediff import Change, Entry, ScannedTree, StoredTree, changes, entry_at
from snapshotter.engine.fsutil import StatKey, stat_key
from snapshotter.engine.gitstore.objects import MODE_EXEC, MODE_LINK, TRACKED_MODES
from snapshotter.engine.session.selection import normalize_selection as normalize_selection
from snapshotter.engine.session.selection import selection_filter as selection_filter
from snapshotter.engine.session.splitwrite import do_all
from snapshotter.engine.worktree.fsops import Workspace
from snapshotter.engine.worktree.gitrepo import MODE_GITLINK
from snapshotter.engine.worktree.hostfs import HostFS, recorded_mode
from snapshotter.engine.worktree.statcache import Record, StatCache
from snapshotter.errors import RestoreConflict, UnsafeTree
from snapshotter.model import SkippedPath, SkipReason

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:  # annotations only: reading the store (``log``, ``show``) does not load the walker
    from snapshotter.engine.gitstore.spancopy import Span
    from snapshotter.engine.worktree.walker import Scan

MAX_LINK_TARGET = 1 << 16
"""Longer symlink targets are refused (Linux allows 4,095 bytes, Windows 32,767 characters)."""


@dataclass(frozen=True)
class Plan:
    """What a restore will do. Paths are relative, posix style."""

    writes: tuple[tuple[str, Entry], ...]
    chmods: tuple[tuple[str, Entry], ...]
    deletes: tuple[str, ...]
    unchanged: int
    folders: Mapping[str, tuple[int, bytes]] = field(default_factory=dict)
    kept: tuple[SkippedPath, ...] = ()
    """Paths the target would change but the current scan does not track
    (unreadable, too large, not a regular file...): never written or deleted."""
    left_out: tuple[SkippedPath, ...] = ()
    """Paths of the target this platform cannot hold (see ``pathnames``): neither
    written nor deleted."""
    """For a whole-workspace restore, the target's folders on the way to every
    change: path -> (entries, tree id). Once the plan is applied, these are the
    workspace's folders too, so the stat cache takes their tree ids as they are."""


def make_plan(
    target: StoredTree,
    current: ScannedTree,
    workspace: Workspace,
    tracked: Scan | None,
    within: Callable[[str, bool], bool] | None,
    untracked: Sequence[SkippedPath] = (),
    found: list[Change] | None = None,
    folders: Mapping[str, tuple[int, bytes]] | None = None,
) -> Plan:
    """Compare, validate and check for conflicts; writes nothing. ``tracked``
    says what the current scan tracks (to count what stays unchanged);
    ``untracked`` paths in the way (the caller's :func:`untracked_among`, once
    it has judged which of them a rule from inside the workspace hides) are
    kept. ``found``, the changes from this very scan to
    ``target`` made already (names checked), spares comparing again; with
    ``folders``, the target's folders that comparison read (a whole restore:
    the stat cache takes their tree ids once the plan is applied).
    """
    read = dict(folders) if folders is not None and found is not None else {}
    if found is None:
        found = changes(current, target, within, read if within is None else None)
    writes: list[tuple[str, Entry]] = []
    chmods: list[tuple[str, Entry]] = []
    deletes: list[str] = []
    left_out = _left_out(target)
    if left_out:
        found = [c for c in found if not _at_or_below(c.path, left_out)]
    tracked_touched = sum(1 for c in found if c.old is not None)  # kept ones are not "unchanged" either
    found, kept = _without_kept(found, tracked, untracked)
    kept.extend(_unreadable_in(target, tracked, within, {k.path for k in kept}))
    for change in found:
        if change.new is None:
            deletes.append(change.path)
            continue
        if change.new[0] == MODE_GITLINK:
            kept.append(SkippedPath(change.path, SkipReason.NOT_CHECKED_OUT))  # checking out submodules is git's job
            continue
        if change.new[0] not in TRACKED_MODES:
            raise UnsafeTree(f"snapshot holds {change.path!r} with unsupported mode {change.new[0]:o}; restore refused")
        if _chmod_only(change):
            chmods.append((change.path, change.new))
        else:
            writes.append((change.path, change.new))
    _check_conflicts(writes, deletes, workspace, tracked)
    if tracked is None:
        in_scope = 0
    elif within is None:
        in_scope = tracked.tracked_count()
    else:
        in_scope = sum(1 for p in tracked.tracked_paths() if within(p, False))
    unchanged = in_scope - tracked_touched
    if left_out:
        read = {}  # the workspace's folders will not hold what the target's do: nothing to take from them
    skipped = tuple(SkippedPath(path, SkipReason.NAME, why) for path, why in sorted(left_out.items()))
    return Plan(tuple(writes), tuple(chmods), tuple(deletes), unchanged, read, tuple(kept), skipped)


def untracked_among(
    found: Sequence[Change], scanned: Scan, workspace: Workspace, folders: list[str] | None = None
) -> list[SkippedPath]:
    """The paths ``found`` (changes from the scan to a target) would write over
    something the scan does not track: ignored or default-excluded now, too
    large, unreadable, not a regular file (something untracked where the target
    has a file under a folder, or a folder where it has a file, is a conflict,
    found by the plan). ``folders`` receives the paths where a folder stands
    that the scan did not record as a file."""
    skipped = {item.path: item.reason for item in scanned.kept_as_is()}
    out: list[SkippedPath] = []
    present = _FolderPresence(scanned, workspace)
    for change in found:
        if change.new is None:
            continue  # only a tracked path is ever deleted
        reason = (
            (skipped.get(change.path) or next((skipped[p] for p in parents(change.path) if p in skipped), None))
            if skipped
            else None
        )
        if scanned.entry(change.path) is not None and reason is None:
            continue
        if reason is None and not present(change.path.rpartition("/")[0]):
            continue  # its folder is not there: nothing can stand in the way (a fork, a folder brought back)
        st = workspace.lstat(change.path) if reason is None else None
        if reason is None and (st is None or stat.S_ISDIR(st.st_mode)):
            if st is not None and folders is not None:
                folders.append(change.path)
            continue
        out.append(SkippedPath(change.path, reason or SkipReason.IGNORED))
    return out


class _FolderPresence:
    """Whether a folder of the workspace exists, asked once per folder: a folder
    the scan walked does; one whose parent is missing is missing too."""

    def __init__(self, scanned: Scan, workspace: Workspace) -> None:
        self.nodes = scanned.nodes
        self.workspace = workspace
        self.known: dict[str, bool] = {}

    def __call__(self, folder: str) -> bool:
        if not folder or folder in self.nodes:
            return True
        known = self.known.get(folder)
        if known is None:
            parent = folder.rpartition("/")[0]
            st = self.workspace.lstat(folder) if self(parent) else None
            known = self.known[folder] = st is not None
        return known


def _without_kept(
    found: list[Change], scanned: Scan | None, untracked: Sequence[SkippedPath]
) -> tuple[list[Change], list[SkippedPath]]:
    """Split off the changes at paths the scan saw but did not (or could not)
    read, and at the ``untracked`` paths in the way: a restore never writes or
    deletes those."""
    if scanned is None:
        return found, []
    keep = {item.path: item for item in scanned.kept_as_is()}
    keep.update((item.path, item) for item in untracked)
    if not keep:
        return found, []
    out: list[Change] = []
    kept: list[SkippedPath] = []
    for change in found:
        held = keep.get(change.path) or next((keep[p] for p in parents(change.path) if p in keep), None)
        if held is None:
            out.append(change)
        else:
            kept.append(SkippedPath(change.path, held.reason))
    return out, kept


def _unreadable_in(
    target: StoredTree, scanned: Scan | None, within: Callable[[str, bool], bool] | None, reported: set[str]
) -> Iterator[SkippedPath]:
    """Unreadable files the target holds, even where it holds what was last
    recorded of them: the restore cannot tell, so it says it left them alone."""
    for path in scanned.unreadable() if scanned is not None else ():
        if path not in reported and (within is None or within(path, False)) and entry_at(target, path) is not None:
            yield SkippedPath(path, SkipReason.UNREADABLE)


def _left_out(target: StoredTree) -> dict[str, str]:
    return dict(target.left_out)


def _at_or_below(path: str, tops: Mapping[str, str]) -> bool:
    return path in tops or any(parent in tops for parent in parents(path))


def parents(path: str) -> Iterator[str]:
    """The folders above ``path``, the nearest first."""
    while "/" in path:
        path = path.rpartition("/")[0]
        yield path


def _chmod_only(change: Change) -> bool:
    old, new = change.old, change.new
    return old is not None and new is not None and old[1] == new[1] and old[0] != MODE_LINK and new[0] != MODE_LINK


def _check_conflicts(
    writes: list[tuple[str, Entry]], deletes: list[str], workspace: Workspace, scanned: Scan | None
) -> None:
    """Refuse before writing if a target path is blocked by something untracked,
    naming every such thing (the caller moves them all at once, not one per try).

    What the current scan saw answers most questions without a system call:
    a folder it walked is a real folder, and a file it tracks is no folder.
    """
    deleted = set(deletes)
    checked: set[str] = set(scanned.nodes) if scanned is not None else set()
    present = _FolderPresence(scanned, workspace) if scanned is not None else None
    in_the_way: list[str] = []
    for path, _ in writes:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder in checked:
                continue
            checked.add(folder)
            st = workspace.lstat(folder)
            if st is None or stat.S_ISDIR(st.st_mode) or folder in deleted:
                continue
            in_the_way.append(
                f"{workspace.abspath(folder)} is an untracked file or symlink where the snapshot has a folder"
            )
        if scanned is not None and scanned.entry(path) is not None:
            continue
        if present is not None and not present(path.rpartition("/")[0]):
            continue  # its folder is not there yet: no folder can stand at the path
        st = workspace.lstat(path)
        if st is not None and stat.S_ISDIR(st.st_mode) and not _only_deleted_below(workspace, path, deleted):
            in_the_way.append(
                f"{workspace.abspath(path)} is a folder holding untracked files where the snapshot has a file"
            )
    if in_the_way:
        more = f"; and {len(in_the_way) - _SHOWN} more" if len(in_the_way) > _SHOWN else ""
        what = "it" if len(in_the_way) == 1 else "them"
        raise RestoreConflict(f"{'; '.join(in_the_way[:_SHOWN])}{more}; move {what} and retry")


_SHOWN = 5  # the conflicts a refusal names; the count of the rest follows


def _only_deleted_below(workspace: Workspace, folder: str, deleted: set[str]) -> bool:
    for dirpath, dirnames, filenames in os.walk(workspace.abspath(folder)):
        rel_dir = os.path.relpath(dirpath, workspace.root).replace(os.sep, "/")
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            if f"{rel_dir}/{name}" not in deleted:
                return False
    return True


def apply_plan(
    plan: Plan,
    workspace: Workspace,
    blob_chunks: Callable[[bytes], Iterable[bytes]],
    cache: StatCache,
    progress: Callable[[int, int], None] | None = None,
    second_core: bool = True,
    blob_content: Callable[[bytes], bytes | Iterable[bytes | Span]] | None = None,
) -> None:
    """Carry out a checked plan and record what it wrote in the stat cache.

    Files are written on this one thread. Writer threads (each with its own
    Workspace) were tried: they halved the time of bare file creation, but with
    each file's blob read and record made in Python, two threads made a
    10,000-file restore slower here (2.1-2.5 s against 1.2-1.8 s), as each
    thread back from a system call waits for the other to let go of the GIL.
    With ``second_core``, a forked copy of the process deletes and writes the
    second half of many files instead (see ``splitwrite``).
    """
    deletes, writes = plan.deletes, plan.writes
    records: dict[str, Record | None] = {}

    def delete_one(path: str) -> None:
        workspace.delete(path)

    def deleted(index: int, key: StatKey | None) -> None:
        records[deletes[index]] = None

    def write_one(change: tuple[str, Entry]) -> StatKey:
        path, (mode, sha) = change
        if mode == MODE_LINK:
            st = workspace.write_symlink(path, _link_target(path, blob_chunks(sha)))
        else:
            st = workspace.write_file(path, (blob_content or blob_chunks)(sha), mode == MODE_EXEC)
        return _record_key(st, mode, workspace.host)

    def written(index: int, key: StatKey | None) -> None:
        path, (_, sha) = writes[index]
        assert key is not None
        records[path] = (*key, sha)
        if progress is not None:
            progress(len(records) - len(deletes), len(writes))

    try:
        do_all(deletes, delete_one, deleted, second_core)
        _remove_emptied_dirs(workspace, deletes)
        do_all(writes, write_one, written, second_core)
        for path, (mode, sha) in plan.chmods:
            st = workspace.set_executable(path, mode == MODE_EXEC)
            records[path] = (*_record_key(st, mode, workspace.host), sha)
    finally:
        cache.apply(records)  # what was written is recorded even if a later write failed
    cache.dirs.update(plan.folders)  # every write done: each folder now holds what the target's does


def _link_target(path: str, chunks: Iterable[bytes]) -> bytes:
    """A symlink's target, refused past ``MAX_LINK_TARGET`` bytes before more is read."""
    pieces: list[bytes] = []
    size = 0
    for piece in chunks:
        size += len(piece)
        if size > MAX_LINK_TARGET:
            raise UnsafeTree(f"snapshot holds the symlink {path!r} with a target of more than {MAX_LINK_TARGET} bytes")
        pieces.append(piece)
    return b"".join(pieces)


def _record_key(st: os.stat_result, mode: int, host: HostFS) -> StatKey:
    """The stat-cache key of a restored file; where the filesystem cannot show
    its git mode, the key carries that mode for the next scan to keep."""
    key = stat_key(st)
    if host.needs_recorded_modes and stat.S_ISREG(st.st_mode):
        return (recorded_mode(mode), *key[1:])
    return key


def _remove_emptied_dirs(workspace: Workspace, deleted: Sequence[str]) -> None:
    folders = set()
    for path in deleted:
        parent = path
        while "/" in parent:
            parent = parent.rpartition("/")[0]
            folders.add(parent)
    for folder in sorted(folders, key=lambda f: f.count("/"), reverse=True):
        workspace.remove_dir_if_empty(folder)
