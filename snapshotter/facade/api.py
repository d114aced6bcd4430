"""The :class:`Snapshotter` facade: the whole public API over one workspace at a time."""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from snapshotter.engine.gitstore import trailers
from snapshotter.engine.gitstore.location import canonical_workspace
from snapshotter.engine.session.engine import Engine
from snapshotter.engine.session.opening import open_engine
from snapshotter.errors import FIRST_SNAPSHOT, SnapshotError, SnapshotNotFound, StoreError
from snapshotter.facade import inputs
from snapshotter.facade.background import Background, SnapshotHandle, finished
from snapshotter.facade.calls import public
from snapshotter.facade.guard import Guard
from snapshotter.facade.lifecycle import Lifecycle
from snapshotter.facade.replicas import Replicas
from snapshotter.facade.workflows import Workflows
from snapshotter.options import DEFAULTS, OnError, Options, Retention, WorkspaceSettings, check_path, check_session

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:  # annotations only: a call that reaches no remote loads no transport (dulwich's client),
    # one that reads the history makes no comparison's, restore's or walk's values
    from snapshotter.engine.gitstore.transport import Credentials
    from snapshotter.model import FileChange, FileDiff, RestoreResult, ScanStats, SnapshotInfo

log = logging.getLogger("snapshotter")


