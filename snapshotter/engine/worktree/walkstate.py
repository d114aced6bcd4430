"""What one walk carries from folder to folder (gix-dir's ``Context``).

``Walk`` holds what the walk was given and what it has found so far; each
step (``readdir``, ``classify``, ``hashing``) reads and adds to it, and the
walker turns it into its outcome, a ``walker.Scan``. It lives as long as one
call of ``walker.scan``: nothing about a walk outlives it but that outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from snapshotter.engine.fsutil import StatKey
from snapshotter.engine.gitstore.objects import git_mode
from snapshotter.engine.worktree.hostfs import HostFS
from snapshotter.engine.worktree.limits import WorkspaceLimits
from snapshotter.engine.worktree.preload import Preload
from snapshotter.engine.worktree.preloadthread import ThreadPreload
from snapshotter.engine.worktree.statcache import Folder, Listings, Record, Shape, StatCache
from snapshotter.engine.worktree.trust import FolderTrust
from snapshotter.model import SkippedPath


@dataclass(eq=False)
class DirNode:
    """One folder of the scan: its tracked files and subfolders."""

    rel: str
    records: Folder = field(default_factory=dict)
    """Its tracked files by name (stat key, blob id); a folder that matched the
    stat cache shares the cache's table, so it is never changed in place."""
    subdirs: list[DirNode] = field(default_factory=list)
    clean: bool = True
    """Every entry came from the stat cache; after tree building: same tree id as cached."""
    tree_id: bytes | None = None
    """None for a folder with nothing tracked (git stores no empty folders)."""
    rules: bytes = b""
    """Fingerprint of the ignore rules this folder inherited: an incremental scan
    reuses the folder only under the same rules."""
    shape: Shape | None = None
    """The folder as listed (or as trusted unchanged), see ``trust``."""
    listed: int = -1
    """How many tracked files it listed: its shape holds only if each has a record."""
    extras: dict[str, tuple[int, bytes]] | None = None
    """Entries the user's index keeps that the folder does not hold (name ->
    (git mode, id)): a submodule not checked out, a file outside a sparse
    checkout (see ``unchecked``)."""


@dataclass(slots=True)
class Pending:
    """A file to hash: new, or not matching its stat-cache record. A cold
    snapshot holds one per file until hashing ends: slots, and its paths made
    when asked (``base`` is its folder's path, shared), keep it at 100 bytes."""

    node: DirNode
    name: str
    base: str
    is_link: bool
    size: int
    """Its size when ``lstat``ed (a regular file is hashed with the stat of the open file)."""
    link_key: StatKey | None
    """A symlink's stat key, from its ``lstat``; None for a regular file."""
    recorded: int | None
    """The st_mode recorded for this path before, on hosts that need it (see hostfs)."""
    record: Record | None
    """Its stat-cache record: not in the cache (None), over ``max_new_file_size``
    it is skipped, not tracked; unreadable now, it is kept as last recorded."""

    @property
    def new(self) -> bool:
        return self.record is None

    @property
    def rel(self) -> str:
        """Its path in the workspace."""
        return self.node.rel + "/" + self.name if self.node.rel else self.name

    @property
    def path(self) -> str:
        """Its path on the host."""
        return self.base + self.name


_GIT_MODES: dict[int, int] = {}


def git_mode_of(st_mode: int) -> int:
    """objects.git_mode, remembered per st_mode (it runs for every tracked file)."""
    mode = _GIT_MODES.get(st_mode)
    if mode is None:
        mode = _GIT_MODES[st_mode] = git_mode(st_mode)
    return mode


def never(path: str) -> bool:
    return False


@dataclass(eq=False)
class Walk:
    """One walk: its inputs, then everything it has found so far."""

    workspace: str
    """The workspace's path in the host's own spelling."""
    root: DirNode
    cache: StatCache
    trust: FolderTrust
    host: HostFS
    carry_modes: bool
    """Modes carry over from records (see ``HostFS.needs_recorded_modes``)."""
    cutoff: int
    """Records whose mtime is at or above this are racy: hashed again."""
    max_new_file_size: int
    """New files over this size are skipped, not tracked."""
    sparse_files: bool = False
    """New sparse files are tracked (else skipped as too large, see ``limits.is_sparse``)."""
    forced: Callable[[str], bool] = never
    """Paths tracked whatever their size."""
    previous_mode: Callable[[str], int | None] | None = None
    limits: WorkspaceLimits | None = None
    """Caps checked folder by folder (a full walk only)."""
    previous_nodes: dict[str, DirNode] = field(default_factory=dict)
    """An incremental walk: the previous scan's folders, and what changed."""
    deep: frozenset[str] = frozenset()
    on_the_way: frozenset[str] = frozenset()
    preload: Preload | ThreadPreload | None = None
    """A thread (``preloadthread``) or a forked copy (``preload``) checking trusted folders from the far end."""
    split: bool = False
    """A forked copy may hash the tail of the queue (``second_core``, see ``splithash``)."""

    nodes: dict[str, DirNode] = field(default_factory=dict)
    listings: Listings = field(default_factory=dict)
    order: list[DirNode] = field(default_factory=list)
    """Every folder visited, parents before children."""
    skipped: list[SkippedPath] = field(default_factory=list)
    pending: list[Pending] = field(default_factory=list)
    unsafe_names: list[str] = field(default_factory=list)
    repos_found: list[str] = field(default_factory=list)
    listed: set[str] = field(default_factory=set)
    """Folders listed by this walk (the others were trusted or reused)."""
    grafted: list[DirNode] = field(default_factory=list)
    """Folders an incremental walk took whole from the previous scan."""
    forgotten: list[DirNode] = field(default_factory=list)
    """Folders of the previous scan an incremental walk dropped (gone since)."""

    files_seen: int = 0
    bytes_seen: int = 0
    dirs_listed: int = 0
    dirs_preloaded: int = 0
    hashed_forked: int = 0
    shape_hits: int = 0
    shared_tables: int = 0
    """Folders whose files all matched: they share the cache's table."""
    listing_hits: list[int] = field(default_factory=lambda: [0])
    """Folders whose ignore verdicts were reused (a list: ``tracked_entries`` counts in it)."""
