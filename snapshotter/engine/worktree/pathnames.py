"""Which names a stored tree may hold, and which this platform can hold.

Two kinds of bad name, treated differently:

- *hostile*: names no real folder produces and that would leave or damage the
  workspace (empty, ``.``, ``..``, a ``/`` or NUL inside, ``.git`` in any
  case, a name listed twice). Only a forged tree holds them, so a restore
  refuses the whole snapshot before writing anything.
- *unholdable here*: names that are fine somewhere but that this platform
  cannot hold, or that git's own protections treat as ``.git`` (the NTFS
  short name ``git~1``, HFS+ spellings with ignorable characters such as
  ``.g\\u200cit``; checked on every platform, as git does when reading a tree).
  A path with such a name is left out and reported, never a reason to refuse
  the rest: a backslash, for one, is an ordinary character on POSIX.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from snapshotter.engine.worktree.hostfs import POSIX, HostFS
from snapshotter.errors import UnsafeTree

_WINDOWS_RESERVED = re.compile(r"(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?", re.IGNORECASE)
_HOSTILE = frozenset(["", ".", ".."])
_HFS_IGNORABLE = frozenset(
    [0x200C, 0x200D, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E] + list(range(0x206A, 0x2070)) + [0xFEFF]
)
"""Code points HFS+ ignores in names (git's ``next_hfs_char``)."""

NameCheck = Callable[[Sequence[str], str], dict[str, str]]
"""(names of one folder, where) -> {name: why it is left out}; raises UnsafeTree for hostile names."""


def is_ntfs_dotgit(name: str) -> bool:
    """git's ``is_ntfs_dotgit``: ``.git`` or its 8.3 short name ``git~1``, in any
    case, followed only by dots and spaces (which NTFS drops) or a ``:`` stream."""
    lowered = name.lower()
    if lowered.startswith(".git"):
        rest = name[4:]
    elif lowered.startswith("git~1"):
        rest = name[5:]
    else:
        return False
    for char in rest:
        if char in "\\:":
            return True
        if char not in ". ":
            return False
    return True


def is_hfs_dotgit(name: str) -> bool:
    """git's ``is_hfs_dotgit``: ``.git`` in any ASCII case once the code points
    HFS+ ignores are dropped (``.g\u200cit`` is ``.git`` there)."""
    if len(name) < 4 or name.isascii():
        return name.lower() == ".git"
    visible = "".join(char for char in name if ord(char) not in _HFS_IGNORABLE)
    return visible.isascii() and visible.lower() == ".git"


def git_spelling(name: str) -> bool:
    """A name git takes for ``.git`` on some filesystem (NTFS or HFS+)."""
    return is_ntfs_dotgit(name) or is_hfs_dotgit(name)


def is_hostile(name: str) -> bool:
    """A name only a forged tree holds (see the module docstring)."""
    return name in _HOSTILE or "/" in name or "\0" in name or name.lower() == ".git"


def unholdable_reason(name: str, host: HostFS = POSIX) -> str | None:
    """Why this platform cannot (or must not) hold ``name``; None if it can."""
    if git_spelling(name):
        return "a spelling of .git"
    if host.windows_names:
        if "\\" in name:
            return "a backslash, which separates folders here"
        if _WINDOWS_RESERVED.fullmatch(name) is not None:
            return "a reserved device name here"
        if name[-1] in ". ":
            return "a trailing dot or space, which this filesystem drops"
        if ":" in name:
            return "a colon, which names a stream here"
    return None


_SUSPECT_START = re.compile("\0[.gG]")


def _plain(names: Sequence[str], host: HostFS) -> bool:
    """Whether no name of a folder needs a closer look: all ASCII, none with a
    ``/`` or NUL, none empty, ``.`` or ``..``, none starting with ``.``, ``g`` or
    ``G`` (so no spelling of ``.git``), on a host without Windows' rules. One pass
    over the joined names instead of one call per name (restores read thousands
    of folders)."""
    if not names or host.windows_names:
        return False
    joined = "\0".join(names)
    return (
        joined.isascii()
        and "/" not in joined
        and joined.count("\0") == len(names) - 1
        and "" not in names
        and joined[:1] not in ".gG"
        and _SUSPECT_START.search(joined) is None
    )


def names_checker(host: HostFS) -> NameCheck:
    """The check a restore runs on each folder of a target tree it reads: a
    hostile name (or one listed twice) refuses the whole restore; a name this
    platform cannot hold, and where case is ignored a second name that differs
    from another only in case (one would overwrite the other), is left out."""

    def check(names: Sequence[str], where: str) -> dict[str, str]:
        left_out: dict[str, str] = {}
        for name in names if not _plain(names, host) else ():
            if is_hostile(name):
                raise UnsafeTree(
                    f"snapshot holds the unsafe name {name!r} (in {where}); restore refused, nothing was written"
                )
            suspect = name[:1] in ".gG" or not name.isascii() or host.windows_names
            reason = unholdable_reason(name, host) if suspect else None
            if reason is not None:
                left_out[name] = reason
        if len(set(names)) != len(names):
            raise UnsafeTree(f"tree {where} lists a name twice; restore refused, nothing was written")
        if host.case_insensitive and len({name.casefold() for name in names}) != len(names):
            seen: dict[str, str] = {}
            for name in sorted(names):
                other = seen.setdefault(name.casefold(), name)
                if other != name and name not in left_out:
                    left_out[name] = f"differs from {other!r} only in case, which this filesystem ignores"
        return left_out

    return check
