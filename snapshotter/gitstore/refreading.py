"""Reading the refs below one folder of the store (``refs/snapshots/``, a stack),
each loose ref file read once while it stays the same file.

A store with thousands of snapshots has thousands of loose ref files, and one
snapshot asks for its refs several times; reading every file (through dulwich,
which also checks each name's format) on each ask made a snapshot cost grow with
the history: 39 ms an ask at 3,200 snapshots. Here the folder is listed, and a
file is read only if its name is new or names another inode than when last read.
Ref writers (dulwich, under the store lock) always write a new file and rename
it in place, so a changed ref is a new inode. A ref rewritten in place, which no
writer does, may be seen late, as the stamp cache in ``Store`` may see it late.

A name git would not take for a ref (``dulwich.refs.check_ref_format``) is
passed over as dulwich passes it over, a ``.lock`` file is a ref being written,
a file that is a symlink or a folder of refs nested below is a damaged ref,
never followed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from dulwich.objects import ObjectID
from dulwich.refs import Ref, check_ref_format

FIRST_LINE_MAX = 4096


class LooseRefs:
    """The refs below each folder asked for: what each loose file held, by name and inode."""

    def __init__(self, store_path: str) -> None:
        self.store_path = store_path
        self._files: dict[bytes, dict[str, tuple[int, bytes | None]]] = {}

    def read(self, base: bytes, packed: Callable[[], Mapping[Ref, ObjectID]]) -> dict[bytes, bytes | None]:
        """Every ref below ``base`` (a folder's ref name, ``refs/snapshots``): full
        name -> its first line (None: unreadable), loose files first, then the
        ``packed`` refs (read only if asked) no loose file overrides."""
        folder = os.path.join(self.store_path, *base.decode("ascii").split("/"))
        known = self._files.get(base, {})
        seen: dict[str, tuple[int, bytes | None]] = {}
        found: dict[bytes, bytes | None] = {}
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            entries = []
        for entry in entries:
            name = entry.name
            if name.endswith(".lock") or not _a_ref_name(base, name):
                continue
            full = base + b"/" + os.fsencode(name)
            if entry.is_symlink():
                found[full] = None
            elif entry.is_dir():
                found.update(dict.fromkeys(_nested(entry.path, full)))
            else:
                inode = entry.inode()
                cached = known.get(name)
                value = cached[1] if cached is not None and cached[0] == inode else _first_line(entry.path)
                seen[name] = (inode, value)
                found[full] = value
        self._files[base] = seen
        prefix = base + b"/"
        for ref, sha in packed().items():
            if ref.startswith(prefix) and ref not in found:
                found[ref] = sha
        return found


def _a_ref_name(base: bytes, name: str) -> bool:
    return name.isdigit() or check_ref_format(Ref(base + b"/" + os.fsencode(name)))


def _nested(folder: str, prefix: bytes) -> list[bytes]:
    """The ref names in a folder nested where only ref files belong: all damaged."""
    names = []
    for top, _, files in os.walk(folder):
        below = os.path.relpath(top, folder)
        for name in files:
            if not name.endswith(".lock"):
                names.append(prefix + b"/" + os.fsencode(name if below == "." else f"{below}/{name}"))
    return names


def _first_line(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    try:
        head = os.read(fd, FIRST_LINE_MAX)
    except OSError:
        return None
    finally:
        os.close(fd)
    return head.split(b"\n", 1)[0].rstrip(b"\r")
