"""git's default line diff (xdiff's Myers with its cost heuristics), in pure Python.

``git diff`` counts lines with xdiff (git's xdiff/ folder): it does not find a
minimal edit script. It first interns the lines and drops the ones that cannot
or need not be matched (xprepare.c), then runs Myers' divide-and-conquer search,
which gives up on an exact middle snake once a box costs too much and cuts it at
a "good enough" point instead (xdiffi.c, ``xdl_split``). On big, heavily changed
files those cuts are what keep git fast, and they are also why its counts are
not minimal; to print git's numbers we must make the same cuts. This module
follows git 2.39 step by step (the names in comments are git's functions):

* :class:`snapshotter.engine.compare.xprepare.Prepared`: ``xdl_prepare_env``, ``xdl_trim_ends``,
  ``xdl_cleanup_records``: which lines reach the Myers core at all.
* :func:`snapshotter.engine.compare.xsplit.split`: ``xdl_split``, the bidirectional
  search of one box with the heuristics: past ``XDL_HEUR_MIN_COST`` a diagonal
  with a 20-line snake far enough along is taken; at ``mxcost`` (``xdl_bogosqrt``
  of the core's size, at least 256) the furthest-reaching point is.
* :func:`core_counts`: ``xdl_recs_cmp`` for counts only. A sub-box that git
  solves with ``need_min`` is solved minimally, so its counts follow from its
  edit cost, which the search that cut it already measured: only the boxes on
  the heuristic "spine" are searched, none is recursed into. :func:`core_marks`
  is the full recursion, for patches (which lines changed, not just how many).

Line ids are small ints.
"""

from __future__ import annotations

from itertools import repeat
from operator import sub

from snapshotter.engine.compare.xprepare import Prepared, bogosqrt
from snapshotter.engine.compare.xsplit import EXACT, HIGH_MINIMAL, LOW_MINIMAL, Half, padded, split

MAX_COST_MIN = 256  # XDL_MAX_COST_MIN


def _minimal_cost(ha1: list[int], o1: int, l1: int, ha2: list[int], o2: int, l2: int) -> int:
    """The minimal edit cost of a box (its exact middle snake tells it)."""
    n, m = l1 - o1, l2 - o2
    if n == 0 or m == 0:
        return n + m
    a, b = padded(ha1, o1, l1, ha2, o2, l2, n + m + 2)
    kf, kb = [0] * (n + m + 4), [0] * (n + m + 4)
    cost = split(a, b, n, m, kf, kb, True, 0)[3]
    assert cost is not None  # an exact split always knows its cost
    return cost


def _shrink(ha1: list[int], ha2: list[int], o1: int, l1: int, o2: int, l2: int) -> tuple[int, int, int, int]:
    """``xdl_recs_cmp``'s first step: walk the snakes at both corners of a box."""
    while o1 < l1 and o2 < l2 and ha1[o1] == ha2[o2]:
        o1 += 1
        o2 += 1
    while o1 < l1 and o2 < l2 and ha1[l1 - 1] == ha2[l2 - 1]:
        l1 -= 1
        l2 -= 1
    return o1, l1, o2, l2


def mxcost_of(ha1: list[int], ha2: list[int]) -> int:
    """``xdl_do_diff``: the cost past which a search takes the furthest point."""
    return max(bogosqrt(len(ha1) + len(ha2) + 3), MAX_COST_MIN)


Searched = tuple[int, tuple[Half, Half], int, int, int, int]
"""The last spine search: how it cut, its two directions' rounds, and its box."""


def _reusable(last: Searched | None, o1: int, l1: int, o2: int, l2: int) -> tuple[Half | None, Half | None]:
    """The rounds of ``last`` that the search of box [o1, l1) x [o2, l2) would
    compute again: a cut that kept the corner keeps that corner's search, as long
    as it never reached past the new box's edges (where the new box would have cut
    a snake short or turned the diagonals back). Renumbered for the new box."""
    if last is None:
        return None, None
    kind, (forward, backward), p1, q1, p2, q2 = last
    n, m, parent_m = l1 - o1, l2 - o2, q2 - p2
    if kind == HIGH_MINIMAL and (o1, o2) == (p1, p2):
        half, shift = forward, 0
    elif kind == LOW_MINIMAL and (l1, l2) == (q1, q2):
        half, shift = backward, o1 - p1
    else:
        return None, None
    if not half.rounds or len(half.rounds) + 2 > min(n, m):
        return None, None
    for first, values in half.rounds[-2:]:  # each diagonal moves on round after round: the last two bound all
        ys = list(map(sub, values, range(first - parent_m, first - parent_m + 2 * len(values), 2)))
        if half is forward and (max(values) > n or max(ys) > m):
            return None, None
        if half is backward and (min(values) < shift or min(ys) < o2 - p2):
            return None, None
    if half is forward:
        return Half([(first + m - parent_m, values) for first, values in half.rounds], half.longest), None
    rounds = [(first - shift, list(map(sub, values, repeat(shift)))) for first, values in half.rounds]
    return None, Half(rounds, half.longest)


