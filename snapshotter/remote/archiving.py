"""What one push does about archives (docs/remotes.md, "Archives", step 2).

A push lists ``refs/snapshotter/<name>/``; this store's *own* snapshot refs
there are those its ``pushed`` record names and the listing holds. Once they
are over :data:`archives.ARCHIVE_AFTER`, the oldest
:data:`archives.ARCHIVE_BATCH` of them, in the record's order, go into one new
archive over the listed tip of this store's ``hosts/<host id>/archive`` ref,
in two rounds: round 1 sends the archive (and the empty tree) with the push's
other updates and moves ``archive`` from its listed value only; once the
remote took it, the record marks those lines ``<id> archived`` and round 2
deletes their ``snapshots/`` refs (deletes only). Killed between the rounds,
both the archive and the refs name those snapshots; the next push finds its
refs whose lines say ``archived`` and finishes the deletes, with no new archive.

The record is a list of lines, oldest first: ``<id>`` for a snapshot this
store created there, ``<id> archived`` once an archive it made names it (added
after the first line, or in its place when a prune rewrites the record). A
line cut short by a crash is no id and is passed over.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from snapshotter.engine.gitstore import archives, replication
from snapshotter.engine.gitstore.replication import RawObject
from snapshotter.engine.gitstore.store import Store
from snapshotter.engine.gitstore.transport import Credentials, Remote

_LINE = re.compile(r"([0-9a-f]{40})( archived)?")
ARCHIVE = b"archive"
"""The name of this store's archive ref under its ``hosts/<host id>/`` folder."""


@dataclass(frozen=True)
class Record:
    """The ``pushed`` record read: ``order`` every id once, oldest first (where
    it first appears), and the ids marked ``archived``."""

    order: tuple[str, ...]
    archived: frozenset[str]

    @property
    def unarchived(self) -> list[str]:
        """The ids not archived, in the record's order."""
        return [sha for sha in self.order if sha not in self.archived]

    def text(self, without: set[str] | frozenset[str] = frozenset(), more: Sequence[str] = ()) -> str:
        """The record written whole: one line an id, in order, less ``without``,
        with ``more`` (new, unarchived) after them."""
        kept = [sha for sha in self.order if sha not in without]
        known = set(self.order)
        kept += [sha for sha in more if sha not in known]
        return "".join(f"{sha} archived\n" if sha in self.archived else f"{sha}\n" for sha in kept)


def read_record(text: str) -> Record:
    """The record in ``text`` (see the module's docstring)."""
    order: dict[str, None] = {}
    archived: set[str] = set()
    for line in text.splitlines():
        found = _LINE.fullmatch(line.strip())
        if found is None:
            continue
        order.setdefault(found.group(1), None)
        if found.group(2):
            archived.add(found.group(1))
    return Record(tuple(order), frozenset(archived))


@dataclass(frozen=True)
class Step:
    """One push's archiving: the ``ref`` (this store's ``archive``) and its
    ``listed`` value (hex, None: absent); the ``snapshots`` (hex, oldest
    first) a new archive ``tip`` (hex) names, with its ``extra`` objects, none
    when this push archives nothing; ``finish``: own refs listed whose record
    lines already say ``archived`` (a push killed between its rounds)."""

    ref: bytes
    listed: bytes | None
    snapshots: tuple[str, ...] = ()
    tip: bytes | None = None
    extra: tuple[RawObject, ...] = ()
    finish: tuple[str, ...] = ()


def choose(
    record: Record,
    there: Mapping[bytes, bytes],
    snapshots: bytes,
    ref: bytes,
    when: int,
    pruned: set[str] | frozenset[str] = frozenset(),
    taken: Mapping[str, int] | None = None,
) -> Step:
    """This push's :class:`Step`, from the ``record``, the listing ``there``,
    the namespace's ``snapshots/`` prefix and this store's archive ``ref``: at
    most one new archive a push, none while deletes are left to finish, and
    never naming a snapshot this push prunes (``pruned``: its ref goes in round 1).
    ``taken``: the order this store took the snapshots it still holds in
    (id -> position); with it, the oldest are those it no longer holds (in the
    record's order), then those it holds, oldest first: a record of a release
    before archives is in no order of age (its ids were written sorted)."""
    listed = there.get(ref)
    finish = tuple(sha for sha in record.order if sha in record.archived and snapshots + sha.encode() in there)
    if finish:
        return Step(ref, listed, finish=finish)
    own = [sha for sha in record.unarchived if snapshots + sha.encode() in there and sha not in pruned]
    if taken is not None:
        own.sort(key=lambda sha: (sha in taken, taken.get(sha, 0)))  # stable: the record's order among those gone
    if len(own) <= archives.ARCHIVE_AFTER:
        return Step(ref, listed)
    batch = tuple(own[: archives.ARCHIVE_BATCH])
    previous = bytes.fromhex(listed.decode()) if listed is not None else None
    extra = archives.archive_objects(previous, [bytes.fromhex(sha) for sha in batch], when)
    return Step(ref, listed, batch, extra[-1][1].hex().encode(), tuple(extra))


def delete_refs(store: Store, remote: Remote, names: list[bytes], credentials: Credentials | None) -> int:
    """Round 2: delete the ``snapshots/`` refs ``names`` (deletes only, no pack);
    how many the remote took. One it refused stays listed, and its record line
    says ``archived``: the next push deletes it."""
    if not names:
        return 0
    nothing = replication.Plan(frozenset(), frozenset(), [])
    sent = replication.send(store, remote, dict.fromkeys(names), credentials, nothing)
    return sent.refs_updated
