"""The knobs of an opened workspace, each with its default, written once.

:class:`Options` is what ``Snapshotter(...)`` builds from its keyword arguments
and what the session runs with; :class:`Retention`, how much history a store
keeps, is one of its knobs. Both refuse a bad value with ``InvalidInput`` when
built, so nothing below them checks again.

A knob that the command line, the environment and config files may set is
declared with :func:`setting`: its help line and what a file inside the
workspace may do with it travel with it, and ``frontends.config`` reads them
from here. Adding a knob is one field plus its use.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from snapshotter.errors import InvalidInput

OnError = Literal["raise", "warn"]
WorkspaceRule = Literal["add", "any", "only-on", "only-off", "lower", "keep-more"]
"""What a file inside the workspace (which the guarded agent can write) may do
with a setting: add patterns, set it freely, only turn it on, only turn it off,
only lower a cap (0: none), only keep more history. Without a rule it may not
set it at all."""


def setting(default: Any, help: str, *, workspace: WorkspaceRule | None = None, kind: type | None = None) -> Any:
    """A field the front ends offer as a setting: ``help`` for ``snapshotter
    config``, the ``workspace`` rule, and the ``kind`` its text is read as
    (the default's type unless given)."""
    return field(default=default, metadata={"help": help, "workspace": workspace, "kind": kind or type(default)})


def check_path(name: str, value: object) -> None:
    if not isinstance(value, (str, os.PathLike)):
        raise InvalidInput(f"{name} must be a path (str or os.PathLike), not {type(value).__name__}")
    if not os.fspath(value):  # not the current folder by accident: "." says that
        raise InvalidInput(f"{name} is an empty path; name a folder (the current one is '.')")


_SESSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def check_session(name: object) -> str:
    """A session name is part of ref names: letters, digits, ``.``, ``_`` and ``-``,
    up to 64 characters, starting with a letter or digit."""
    if not isinstance(name, str) or not _SESSION_NAME.fullmatch(name) or ".." in name or name.endswith(".lock"):
        raise InvalidInput(
            f"session must be a name of letters, digits, '.', '_' and '-' (at most 64, no '..'), not {name!r}"
        )
    return name


@dataclass(frozen=True)
class Retention:
    """How many, how old and how big. ``None`` or 0 disables a limit."""

    max_snapshots: int | None = setting(0, "retention: keep at most this many (0: no limit)", workspace="keep-more")
    """No count limit by default: an agent's hooks take two snapshots a tool call,
    thousands a day, and a week of them is kept (see docs/store.md, "What a default
    store keeps"); the age and the size limits bound the store."""
    max_age: timedelta | None = setting(
        timedelta(days=7), "retention: drop snapshots older than this (0: no limit)", workspace="keep-more"
    )
    max_store_bytes: int | None = setting(8 * 2**30, "retention: store size cap (0: no limit)")
    """8 GiB: a week of agent work on a 1 GiB database that one tool call in four
    changes (about 3.4 GiB, measured: docs/store.md), with room for the rest of a
    workspace at its 2 GiB cap."""
    max_undo: int | None = setting(
        100, "retention: undo points kept whatever the other limits say (0: all)", workspace="keep-more"
    )
    """How many undo points (checkpoints, turns begun) stay protected from the
    other limits; older ones may be dropped like any snapshot."""

    def __post_init__(self) -> None:
        for name in ("max_snapshots", "max_store_bytes", "max_undo"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise InvalidInput(f"Retention.{name} must be a non-negative integer or None")
        if self.max_age is not None and (not isinstance(self.max_age, timedelta) or self.max_age.total_seconds() < 0):
            raise InvalidInput("Retention.max_age must be a non-negative timedelta or None")

    @classmethod
    def unlimited(cls) -> Retention:
        return cls(max_snapshots=None, max_age=None, max_store_bytes=None, max_undo=None)


LOCK_TIMEOUT_MAX = 86_400.0
"""The longest wait for the store lock: a day. More (up to ``inf``, which a
settings file can write as ``1e400``) means as long as that: the clocks and
locks below refuse waits past about 292 years, with an untyped error."""


@dataclass(frozen=True)
class WorkspaceSettings:
    """What the workspace's own settings files (``[tool.snapshotter]`` in its
    ``pyproject.toml``, its ``snapshotter.toml``) ask to leave out of
    snapshots, kept apart from the caller's ``exclude=``, ``max_new_file_size``
    and ``use_default_excludes``. The guarded agent can write those files, so
    these are the workspace's own rules, as its ``.gitignore`` files are: they
    leave paths out of snapshots, but never make a restore keep a path the
    target holds (SECURITY.md). The front ends fill it in (``frontends.config``)."""

    exclude: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(the file, its patterns), each judged like a ``.gitignore`` at the root, below every other ignore file."""
    max_new_file_size: int = 0
    """A lower cap on new files than the caller's (0: none)."""
    default_excludes: str = ""
    """The file that turned the default excludes on where the caller turned them off ("": none)."""

    def __post_init__(self) -> None:
        exclude: Any = self.exclude
        try:
            shaped = tuple((str(origin), tuple(patterns)) for origin, patterns in exclude)
        except (TypeError, ValueError):
            raise InvalidInput("WorkspaceSettings.exclude takes (file, patterns) pairs") from None
        if not all(isinstance(p, str) for _, patterns in shaped for p in patterns):
            raise InvalidInput("WorkspaceSettings.exclude takes gitignore pattern strings")
        cap: Any = self.max_new_file_size
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            raise InvalidInput("WorkspaceSettings.max_new_file_size must be a non-negative number of bytes")
        if not isinstance(self.default_excludes, str):
            raise InvalidInput("WorkspaceSettings.default_excludes names a file, or is empty")
        object.__setattr__(self, "exclude", shaped)


@dataclass(frozen=True)
class Options:
    """Every knob of ``Snapshotter(...)`` but the workspace (see its docstring)."""

    home: str | os.PathLike[str] | None = setting(None, "where stores live (default: the user data folder)", kind=str)
    exclude: Sequence[str] = setting((), "extra gitignore-style patterns", workspace="add", kind=list)
    use_default_excludes: bool = setting(
        True, "apply the built-in excludes (.env, node_modules, ...)", workspace="only-on"
    )
    max_new_file_size: int = setting(2**30, "skip new files larger than this many bytes (0: no cap)", workspace="lower")
    """1 GiB: a big file's versions cost what changed (chain packs), and the first
    snapshot of a new 1 GiB file takes a few seconds, a fraction of an agent
    hook's 20 s budget (docs/store.md)."""
    on_error: OnError = "raise"
    lock_timeout: float = setting(30.0, "seconds to wait for another writer", workspace="any")
    retention: Retention = Retention()
    allow_unsafe_root: bool = setting(False, "allow home, Desktop, Documents, Downloads or a filesystem root")
    sparse_files: bool = setting(
        False,
        "snapshot new sparse files (mostly holes, read as zeros) instead of leaving them out",
        workspace="only-off",
    )
    """A new file over 8 MiB that is mostly holes (a disk image made with ``truncate``) is left out as too large
    unless this is on: reading it costs its whole apparent size."""
    max_workspace_bytes: int = setting(2 * 2**30, "refuse bigger workspaces (0: no cap)", workspace="lower")
    max_workspace_entries: int = setting(200_000, "refuse workspaces with more entries (0: no cap)", workspace="lower")
    watch: bool = False
    trust_folder_mtimes: bool = setting(
        True,
        "skip re-listing folders whose mtime is unchanged (off: for filesystems that do not update it)",
        workspace="only-off",
    )
    second_core: bool = setting(
        True,
        "check and hash a big workspace's files, and delete and write a big restore's, on a second core too,"
        " in a forked copy of this process (Linux)",
        workspace="only-off",
    )
    session: str | None = setting(
        None, "the session to work in: its own turns, tool calls, checkpoints, undo and redo", kind=str
    )
    remote: str | None = setting(None, "the git remote push and fetch use by default (a URL or a path)", kind=str)
    """Never from a file inside the workspace: the agent could point it anywhere."""
    remote_name: str | None = setting(
        None, "this workspace's namespace on remotes (default: the folder's name and a hash)", kind=str
    )
    auto_push: bool = setting(False, "push to the remote after each snapshot, in the background")
    max_push_file_size: int = setting(
        100 * 2**20, "refuse to push a file larger than this many bytes (0: no cap)", workspace="lower"
    )
    """The session this instance works in: its turns, checkpoints, tool calls,
    undo and redo are its own (``None``: the one anonymous session)."""
    max_fetch_bytes: int = setting(
        4 * 2**30,
        "refuse a fetch whose pack, or whose objects once inflated, pass this many bytes (0: no cap)",
        workspace="lower",
    )
    fetch_timeout: float = setting(
        3600.0,
        "seconds a fetch or remote listing may take in all, a push until its upload (0: no limit)",
        workspace="lower",
    )
    """Both limit what a git server may send (``gitstore.wirebudget``): an endless
    or trickling answer ends, a zlib bomb is refused before it is inflated."""
    workspace_settings: WorkspaceSettings = WorkspaceSettings()
    """What the workspace's own settings files add (see :class:`WorkspaceSettings`)."""

    @property
    def new_file_cap(self) -> int:
        """The cap the walk compares new files' sizes with: the caller's
        ``max_new_file_size`` or the workspace's lower one; 0 is no cap, as for every other limit."""
        caps = [cap for cap in (self.max_new_file_size, self.workspace_settings.max_new_file_size) if cap]
        return min(caps, default=sys.maxsize)

    @property
    def caller_file_cap(self) -> int:
        """The caller's own cap on new files (``sys.maxsize``: none): a restore
        keeps a file over it rather than save it first."""
        return self.max_new_file_size or sys.maxsize

    def __post_init__(self) -> None:
        """Refuse a bad value (in the order the facade always checked them), and
        hold the rest in one shape: a tuple of patterns, real bools, a float."""
        if self.on_error not in ("raise", "warn"):
            raise InvalidInput('on_error must be "raise" or "warn"')
        if self.home is not None:
            check_path("home", self.home)
        exclude: Any = self.exclude
        if isinstance(exclude, str) or not isinstance(exclude, Iterable):
            raise InvalidInput("exclude= takes a sequence of gitignore pattern strings")
        patterns = tuple(exclude)
        if not all(isinstance(p, str) for p in patterns):
            raise InvalidInput("exclude= takes a sequence of gitignore pattern strings")
        if not isinstance(self.workspace_settings, WorkspaceSettings):
            raise InvalidInput("workspace_settings= takes a WorkspaceSettings(...)")
        if not isinstance(self.retention, Retention):
            raise InvalidInput("retention= takes a Retention(...) or None")
        timeout: Any = self.lock_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
            raise InvalidInput("lock_timeout must be a number of seconds, 0 or more")
        flags = (
            "use_default_excludes",
            "allow_unsafe_root",
            "watch",
            "trust_folder_mtimes",
            "second_core",
            "auto_push",
            "sparse_files",
        )
        for flag in flags:
            given = getattr(self, flag)
            if not isinstance(given, bool) and given not in (0, 1):
                raise InvalidInput(f"{flag} must be True or False")
        if not isinstance(self.max_new_file_size, int) or self.max_new_file_size < 0:
            raise InvalidInput("max_new_file_size must be a non-negative number of bytes")
        if self.session is not None:
            check_session(self.session)
        if self.remote is not None and (not isinstance(self.remote, str) or not self.remote):
            raise InvalidInput("remote must be a URL or a path")
        if self.auto_push and self.remote is None:
            raise InvalidInput("auto_push needs a remote= to push to")
        if not isinstance(self.max_push_file_size, int) or self.max_push_file_size < 0:
            raise InvalidInput("max_push_file_size must be a non-negative number of bytes (0: no cap)")
        fetch_bytes: Any = self.max_fetch_bytes
        if isinstance(fetch_bytes, bool) or not isinstance(fetch_bytes, int) or fetch_bytes < 0:
            raise InvalidInput("max_fetch_bytes must be a non-negative number of bytes (0: no cap)")
        fetch_timeout: Any = self.fetch_timeout
        if isinstance(fetch_timeout, bool) or not isinstance(fetch_timeout, (int, float)) or not fetch_timeout >= 0:
            raise InvalidInput("fetch_timeout must be a number of seconds, 0 or more (0: no limit)")
        for name in ("max_workspace_bytes", "max_workspace_entries"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise InvalidInput(f"{name} must be a non-negative integer (0 disables the cap)")
        object.__setattr__(self, "exclude", patterns)
        object.__setattr__(self, "lock_timeout", float(min(timeout, LOCK_TIMEOUT_MAX)))
        object.__setattr__(self, "fetch_timeout", float(fetch_timeout))
        for flag in flags:
            object.__setattr__(self, flag, bool(getattr(self, flag)))


DEFAULTS = Options()
