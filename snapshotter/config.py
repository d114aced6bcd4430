"""Settings for the command line and the MCP server, and where each came from.

Lowest precedence first: built-in defaults, ``[tool.snapshotter]`` in the
workspace's ``pyproject.toml``, a ``snapshotter.toml`` in the workspace,
``SNAPSHOTTER_*`` environment variables, then command-line flags. The library
itself takes keyword arguments only; this module turns settings into them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .errors import InvalidInput
from .gates import DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES
from .retention import Retention

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

_DEFAULT_RETENTION = Retention()


@dataclass(frozen=True)
class Setting:
    """One setting's type, default and help."""

    kind: type
    default: Any
    help: str


SETTINGS: dict[str, Setting] = {
    "home": Setting(str, None, "where stores live (default: the user data folder)"),
    "exclude": Setting(list, [], "extra gitignore-style patterns"),
    "use_default_excludes": Setting(bool, True, "apply the built-in excludes (.env, node_modules, ...)"),
    "max_new_file_size": Setting(int, 10 * 2**20, "skip new files larger than this many bytes"),
    "lock_timeout": Setting(float, 30.0, "seconds to wait for another writer"),
    "max_snapshots": Setting(int, _DEFAULT_RETENTION.max_snapshots, "retention: keep at most this many (0: none)"),
    "max_age_days": Setting(float, 7.0, "retention: drop snapshots older than this (0: no limit)"),
    "max_store_bytes": Setting(int, _DEFAULT_RETENTION.max_store_bytes, "retention: store size cap (0: no limit)"),
    "allow_unsafe_root": Setting(bool, False, "allow home, Desktop, Documents, Downloads or a filesystem root"),
    "max_workspace_bytes": Setting(int, DEFAULT_MAX_BYTES, "refuse bigger workspaces (0: no cap)"),
    "max_workspace_entries": Setting(int, DEFAULT_MAX_ENTRIES, "refuse workspaces with more entries (0: no cap)"),
    "trust_folder_mtimes": Setting(
        bool, True, "skip re-listing folders whose mtime is unchanged (off: for filesystems that do not update it)"
    ),
}


def _coerce(name: str, value: Any, source: str) -> Any:
    kind = SETTINGS[name].kind
    try:
        if kind is bool:
            if isinstance(value, str):
                lowered = value.strip().lower()
                if lowered not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError(value)
                return lowered in ("1", "true", "yes", "on")
            return bool(value)
        if kind is list:
            if isinstance(value, str):
                return [part for part in (p.strip() for p in value.split(",")) if part]
            if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
                raise ValueError(value)
            return list(value)
        if kind is str:
            return str(value)
        return kind(value)
    except (TypeError, ValueError):
        raise InvalidInput(
            f"setting {name} from {source} has a bad value {value!r}; expected {kind.__name__}"
        ) from None


def _read_toml(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            loaded: dict[str, Any] = tomllib.load(handle)
            return loaded
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}; fix or remove it") from None


def resolve(
    workspace: str, flags: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> dict[str, tuple[Any, str]]:
    """Every setting's effective value and the source it came from."""
    environ = os.environ if environ is None else environ
    out: dict[str, tuple[Any, str]] = {name: (s.default, "default") for name, s in SETTINGS.items()}
    layers: list[tuple[str, Mapping[str, Any]]] = []
    pyproject = os.path.join(workspace, "pyproject.toml")
    section = _read_toml(pyproject).get("tool", {}).get("snapshotter", {})
    layers.append((f"{pyproject} [tool.snapshotter]", section))
    own = os.path.join(workspace, "snapshotter.toml")
    layers.append((own, _read_toml(own)))
    from_env = {n: environ[f"SNAPSHOTTER_{n.upper()}"] for n in SETTINGS if f"SNAPSHOTTER_{n.upper()}" in environ}
    layers.append(("environment", from_env))
    layers.append(("command line", {n: v for n, v in flags.items() if v is not None and n in SETTINGS}))
    for source, values in layers:
        for name, value in values.items():
            if name not in SETTINGS:
                raise InvalidInput(f"unknown setting {name!r} in {source}; `snapshotter config` lists them")
            out[name] = (_coerce(name, value, source), source)
    return out


def snapshotter_options(settings: Mapping[str, tuple[Any, str]]) -> dict[str, Any]:
    """Keyword arguments for :class:`~snapshotter.Snapshotter` from resolved settings."""
    value = {name: pair[0] for name, pair in settings.items()}
    age = value["max_age_days"]
    return {
        "home": value["home"],
        "exclude": tuple(value["exclude"]),
        "use_default_excludes": value["use_default_excludes"],
        "max_new_file_size": value["max_new_file_size"],
        "lock_timeout": value["lock_timeout"],
        "retention": Retention(
            max_snapshots=value["max_snapshots"] or None,
            max_age=timedelta(days=age) if age else None,
            max_store_bytes=value["max_store_bytes"] or None,
        ),
        "allow_unsafe_root": value["allow_unsafe_root"],
        "max_workspace_bytes": value["max_workspace_bytes"],
        "max_workspace_entries": value["max_workspace_entries"],
        "trust_folder_mtimes": value["trust_folder_mtimes"],
    }
