"""Settings for the command line and the MCP server, and where each came from.

Lowest precedence first: built-in defaults, the user's config file (outside any
workspace), the workspace's own files (``[tool.snapshotter]`` in its
``pyproject.toml``, a ``snapshotter.toml``), ``SNAPSHOTTER_*`` environment
variables, then command-line flags. The library itself takes keyword arguments
only; this module turns settings into them.

Who may set what: the caller (flags, environment, the user's config file) may
set anything. A file inside the workspace can be written by the agent being
guarded, so it may only make things safer: add excludes, tighten the size
gates, keep more history, or tune harmless knobs. Anything else found there is
ignored with a warning, and so is a file that cannot be read or parsed: the
agent must not be able to stop snapshots by writing a bad file either.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import timedelta
from typing import Any

from snapshotter.engine.fsutil import read_side_file
from snapshotter.errors import InvalidInput
from snapshotter.frontends.shared.userfiles import CONFIG_ENV, user_config_path
from snapshotter.options import DEFAULTS, Options, Retention, WorkspaceSettings

_MAX_DAYS = 999_999  # timedelta's own limit is 999,999,999 days: anything near it means "forever"

Policy = Callable[[Any, Any], bool]
"""(value so far, value from a workspace file) -> may the workspace file's value stand?"""


def _anything(current: Any, proposed: Any) -> bool:
    return True


def _never(current: Any, proposed: Any) -> bool:
    return False


def _only_true(current: Any, proposed: Any) -> bool:
    return proposed is True


def _only_false(current: Any, proposed: Any) -> bool:
    return proposed is False


def _only_lower_cap(current: Any, proposed: Any) -> bool:
    """A cap where 0 means none: the workspace may only lower it, never lift it."""
    return bool(proposed > 0 and (current == 0 or proposed <= current))


def _only_longer_history(current: Any, proposed: Any) -> bool:
    """A retention limit where 0 means none: the workspace may only keep more."""
    return bool(current != 0 and (proposed == 0 or proposed >= current))


@dataclass(frozen=True)
class Setting:
    """One setting's type, default, help, and what a workspace file may do with it."""

    kind: type
    default: Any
    help: str
    from_workspace: Policy = _never
    workspace_rule: str = "it is the caller's to set"


_RULES: dict[str | None, tuple[Policy, str]] = {
    None: (_never, "it is the caller's to set"),
    "any": (_anything, "it is the caller's to set"),
    "add": (_anything, "a workspace file's patterns are added"),
    "only-on": (_only_true, "it may not turn them off"),
    "only-off": (_only_false, "it may only turn it off"),
    "lower": (_only_lower_cap, "it may only lower it"),
    "keep-more": (_only_longer_history, "it may only keep more"),
}
"""What each ``options.WorkspaceRule`` lets a workspace file do, and how a refusal says why."""
_DAY = timedelta(days=1)


def _settings(knobs: object) -> dict[str, Setting]:
    """The settings a frozen value of knobs offers (see ``options.setting``), in
    field order; a knob holding such a value (the retention policy) offers its
    own knobs in its place, and a duration is set in days."""
    found: dict[str, Setting] = {}
    for knob in fields(knobs):  # type: ignore[arg-type]
        default = getattr(knobs, knob.name)
        if is_dataclass(default):
            found.update(_settings(default))
        elif "help" in knob.metadata:
            policy, rule = _RULES[knob.metadata["workspace"]]
            name, kind = knob.name, knob.metadata["kind"]
            if kind is timedelta:
                name, kind, default = f"{name}_days", float, default / _DAY
            elif kind is list:
                default = list(default)
            found[name] = Setting(kind, default, knob.metadata["help"], policy, rule)
    return found


SETTINGS: dict[str, Setting] = _settings(DEFAULTS)
"""Every setting, read from :class:`~snapshotter.options.Options`: its name, kind, default and help."""


@dataclass(frozen=True)
class Resolved:
    """Every setting's effective value and source, and what was ignored, with why."""

    values: Mapping[str, tuple[Any, str]]
    warnings: tuple[str, ...] = field(default=())
    credentials: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The user config file's ``[credentials]``: every push takes them, background ones too."""
    caller: Mapping[str, Any] = field(default_factory=dict)
    """The settings that decide what snapshots leave out (:data:`KEPT_APART`) as
    the caller's sources alone set them, without the workspace's files."""
    workspace: WorkspaceSettings = WorkspaceSettings()
    """What the workspace's files added to those: its own rules, not the caller's."""

    def value(self, name: str) -> Any:
        return self.values[name][0]


KEPT_APART = ("exclude", "max_new_file_size", "use_default_excludes")
"""The settings a workspace file's value is kept apart for: what they leave out
of snapshots is the workspace's rule, which never keeps a restore from
bringing a path back, where the caller's is (``options.WorkspaceSettings``)."""


