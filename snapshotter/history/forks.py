"""Forks for parallel agents: a snapshot made into a new folder with a store of its
own, and its changes merged back three ways.

``fork(ref, dest)`` makes ``dest`` (new, or an empty folder outside the
workspace) hold the snapshot: the fork gets its own store, in the same home,
sharing the parent's objects by hard links (``gitstore.sharing``), so it is
made without copying a byte of history and stays complete whatever the parent
later prunes, collects or cleans up. Its first snapshot is the fork point,
pinned there; ``fork.json`` in its store names the parent, and the parent's
``forks.json`` lists its forks.

A fork is complete or it is not a fork. ``fork.json`` is written first saying
``"complete": false`` and rewritten ``true`` as the very last step, after every
file is written: a fork killed half-way is known as such. ``merge`` refuses it
(its state would read as "the fork deleted every file not written yet"), and
running the same ``fork`` again finishes it (a restore of the fork point, whose
safety snapshot keeps whatever the folder holds). A record without the field
was written by a release that marked nothing: taken as complete.

``merge(dest)`` takes a snapshot of the fork as it is now, links the fork's
objects into this store, and brings the fork's changes (fork point -> now)
into this workspace three ways, exactly as a revert brings a change in
(``session.reverting``): what this workspace changed meanwhile stays, and
what clashes is a conflict. Any snapshot's changes since a given base can be
merged the same way (``merge(ref, base=...)``).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from snapshotter.engine.compare.treediff import ScannedTree, changes
from snapshotter.engine.fsutil import read_side_file
from snapshotter.engine.gitstore.location import store_path_for
from snapshotter.engine.gitstore.objects import MODE_LINK, STREAM_THRESHOLD, object_id
from snapshotter.engine.gitstore.sharing import share_objects
from snapshotter.engine.gitstore.store import Store
from snapshotter.engine.session.engine import Engine
from snapshotter.engine.session.reverting import Step, bring_in
from snapshotter.engine.worktree.fsops import Workspace
from snapshotter.engine.worktree.pathnames import git_spelling, names_checker
from snapshotter.errors import InvalidInput, SnapshotError, StoreError, WorkspaceError
from snapshotter.history.attribution import closing
from snapshotter.model import ConflictMode, ForkInfo, RevertResult, SnapshotInfo

FORK_FILE = "fork.json"
"""In a fork's store: where it came from."""
FORKS_FILE = "forks.json"
"""In a parent's store: the forks made from it."""
FORK_LABEL = "fork-point"


@dataclass(frozen=True)
class ForkRecord:
    """What a fork's store says of it (``fork.json``)."""

    parent: str
    parent_store: str
    fork_point: str
    complete: bool
    """False from the start of ``fork`` until its last step: a fork killed while it
    was made is no fork (``merge`` refuses it; the same ``fork`` again finishes it)."""


def fork_record(store_path: str) -> ForkRecord | None:
    """The fork record of the store at ``store_path``, or None if it is no fork."""
    record = _read_json(os.path.join(store_path, "snapshotter", FORK_FILE), None)
    if not isinstance(record, dict):
        return None
    point, parent, parent_store = record.get("fork_point"), record.get("parent"), record.get("parent_store")
    if not (isinstance(point, str) and len(point) == 40):
        return None
    return ForkRecord(str(parent), str(parent_store), point, record.get("complete", True) is not False)


def check_destination(
    engine: Engine,
    dest: str | os.PathLike[str],
    home: str | os.PathLike[str] | None,
    fork_point: str | None = None,
) -> str:
    """``dest`` as an absolute, resolved path: new or an empty folder, outside
    the workspace (and not around it), outside every ``.git`` folder and the
    snapshot home, with no store of its own yet; or the folder of this
    workspace's fork of ``fork_point`` that was killed before it was finished
    (the same fork again finishes it). Checked before anything is made: a
    refused fork leaves no folder behind."""
    if not isinstance(dest, (str, os.PathLike)) or not os.fspath(dest):
        raise InvalidInput("fork(ref, dest): dest must be a folder path")
    given = os.path.abspath(os.fspath(dest))
    path = os.path.realpath(given)
    workspace = engine.workspace
    if path == workspace or path.startswith(workspace.rstrip(os.sep) + os.sep):
        raise WorkspaceError(f"cannot fork into {path}: it is inside the workspace {workspace}; pick a folder outside")
    if workspace.startswith(path.rstrip(os.sep) + os.sep):
        raise WorkspaceError(f"cannot fork into {path}: it holds the workspace {workspace}; pick another folder")
    for name in {*_parts(given), *_parts(path)}:
        if name.lower() == ".git" or git_spelling(name):
            raise WorkspaceError(f"cannot fork into {path}: it lies in a git folder ({name}); pick a folder outside it")
    fork_store = store_path_for(path, home)  # refuses a folder inside the home (its stores) or around it
    unfinished = fork_record(fork_store)
    if unfinished is not None and not unfinished.complete:
        _check_finishing(engine, path, fork_store, unfinished, fork_point)
        return path  # the same fork again: it finishes the one that was killed
    if os.path.lexists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise WorkspaceError(f"cannot fork into {path}: it exists and is not an empty folder; pick a new folder")
    if os.path.exists(fork_store) and not _holds_no_snapshot(fork_store):
        raise StoreError(f"a store for {path} exists already ({fork_store}); remove it or pick another folder")
    return path


