"""Three-way merges of text files, with git's line diff underneath.

A revert or a merge brings one change (``base`` -> ``theirs``) into a file that
may have moved on meanwhile (``ours``). The regions are found by the
``merge3`` package (bzr's merge algorithm): the lines all three share split
the files into stretches, and a stretch changed on one side only takes that
side, changed alike on both takes either, changed differently on both is a
conflict. merge3 finds the shared lines with ``difflib.SequenceMatcher`` by
default, which can take seconds on one big generated file (DESIGN.md, 8);
:class:`GitLineMatcher` gives it git's own line diff instead (``xdiff``, as
``git diff`` and ``git merge-file`` run it), so a merge sees the changes
``git diff`` shows, at near-linear cost.

Lines are split as git splits them (on ``\\n`` only, each keeping it). A file
is text if no NUL byte is in its first 8,000 bytes (git's rule); binary files
are never merged. Conflict markers are git's: ``<<<<<<< ours``, ``=======``,
``>>>>>>> theirs``, each on a line of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import merge3

from snapshotter.engine.compare import hunks, xdiff, xprepare
from snapshotter.engine.compare.linediff import split_lines
from snapshotter.engine.gitstore.objects import is_binary


class GitLineMatcher:
    """The matching blocks of two line sequences as git's diff finds them: what
    merge3 asks of a ``difflib.SequenceMatcher`` (``get_matching_blocks``)."""

    def __init__(
        self, isjunk: Callable[[bytes], bool] | None = None, a: Sequence[bytes] = (), b: Sequence[bytes] = ()
    ) -> None:
        self.a, self.b = list(a), list(b)

    def get_matching_blocks(self) -> list[tuple[int, int, int]]:
        """(i, j, n) triples: ``a[i:i+n] == b[j:j+n]``, in order, ending with
        ``(len(a), len(b), 0)``; the lines between them are git's changes."""
        a, b = self.a, self.b
        blocks: list[tuple[int, int, int]] = []
        i = j = 0
        for old_at, new_at, old_count, new_count in changes_of(a, b):
            if old_at > i:
                blocks.append((i, j, old_at - i))
            i, j = old_at + old_count, new_at + new_count
        if i < len(a):
            blocks.append((i, j, len(a) - i))
        blocks.append((len(a), len(b), 0))
        return blocks


def changes_of(a: list[bytes], b: list[bytes]) -> list[hunks.Change]:
    """git's changes from lines ``a`` to lines ``b``: (first old line, first new
    line, old lines, new lines), after its Myers pass and its sliding of each
    change into place, as ``git merge-file`` runs them (``xdl_do_diff``,
    ``xdl_change_compact`` without the indent heuristic, ``xdl_build_script``)."""
    if not a or not b:
        return [(0, 0, len(a), len(b))] if a or b else []
    prep = xprepare.Prepared(a, b)
    marks1, marks2 = xdiff.changed_lines(prep, len(a), len(b))
    side1, side2 = hunks.Side(prep.ids1, a, marks1), hunks.Side(prep.ids2, b, marks2)
    hunks.compact(side1, side2, indent_heuristic=False)
    hunks.compact(side2, side1, indent_heuristic=False)
    return hunks.script(side1.changed, side2.changed)


@dataclass(frozen=True)
class Merged:
    """The outcome of one three-way merge: the merged content (with conflict
    markers where ``conflicts`` > 0) and how many regions conflict."""

    content: bytes
    conflicts: int

    @property
    def clean(self) -> bool:
        return self.conflicts == 0


def merge_text(
    base: bytes, ours: bytes, theirs: bytes, ours_label: str = "ours", theirs_label: str = "theirs"
) -> Merged:
    """``base`` -> ``theirs`` brought into ``ours``; all three must be text (see
    :func:`mergeable`). Where both sides changed the same lines differently,
    the result holds git-style conflict markers around both versions, laid
    out as ``git merge-file`` lays them out (see :func:`_regions`)."""
    if ours == theirs or theirs == base:
        return Merged(ours, 0)
    if ours == base:
        return Merged(theirs, 0)
    lines_base, lines_ours, lines_theirs = split_lines(base), split_lines(ours), split_lines(theirs)
    pieces: list[bytes] = []
    conflicts = 0
    for kind, ours_at, ours_end, theirs_at, theirs_end in _regions(lines_base, lines_ours, lines_theirs):
        if kind == _THEIRS:
            pieces.extend(lines_theirs[theirs_at:theirs_end])
        elif kind != _CONFLICT:
            pieces.extend(lines_ours[ours_at:ours_end])
        else:
            conflicts += 1
            pieces.append(_marker(b"<<<<<<<", ours_label))
            pieces.extend(_terminated(lines_ours[ours_at:ours_end]))
            pieces.append(b"=======\n")
            pieces.extend(_terminated(lines_theirs[theirs_at:theirs_end]))
            pieces.append(_marker(b">>>>>>>", theirs_label))
    return Merged(b"".join(pieces), conflicts)


