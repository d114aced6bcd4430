"""The git object format: modes, ids, trees, and git's rules for binary files and lines.

What every part of the store agrees on, reader or writer: the modes a tree
entry may have, how an object's id is computed, how a tree is serialised and
parsed (in git's order), which tree a commit names, and when a file counts as
binary and how many lines it has (as ``git diff --numstat`` counts them). The
writer of objects is ``objectwriter``.

Ids are kept as 20 raw bytes inside the engine; hex only at the edges.
"""

from __future__ import annotations

import hashlib
import re
import stat
from collections.abc import Iterable

from snapshotter.engine.gitstore.packs import TYPE_NUMBERS

MODE_FILE = 0o100644
MODE_EXEC = 0o100755
MODE_LINK = 0o120000
MODE_TREE = 0o040000
TRACKED_MODES = frozenset({MODE_FILE, MODE_EXEC, MODE_LINK, MODE_TREE})

TYPE_NAMES = {number: name for name, number in TYPE_NUMBERS.items()}
_COMMIT_TREE = re.compile(rb"^tree ([0-9a-f]{40})$", re.M)

STREAM_THRESHOLD = 8 << 20
"""Objects above this size are never held in memory whole: hashed, written and read a
chunk at a time, and left loose by the upkeep."""
BINARY_PROBE = 8000


def is_binary(content: bytes) -> bool:
    """git's rule: a NUL byte in the first 8,000 bytes."""
    return content.find(b"\0", 0, BINARY_PROBE) != -1  # no copy of the first 8,000 bytes


def count_lines(content: bytes) -> int:
    """Lines as git counts them: a last line without ``\\n`` counts too."""
    if not content:
        return 0
    return content.count(b"\n") + (0 if content.endswith(b"\n") else 1)


def commit_tree(content: bytes) -> bytes | None:
    """The raw tree id a commit's content names, or None if it names none."""
    match = _COMMIT_TREE.search(content)
    return bytes.fromhex(match.group(1).decode("ascii")) if match else None


_MODE_PREFIX = {
    MODE_FILE: b"100644 ",
    MODE_EXEC: b"100755 ",
    MODE_LINK: b"120000 ",
    0o160000: b"160000 ",  # a submodule's gitlink, kept from the user's index (engine/worktree/unchecked)
    MODE_TREE: b"40000 ",
}


def describe_lines(content: bytes) -> int | None:
    """A file's lines as a snapshot records them: None for a binary file."""
    return None if is_binary(content) else count_lines(content)


def git_mode(st_mode: int) -> int:
    """The git mode of a regular file or symlink, from its ``st_mode``."""
    if stat.S_ISLNK(st_mode):
        return MODE_LINK
    return MODE_EXEC if st_mode & stat.S_IXUSR else MODE_FILE


def object_id(kind: bytes, content: bytes) -> bytes:
    """The raw 20-byte id git gives ``content`` stored as ``kind``."""
    digest = hashlib.sha1(b"%s %d\0" % (kind, len(content)))
    digest.update(content)
    return digest.digest()


EMPTY_TREE = object_id(b"tree", b"")
"""The id of the empty tree: what a workspace with nothing tracked snapshots to."""


def serialize_tree(entries: Iterable[tuple[bytes, int, bytes]]) -> bytes:
    """A tree's content from (name, mode, raw id) entries, in git's order.

    git sorts a folder's name as if it ended in ``/``.
    """
    ordered = sorted(entries, key=lambda e: e[0] + b"/" if e[1] == MODE_TREE else e[0])
    prefix = _MODE_PREFIX
    return b"".join(prefix[mode] + name + b"\0" + sha for name, mode, sha in ordered)


_TREE_ENTRY = re.compile(rb"([0-7]+) ([^\0]*)\0(.{20})", re.DOTALL)
_MODES = {b"%o" % mode: mode for mode in (0o100644, 0o100755, 0o120000, 0o40000, 0o160000)}


def parse_tree(content: bytes) -> list[tuple[bytes, int, bytes]]:
    """(name, mode, raw id) entries of a tree's content; raises ValueError if malformed.

    One regular-expression pass (2.5x faster than slicing entry by entry). The
    matches never overlap, so if their lengths add up to the whole content they
    cover it exactly, entry after entry: anything else is a malformed tree.
    """
    found = _TREE_ENTRY.findall(content)
    if sum(len(mode) + len(name) for mode, name, _ in found) + 22 * len(found) != len(content):
        raise ValueError("malformed tree")
    modes = _MODES
    return [(name, modes.get(mode) or int(mode, 8), sha) for mode, name, sha in found]
