"""Frozen values returned by the public API, and nothing else."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Literal


class SkipReason(str, Enum):
    """Why a path found in the workspace was left out of a snapshot."""

    TOO_LARGE = "too-large"
    UNREADABLE = "unreadable"
    SPECIAL = "not-a-regular-file"
    VANISHED = "vanished"
    CHANGING = "changed-while-reading"
    IGNORED = "ignored"
    """Only in restore results: the ignore rules (or default excludes) leave it out now."""
    NOT_CHECKED_OUT = "not-checked-out"
    """Only in restore results: a submodule not checked out, or a file outside the
    user's sparse checkout; git keeps its entry, and a restore leaves it to git."""
    NAME = "name-not-allowed"
    """A spelling of ``.git`` (git's own protections), or, in a restore, a name this
    platform cannot hold (a backslash or reserved name on Windows...)."""


@dataclass(frozen=True)
class SkippedPath:
    """A workspace path that the snapshot did not record, and why."""

    path: str
    reason: SkipReason
    detail: str = field(default="", compare=False)
    """Why, in words, where the reason alone does not say (not stored in snapshots)."""


@dataclass(frozen=True)
class SnapshotInfo:
    """One snapshot: a parentless commit pinned by ``refs/snapshots/<seq>``.

    ``files_changed``, ``additions`` and ``deletions`` compare the snapshot with
    the one taken before it (numstat, as ``git diff --numstat`` counts). A
    safety snapshot's (``pre-restore``...) line counts are counted when first
    asked for, not while the restore runs: the values are the same.
    """

    id: str
    tree_id: str
    message: str
    label: str | None
    created_at: datetime
    files_changed: int
    additions: int
    deletions: int
    metadata: Mapping[str, str] = field(default_factory=dict)
    skipped: tuple[SkippedPath, ...] = ()
    sequence: int = 0
    session: str | None = None
    """The session that took it (``Snapshotter(..., session=...)``); None: the anonymous one."""


class ChangeStatus(str, Enum):
    """How a path differs between two states."""

    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"
    TYPE_CHANGED = "type_changed"
    UNREADABLE = "unreadable"
    """It exists in the workspace but cannot be read: kept as last recorded (never
    deleted or overwritten by a restore)."""


@dataclass(frozen=True)
class FileChange:
    """A path that differs from the last snapshot (what ``status()`` lists)."""

    path: str
    status: ChangeStatus
    old_mode: int | None
    new_mode: int | None


@dataclass(frozen=True)
class FileDiff:
    """One changed path with its line counts; ``patch`` is computed on first use.

    ``binary`` files (a NUL byte in their first 8,000 bytes, git's rule, or
    ``binary``/``-diff`` in ``.gitattributes``) report zero additions and
    deletions, as ``git diff --numstat`` prints ``-``.
    """

    path: str
    status: ChangeStatus
    additions: int
    deletions: int
    binary: bool
    old_mode: int | None
    new_mode: int | None
    old_id: str | None = None
    new_id: str | None = None
    _patch_fn: Callable[[], str] | None = field(default=None, repr=False, compare=False)

    @functools.cached_property
    def patch(self) -> str:
        """A git-style unified diff of this path (empty if it cannot be made)."""
        return self._patch_fn() if self._patch_fn is not None else ""


@dataclass(frozen=True)
class Hunk:
    """One hunk of a change, as ``git diff`` cuts it, that a revert can take back
    alone (``revert(..., hunks=[id])``). ``id`` is ``PATH:DIGEST`` of the path and
    the hunk's lines: the same change lists the same id in any process, and a
    file changed since lists others. ``kind`` is ``lines`` (an ``@@`` hunk),
    ``mode`` (the exec bit alone) or ``file`` (a binary file, a symlink, a type
    change or a file too large to diff: the whole path). Line numbers are the
    ``@@`` header's."""

    id: str
    path: str
    kind: str
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    additions: int
    deletions: int
    patch: str
    """The ``@@`` hunk (for ``mode`` and ``file`` hunks, what changed, in words)."""


@dataclass(frozen=True)
class LineOrigin:
    """Where a line of a file comes from (``blame``): the snapshot whose change
    last touched it, and whose that change was.

    ``who`` is ``session`` (inside one session's tool call, or its unbracketed
    turn: ``session``, ``agent``, ``turn`` and ``tool_call`` say which),
    ``person`` (inside no bracket or unbracketed turn), ``unknown`` (inside
    brackets of several sessions at once), ``workspace`` (not snapshotted yet:
    the file changed since the newest snapshot) or ``boundary`` (the line is
    at least as old as the oldest snapshot read: who made it is older history).
    """

    who: str
    snapshot_id: str | None = None
    session: str | None = None
    agent: str | None = None
    turn: int | None = None
    tool_call: str | None = None
    created_at: datetime | None = None
    boundary: bool = False


