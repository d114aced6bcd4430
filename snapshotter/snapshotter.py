"""The :class:`Snapshotter` facade: one workspace, one store, the whole public API."""

from __future__ import annotations

import builtins
import contextlib
import os
import re
import threading
import zlib
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone

from dulwich.errors import (
    ApplyDeltaError,
    ChecksumMismatch,
    FileFormatException,
    NotGitRepository,
    ObjectMissing,
    WrongObjectException,
)

from . import records, statcache
from .diff import file_diff, status_of
from .errors import (
    InvalidInput,
    InvalidRef,
    SnapshotError,
    SnapshotNotFound,
    StoreError,
    WorkspaceError,
)
from .fsops import Workspace
from .ignore import IgnoreStack, root_stack
from .model import FileChange, FileDiff, RestoreResult, ScanStats, SnapshotInfo
from .objects import MODE_LINK
from .restore import apply_plan, make_plan, normalize_selection, selection_filter, validate_component
from .store import Store, canonical_workspace, store_path_for
from .trees import ScannedTree, StoredTree, TreeSide, changes
from .walker import EMPTY_TREE, Scan, scan

PRE_RESTORE_LABEL = "pre-restore"
_FULL_ID = re.compile(r"[0-9a-fA-F]{40}")
_ID_PREFIX = re.compile(r"[0-9a-fA-F]{7,39}")
_STORE_FAILURES = (
    ApplyDeltaError,
    ChecksumMismatch,
    FileFormatException,
    NotGitRepository,
    ObjectMissing,
    WrongObjectException,
    zlib.error,
)
_TYPE_NAMES = {1: "commit", 2: "tree", 3: "blob", 4: "tag"}