def _coerce(name: str, value: Any, source: str) -> Any:
    kind = SETTINGS[name].kind
    try:
        if kind is bool:
            if isinstance(value, str):
                lowered = value.strip().lower()
                if lowered not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError(value)
                return lowered in ("1", "true", "yes", "on")
            if not isinstance(value, bool):
                raise ValueError(value)
            return value
        if kind is list:
            if isinstance(value, str):
                return [part for part in (p.strip() for p in value.split(",")) if part]
            if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
                raise ValueError(value)
            return list(value)
        if kind is str:
            if not isinstance(value, str):
                raise ValueError(value)
            if name == "home" and not value:  # not the current folder by accident: "." says that
                raise InvalidInput(
                    f"setting home from {source} is an empty path; name a folder (the current one is '.')"
                )
            return value
        if isinstance(value, bool):
            raise ValueError(value)
        number = kind(value)
        if number < 0 or number != number:  # negative, or NaN
            raise ValueError(value)
        return number
    except (TypeError, ValueError, OverflowError):
        raise InvalidInput(
            f"setting {name} from {source} has a bad value {value!r}; expected a non-negative {kind.__name__}"
        ) from None


def _read_toml(path: str) -> dict[str, Any]:
    """A settings file's table, read guarded (``fsutil.read_side_file``): a named
    pipe, a device or a file over :data:`~snapshotter.engine.fsutil.SIDE_FILE_CAP` (a
    ``pyproject.toml`` is a few KiB) cannot be read, as a malformed one cannot.
    The null device names no settings (``SNAPSHOTTER_CONFIG=/dev/null``, as git
    takes ``GIT_CONFIG_GLOBAL=/dev/null``)."""
    if path == os.devnull:
        return {}
    try:
        data = read_side_file(path)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}; fix or remove it") from None
    if sys.version_info >= (3, 11):  # loaded only when there is a file to parse: most commands find none
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]
    try:
        loaded: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
        return loaded
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}; fix or remove it") from None


