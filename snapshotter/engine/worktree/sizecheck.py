"""The size check of a new store: the workspace measured against its caps
before the first snapshot, so a folder too big is refused before anything is
hashed or stored (see ``limits``).

What it lists is not wasted: every folder's ignore verdicts go to the first
scan's stat cache, and where folders are listed through descriptors each
folder's listing and its files' stats go to a ``trust.Prelisting``, for the
first scan to take the folders unchanged since.
"""

from __future__ import annotations

import os
import stat

from snapshotter.engine.worktree.ignore import IgnoreStack
from snapshotter.engine.worktree.limits import WorkspaceLimits, stored_size
from snapshotter.engine.worktree.listing import (
    has_gitignore,
    join_path,
    list_folder,
    open_folder,
    own_rules,
    tracked_entries,
)
from snapshotter.engine.worktree.statcache import Listings
from snapshotter.engine.worktree.trust import KnownStat, Listed, Prelisting


def measure(
    workspace: str,
    ignores: IgnoreStack,
    limits: WorkspaceLimits,
    listings: Listings,
    prelisting: Prelisting | None = None,
    max_new_file_size: int | None = None,
) -> tuple[int, int]:
    """Count tracked entries and bytes, raising WorkspaceTooLarge as soon as a cap is passed.
    A file over ``max_new_file_size`` will be left out of the first snapshot, so
    its bytes count toward no cap; a sparse file counts what it occupies.

    ``listings`` receives every folder's ignore verdicts, as the stat cache keeps
    them: handed to the first scan, they spare it judging every name again.
    ``prelisting`` (where folders are listed through descriptors) receives each
    folder's listing and its files' stats, for the first scan to reuse.
    """
    entries = size = 0
    stack = [("", workspace, ignores)]
    while stack:
        prefix, path, rules = stack.pop()
        try:
            fd = open_folder(path, not prefix)
        except OSError:
            continue
        try:
            own = os.fstat(fd) if fd >= 0 and prelisting is not None else None
            found = list_folder(path, fd)
            base = path if path.endswith(os.sep) else path + os.sep
            rules = own_rules(rules, has_gitignore(found), prefix, base)
            rescued: set[str] = set()
            dirs, files = tracked_entries(found, prefix, rules, {}, listings, rescued=rescued)
            stats: dict[str, KnownStat] = {}
            if prelisting is not None and own is not None:
                prelisting.folders[prefix] = Listed(own, found, stats)
            for name in dirs:
                entries += 1
                child = join_path(prefix, name)
                stack.append((child, base + name, rules.inside(child) if name in rescued else rules))
                limits.check(workspace, entries, size)
            for entry in files:
                entries += 1
                try:  # not entry.stat(): the entry, kept in the prelisting, would keep its stat too (650 bytes)
                    st = (
                        os.stat(entry.name, dir_fd=fd, follow_symlinks=False)
                        if fd >= 0
                        else entry.stat(follow_symlinks=False)
                    )
                except OSError:
                    continue
                if prelisting is not None:
                    stats[entry.name] = KnownStat(st)
                if max_new_file_size is None or stat.S_ISLNK(st.st_mode) or st.st_size <= max_new_file_size:
                    size += stored_size(st)
                limits.check(workspace, entries, size)
        except OSError:
            continue
        finally:
            if fd >= 0:
                os.close(fd)
    return entries, size
