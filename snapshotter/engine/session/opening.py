"""Opening a workspace's engine: its store made only once the folder passed the size caps.

Apart from ``engine`` so that module stays one job (an opened workspace) and a command that opens an
existing store loads no size check (nor the ignore rules, listings and limits it takes)."""

from __future__ import annotations

import time

from snapshotter.engine.gitstore.location import is_refused_root, store_exists, store_path_for
from snapshotter.engine.gitstore.store import Store
from snapshotter.engine.session.engine import Engine
from snapshotter.errors import UNSAFE_ROOT, UnsafeWorkspace
from snapshotter.options import Options

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:
    from snapshotter.engine.worktree import statcache


def open_engine(workspace: str, options: Options) -> Engine:
    """The engine of the canonical ``workspace``'s store, made if new. A new store
    is made only after the workspace passed the size caps: the check lists every
    folder, and the first scan takes over what it found."""
    check_root(workspace, options.allow_unsafe_root)
    path = store_path_for(workspace, options.home)
    listings: statcache.Listings = {}
    prelisting = None
    if not store_exists(path):  # a new store: refuse a huge folder before creating anything
        from snapshotter.engine.worktree.gitrepo import find_repository, tracked_paths
        from snapshotter.engine.worktree.ignore import option_rules
        from snapshotter.engine.worktree.limits import WorkspaceLimits
        from snapshotter.engine.worktree.sizecheck import measure
        from snapshotter.engine.worktree.trust import Prelisting

        prelisting = Prelisting(time.time_ns())
        repository = find_repository(workspace)
        rules = option_rules(workspace, options, repository)
        rules = rules.with_tracked(tracked_paths(repository) if repository is not None else None)
        measure(workspace, rules, WorkspaceLimits.of(options), listings, prelisting, options.new_file_cap)
    return Engine(workspace, Store.open_or_create(path, workspace), options, listings, prelisting)


def check_root(canonical: str, allow_unsafe_root: bool) -> None:
    """Refuse a filesystem root, a home, its Desktop, Documents or Downloads as a workspace."""
    if allow_unsafe_root:
        return
    if is_refused_root(canonical):
        raise UnsafeWorkspace(
            f"refusing to snapshot {canonical}: a filesystem root, home, Desktop, Documents or Downloads folder",
            UNSAFE_ROOT,
        )