def locate(start: str, flags: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> tuple[str, Resolved]:
    """The workspace a command started in folder ``start`` means (see
    ``location.find_workspace``), and its settings. The home cannot come from a
    workspace file, so the settings read at ``start`` say where to look."""
    from snapshotter.engine.gitstore.location import canonical_workspace, find_workspace

    begun = canonical_workspace(start)
    settings = resolve(begun, flags, environ)
    workspace = find_workspace(begun, settings.value("home"))
    return workspace, settings if workspace == begun else resolve(workspace, flags, environ)


def resolve(workspace: str, flags: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Resolved:
    """Every setting's effective value and the source it came from."""
    environ = os.environ if environ is None else environ
    out: dict[str, tuple[Any, str]] = {name: (s.default, "default") for name, s in SETTINGS.items()}
    caller = {name: out[name] for name in KEPT_APART}
    warnings: list[str] = []

    def caller_layer(source: str, values: Mapping[str, Any]) -> None:
        for name, raw in values.items():
            if name not in SETTINGS:
                raise InvalidInput(f"unknown setting {name!r} in {source}; `snapshotter config` lists them")
            value = _coerce(name, raw, source)
            for into in (out, caller) if name in caller else (out,):
                _set(into, name, value, source)

    user_file = user_config_path(environ)
    caller_layer(user_file, {k: v for k, v in _read_toml(user_file).items() if k != CREDENTIALS})
    added: list[tuple[str, tuple[str, ...]]] = []
    for source, values in _workspace_files(workspace, warnings):
        before = list(out["exclude"][0])
        _workspace_layer(source, values, out, warnings)
        added.append((source, tuple(p for p in out["exclude"][0] if p not in before)))
    from_env = {n: environ[f"SNAPSHOTTER_{n.upper()}"] for n in SETTINGS if f"SNAPSHOTTER_{n.upper()}" in environ}
    caller_layer("environment", from_env)
    caller_layer("command line", {n: v for n, v in flags.items() if v is not None and n in SETTINGS})
    try:
        table = remote_credentials(environ)
    except InvalidInput as exc:  # a push names it again, as its error; other commands go on
        warnings.append(f"ignored: {exc}")
        table = {}
    sources = {source for source, _ in added}
    cap, cap_source = out["max_new_file_size"]
    defaults_source = out["use_default_excludes"][1]
    apart = WorkspaceSettings(
        exclude=tuple((source, patterns) for source, patterns in added if patterns),
        max_new_file_size=cap if cap_source in sources else 0,
        default_excludes=defaults_source if defaults_source in sources else "",
    )
    return Resolved(out, tuple(warnings), table, {name: value for name, (value, _) in caller.items()}, apart)


def _set(out: dict[str, tuple[Any, str]], name: str, value: Any, source: str) -> None:
    """A caller's source sets ``name``; patterns add up, whoever sets them."""
    if SETTINGS[name].kind is list:
        value = list(out[name][0]) + [p for p in value if p not in out[name][0]]
        source = source if out[name][1] == "default" else f"{out[name][1]} + {source}"
    out[name] = (value, source)


def _workspace_files(workspace: str, warnings: list[str]) -> list[tuple[str, Mapping[str, Any]]]:
    pyproject = os.path.join(workspace, "pyproject.toml")
    own = os.path.join(workspace, "snapshotter.toml")
    layers: list[tuple[str, Mapping[str, Any]]] = []
    for source, path, table in (
        (f"{pyproject} [tool.snapshotter]", pyproject, ("tool", "snapshotter")),
        (own, own, ()),
    ):
        try:
            section: Any = _read_toml(path)
        except InvalidInput as exc:
            warnings.append(f"ignored {path}: {exc}")
            continue
        for key in table:
            section = section.get(key, {}) if isinstance(section, dict) else None
        if not isinstance(section, dict):
            warnings.append(f"ignored {source}: not a table of settings")
            continue
        layers.append((source, section))
    return layers


def _workspace_layer(
    source: str, values: Mapping[str, Any], out: dict[str, tuple[Any, str]], warnings: list[str]
) -> None:
    """A file inside the workspace: what makes things safer is taken, the rest is ignored with a warning."""
    for name, raw in values.items():
        setting = SETTINGS.get(name)
        if setting is None:
            warnings.append(f"ignored unknown setting {name!r} in {source}; `snapshotter config` lists them")
            continue
        try:
            value = _coerce(name, raw, source)
        except InvalidInput as exc:
            warnings.append(f"ignored: {exc}")
            continue
        current = out[name][0]
        if setting.kind is list:
            where = source if out[name][1] == "default" else f"{out[name][1]} + {source}"
            out[name] = (list(current) + [p for p in value if p not in current], where)
        elif setting.from_workspace(current, value):
            out[name] = (value, source)
        elif value != current:
            warnings.append(
                f"ignored {name} = {raw!r} in {source}: a file inside the workspace may not weaken safety "
                f"({setting.workspace_rule}); set it with a flag, the environment or {CONFIG_ENV}"
            )


CREDENTIALS = "credentials"
"""The user config file's table of remote credentials (never a workspace file's)."""
_CREDENTIAL_KEYS = {"username", "password", "token", "ssh_key", "ssh_known_hosts"}


def remote_credentials(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``[credentials]`` table of the user's own config file: ``username``,
    ``password`` or ``token``, ``ssh_key``, ``ssh_known_hosts``. Only this file
    outside every workspace may hold them; they are never printed."""
    table = _read_toml(user_config_path(environ)).get(CREDENTIALS, {})
    if not isinstance(table, dict):
        raise InvalidInput(f"[{CREDENTIALS}] in {user_config_path(environ)} must be a table")
    unknown = set(table) - _CREDENTIAL_KEYS
    if unknown:
        raise InvalidInput(f"unknown key {sorted(unknown)[0]!r} in [{CREDENTIALS}]; use {sorted(_CREDENTIAL_KEYS)}")
    return {key: str(value) for key, value in table.items()}


def snapshotter_options(settings: Resolved) -> dict[str, Any]:
    """Keyword arguments for :class:`~snapshotter.Snapshotter` from resolved settings."""
    value = settings.value
    options = {knob.name: value(knob.name) for knob in fields(Options) if knob.name in SETTINGS}
    options.update(settings.caller)  # the caller's own; what the workspace's files added goes apart:
    options["workspace_settings"] = settings.workspace
    options["exclude"] = tuple(options["exclude"])
    options["retention"] = _retention(value)
    if settings.credentials:  # for the pushes a command starts in the background (auto_push)
        options["credentials"] = credentials_of(settings.credentials)
    return options


def credentials(environ: Mapping[str, str]) -> Any:
    """The user config file's credentials, for the library (which also reads the
    environment and the URL itself, and prefers them in that order after these)."""
    return credentials_of(remote_credentials(environ))


def credentials_of(table: Mapping[str, str]) -> Any:
    """A ``[credentials]`` table as the library's ``Credentials``."""
    from snapshotter.engine.gitstore.transport import Credentials

    return Credentials(
        table.get("username"),
        table.get("password") or table.get("token"),
        table.get("ssh_key"),
        table.get("ssh_known_hosts"),
    )


def _retention(value: Callable[[str], Any]) -> Retention:
    """The retention policy from its settings, where 0 means no limit (None)."""
    limits: dict[str, Any] = {}
    for knob in fields(Retention):
        if knob.metadata["kind"] is timedelta:
            days = value(f"{knob.name}_days")
            limits[knob.name] = timedelta(days=min(days, _MAX_DAYS)) if days else None
        else:
            limits[knob.name] = value(knob.name) or None
    return Retention(**limits)