_SAME, _OURS, _THEIRS, _CONFLICT = "same", "ours", "theirs", "conflict"
Region = tuple[str, int, int, int, int]
"""(kind, ours start, ours end, theirs start, theirs end): a stretch of the merge.
``same``: both sides hold the same lines (unchanged, or changed alike); ``ours``
or ``theirs``: only that side changed them; ``conflict``: both, differently."""
_NEAR = 3
"""Conflicts at most this many lines apart are shown as one (git's ``xdl_simplify_non_conflicts``)."""


def _regions(base: list[bytes], ours: list[bytes], theirs: list[bytes]) -> list[Region]:
    """The merge's stretches, in order. merge3 finds the lines all three share;
    between them each stretch is classified as merge3 does. Conflicts are then
    shaped as git's ``XDL_MERGE_ZEALOUS_ALNUM`` level shapes them: each is cut
    down to the lines where the two sides really differ (``xdl_refine_conflicts``),
    and conflicts separated by at most three lines, or by lines without a
    letter or digit, are joined (``xdl_simplify_non_conflicts``)."""
    merger = merge3.Merge3(base, ours, theirs, sequence_matcher=GitLineMatcher)
    found: list[Region] = []
    at_base = at_ours = at_theirs = 0
    for base_match, base_end, ours_match, ours_end, theirs_match, theirs_end in merger.find_sync_regions():
        if ours_match > at_ours or theirs_match > at_theirs:
            mine, yours = ours[at_ours:ours_match], theirs[at_theirs:theirs_match]
            was = base[at_base:base_match]
            if mine == yours:
                found.append((_SAME, at_ours, ours_match, at_theirs, theirs_match))
            elif mine == was:
                found.append((_THEIRS, at_ours, ours_match, at_theirs, theirs_match))
            elif yours == was:
                found.append((_OURS, at_ours, ours_match, at_theirs, theirs_match))
            else:
                found.extend(_refined(ours, theirs, at_ours, ours_match, at_theirs, theirs_match))
        if base_end > base_match:
            found.append((_SAME, ours_match, ours_end, theirs_match, theirs_end))
        at_base, at_ours, at_theirs = base_end, ours_end, theirs_end
    return _joined(found, ours)


def _refined(ours: list[bytes], theirs: list[bytes], o1: int, o2: int, t1: int, t2: int) -> list[Region]:
    """One conflict cut down to where its two sides differ: the lines they share
    (by git's diff of one side against the other) are no conflict."""
    if o1 == o2 or t1 == t2:
        return [(_CONFLICT, o1, o2, t1, t2)]
    out: list[Region] = []
    at_ours, at_theirs = o1, t1
    for old_at, new_at, old_count, new_count in changes_of(ours[o1:o2], theirs[t1:t2]):
        if o1 + old_at > at_ours:
            out.append((_SAME, at_ours, o1 + old_at, at_theirs, t1 + new_at))
        at_ours, at_theirs = o1 + old_at + old_count, t1 + new_at + new_count
        out.append((_CONFLICT, o1 + old_at, at_ours, t1 + new_at, at_theirs))
    if o2 > at_ours:
        out.append((_SAME, at_ours, o2, at_theirs, t2))
    return out


def _joined(regions: list[Region], ours: list[bytes]) -> list[Region]:
    """Conflicts close together (see ``_NEAR``) joined into one, with what lay
    between. Only conflicts next to each other: git's merge lists the changes
    of either side, and a change only one side made between two conflicts
    keeps them apart (lines the sides share, or changed alike, do not)."""
    out: list[Region] = []
    for region in regions:
        if region[0] == _CONFLICT:
            last = next((i for i in range(len(out) - 1, -1, -1) if out[i][0] != _SAME), None)
            if last is not None and out[last][0] == _CONFLICT:
                between = ours[out[last][2] : region[1]]
                if len(between) <= _NEAR or not any(_has_alnum(line) for line in between):
                    _, o1, _, t1, _ = out[last]
                    del out[last:]
                    out.append((_CONFLICT, o1, region[2], t1, region[4]))
                    continue
        out.append(region)
    return out


def _has_alnum(line: bytes) -> bool:
    return any(chr(c).isalnum() for c in line if c < 128)


def mergeable(*contents: bytes) -> bool:
    """Whether every one of ``contents`` is text, so a line merge may combine them."""
    return not any(is_binary(content) for content in contents)


def _marker(sign: bytes, label: str) -> bytes:
    return sign + b" " + label.encode("utf-8", "replace") + b"\n"


def _terminated(lines: Sequence[bytes]) -> list[bytes]:
    """Lines inside a conflict, the last one given a newline if it lacks one, so
    the marker that follows starts a line of its own (as git writes it)."""
    out = list(lines)
    if out and not out[-1].endswith(b"\n"):
        out[-1] += b"\n"
    return out