@dataclass(frozen=True)
class BlameRun:
    """Consecutive lines of one origin: lines ``start`` .. ``start + count - 1``
    of the file now (from 1) were lines ``source_start`` .. of the origin's snapshot."""

    start: int
    count: int
    source_start: int
    origin: LineOrigin


@dataclass(frozen=True)
class BlameResult:
    """``blame(path)``: the file's lines now, in runs of one origin each
    (with ``session``: only the runs that session made; the other lines have none)."""

    path: str
    lines: tuple[str, ...]
    runs: tuple[BlameRun, ...]
    depth: int
    """Snapshots read."""
    limit: int
    limited: bool
    """The walk stopped at ``limit`` with lines left: those are ``boundary`` lines at the limit."""
    session: str | None = None


@dataclass(frozen=True)
class RestoreResult:
    """What a restore did (or, with ``dry_run``, would do)."""

    written: int
    deleted: int
    unchanged: int
    written_paths: tuple[str, ...] = ()
    deleted_paths: tuple[str, ...] = ()
    dry_run: bool = False
    target_id: str = ""
    safety_snapshot_id: str | None = None
    kept: tuple[SkippedPath, ...] = ()
    """Paths the snapshot would change but the workspace holds untracked
    (unreadable, too large, not a regular file...): left as they are, with why."""
    skipped: tuple[SkippedPath, ...] = ()
    """Paths of the snapshot this platform cannot hold (reason ``name-not-allowed``,
    ``detail`` says why): neither written nor deleted, the rest restored."""


ConflictMode = Literal["abort", "markers", "ours"]
"""How a revert or merge settles paths it cannot merge: write nothing at all
(``abort``), keep the workspace's version of them (``ours``), or also write
git-style conflict markers into the text files that clashed (``markers``)."""


class ConflictReason(str, Enum):
    """Why a revert or merge could not bring a change into a path."""

    CONTENT = "content"
    """Both sides changed the same lines of a text file, differently."""
    BINARY = "binary"
    """A binary file changed on both sides: it cannot be merged by lines."""
    MODE = "mode"
    """Both sides changed the exec bit, differently."""
    SYMLINK = "symlink"
    """A symlink changed on both sides (or turned into a file on one)."""
    DELETED = "deleted"
    """One side deleted the file, the other changed it."""
    TYPE = "type"
    """A file on one side is a folder on the other."""
    UNTRACKED = "untracked"
    """The workspace holds something there that the scan does not track
    (ignored, too large, unreadable...): never overwritten or deleted."""
    TOO_LARGE = "too-large"
    """A version is too large to merge in memory (over 8 MiB)."""


@dataclass(frozen=True)
class Conflict:
    """A path a revert or merge could not settle, and why."""

    path: str
    reason: ConflictReason
    detail: str = field(default="", compare=False)


@dataclass(frozen=True)
class RevertResult:
    """What a revert or a merge did (or, with ``dry_run``, would do).

    Every path the change touched is in exactly one of ``reverted`` (now holds
    the change's far side: written, deleted or recreated), ``merged`` (both
    sides' edits combined, cleanly), ``unchanged`` (already as the change
    would leave it) and ``conflicts``. ``applied`` is False when nothing was
    written because of conflicts (``conflicts="abort"``) or a dry run, and the
    result is then falsy, so an undo that did nothing never reads as done.
    """

    reverted: tuple[str, ...]
    merged: tuple[str, ...]
    conflicts: tuple[Conflict, ...]
    unchanged: tuple[str, ...]
    safety_snapshot_id: str | None
    dry_run: bool
    applied: bool = True
    marked: tuple[str, ...] = ()
    """Conflicting text files written with git-style conflict markers (``conflicts="markers"``)."""
    skipped: tuple[SkippedPath, ...] = ()
    """Paths this platform cannot hold (see ``RestoreResult.skipped``): left as they are."""
    unattributed: tuple[str, ...] = ()
    """Paths another session's overlapping call may have changed (whose change is unknown): kept as they are."""

    def __bool__(self) -> bool:
        return self.applied


@dataclass(frozen=True)
class ForkInfo:
    """A fork of this workspace: a folder made from one of its snapshots by ``fork()``."""

    path: str
    fork_point_id: str
    """The snapshot it was made from (also its first snapshot, and what ``merge`` compares from)."""
    created_at: datetime
    exists: bool
    """The folder is still there (a fork is a folder of its own: nothing here removes it)."""


