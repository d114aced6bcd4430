"""A tree side with some paths replaced: a stored tree, or the workspace's scan,
as it would be with chosen files set to other entries or taken out. A revert
of chosen hunks brings in the change to such a side (the change's end with
those hunks taken back) instead of to the change's start.

A folder holding a replaced path gets an id of its own, never a real tree id,
so a comparison always reads it instead of taking it as equal to the other
side's; folders the replacements need that the side lacks are made up empty.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from snapshotter.engine.compare.treediff import Entry, TreeSide
from snapshotter.engine.gitstore.objects import MODE_TREE


class Overlay:
    """``side`` with ``replaced`` (path -> its new entry, None: taken out)."""

    def __init__(self, side: TreeSide, replaced: Mapping[str, Entry | None]) -> None:
        self._side = side
        self._replaced = dict(replaced)
        self._touched: set[str] = {""}
        """Folders holding a replaced path (the root included)."""
        for path in self._replaced:
            while "/" in path:
                path = path.rpartition("/")[0]
                self._touched.add(path)

    def root(self) -> object:
        return ("", self._side.root())

    def tree_id(self, handle: object) -> bytes:
        path, inner = _unpacked(handle)
        if path not in self._touched:
            return self._side.tree_id(inner)
        made = hashlib.sha1(b"overlay\0" + path.encode("utf-8", "surrogateescape"))
        if inner is not None:
            made.update(self._side.tree_id(inner))
        for replaced in sorted(p for p in self._replaced if _inside(p, path)):
            made.update(repr((replaced, self._replaced[replaced])).encode("utf-8", "surrogateescape"))
        return made.digest()

    def entries(self, handle: object, path: str = "") -> dict[str, tuple[int, bytes, object]]:
        folder, inner = _unpacked(handle)
        found = dict(self._side.entries(inner, folder)) if inner is not None else {}
        out: dict[str, tuple[int, bytes, object]] = {}
        for name, (mode, sha, sub) in found.items():
            child = f"{folder}/{name}" if folder else name
            out[name] = (mode, sha, (child, sub) if mode == MODE_TREE else None)
        for replaced, entry in self._replaced.items():
            parent, _, name = replaced.rpartition("/")
            if parent == folder:
                if entry is None:
                    out.pop(name, None)
                else:
                    out[name] = (entry[0], entry[1], None)
        for touched in self._touched:
            parent, _, name = touched.rpartition("/")
            if touched and parent == folder and (name not in out or out[name][0] != MODE_TREE):
                out[name] = (MODE_TREE, b"", (touched, None))  # a folder only the replacements make
        for name, (mode, _, sub) in list(out.items()):
            if mode == MODE_TREE:
                out[name] = (mode, self.tree_id(sub), sub)
        return out


def _unpacked(handle: object) -> tuple[str, object]:
    assert isinstance(handle, tuple)
    path, inner = handle
    assert isinstance(path, str)
    return path, inner


def _inside(path: str, folder: str) -> bool:
    return not folder or path.startswith(folder + "/")
