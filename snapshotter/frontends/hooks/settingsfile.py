"""An agent's settings file, read and written as the user's own (``hookinstall``
puts our entries in it).

Whatever cannot be kept is refused in one line (``InvalidInput``) with nothing
written:

- a path that leads into a ``.git`` folder, any repository's, or (a project
  install) out of the workspace, through links planted on the way (a settings
  file that is a link keeps it: the write goes to its target);
- a file that is not a regular one (a named pipe, a device), larger than
  ``fsutil.SIDE_FILE_CAP``, read-only, or one of several hard links (a rename
  would leave the others behind);
- text that is not UTF-8 JSON, or JSON holding what JSON cannot write back: a
  number such as ``1E400`` (it reads as Infinity), ``NaN``; a lone surrogate
  escape; nesting too deep to read.

A write is a temporary file renamed into place, in the folder checked.
"""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any

from snapshotter.engine import fsutil
from snapshotter.errors import InvalidInput, WorkspaceError

_SURROGATE = re.compile("[\ud800-\udfff]")


class _Unkeepable(ValueError):
    """A value JSON cannot hold, met while reading."""


def read(target: str, path: str) -> str:
    """The file's text ("" where there is none), read so that nothing planted there hangs us."""
    try:
        data = fsutil.read_side_file(target)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise InvalidInput(f"cannot read {path} ({exc.strerror or exc}); nothing was written") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text; nothing was written") from None


def document(text: str, path: str) -> Any:
    """The file's JSON, refused where it holds what JSON cannot write back."""
    try:
        found = json.loads(text, parse_constant=_no_constant, parse_float=_finite, parse_int=_integer)
        _no_surrogates(found)
    except _Unkeepable as exc:
        raise InvalidInput(f"{path} {exc}; nothing was written") from None
    except RecursionError:
        raise InvalidInput(f"{path} is nested too deep to read; nothing was written") from None
    except ValueError as exc:
        raise InvalidInput(f"{path} is not valid JSON ({exc}); fix it, then try again: nothing was written") from None
    if not isinstance(found, dict):
        raise InvalidInput(f"{path} does not hold a JSON object; nothing was written")
    return found


def _no_constant(name: str) -> Any:
    raise _Unkeepable(f"holds the number {name}, which JSON cannot hold")


def _finite(spelled: str) -> float:
    number = float(spelled)
    if number in (float("inf"), float("-inf")):
        raise _Unkeepable(f"holds the number {spelled[:40]}, which JSON cannot write back (it reads as Infinity)")
    return number


def _integer(spelled: str) -> int:
    try:
        return int(spelled)
    except ValueError:
        raise _Unkeepable(f"holds a number of {len(spelled)} digits, too long to read") from None


def _no_surrogates(document: Any) -> None:
    pending = [document]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, str) and _SURROGATE.search(value):
            raise _Unkeepable("holds a lone surrogate escape (\\ud800-\\udfff), which is no character")


def target(path: str, within: str | None) -> str:
    """The file a write to ``path`` lands in, links followed; refused where that
    is in a ``.git`` folder or, for a project install, outside the workspace."""
    real = os.path.realpath(path)
    shown = path if os.path.normcase(real) == os.path.normcase(os.path.abspath(path)) else f"{path} (a link to {real})"
    parts = real.replace("\\", "/").split("/")
    if any(part.casefold() == ".git" for part in parts):
        raise InvalidInput(f"{shown} is in a .git folder, which snapshotter never writes: nothing was written")
    if within is not None:
        base = os.path.normcase(os.path.realpath(within))
        try:
            inside = os.path.commonpath([base, os.path.normcase(real)]) == base
        except ValueError:  # Windows: another drive
            inside = False
        if not inside:
            raise InvalidInput(f"{shown} is outside the workspace {within}: nothing was written")
    return real


def check_writable(target: str, path: str) -> None:
    """Refuse a file that a rename would not keep: read-only, or one of several hard links."""
    try:
        found = os.stat(target)
    except FileNotFoundError:
        return
    if not found.st_mode & stat.S_IWUSR or not os.access(target, os.W_OK):
        raise InvalidInput(f"{path} is read-only; make it writable to change it: nothing was written")
    if found.st_nlink > 1:
        raise InvalidInput(f"{path} has other hard links, which a rewrite would break: nothing was written")


def write(target: str, path: str, text: str) -> None:
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"the hook command cannot be written as UTF-8 into {path}: nothing was written") from None
    check_writable(target, path)
    folder = os.path.dirname(target)
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise WorkspaceError(f"cannot write {path}: {folder} is not a folder")
    os.makedirs(folder, exist_ok=True)
    if os.path.normcase(os.path.realpath(folder)) != os.path.normcase(folder):
        raise InvalidInput(f"{folder} became a link while {path} was written: nothing was written")
    mode = stat.S_IMODE(os.stat(target).st_mode) if os.path.exists(target) else 0o644
    import tempfile  # only to write: ``hooks status`` reads these files, and tempfile loads shutil and random

    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".snapshotter-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        fsutil.unlink_quietly(temporary)
        raise