def _check_finishing(engine: Engine, path: str, fork_store: str, record: ForkRecord, fork_point: str | None) -> None:
    """A half-made fork is finished only by the fork that began it: same parent, same point."""
    again = f"run 'fork {record.fork_point[:12]} {path}' in {record.parent} again to finish it"
    if record.parent_store != engine.store_path or (fork_point is not None and fork_point != record.fork_point):
        raise WorkspaceError(
            f"cannot fork into {path}: it holds a fork of {record.fork_point[:12]} that was not finished; "
            f"{again}, or remove the folder and its store {fork_store}"
        )


def _holds_no_snapshot(store: str) -> bool:
    """A store with no snapshot ref at all (a fork killed as its store was made)
    holds nothing of anyone's: a fork may take it over."""
    try:
        return not os.listdir(os.path.join(store, "refs", "snapshots")) and not os.path.exists(
            os.path.join(store, "packed-refs")
        )
    except OSError:
        return False


def _parts(path: str) -> list[str]:
    """The names along ``path`` (a drive or root aside)."""
    rest = os.path.splitdrive(path)[1]
    if os.altsep:
        rest = rest.replace(os.altsep, os.sep)
    return [name for name in rest.split(os.sep) if name]


def make_fork(
    engine: Engine,
    target: SnapshotInfo,
    dest: str,
    home: str | os.PathLike[str] | None,
    open_fork: Callable[[str], Any],
) -> Any:
    """Make the fork (see the module's docstring); ``open_fork(path)`` opens a
    Snapshotter on the new folder (the caller's settings), which is returned."""
    fork_store_path = store_path_for(dest, home)  # checked by check_destination, before anything was made
    os.makedirs(dest, exist_ok=True)
    fork_store = Store.open_or_create(fork_store_path, dest)
    record_path = os.path.join(fork_store.meta_dir, FORK_FILE)
    record = _fork_record(engine, target, dest)
    try:
        _write_json(record_path, {**record, "complete": False})  # first: a fork in the making
        share_objects(engine.store_path, fork_store_path)
        commit = bytes.fromhex(target.id)
        if fork_store.snapshot_refs().get(1) != commit:
            fork_store.add_snapshot_ref(1, commit)
        fork_store.set_pin(commit, True)
    finally:
        fork_store.close()
    forked = open_fork(dest)
    try:
        forked.restore(target.id)
        _add_to_parent(engine, {"path": dest, "fork_point": target.id, "created": record["created"]})
        _write_json(record_path, {**record, "complete": True})  # last: now it is a fork
    except BaseException:
        forked.close()
        raise
    return forked


def forks_of(engine: Engine) -> list[ForkInfo]:
    """The forks made from this workspace, oldest first."""
    out = []
    for entry in _read_list(os.path.join(engine.store.meta_dir, FORKS_FILE)):
        try:
            path, point, created = str(entry["path"]), str(entry["fork_point"]), str(entry["created"])
            out.append(ForkInfo(path, point, datetime.fromisoformat(created), os.path.isdir(path)))
        except (KeyError, TypeError, ValueError):
            continue  # a damaged entry loses itself, never the list
    return out


