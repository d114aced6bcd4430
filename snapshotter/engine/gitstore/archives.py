"""Archive commits: old snapshots kept reachable on a remote by one ref a store.

Planned (docs/remotes.md, "Archives"; issue #50): a remote holding one ref a
snapshot makes every ref listing, and so every push and fetch, grow with the
history. A store will instead gather its oldest snapshots there into archive
commits under ``refs/snapshotter/<name>/hosts/<host id>/archive``: each over
the empty tree, its parents the previous archive (if any) and up to
:data:`MAX_SNAPSHOTS` snapshots, with no snapshot trailer, so no reader takes
one for a snapshot. The commit's form is here; when a push makes
one is decided in ``snapshotter.remote.archiving``.

An archive is built as bytes, never written into a store: a store drops
snapshots an archive still names, and a commit a store's ref reaches must have
all its parents there. The push streams it, and the empty tree, in its pack.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from snapshotter.engine.gitstore.objects import object_id
from snapshotter.engine.gitstore.trailers import IDENTITY
from snapshotter.errors import InvalidInput

EMPTY_TREE = bytes.fromhex("4b825dc642cb6eb9a060e54bf8d69288fbee4904")
"""The id of the tree with no entries (its content is no bytes at all)."""
MAX_SNAPSHOTS = 1000
"""The most snapshots one archive names: a commit of some 48 KB."""
ARCHIVE_AFTER = 2000
"""A push archives once this store's own snapshot refs on the remote are over this many."""
ARCHIVE_BATCH = 1000
"""How many of them (the oldest) one push archives: one archive commit."""
_MESSAGE = b"snapshotter archive\n\nSnapshotter-Archive: %d\n"
_HEAD = re.compile(
    rb"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n"
    rb"((?:parent [0-9a-f]{40}\n)+)"
    rb"author [^\n]*\ncommitter [^\n]*\n\n"
    rb"snapshotter archive\n\nSnapshotter-Archive: ([1-9][0-9]{0,3})\n"
)


@dataclass(frozen=True)
class Archive:
    """What an archive commit names: the ``previous`` archive (raw id, or None for
    a store's first) and its ``snapshots`` (raw ids), in the order pushed."""

    previous: bytes | None
    snapshots: tuple[bytes, ...]


def build_archive(previous: bytes | None, snapshots: Sequence[bytes], when: int) -> bytes:
    """The raw text of the archive commit over ``previous`` naming ``snapshots``
    (raw ids, 1 to :data:`MAX_SNAPSHOTS`, each once), made at ``when`` (Unix
    seconds, UTC). Refuses what :func:`read_archive` could not read back the same."""
    parents = ([] if previous is None else [previous]) + list(snapshots)
    if not 1 <= len(snapshots) <= MAX_SNAPSHOTS:
        raise InvalidInput(f"an archive names 1 to {MAX_SNAPSHOTS} snapshots, not {len(snapshots)}")
    if any(not isinstance(sha, bytes) or len(sha) != 20 for sha in parents):
        raise InvalidInput("an archive's parents are 20-byte commit ids")
    if len(set(parents)) != len(parents):
        raise InvalidInput("an archive names each snapshot once, and never its previous archive as one")
    person = IDENTITY + b" %d +0000\n" % int(when)
    head = b"tree " + EMPTY_TREE.hex().encode() + b"\n"
    head += b"".join(b"parent " + sha.hex().encode() + b"\n" for sha in parents)
    return head + b"author " + person + b"committer " + person + b"\n" + _MESSAGE % len(snapshots)


def read_archive(raw: bytes) -> Archive | None:
    """What the commit text ``raw`` names if it is an archive (the form
    :func:`build_archive` writes, any author), else None: a snapshot, another
    commit a server holds, anything its parents and count do not agree on."""
    found = _HEAD.fullmatch(raw)
    if found is None:
        return None
    parents = [bytes.fromhex(line[7:].decode("ascii")) for line in found.group(1).splitlines()]
    count = int(found.group(2))
    if len(parents) == count:
        return Archive(None, tuple(parents))
    if len(parents) == count + 1:
        return Archive(parents[0], tuple(parents[1:]))
    return None


def archive_objects(previous: bytes | None, snapshots: Sequence[bytes], when: int) -> list[tuple[int, bytes, bytes]]:
    """(type number, raw id, content) of what a pack carrying a new archive holds:
    the empty tree (the remote need not have one) and the archive commit."""
    raw = build_archive(previous, snapshots, when)
    return [(2, EMPTY_TREE, b""), (1, object_id(b"commit", raw), raw)]
