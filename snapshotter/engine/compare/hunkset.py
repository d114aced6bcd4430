"""One file's change as hunks, each with an id that names the same hunk in any
process, and the file with some of its hunks taken back.

The hunks are ``git diff``'s: the changes git's diff finds (slid as git slides
them), cut with three lines of context, changes whose contexts touch sharing a
hunk. A hunk's id is ``PATH:DIGEST``, the digest of the path and the hunk's old
and new lines (context included; a second identical hunk of the file counts
its place among them), so the same change of the same file gets the same id
wherever it is listed, and a file changed since lists other ids. A hunk
holding several changes also has parts, one change each, as ``git add -p``
splits a hunk (``s``), with ids of their own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from snapshotter.engine.compare import hunks
from snapshotter.engine.compare.hunks import CONTEXT, Change
from snapshotter.engine.compare.linediff import line_changes

DIGEST_LENGTH = 12


@dataclass(frozen=True)
class LineHunk:
    """One hunk of a text file's change (lines counted from 0)."""

    id: str
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    changes: tuple[Change, ...]
    text: str
    """The ``@@`` hunk as ``git diff`` prints it."""

    @property
    def additions(self) -> int:
        return sum(change[3] for change in self.changes)

    @property
    def deletions(self) -> int:
        return sum(change[2] for change in self.changes)


def digest(*parts: bytes) -> str:
    """The id part of a hunk: the first 12 hex digits of SHA-1 over ``parts``."""
    found = hashlib.sha1()
    for part in parts:
        found.update(len(part).to_bytes(8, "big"))
        found.update(part)
    return found.hexdigest()[:DIGEST_LENGTH]


@dataclass(frozen=True)
class LineChange:
    """A text file's change: both sides' lines, its hunks, and each hunk's parts
    (the hunk itself where it holds one change)."""

    old_lines: tuple[bytes, ...]
    new_lines: tuple[bytes, ...]
    hunks: tuple[LineHunk, ...]
    parts: tuple[LineHunk, ...]

    def take_back(self, changes: Iterable[Change]) -> bytes:
        """The new side with ``changes`` undone: their new lines replaced by their
        old ones, every other line as the new side has it."""
        out = list(self.new_lines)
        for i1, i2, c1, c2 in sorted(set(changes), key=lambda change: change[1], reverse=True):
            out[i2 : i2 + c2] = self.old_lines[i1 : i1 + c1]
        return b"".join(out)


def line_change(path: str, old: bytes, new: bytes) -> LineChange:
    """``old`` -> ``new`` at ``path`` as hunks, in file order, and their parts."""
    lines1, lines2, changes = line_changes(old, new)
    found = list(
        _numbered(path, lines1, lines2, ((g, t, None) for g, t in hunks.unified_hunks(lines1, lines2, changes)))
    )
    parts: list[LineHunk] = []
    for hunk in found:
        if len(hunk.changes) == 1:
            parts.append(hunk)
            continue
        cut = []
        for k, change in enumerate(hunk.changes):
            # a part's context stops at its neighbours: only lines equal on both sides
            before = change[1] - (hunk.changes[k - 1][1] + hunk.changes[k - 1][3]) if k else CONTEXT
            after = hunk.changes[k + 1][1] - (change[1] + change[3]) if k + 1 < len(hunk.changes) else CONTEXT
            room = (min(before, CONTEXT), min(after, CONTEXT))
            func = hunks.nearest_function(lines1, change[0] - room[0])
            cut.append(([change], hunks.hunk_text(lines1, lines2, [change], func, room), room))
        parts.extend(_numbered(path, lines1, lines2, cut, salt=hunk.id))
    return LineChange(tuple(lines1), tuple(lines2), tuple(found), tuple(parts))


def _numbered(
    path: str,
    lines1: Sequence[bytes],
    lines2: Sequence[bytes],
    groups: Iterable[tuple[Sequence[Change], str, tuple[int, int] | None]],
    salt: str = "",
) -> Iterable[LineHunk]:
    seen: dict[str, int] = {}
    for group, text, room in groups:
        s1, e1, s2, e2 = hunks.hunk_bounds(lines1, lines2, group, room or (CONTEXT, CONTEXT))
        key = digest(path.encode("utf-8", "surrogateescape"), b"".join(lines1[s1:e1]), b"".join(lines2[s2:e2]))
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1 or salt:
            key = digest(key.encode(), str(seen[key]).encode(), salt.encode())
        yield LineHunk(f"{path}:{key}", s1, e1 - s1, s2, e2 - s2, tuple(group), text)


def path_of(hunk_id: str) -> str:
    """The path a hunk id names (its digest follows the last ``:``)."""
    return hunk_id.rpartition(":")[0]