def merge_fork(
    engine: Engine,
    fork: Any,
    base: SnapshotInfo | None,
    dry_run: bool,
    conflicts: ConflictMode,
    fork_engine: Engine | None = None,
) -> RevertResult:
    """Bring the changes of the open Snapshotter ``fork`` (its engine:
    ``fork_engine``) since its fork point (or ``base``) into this workspace. A
    dry run writes nothing anywhere: the fork's folder is read as it is now,
    not snapshotted, and no object is linked into this store."""
    record = fork_record(fork.store_path)
    if record is not None and not record.complete:
        raise WorkspaceError(
            f"{fork.workspace} is a fork of {record.fork_point[:12]} that was not finished (stopped while its files"
            f" were written); nothing merged: run 'fork {record.fork_point[:12]} {fork.workspace}' in"
            f" {record.parent} again to finish it"
        )
    point = record.fork_point if record is not None else None
    if point is None and base is None:
        raise InvalidInput(f"{fork.workspace} is not a fork of a workspace; pass base= to merge its changes since it")
    if dry_run and fork_engine is not None:
        start = base if base is not None else _info_in(engine, point or "", fork.workspace)
        return _plan_fork_merge(engine, fork_engine, start, conflicts)
    now = fork.snapshot(f"merged into {engine.workspace}", label="merged")
    share_objects(fork.store_path, engine.store_path)
    start = base if base is not None else _info_in(engine, point or "", fork.workspace)
    return merge_change(engine, start, _info_in(engine, now.id, fork.workspace), dry_run, conflicts, "fork")


def merge_change(
    engine: Engine,
    base: SnapshotInfo,
    theirs: SnapshotInfo,
    dry_run: bool,
    conflicts: ConflictMode,
    label: str = "merged",
) -> RevertResult:
    """Bring the change ``base`` -> ``theirs`` into this workspace three ways."""
    check = names_checker(engine.host)
    step = Step(engine.stored(base, check_names=check), engine.stored(theirs, check_names=check))
    return bring_in(
        engine,
        [step],
        dry_run=dry_run,
        conflicts=conflicts,
        safety_label="pre-merge",
        message=f"before merging {theirs.id[:12]} (since {base.id[:12]})",
        labels=("workspace", label),
        closing_label=closing(engine, "post-merge"),
    )


def _plan_fork_merge(engine: Engine, fork: Engine, base: SnapshotInfo, conflicts: ConflictMode) -> RevertResult:
    """A dry run's merge of the fork's folder as it is now: both folders scanned
    without storing anything. The fork's content of a path changed on both sides
    (the only content a merge reads from its far end) is read from its folder,
    checked against the id its scan gave."""
    check = names_checker(engine.host)
    start = engine.stored(base, check_names=check)
    theirs = ScannedTree(fork.scan(write=False))
    current = engine.scan(write=False)
    ours = {change.path for change in changes(start, ScannedTree(current))}
    folder = Workspace(fork.workspace, fork.host)
    blobs: dict[bytes, bytes] = {}
    try:
        for change in changes(start, theirs):
            if change.new is None or change.path not in ours:
                continue
            mode, sha = change.new
            found = folder.read(change.path, mode == MODE_LINK, STREAM_THRESHOLD)
            if found is not None and object_id(b"blob", found) != sha:
                raise StoreError(f"{change.path} changed in {fork.workspace} while it was being read; retry")
            if found is not None:
                blobs[sha] = found
    except OSError as error:
        raise StoreError(f"{fork.workspace}: {error.strerror or error}; retry") from None
    finally:
        folder.close()
    step = Step(start, theirs, blobs)
    return bring_in(engine, [step], dry_run=True, conflicts=conflicts, labels=("workspace", "fork"), current=current)


def _info_in(engine: Engine, commit_id: str, where: str) -> SnapshotInfo:
    """A snapshot commit brought from another store, read as a snapshot here (it
    has no ref here: its facts are read from the commit itself)."""
    try:
        return engine.catalog.info(0, bytes.fromhex(commit_id))
    except (SnapshotError, ValueError):
        raise StoreError(f"snapshot {commit_id[:12]} of {where} could not be read here; run verify() there") from None


def _fork_record(engine: Engine, target: SnapshotInfo, dest: str) -> dict[str, str]:
    return {"parent": engine.workspace, "parent_store": engine.store_path, "fork_point": target.id, "created": _now()}


def _add_to_parent(engine: Engine, entry: dict[str, str]) -> None:
    path = os.path.join(engine.store.meta_dir, FORKS_FILE)
    listed = [e for e in _read_list(path) if isinstance(e, dict) and e.get("path") != entry["path"]]
    _write_json(path, [*listed, entry])


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _read_list(path: str) -> list[Any]:
    found = _read_json(path, [])
    return found if isinstance(found, list) else []


def _read_json(path: str, missing: Any) -> Any:
    """A fork's record or a parent's list of forks, read guarded (``fsutil.read_side_file``,
    1 MiB: an entry is some 200 bytes); ``missing`` where it cannot be read or parsed."""
    try:
        return json.loads(read_side_file(path, follow=False))
    except (OSError, ValueError, RecursionError):
        return missing


def _write_json(path: str, value: Any) -> None:
    """Atomically: a temporary file in the same folder, then a rename."""
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".forks-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(value, handle, indent=1)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
