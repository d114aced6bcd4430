"""Where a workspace's store lives: ``<home>/snapshots/<key>/``.

``<home>`` is ``$SNAPSHOTTER_HOME`` or the per-user data folder, ``<key>`` a
short stable hash of the canonical (resolved) workspace path. Apart from the
store itself because the front ends and the compat adapters ask where a store
is (``where``, ``shadow_path``) without opening or creating one.
"""

from __future__ import annotations

import hashlib
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.errors import WorkspaceError

_CASE_INSENSITIVE = sys.platform in ("win32", "darwin")
SIDE_FOLDER = "snapshotter"
"""The store's own folder of side files (the hooks log, the watcher's key, caches)."""


def default_home() -> str:
    """``$SNAPSHOTTER_HOME``, else the platform's per-user data folder."""
    env = os.environ.get("SNAPSHOTTER_HOME")
    if env:
        return env
    import platformdirs

    return platformdirs.user_data_dir("snapshotter", appauthor=False)


def canonical_workspace(workspace: str | os.PathLike[str]) -> str:
    """The resolved workspace path; raises WorkspaceError if it is not a folder."""
    path = os.path.realpath(os.fspath(workspace))
    if not os.path.isdir(path):
        raise _refusal(path)
    return path


def _refusal(path: str) -> WorkspaceError:
    from snapshotter.errors import WorkspaceError  # only on this path: a command handed to a watcher skips it

    if not os.path.exists(path):
        return WorkspaceError(f"workspace {path} does not exist; create it or pass an existing folder")
    return WorkspaceError(f"workspace {path} is not a folder; pass a folder")


def store_key(canonical: str) -> str:
    identity = canonical.lower() if _CASE_INSENSITIVE else canonical
    return hashlib.sha256(os.fsencode(identity)).hexdigest()[:20]


def _is_within(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # different drives on Windows
        return False


def unsafe_roots() -> set[str]:
    """Folders refused as workspaces unless the caller allows them: the user's
    home and its Desktop, Documents and Downloads (see ``is_refused_root``)."""
    home = os.path.realpath(os.path.expanduser("~"))
    return {home, *(os.path.join(home, name) for name in ("Desktop", "Documents", "Downloads"))}


def is_refused_root(canonical: str) -> bool:
    """A filesystem root, the home, Desktop, Documents or Downloads: a snapshot of
    one is almost always a mistake (``allow_unsafe_root`` lifts the refusal)."""
    return os.path.dirname(canonical) == canonical or canonical in unsafe_roots()


def find_workspace(start: str, home: str | os.PathLike[str] | None) -> str:
    """The workspace a command started in folder ``start`` (canonical) means, found
    as git and jj find theirs: the nearest folder at or above ``start`` that has
    a store in ``home``, else the root of the nearest git repository around it,
    else ``start`` itself. So ``snapshotter status`` in a subfolder speaks of
    the folder snapshotted above it, never of a new, empty one.

    A repository root that is a refused folder (``is_refused_root``: a home that
    is a git repository of its dotfiles, ``git init ~``) is never the answer for
    a folder below it: every project there would be taken as the whole home and
    refused. The folder named or stood in is then the workspace."""
    home_path = _home_path(home)
    repository: str | None = None
    folder = start
    while True:
        overlaps = _is_within(home_path, folder) or _is_within(folder, home_path)  # no store of its own
        if not overlaps and store_exists(os.path.join(home_path, "snapshots", store_key(folder))):
            return folder
        if repository is None and os.path.lexists(os.path.join(folder, ".git")) and not is_refused_root(folder):
            repository = folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return repository or start
        folder = parent


def store_exists(store: str) -> bool:
    """Whether a store is at ``store``: a folder holding more than the folder of
    snapshotter's side files. One holding only that (what a failed hook call
    of an older version left: its log) or nothing is no store, and opens as a
    new one (``Store.open_or_create``). Anything else there (a file, a folder
    that cannot be listed) is taken for a store, so that opening it says what
    is wrong and nothing unknown is removed."""
    try:
        names = os.listdir(store)
    except FileNotFoundError:
        return False
    except NotADirectoryError:  # a file there is something; a file above it (a home that is a file) is not
        return os.path.lexists(store)
    except OSError:
        return True
    return any(name != SIDE_FOLDER for name in names)


def _home_path(home: str | os.PathLike[str] | None) -> str:
    return os.path.realpath(os.path.abspath(os.fspath(home) if home is not None else default_home()))


def store_path_for(canonical: str, home: str | os.PathLike[str] | None) -> str:
    """The store folder of a canonical workspace; refuses overlapping locations."""
    home_path = _home_path(home)
    store = os.path.join(home_path, "snapshots", store_key(canonical))
    inside_workspace, around_workspace = _is_within(home_path, canonical), _is_within(canonical, home_path)
    if inside_workspace or around_workspace:
        from snapshotter.errors import HOME_OUTSIDE, WorkspaceError

        if inside_workspace:
            raise WorkspaceError(f"the snapshot home {home_path} is inside the workspace {canonical}", HOME_OUTSIDE)
        raise WorkspaceError(
            f"the workspace {canonical} is inside the snapshot home {home_path}; snapshot a folder outside it"
        )
    return store