@dataclass(frozen=True)
class PushResult:
    """What a push sent to a remote, under its namespace ``refs/snapshotter/<name>/``."""

    remote: str
    """The remote, without credentials."""
    name: str
    snapshots_sent: int
    """Snapshots the remote did not hold before."""
    objects_sent: int
    """Git objects sent: only those the remote lacked."""
    refs_updated: int
    pruned: int = 0
    """Remote snapshot refs deleted because retention dropped them here (``prune=True``)."""
    skipped: tuple[SkippedSnapshot, ...] = ()
    """Snapshots left out, and why (``skip_refused=True``); without it, such a snapshot refuses the push."""
    bytes_sent: int = 0
    """Bytes of objects sent (a big file's new version goes as a delta of one the remote holds)."""


@dataclass(frozen=True)
class SkippedSnapshot:
    """A snapshot a push did not send: the first ``path`` that kept it back, and
    the ``reason``: ``"excluded"`` (a path the excludes keep out of snapshots
    now, recorded before they did) or ``"too large"`` (a file over the push limit)."""

    id: str
    path: str
    reason: str


@dataclass(frozen=True)
class FetchResult:
    """What a fetch brought from a remote namespace."""

    remote: str
    name: str
    snapshots: tuple[SnapshotInfo, ...]
    """The snapshots new here, oldest first, numbered after the ones already here."""


@dataclass(frozen=True)
class RemoteWorkspace:
    """One namespace on a remote: a workspace's snapshots, from one or more stores."""

    name: str
    snapshots: int
    hosts: int
    """How many stores (machines) pushed their state there."""


@dataclass(frozen=True)
class ScanStats:
    """What the last walk of the workspace cost."""

    files_seen: int = 0
    files_hashed: int = 0
    bytes_hashed: int = 0
    dirs_seen: int = 0
    dirs_listed: int = 0
    """Folders read again; the others had the same stat as when last listed (see ``trust_folder_mtimes``)."""
    seconds: float = 0.0
    incremental: bool = False
    """Watch mode walked only what changed (``files_seen`` then counts only those files)."""
    dirs_preloaded: int = 0
    """Folders whose files a second core found unchanged for this walk (see ``second_core``)."""
    files_hashed_forked: int = 0
    """Of ``files_hashed``, those a second core hashed (see ``second_core``)."""


@dataclass(frozen=True)
class SessionInfo:
    """A named session that keeps history in this store (``sessions()``), as the
    agent hooks name theirs: ``<agent>-<the agent's session id>``."""

    name: str
    agent: str | None
    """The agent whose hooks made it (from its snapshots' ``agent`` metadata), if any."""
    agent_session_id: str | None
    """The agent's own id for the session (``agent-session`` metadata), if known."""
    turns: int
    """Turns begun in it (``pre-turn:<n>`` snapshots still kept)."""
    open_turn: bool
    """Its newest turn has not ended (no ``post-turn:<n>`` yet)."""
    last_activity: datetime
    """When its newest snapshot was taken."""


@dataclass(frozen=True)
class UndoResult:
    """What ``undo()`` or ``redo()`` did. False (``ok`` unset) when nothing was restored."""

    ok: bool
    action: str
    """"undo" or "redo"."""
    message: str
    target_id: str | None = None
    """The snapshot the workspace now matches."""
    saved_id: str | None = None
    """The snapshot holding the state that was replaced (what the opposite action returns to)."""
    restore: RestoreResult | None = None
    """What the restore did (the anonymous session undoes by restoring)."""
    revert: RevertResult | None = None
    """What the revert did (a named session undoes its own changes only), or
    why it was refused (its conflicts, with ``ok`` False)."""

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class PruneResult:
    """What ``prune()`` dropped (or, with ``dry_run``, would drop), oldest first."""

    pruned: tuple[SnapshotInfo, ...]
    kept: int
    dry_run: bool = False
    bytes_before: int = 0
    bytes_after: int = 0
    """Store size after pruning and compaction (equal to before for a dry run)."""


@dataclass(frozen=True)
class StoreStats:
    """The state of one store."""

    snapshots: int
    pinned: int
    loose_objects: int
    packs: int
    bytes_on_disk: int
    oldest: datetime | None
    newest: datetime | None
    last_gc: datetime | None


@dataclass(frozen=True)
class GcResult:
    """What a compaction did."""

    objects_kept: int
    objects_removed: int
    packs_removed: int
    temp_files_removed: int
    bytes_before: int
    bytes_after: int
    seconds: float


@dataclass(frozen=True)
class VerifyResult:
    """What ``verify()`` found; ``ok`` when nothing."""

    ok: bool
    snapshots_checked: int
    objects_checked: int
    problems: tuple[str, ...]