class Snapshotter:
    """Snapshots of one workspace folder, kept in a bare git store outside it.

    Safe to share between threads: every public method holds one lock.
    """

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        *,
        home: str | os.PathLike[str] | None = None,
        exclude: Sequence[str] = (),
        use_default_excludes: bool = True,
        max_new_file_size: int = 10 * 2**20,
    ) -> None:
        if isinstance(exclude, str) or not all(isinstance(p, str) for p in exclude):
            raise InvalidInput("exclude= takes a sequence of gitignore pattern strings")
        if not isinstance(max_new_file_size, int) or max_new_file_size < 0:
            raise InvalidInput("max_new_file_size must be a non-negative number of bytes")
        self._workspace = canonical_workspace(workspace)
        self._store_path = store_path_for(self._workspace, home)
        self._exclude = tuple(exclude)
        self._use_default_excludes = use_default_excludes
        self._max_new_file_size = max_new_file_size
        self._lock = threading.RLock()
        self._store: Store | None = Store.open_or_create(self._store_path, self._workspace)
        self._cache_path = os.path.join(self._store_path, "snapshotter", "statcache")
        self._cache: statcache.StatCache | None = None
        self._infos: dict[bytes, SnapshotInfo] = {}
        self._last_scan = ScanStats()

    # -- properties -----------------------------------------------------------------

    @property
    def workspace(self) -> str:
        """The canonical (resolved) workspace path."""
        return self._workspace

    @property
    def store_path(self) -> str:
        """The bare git repository holding this workspace's snapshots."""
        return self._store_path

    @property
    def last_scan(self) -> ScanStats:
        """What the most recent walk of the workspace cost."""
        return self._last_scan

    def __repr__(self) -> str:
        return f"Snapshotter({self._workspace!r}, store={self._store_path!r})"

    def __enter__(self) -> Snapshotter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()

    # -- snapshots ------------------------------------------------------------------

    def snapshot(
        self,
        message: str = "",
        *,
        label: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> SnapshotInfo:
        """Record the workspace as it is now and return the new snapshot."""
        if not isinstance(message, str):
            raise InvalidInput("message must be a string")
        label = records.validate_label(label)
        meta = records.validate_metadata(metadata)
        with self._lock, self._errors():
            current = self._scan(write=True)
            return self._record(current, message, label, meta)

    track = snapshot

    def list(self, limit: int | None = 50) -> list[SnapshotInfo]:
        """Snapshots, newest first; ``limit=None`` lists them all."""
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise InvalidInput("limit must be a non-negative integer or None")
        with self._lock, self._errors():
            out: builtins.list[SnapshotInfo] = []
            for seq, sha in self._store_ok().iter_snapshot_ids():
                if limit is not None and len(out) >= limit:
                    break
                out.append(self._info(seq, sha))
            return out

    def get(self, ref: str | SnapshotInfo) -> SnapshotInfo:
        """A snapshot by full id, unique id prefix (7+ hex digits) or label."""
        with self._lock, self._errors():
            return self._info(*self._resolve(ref))

    def status(self) -> builtins.list[FileChange]:
        """What differs between the workspace and the newest snapshot."""
        with self._lock, self._errors():
            current = self._scan(write=False)
            base = self._latest_tree()
            return [
                FileChange(c.path, status_of(c), c.old[0] if c.old else None, c.new[0] if c.new else None)
                for c in changes(StoredTree(self._store_ok(), base), ScannedTree(current))
            ]

    def diff(self, from_ref: str | SnapshotInfo, to_ref: str | SnapshotInfo | None = None) -> builtins.list[FileDiff]:
        """Per-file differences from one snapshot to another, or to the workspace now."""
        with self._lock, self._errors():
            store = self._store_ok()
            old = StoredTree(store, bytes.fromhex(self._info(*self._resolve(from_ref)).tree_id))
            new: TreeSide
            if to_ref is None:
                new = ScannedTree(self._scan(write=False))
                load_new = self._read_workspace
            else:
                new = StoredTree(store, bytes.fromhex(self._info(*self._resolve(to_ref)).tree_id))
                load_new = self._read_stored
            return [file_diff(c, self._read_stored, load_new) for c in changes(old, new)]

    def restore(
        self,
        ref: str | SnapshotInfo,
        files: Sequence[str | os.PathLike[str]] | None = None,
        *,
        dry_run: bool = False,
    ) -> RestoreResult:
        """Make the workspace (or just ``files``) match a snapshot.

        Before changing anything, the current state is snapshotted with the
        label ``pre-restore`` (unless it equals the newest snapshot already), so
        the restore itself can be undone. Untracked files are never touched.
        """
        if isinstance(files, (str, os.PathLike)):
            raise InvalidInput("files= takes a list of paths, not a single path")
        with self._lock, self._errors():
            store = self._store_ok()
            target = self._info(*self._resolve(ref))
            selection = normalize_selection(self._workspace, files) if files is not None else None
            within = selection_filter(selection) if selection is not None else None
            safety_id = None
            if dry_run:
                current = self._scan(write=False)
            else:
                current = self._scan(write=True)
                safety_id = self._safety_snapshot(current, target)
            workspace = Workspace(self._workspace)
            plan = make_plan(
                StoredTree(store, bytes.fromhex(target.tree_id), check_name=validate_component),
                ScannedTree(current),
                workspace,
                len(current.tracked),
                within,
            )
            unchanged = plan.unchanged
            if within is not None:
                touched = len(plan.deletes) + sum(1 for p, _ in plan.writes + plan.chmods if p in current.tracked)
                unchanged = sum(1 for p in current.tracked if within(p, False)) - touched
            if not dry_run:
                cache = self._cache if self._cache is not None else statcache.StatCache()
                apply_plan(plan, workspace, self._read_blob, cache)
                self._save_cache(cache)
            written = tuple(p for p, _ in plan.writes + plan.chmods)
            return RestoreResult(
                written=len(written),
                deleted=len(plan.deletes),
                unchanged=max(unchanged, 0),
                written_paths=tuple(sorted(written)),
                deleted_paths=plan.deletes,
                dry_run=dry_run,
                target_id=target.id,
                safety_snapshot_id=safety_id,
            )

    def cleanup(self) -> None:
        """Delete this workspace's store and every snapshot in it."""
        with self._lock:
            store = self._store_ok()
            try:
                store.remove()
            except OSError as exc:
                raise StoreError(f"cannot remove store {self._store_path}: {exc.strerror}") from None
            self._store = None
            self._cache = None
            self._infos.clear()

    # -- internals ------------------------------------------------------------------

    def _store_ok(self) -> Store:
        if self._store is None:
            raise StoreError("this Snapshotter's store was removed by cleanup(); create a new Snapshotter")
        return self._store

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """Turn failures from below (dulwich, zlib, the OS) into typed one-line errors."""
        try:
            yield
        except SnapshotError:
            raise
        except _STORE_FAILURES as exc:
            raise StoreError(f"the store {self._store_path} is damaged ({exc}); run verify()") from None
        except OSError as exc:
            where = exc.filename if isinstance(exc.filename, str) else ""
            detail = f"{exc.strerror or exc}" + (f": {where}" if where else "")
            if where.startswith(self._store_path):
                raise StoreError(f"store error ({detail}); check disk space and permissions") from None
            raise WorkspaceError(f"workspace error ({detail}); check permissions and retry") from None

    def _ignores(self) -> IgnoreStack:
        return root_stack(self._workspace, self._exclude, self._use_default_excludes)

    def _load_cache(self) -> statcache.StatCache:
        if self._cache is None:
            self._cache = statcache.load(self._cache_path)
        return self._cache

    def _save_cache(self, cache: statcache.StatCache) -> None:
        statcache.save(self._cache_path, cache)
        self._cache = cache

    def _scan(self, *, write: bool) -> Scan:
        result = scan(
            self._workspace,
            self._ignores(),
            self._load_cache(),
            self._store_ok().writer,
            write=write,
            max_new_file_size=self._max_new_file_size,
        )
        self._last_scan = result.stats
        return result

    def _record(self, current: Scan, message: str, label: str | None, meta: dict[str, str]) -> SnapshotInfo:
        """Commit a written scan as a new snapshot, then cache it (object, ref, cache)."""
        store = self._store_ok()
        tree_id = current.tree_id
        if current.root.tree_id is None:
            store.writer.write(b"tree", b"")
        previous = self._latest_tree()
        found = changes(StoredTree(store, previous), StoredTree(store, tree_id))
        additions = deletions = 0
        for change in found:
            if change.old is None and change.new is not None and change.new[1] in current.line_counts:
                additions += current.line_counts[change.new[1]] or 0  # added: no need to read it back
                continue
            counted = file_diff(change, self._read_stored, self._read_stored)
            additions += counted.additions
            deletions += counted.deletions
        when = datetime.now(timezone.utc)
        refs = store.snapshot_refs()
        seq = max(refs, default=0) + 1
        while True:
            commit = records.build_commit(
                tree_id,
                message,
                seq=seq,
                label=label,
                metadata=meta,
                stats=(len(found), additions, deletions),
                skipped=current.skipped,
                when=when,
            )
            sha = store.write_commit(commit)
            if store.add_snapshot_ref(seq, sha):
                break
            seq += 1  # another writer took this number; take the next one
        self._save_cache(statcache.StatCache(current.tracked, current.dir_cache(), current.listings))
        return self._info(seq, sha)

    def _safety_snapshot(self, current: Scan, target: SnapshotInfo) -> str:
        """Snapshot the state a restore is about to replace, unless already saved."""
        latest = next(self._store_ok().iter_snapshot_ids(), None)
        if latest is not None:
            info = self._info(*latest)
            if info.tree_id == current.tree_id.hex():
                self._save_cache(statcache.StatCache(current.tracked, current.dir_cache(), current.listings))
                return info.id
        saved = self._record(current, f"before restoring {target.id[:12]}", PRE_RESTORE_LABEL, {})
        return saved.id

    def _latest_tree(self) -> bytes:
        latest = next(self._store_ok().iter_snapshot_ids(), None)
        if latest is None:
            return EMPTY_TREE
        return bytes.fromhex(self._info(*latest).tree_id)

    def _info(self, seq: int, sha: bytes) -> SnapshotInfo:
        info = self._infos.get(sha)
        if info is None:
            try:
                commit = self._store_ok().read_commit(sha)
            except KeyError:
                raise StoreError(f"snapshot {seq} points at missing commit {sha.hex()}; run verify()") from None
            except TypeError:
                raise StoreError(f"snapshot {seq} does not point at a commit; run verify()") from None
            info = records.parse_commit(commit, seq)
            self._infos[sha] = info
        return info

    def _resolve(self, ref: str | SnapshotInfo) -> tuple[int, bytes]:
        if isinstance(ref, SnapshotInfo):
            ref = ref.id
        if not isinstance(ref, str):
            raise InvalidRef(f"a snapshot ref must be a string, not {type(ref).__name__}")
        text = ref.strip()
        if not text or len(text) > 256 or any(ch < " " for ch in text):
            raise InvalidRef(f"malformed snapshot ref {ref!r}; pass an id, an id prefix or a label")
        store = self._store_ok()
        by_id = {sha: seq for seq, sha in store.iter_snapshot_ids()}
        if _FULL_ID.fullmatch(text):
            sha = bytes.fromhex(text)
            if sha in by_id:
                return by_id[sha], sha
            try:
                type_num, _ = store.read_raw(sha)
            except KeyError:
                raise SnapshotNotFound(f"no snapshot {text}; run `snapshotter log` to list them") from None
            kind = _TYPE_NAMES.get(type_num, "object")
            raise InvalidRef(f"{text} is a {kind}, not a snapshot; pass a snapshot id or label")
        if _ID_PREFIX.fullmatch(text):
            prefix = text.lower()
            hits = [sha for sha in by_id if sha.hex().startswith(prefix)]
            if len(hits) > 1:
                raise InvalidRef(f"id prefix {text} is ambiguous; give more digits")
            if hits:
                return by_id[hits[0]], hits[0]
            raise SnapshotNotFound(f"no snapshot id starts with {text}; run `snapshotter log` to list them")
        for sha, seq in by_id.items():  # newest first
            if self._info(seq, sha).label == text:
                return seq, sha
        raise SnapshotNotFound(f"no snapshot labelled {text!r}; run `snapshotter log` to list them")

    def _read_blob(self, sha: bytes) -> bytes:
        try:
            type_num, content = self._store_ok().read_raw(sha)
        except KeyError:
            raise StoreError(f"blob {sha.hex()} is missing from the store; run verify()") from None
        if type_num != 3:
            raise StoreError(f"object {sha.hex()} should be a blob; the store is damaged")
        return content

    def _read_stored(self, path: str, sha: bytes, mode: int) -> bytes:
        return self._read_blob(sha)

    def _read_workspace(self, path: str, sha: bytes, mode: int) -> bytes:
        full = os.path.join(self._workspace, *path.split("/"))
        try:
            if mode == MODE_LINK:
                return os.fsencode(os.readlink(full))
            with open(full, "rb") as handle:
                return handle.read()
        except OSError:
            return b""
