"""Where the user's own files are (outside every workspace), found cheaply: a
command handed to a watcher and every hook call ask, and must not load the
settings machinery to do so."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not ``typing``'s: loaded by every command line and hook call
if TYPE_CHECKING:
    from collections.abc import Mapping

CONFIG_ENV = "SNAPSHOTTER_CONFIG"
"""Names the user's config file instead of the default location."""


def user_config_path(environ: Mapping[str, str] | None = None) -> str:
    """The user's own config file: ``$SNAPSHOTTER_CONFIG``, else ``config.toml`` in
    the platform's per-user config folder (never inside a workspace)."""
    environ = os.environ if environ is None else environ
    named = environ.get(CONFIG_ENV)
    if named:
        return named
    import platformdirs

    return os.path.join(platformdirs.user_config_dir("snapshotter", appauthor=False), "config.toml")


def snapshot_home(environ: Mapping[str, str] | None = None) -> str:
    """The home as the command line finds it: ``SNAPSHOTTER_HOME``, else ``home``
    in the user's config file, else the user data folder (a workspace file never
    sets it). The config file is read only where there is one."""
    environ = os.environ if environ is None else environ
    if environ.get("SNAPSHOTTER_HOME"):
        return environ["SNAPSHOTTER_HOME"]
    path = user_config_path(environ)
    if path != os.devnull and os.path.exists(path):  # the null device: no config file, as for git
        configured = _home_in(path)
        if configured:
            return configured
    from snapshotter.engine.gitstore.location import default_home

    return default_home()


def _home_in(path: str) -> str | None:
    """The ``home`` a config file sets (None: none, or a file that cannot be read:
    ``config`` reports that itself wherever settings are resolved)."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]
    from snapshotter.engine.fsutil import read_side_file

    try:
        found = tomllib.loads(read_side_file(path).decode("utf-8")).get("home")
    except (OSError, ValueError, RecursionError):
        return None
    return found if isinstance(found, str) and found else None
