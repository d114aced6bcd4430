"""A ``files=`` argument as workspace paths, and the filter a comparison takes for them.

Kept out of ``checkout`` (which re-exports both) so that a caller that only
names paths, a hook's ``tool_snapshot(writes=...)`` for one, loads neither the
restore's plans, the tree comparison nor the workspace's writer (issue #51).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from snapshotter.errors import InvalidInput


def normalize_selection(workspace: str, files: Sequence[str | os.PathLike[str]]) -> list[str]:
    """Relative posix paths for a ``files=`` argument; refuses paths outside."""
    out = []
    for item in files:
        try:
            raw = os.fspath(item)
        except TypeError:
            raise InvalidInput(f"bad path {item!r} in files=; pass paths inside the workspace") from None
        if not isinstance(raw, str) or not raw or "\0" in raw:
            raise InvalidInput(f"bad path {raw!r} in files=; pass paths inside the workspace")
        absolute = raw if os.path.isabs(raw) else os.path.join(workspace, raw)
        absolute = os.path.normpath(absolute)
        rel = os.path.relpath(absolute, workspace)
        if rel == "." or rel.startswith(".." + os.sep) or rel == ".." or os.path.isabs(rel):
            raise InvalidInput(f"path {raw!r} is not inside the workspace {workspace}")
        out.append(rel.replace(os.sep, "/"))
    return out


def selection_filter(selected: Sequence[str]) -> Callable[[str, bool], bool]:
    """``within(path, is_dir)`` for :func:`trees.changes`: a selected path, what
    lies below one, or a folder on the way to one."""
    chosen = set(selected)

    def within(path: str, is_dir: bool) -> bool:
        if path in chosen:
            return True
        parent = path
        while "/" in parent:
            parent = parent.rpartition("/")[0]
            if parent in chosen:
                return True
        return is_dir and any(s.startswith(path + "/") for s in chosen)

    return within
