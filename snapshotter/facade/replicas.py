"""The calls of :class:`~snapshotter.Snapshotter` that carry snapshots to and from
git remotes: ``push``, ``push_async``, ``fetch``, ``remote_workspaces``, ``clone``.

They live apart from ``api`` to keep each module readable; ``Snapshotter``
inherits them. What they do is in ``remotes`` (namespaces, what is sent) and
``gitstore.replication`` (the protocol); background pushes in ``replicator``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from snapshotter.engine.gitstore.store import Store
from snapshotter.engine.session.engine import Engine
from snapshotter.errors import NO_REMOTE, InvalidInput, WorkspaceError
from snapshotter.facade.calls import public
from snapshotter.options import Options

if TYPE_CHECKING:  # loaded where a remote call runs: a local call loads no remote side
    from concurrent.futures import Future

    from snapshotter.engine.gitstore.transport import Credentials
    from snapshotter.engine.gitstore.wirebudget import Budget
    from snapshotter.model import FetchResult, PushResult, RemoteWorkspace
    from snapshotter.remote import remotes
    from snapshotter.remote.replicator import Replicator

log = logging.getLogger("snapshotter")


class Replicas:
    """push, push_async, fetch, remote_workspaces and clone (see the module's docstring)."""

    _options: Options
    _lock: threading.RLock
    _credentials: Credentials | None = None
    """The Snapshotter's own (``credentials=``): under what each call passes."""
    _replicators: dict[tuple[str, str, Credentials | None], Replicator] | None = None
    """The background pushers, one per target (remote, name, credentials)."""

    if TYPE_CHECKING:  # Snapshotter's own, which every method here runs through

        def _engine_ok(self) -> Engine: ...

    @property
    def remote(self) -> str | None:
        """The remote ``push`` and ``fetch`` use when given none (``remote=``)."""
        return self._options.remote

    def _where(self, remote: str | None, name: str | None) -> tuple[str, str]:
        """The location and namespace a call means: its own, else the options'."""
        from snapshotter.remote import remotes

        engine = self._engine_ok()
        location = remote if remote is not None else self._options.remote
        if location is None:
            raise InvalidInput("no remote", NO_REMOTE)
        chosen = name if name is not None else self._options.remote_name or remotes.default_name(engine.workspace)
        return location, chosen

    def _creds(self, given: Credentials | None) -> Credentials | None:
        """The call's credentials, each missing part from the Snapshotter's own."""
        if given is None:
            return self._credentials
        from snapshotter.engine.gitstore.transport import Credentials  # here: a Snapshotter without any loads none

        if not isinstance(given, Credentials):
            raise InvalidInput(f"credentials must be a snapshotter.Credentials, not {type(given).__name__}")
        if self._credentials is None:
            return given
        return given.over(self._credentials)

    def _budget(self) -> Budget:
        """What one fetch may take from a server (``max_fetch_bytes``, ``fetch_timeout``)."""
        from snapshotter.engine.gitstore.wirebudget import Budget

        return Budget(self._options.max_fetch_bytes, self._options.fetch_timeout)

    def _target(self, remote: str | None, name: str | None, credentials: Credentials | None) -> remotes.Target:
        from snapshotter.remote import remotes

        made = remotes.target(*self._where(remote, name), self._creds(credentials), self._budget())
        remotes.check_outside(made, self._engine_ok().workspace)
        return made

    @public()
    def push(
        self,
        remote: str | None = None,
        *,
        name: str | None = None,
        prune: bool = False,
        credentials: Credentials | None = None,
        skip_refused: bool = False,
    ) -> PushResult:
        """Send this workspace's snapshots (and its pins, base, undo, redo, turn and
        session stacks) to a git remote, under ``refs/snapshotter/<name>/``, never
        touching anything else there. Only objects the remote lacks are sent.
        ``remote``: a path, or a ``file://``, ``git://``, ``http(s)://`` or
        ``ssh://`` URL (default: ``remote=``); ``name``: the namespace (default:
        the folder's name and a hash of its path); ``prune``: also delete the
        remote refs of snapshots this store created there and has dropped since;
        ``credentials``: over the Snapshotter's own (``credentials=``).

        Before anything is sent, each snapshot to send is checked: a file over
        ``max_push_file_size``, or a path that ``exclude=`` and the default
        excludes keep out of snapshots now (one recorded before they did),
        refuses the push (``PushRefused``); with ``skip_refused=True`` such
        snapshots stay here and the others go (``PushResult.skipped``)."""
        from snapshotter.remote import remotes

        engine = self._engine_ok()
        to = self._target(remote, name, credentials)
        checks = self._push_checks(bool(skip_refused))
        return remotes.push(engine.store, to, checks, bool(prune), engine.phase("sending"))

    def _push_checks(self, skip_refused: bool) -> remotes.PushChecks:
        from snapshotter.engine.worktree.ignore import leaving_out
        from snapshotter.remote import remotes

        options = self._options
        return remotes.PushChecks(leaving_out(options), options.max_push_file_size, skip_refused)

    def push_async(
        self, remote: str | None = None, *, name: str | None = None, credentials: Credentials | None = None
    ) -> Future[PushResult]:
        """Push on a background thread and return at once; the future holds the
        result (or the error). Pushes asked for while one to the same remote and
        name runs are coalesced; the arguments are :meth:`push`'s."""
        return self._replicas(remote, name, credentials).request()

    def _replicas(
        self, remote: str | None = None, name: str | None = None, credentials: Credentials | None = None
    ) -> Replicator:
        """The background pusher to this target: each target its own, so a call
        never goes where an earlier one went instead of where it says."""
        from snapshotter.remote import remotes
        from snapshotter.remote.replicator import Replicator

        location, chosen = self._where(remote, name)
        creds = self._creds(credentials)
        key = (location, chosen, creds)
        with self._lock:
            replicators = self._replicators if self._replicators is not None else {}
            self._replicators = replicators
            if key not in replicators:
                made = remotes.target(location, chosen, creds, self._budget())
                remotes.check_outside(made, self._engine_ok().workspace)
                replicators[key] = Replicator(self._pusher(made))
            return replicators[key]

    def _pusher(self, to: remotes.Target) -> Callable[[], PushResult]:
        from snapshotter.remote import remotes

        engine = self._engine_ok()
        path, workspace, checks = engine.store_path, engine.workspace, self._push_checks(False)

        def push_once() -> PushResult:
            own = Store.open_or_create(path, workspace)  # the worker's own handles and caches
            try:
                return remotes.push(own, to, checks, prune=False)
            finally:
                own.close()

        return push_once

    def _after_change(self) -> None:
        """After a call that may have recorded a snapshot: push it, if ``auto_push``."""
        if self._options.auto_push:
            self._replicas().request()

    def _flush_pushes(self, timeout: float) -> None:
        """Wait for the background pushes (all within ``timeout``) and stop them;
        the first failure is raised, or every one logged, as ``on_error`` says."""
        with self._lock:
            replicators, self._replicators = self._replicators or {}, None
        deadline = time.monotonic() + timeout
        failures = [r.flush(max(deadline - time.monotonic(), 0.0)) for r in replicators.values()]
        known = [failure for failure in failures if failure is not None]
        if known and self._options.on_error == "raise":
            raise known[0]
        for failure in known:
            log.warning("snapshotter: the last background push failed: %s", failure)

    @public(mutates=True)
    def fetch(
        self, remote: str | None = None, *, name: str | None = None, credentials: Credentials | None = None
    ) -> FetchResult:
        """Bring a namespace's snapshots from a remote into this workspace's store:
        the same snapshots (same ids, labels and sessions), numbered after the
        ones here, to restore, diff, revert or merge like any. ``name`` defaults
        as for :meth:`push`; :meth:`remote_workspaces` lists the names there."""
        from snapshotter.model import FetchResult
        from snapshotter.remote import remotes

        source = self._target(remote, name, credentials)
        made = remotes.fetch(self._engine_ok(), source)
        return FetchResult(source.remote.shown, source.name, tuple(made))

    @staticmethod
    def remote_workspaces(remote: str, *, credentials: Credentials | None = None) -> list[RemoteWorkspace]:
        """The workspaces a remote holds snapshots of (namespace names, counts)."""
        from snapshotter.remote import remotes

        return remotes.workspaces(remote, credentials)

    @classmethod
    def clone(
        cls,
        remote: str,
        name: str,
        ref: str | None,
        dest: str | os.PathLike[str],
        /,
        *,
        credentials: Credentials | None = None,
        **options: Any,
    ) -> Any:
        """Fill ``dest`` (new, or an empty folder) with snapshot ``ref`` (default: the
        newest) of namespace ``name`` on ``remote``, in one call; returns a
        Snapshotter on it (``options`` as for ``Snapshotter``), whose pushes go
        back to that remote and namespace, with these credentials, unless
        ``options`` say otherwise."""
        path = os.path.abspath(os.fspath(dest))
        if os.path.lexists(path) and (not os.path.isdir(path) or os.listdir(path)):
            raise WorkspaceError(f"cannot clone into {path}: it exists and is not an empty folder")
        os.makedirs(path, exist_ok=True)
        make: Any = cls  # Snapshotter, whose arguments these are
        own = {"remote": options.get("remote") or remote, "remote_name": options.get("remote_name") or name}
        own["credentials"] = credentials  # its pushes go back with them
        made: Any = make(path, **{**options, **own})
        try:
            made.fetch(remote, name=name, credentials=credentials)
            made.restore(ref if ref is not None else made.list(limit=1)[0].id)
        except BaseException:
            made.close()
            raise
        return made