class Snapshotter(Workflows, Replicas, Lifecycle):
    """Snapshots of one workspace folder, kept in a bare git store outside it.

    Safe to share between threads; processes (and other instances) opening the
    same workspace are serialised by a lock file in the store, waited for up
    to ``lock_timeout`` seconds (then :class:`~snapshotter.StoreLocked`).

    With ``on_error="warn"`` (for agent hooks that must never break a turn),
    a failing call logs a warning and returns None (False for predicates)
    instead of raising; the workspace is left as it was.

    ``credentials`` go with every push and fetch, background ones included,
    under those a call passes (held in memory only).
    """

    _view_of: Snapshotter | None = None
    """The Snapshotter this one is a view of (``in_session``), which owns the store."""

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        *,
        home: str | os.PathLike[str] | None = DEFAULTS.home,
        exclude: Sequence[str] = DEFAULTS.exclude,
        use_default_excludes: bool = DEFAULTS.use_default_excludes,
        max_new_file_size: int = DEFAULTS.max_new_file_size,
        on_error: OnError = DEFAULTS.on_error,
        lock_timeout: float = DEFAULTS.lock_timeout,
        retention: Retention | None = None,
        allow_unsafe_root: bool = DEFAULTS.allow_unsafe_root,
        sparse_files: bool = DEFAULTS.sparse_files,
        max_workspace_bytes: int = DEFAULTS.max_workspace_bytes,
        max_workspace_entries: int = DEFAULTS.max_workspace_entries,
        watch: bool = DEFAULTS.watch,
        trust_folder_mtimes: bool = DEFAULTS.trust_folder_mtimes,
        second_core: bool = DEFAULTS.second_core,
        session: str | None = DEFAULTS.session,
        remote: str | None = DEFAULTS.remote,
        remote_name: str | None = DEFAULTS.remote_name,
        auto_push: bool = DEFAULTS.auto_push,
        max_push_file_size: int = DEFAULTS.max_push_file_size,
        max_fetch_bytes: int = DEFAULTS.max_fetch_bytes,
        fetch_timeout: float = DEFAULTS.fetch_timeout,
        workspace_settings: WorkspaceSettings = DEFAULTS.workspace_settings,
        credentials: Credentials | None = None,
    ) -> None:
        check_path("workspace", workspace)
        self._options = Options(
            home=home,
            exclude=exclude,
            use_default_excludes=use_default_excludes,
            max_new_file_size=max_new_file_size,
            on_error=on_error,
            lock_timeout=lock_timeout,
            retention=DEFAULTS.retention if retention is None else retention,
            allow_unsafe_root=allow_unsafe_root,
            sparse_files=sparse_files,
            max_workspace_bytes=max_workspace_bytes,
            max_workspace_entries=max_workspace_entries,
            watch=watch,
            trust_folder_mtimes=trust_folder_mtimes,
            second_core=second_core,
            session=session,
            remote=remote,
            remote_name=remote_name,
            auto_push=auto_push,
            max_push_file_size=max_push_file_size,
            max_fetch_bytes=max_fetch_bytes,
            fetch_timeout=fetch_timeout,
            workspace_settings=workspace_settings,
        )
        self._lock = threading.RLock()
        self._credentials = self._creds(credentials)  # for every push and fetch, the background ones too
        self._background = Background()
        self._progress: Callable[[str, int, int], None] | None = None
        self._engine: Engine | None = None
        self._failure: SnapshotError | None = None
        try:
            self._engine = self._open(workspace)
        except SnapshotError as exc:
            if self._options.on_error == "raise":
                raise
            self._failure = exc  # inert: every call warns and returns its failure value
            log.warning("snapshotter: cannot open %s: %s", workspace, exc)

    def _open(self, workspace: str | os.PathLike[str]) -> Engine:
        engine = open_engine(canonical_workspace(workspace), self._options)
        engine.progress = self._progress
        return engine

    def _engine_ok(self) -> Engine:
        if self._engine is None:
            raise self._failure or StoreError(
                "this Snapshotter's store was removed by cleanup(); create a new Snapshotter"
            )
        if self._engine.session != self._options.session:
            self._engine.use_session(self._options.session)  # a view of another session shares the engine
        return self._engine

    def in_session(self, session: str | None) -> Snapshotter:
        """This Snapshotter working in another ``session`` (see ``session=``), on
        the same open store: its lock, watcher and caches, so a process serving
        many agents' sessions (a watcher, the MCP server) pays for one. Calls
        through either run one at a time. Closing the view closes nothing."""
        if session is not None:
            check_session(session)
        view = object.__new__(type(self))
        view.__dict__.update(self.__dict__)
        view._options = dataclasses.replace(self._options, session=session)
        view._view_of = self
        return view

    @contextlib.contextmanager
    def cache_saved_after(self) -> Iterator[None]:
        """Within the block, each snapshot's stat cache is saved when the block ends
        instead of before the call returns: a server (the watcher) answers its
        caller, then saves. A crash before the save leaves the older cache on disk,
        which costs only re-reading the files changed since."""
        engine = self._engine
        if engine is None:
            yield
            return
        with self._lock:
            engine.defer_saves(True)
        try:
            yield
        finally:
            with self._lock:
                try:
                    engine.defer_saves(False)
                except OSError as exc:  # the snapshots are recorded; an older cache only costs reading
                    log.debug("snapshotter: the stat cache was not saved: %s", exc)

    # -- properties -------------------------------------------------------------------

    @property
    def workspace(self) -> str:
        """The canonical (resolved) workspace path."""
        return self._engine_ok().workspace

    @property
    def store_path(self) -> str:
        """The bare git repository holding this workspace's snapshots."""
        return self._engine_ok().store_path

    @property
    def session(self) -> str | None:
        """The session this instance works in (None: the anonymous one)."""
        return self._options.session

    @property
    def watching(self) -> bool:
        """Watch mode is on and its watcher is running (snapshots walk only what changed)."""
        engine = self._engine
        return engine is not None and engine.journal is not None and engine.journal.running

    @property
    def last_scan(self) -> ScanStats:
        """What the most recent walk of the workspace cost."""
        if self._engine is not None:
            return self._engine.last_scan
        from snapshotter.model import ScanStats

        return ScanStats()

    @property
    def progress(self) -> Callable[[str, int, int], None] | None:
        """Called with (phase, done, total) while files are hashed ("hashing") or written ("writing")."""
        return self._progress

    @progress.setter
    def progress(self, report: Callable[[str, int, int], None] | None) -> None:
        self._progress = report
        if self._engine is not None:
            self._engine.progress = report

    def __repr__(self) -> str:
        if self._engine is None:
            return "Snapshotter(<not open>)"
        return f"Snapshotter({self._engine.workspace!r}, store={self._engine.store_path!r})"

    def __enter__(self) -> Snapshotter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, push_timeout: float = 60.0) -> None:
        """Finish background snapshots and pushes (waiting up to ``push_timeout``
        seconds for the last push: its failure is raised, or logged with
        ``on_error="warn"``), stop watching, release the store."""
        if self._view_of is not None:
            return  # a view (in_session): the Snapshotter it was made from owns the store
        self._background.shutdown()
        try:
            self._flush_pushes(push_timeout)
        finally:
            with self._lock:
                if self._engine is not None:
                    self._engine.close()

    # -- snapshots ------------------------------------------------------------------

    @public(mutates=True)
    def snapshot(
        self, message: str = "", *, label: str | None = None, metadata: Mapping[str, str] | None = None
    ) -> SnapshotInfo:
        """Record the workspace as it is now and return the new snapshot.

        A ``label`` already in use moves to the new snapshot (a warning is
        logged); the older snapshot keeps its id and stays listed."""
        engine = self._engine_ok()
        checked = inputs.snapshot_text(message, label, metadata)
        with inputs.moving_label(engine, label):
            return engine.snapshot(*checked)

    track = snapshot

    def snapshot_async(
        self, message: str = "", *, label: str | None = None, metadata: Mapping[str, str] | None = None
    ) -> SnapshotHandle:
        """Start ``snapshot()`` on a background thread and return at once.

        The handle's ``result()`` waits for the new snapshot. Every later call
        on this Snapshotter waits for it too, so calls keep their order. The
        snapshot records each file as the walk reaches it: start it while the
        workspace is quiet (at the end of a turn, or before the agent's first
        edit), not while files are being written; with ``watch=True`` the walk
        takes milliseconds. Bad arguments are refused at once.
        """
        try:
            checked = inputs.snapshot_text(message, label, metadata)
        except SnapshotError as exc:
            if self._options.on_error == "raise":
                raise
            log.warning("snapshotter: snapshot_async refused: %s", exc)
            return finished(None)
        return self._background.submit(lambda: self.snapshot(checked[0], label=checked[1], metadata=checked[2]))

    @public()
    def list(
        self,
        limit: int | None = 50,
        *,
        label: str | None = None,
        metadata: Mapping[str, str] | None = None,
        session: str | None = None,
        before: str | SnapshotInfo | None = None,
    ) -> builtins.list[SnapshotInfo]:
        """Snapshots, newest first (``limit=None``: all), optionally only those with
        ``label``, all the given ``metadata`` pairs, taken in ``session`` (``""``: the
        anonymous session; None: any), older than ``before`` (a page's cost, however deep)."""
        catalog = self._engine_ok().catalog
        meta, wanted = trailers.validate_metadata(metadata), inputs.session_filter(session)
        below = catalog.get(before).sequence if before is not None else None
        return catalog.counted_all(catalog.select(inputs.limit(limit), label, meta, wanted, below))

    @public()
    def get(self, ref: str | SnapshotInfo) -> SnapshotInfo:
        """A snapshot by full id, unique id prefix (7+ hex digits) or label."""
        catalog = self._engine_ok().catalog
        return catalog.counted(catalog.get(ref))

    @public()
    def base(self) -> SnapshotInfo | None:
        """The snapshot the workspace was last made equal to (by a snapshot, a
        restore, undo or redo): what ``status()`` and ``diff()`` compare with by
        default, and what the ref ``@`` names. None before the first snapshot."""
        catalog = self._engine_ok().catalog
        base = catalog.base()
        return catalog.counted(base) if base is not None else None

    @public()
    def status(self, files: Sequence[str | os.PathLike[str]] | None = None) -> builtins.list[FileChange]:
        """What differs between the base (see ``base()``) and the workspace now,
        or only ``files`` (paths or folders) in it."""
        from snapshotter.engine.session import reading

        return reading.status(self._engine_ok(), inputs.paths(files))

    @public()
    def diff(
        self,
        from_ref: str | SnapshotInfo | None = None,
        to_ref: str | SnapshotInfo | None = None,
        *,
        files: Sequence[str | os.PathLike[str]] | None = None,
    ) -> builtins.list[FileDiff]:
        """Per-file differences from one snapshot (default: the base) to another,
        or to the workspace now; only ``files`` (paths or folders) if given."""
        from snapshotter.engine.session import reading

        engine = self._engine_ok()
        old = engine.catalog.get(from_ref) if from_ref is not None else engine.catalog.base()
        if old is None:
            raise SnapshotNotFound("no snapshots yet", FIRST_SNAPSHOT)
        return reading.diff(
            engine, old, engine.catalog.get(to_ref) if to_ref is not None else None, inputs.paths(files)
        )

    @public(mutates=True)
    def restore(
        self,
        ref: str | SnapshotInfo,
        files: Sequence[str | os.PathLike[str]] | None = None,
        *,
        dry_run: bool = False,
        overwrite_untracked: bool = False,
    ) -> RestoreResult:
        """Make the workspace (or just ``files``) match a snapshot.

        The current state is snapshotted first with the label ``pre-restore``
        (unless the base or the newest snapshot already holds it) and becomes
        an undo point, so ``undo()`` takes the restore back; a restore that
        fails part-way puts the workspace back, and ``@`` (the base) moves to
        the target only once a whole restore succeeded. Every path the snapshot
        holds is brought back, and what that replaces untracked is saved in the
        safety snapshot first, unless the caller's rules hide it (the default
        excludes, ``exclude=``, a new file over ``max_new_file_size``) or it is
        unreadable or not a regular file: rules inside the workspace
        (``.gitignore``, ``info/exclude``, ``workspace_settings``) keep nothing
        (SECURITY.md). What is kept is never overwritten or deleted: a whole
        restore leaves it and lists it in ``RestoreResult.kept``; restoring it
        by name is refused (``RestoreConflict``) unless ``overwrite_untracked``,
        which first saves the ignored and too-large ones in the safety snapshot.
        """
        from snapshotter.engine.session import restoring
        from snapshotter.history import undo as history

        engine = self._engine_ok()
        result = restoring.restore(
            engine,
            engine.catalog.get(ref),
            inputs.paths(files),
            dry_run=dry_run,
            overwrite_untracked=bool(overwrite_untracked),
        )
        history.restored(engine, result)
        return result

    # -- lifecycle: retention, pins, compaction ---------------------------------------------

    @public(mutates=True, maintain=False)
    def pin(self, ref: str | SnapshotInfo) -> SnapshotInfo:
        """Keep a snapshot whatever the retention policy says."""
        catalog = self._engine_ok().catalog
        info = catalog.get(ref)
        self._engine_ok().store.set_pin(bytes.fromhex(info.id), True)
        return catalog.counted(info)

    @public(mutates=True, maintain=False)
    def unpin(self, ref: str | SnapshotInfo) -> SnapshotInfo:
        catalog = self._engine_ok().catalog
        info = catalog.get(ref)
        self._engine_ok().store.set_pin(bytes.fromhex(info.id), False)
        return catalog.counted(info)

    @public(mutates=True, maintain=False)
    def cleanup(self) -> None:
        """Delete this workspace's store and every snapshot in it."""
        engine = self._engine_ok()
        try:
            engine.store.remove()
        except OSError as exc:
            raise StoreError(f"cannot remove store {engine.store_path}: {exc.strerror}") from None
        self._engine = None

    # -- re-rooting and guards ------------------------------------------------------------

    def set_root(self, path: str | os.PathLike[str]) -> bool:
        """Track another folder from now on (its own store and history).

        Returns True if tracking is at ``path`` afterwards; on failure logs at
        debug level, returns False and leaves the current root in place.
        """
        try:
            self._background.wait()
            with self._lock:
                canonical = canonical_workspace(path)
                if self._engine is not None and self._engine.workspace == canonical:
                    return True
                engine = self._open(canonical)
                if self._engine is not None:
                    self._engine.close()
                self._engine, self._failure = engine, None
                return True
        except Exception as exc:  # never raises, by contract
            log.debug("snapshotter: set_root(%r) failed: %s", path, exc)
            return False

    def guard(self, verify: Callable[[], object] | None = None) -> Guard:
        """A context manager that rolls the workspace back if its block fails."""
        return Guard(self, verify)


def guard(workspace: str | os.PathLike[str], verify: Callable[[], object] | None = None, **options: Any) -> Guard:
    """Guard a block of work on ``workspace`` (:mod:`snapshotter.facade.guard`); ``options`` go to Snapshotter."""
    return Guard(Snapshotter(workspace, **options), verify, owns=True)