def core_counts(ha1: list[int], ha2: list[int]) -> tuple[int, int]:
    """(deleted, added) among the lines that reach the Myers core, as
    ``xdl_recs_cmp`` would mark them, without marking them: only the boxes that
    git searches without ``need_min`` are searched (a chain: each cut leaves one),
    each reusing the direction its predecessor already searched from a shared corner."""
    mxcost = mxcost_of(ha1, ha2)
    size = len(ha1) + len(ha2) + 4
    kf, kb = [0] * size, [0] * size
    deleted = added = 0
    box: tuple[int, int, int, int] | None = (0, len(ha1), 0, len(ha2))
    last: Searched | None = None
    while box is not None:
        o1, l1, o2, l2 = _shrink(ha1, ha2, *box)
        n, m = l1 - o1, l2 - o2
        box = None
        if n == 0 or m == 0:
            deleted, added = deleted + n, added + m
            continue
        a, b = padded(ha1, o1, l1, ha2, o2, l2, mxcost + 2)
        record = (Half(), Half())
        replay = _reusable(last, o1, l1, o2, l2)
        kind, i1, i2, cost = split(a, b, n, m, kf, kb, False, mxcost, replay, record)
        last = (kind, record, o1, l1, o2, l2)
        if kind == EXACT:
            part = (n, m)
        elif kind == LOW_MINIMAL:
            part = (i1, i2)
            box = (o1 + i1, l1, o2 + i2, l2)
        else:
            part = (n - i1, m - i2)
            box = (o1, o1 + i1, o2, o2 + i2)
        if cost is None:
            start1, start2 = (o1, o2) if kind == LOW_MINIMAL else (o1 + i1, o2 + i2)
            cost = _minimal_cost(ha1, start1, start1 + part[0], ha2, start2, start2 + part[1])
        deleted += (part[0] - part[1] + cost) // 2
        added += (part[1] - part[0] + cost) // 2
    return deleted, added


def core_marks(ha1: list[int], ha2: list[int]) -> tuple[bytearray, bytearray]:
    """``xdl_recs_cmp`` in full: which core lines changed, per side (1 = changed)."""
    mxcost = mxcost_of(ha1, ha2)
    n1, n2 = len(ha1), len(ha2)
    size = n1 + n2 + 4
    kf, kb = [0] * size, [0] * size
    marks1, marks2 = bytearray(n1), bytearray(n2)
    boxes = [(0, n1, 0, n2, False)]
    while boxes:
        box = boxes.pop()
        o1, l1, o2, l2 = _shrink(ha1, ha2, *box[:4])
        n, m = l1 - o1, l2 - o2
        if n == 0 or m == 0:
            marks1[o1:l1] = b"\x01" * n
            marks2[o2:l2] = b"\x01" * m
            continue
        need_min = box[4]
        a, b = padded(ha1, o1, l1, ha2, o2, l2, n + m + 2 if need_min else mxcost + 2)
        kind, i1, i2, _ = split(a, b, n, m, kf, kb, need_min, mxcost)
        boxes.append((o1 + i1, l1, o2 + i2, l2, kind != LOW_MINIMAL))
        boxes.append((o1, o1 + i1, o2, o2 + i2, kind != HIGH_MINIMAL))
    return marks1, marks2


def counts(lines1: list[bytes], lines2: list[bytes]) -> tuple[int, int]:
    """(added, deleted) lines from ``lines1`` to ``lines2``, as ``git diff --numstat``."""
    prep = Prepared(lines1, lines2)
    deleted, added = core_counts(prep.ha1, prep.ha2)
    deleted += (prep.end1 - prep.start) - len(prep.ha1)
    added += (prep.end2 - prep.start) - len(prep.ha2)
    return added, deleted


def changed_lines(prep: Prepared, n1: int, n2: int) -> tuple[bytearray, bytearray]:
    """Per line of each file, 1 if git's Myers pass marks it changed (``rchg``
    after ``xdl_do_diff``, before the hunks are slid into place)."""
    marks1, marks2 = core_marks(prep.ha1, prep.ha2)
    out = []
    for n, end, rindex, marks in ((n1, prep.end1, prep.rindex1, marks1), (n2, prep.end2, prep.rindex2, marks2)):
        rchg = bytearray(n)
        rchg[prep.start : end] = b"\x01" * (end - prep.start)  # discarded lines stay changed
        for i, mark in zip(rindex, marks):
            rchg[i] = mark
        out.append(rchg)
    return out[0], out[1]
