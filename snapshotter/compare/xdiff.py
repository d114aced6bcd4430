"""git's default line diff (xdiff's Myers with its cost heuristics), in pure Python.

``git diff`` counts lines with xdiff (git's xdiff/ folder): it does not find a
minimal edit script. It first interns the lines and drops the ones that cannot
or need not be matched (xprepare.c), then runs Myers' divide-and-conquer search,
which gives up on an exact middle snake once a box costs too much and cuts it at
a "good enough" point instead (xdiffi.c, ``xdl_split``). On big, heavily changed
files those cuts are what keep git fast, and they are also why its counts are
not minimal; to print git's numbers we must make the same cuts. This module
follows git 2.39 step by step (the names in comments are git's functions):

* :class:`snapshotter.compare.xprepare.Prepared`: ``xdl_prepare_env``, ``xdl_trim_ends``,
  ``xdl_cleanup_records``: which lines reach the Myers core at all.
* :func:`_split`: ``xdl_split``, the bidirectional search with the heuristics:
  past ``XDL_HEUR_MIN_COST`` a diagonal with a 20-line snake far enough along is
  taken; at ``mxcost`` (``xdl_bogosqrt`` of the core's size, at least 256) the
  furthest-reaching point is.
* :func:`core_counts`: ``xdl_recs_cmp`` for counts only. A sub-box that git
  solves with ``need_min`` is solved minimally, so its counts follow from its
  edit cost, which the search that cut it already measured: only the boxes on
  the heuristic "spine" are searched, none is recursed into. :func:`core_marks`
  is the full recursion, for patches (which lines changed, not just how many).

Line ids are small ints; the sequences a search reads are copied into lists
padded with sentinels (-1 on the old side, -2 on the new) so that the hot loops
need no bounds checks.
"""

from __future__ import annotations

from itertools import repeat
from operator import sub

from snapshotter.compare.xprepare import Prepared, bogosqrt

MAX_COST_MIN = 256  # XDL_MAX_COST_MIN
HEUR_MIN_COST = 256  # XDL_HEUR_MIN_COST
SNAKE_CNT = 20  # XDL_SNAKE_CNT
K_HEUR = 4  # XDL_K_HEUR
LINE_MAX = 1 << 62  # XDL_LINE_MAX: "no backward reach yet"

EXACT, LOW_MINIMAL, HIGH_MINIMAL = 0, 1, 2
"""How :func:`_split` cut a box: at a middle snake (both halves minimal), or by a
heuristic with only the lower (or only the upper) half to be solved minimally."""


class Half:
    """One direction of a search, round by round: the frontier (its first
    diagonal and its values, every other diagonal) and the round's longest snake."""

    __slots__ = ("rounds", "longest")

    def __init__(self, rounds: list[tuple[int, list[int]]] | None = None, longest: list[int] | None = None) -> None:
        self.rounds = rounds if rounds is not None else []
        self.longest = longest if longest is not None else []


def _split(
    a: list[int],
    b: list[int],
    n: int,
    m: int,
    kf: list[int],
    kb: list[int],
    need_min: bool,
    mxcost: int,
    replay: tuple[Half | None, Half | None] = (None, None),
    record: tuple[Half, Half] | None = None,
) -> tuple[int, int, int, int | None]:
    """``xdl_split`` on the box a[:n] x b[-m:]: (kind, i1, i2, cost).

    ``a`` is the old side followed by sentinels; ``b`` is sentinels followed by
    the new side, so line y of the box is ``b[y - m]``. Diagonals are numbered
    ``x - y + m`` (never negative, so the frontiers ``kf``/``kb`` are plain lists
    indexed by them; index -1 is a spare slot at their end). ``cost`` is the edit
    cost of the part solved minimally: the whole box for EXACT, else the half that
    ``kind`` names (None if a clipped point makes it unknown: see :func:`_cost`).
    Without ``need_min`` the frontiers of every round are kept (in ``record``) to
    tell that cost; ``replay`` gives one direction's rounds from an earlier search
    from the same corner, still valid in this box (see :func:`_reusable`), to copy
    instead of searching again."""
    dmin, dmax = 0, n + m
    fmid, bmid = m, n
    odd = (n - m) & 1
    fmin = fmax = fmid
    bmin = bmax = bmid
    kf[fmid] = 0
    kb[bmid] = n
    reach_f, reach_b = 0, n + m  # bounds on x + y of each frontier: no overlap while reach_f < reach_b
    history_f, history_b = record if record is not None else (Half(), Half())
    replay_f, replay_b = replay[0] or Half(), replay[1] or Half()
    a1, b1 = [-1, *a], [b[-1], *b[:-1]]  # a1[x] is a[x - 1], b1[i] is b[i - 1]: the backward loop's reads
    ec = 0
    while True:
        ec += 1
        got_snake = False
        if ec <= len(replay_f.rounds):
            fmin, values = replay_f.rounds[ec - 1]
            fmax = fmin + 2 * len(values) - 2
            kf[fmin : fmax + 1 : 2] = values
            longest = replay_f.longest[ec - 1]
        else:
            longest = _forward(a, b, kf, fmin, fmax, dmin, dmax)
            fmin, fmax = (fmin - 1 if fmin > dmin else fmin + 1), (fmax + 1 if fmax < dmax else fmax - 1)
        history_f.longest.append(longest)
        reach_f += 1 + 2 * longest
        if longest > SNAKE_CNT:
            got_snake = True
        if odd and reach_f >= reach_b:
            top = min(fmax, bmax)
            for d in range(top if (top - fmax) % 2 == 0 else top - 1, max(fmin, bmin) - 1, -2):
                if kb[d] <= kf[d]:
                    return EXACT, kf[d], kf[d] - d + m, 2 * ec - 1
        if ec <= len(replay_b.rounds):
            bmin, values = replay_b.rounds[ec - 1]
            bmax = bmin + 2 * len(values) - 2
            kb[bmin : bmax + 1 : 2] = values
            longest = replay_b.longest[ec - 1]
        else:
            longest = _backward(a1, b1, kb, bmin, bmax, dmin, dmax)
            bmin, bmax = (bmin - 1 if bmin > dmin else bmin + 1), (bmax + 1 if bmax < dmax else bmax - 1)
        history_b.longest.append(longest)
        reach_b -= 1 + 2 * longest
        if longest > SNAKE_CNT:
            got_snake = True
        if not odd and reach_f >= reach_b:
            top = min(fmax, bmax)
            for d in range(top if (top - bmax) % 2 == 0 else top - 1, max(fmin, bmin) - 1, -2):
                if kb[d] <= kf[d]:
                    return EXACT, kb[d], kb[d] - d + m, 2 * ec
        if need_min:
            continue
        replayed_f, replayed_b = ec <= len(replay_f.rounds), ec <= len(replay_b.rounds)
        history_f.rounds.append(replay_f.rounds[ec - 1] if replayed_f else (fmin, kf[fmin : fmax + 1 : 2]))
        history_b.rounds.append(replay_b.rounds[ec - 1] if replayed_b else (bmin, kb[bmin : bmax + 1 : 2]))
        if got_snake and ec > HEUR_MIN_COST:
            found = _snake_heuristic(a, b, n, m, kf, kb, ec, fmin, fmax, bmin, bmax)
            if found is not None:
                kind, i1, i2 = found
                return kind, i1, i2, _cost(kind, i1, i2, n, m, history_f.rounds, history_b.rounds)
        if ec >= mxcost:
            kind, i1, i2 = _furthest(n, m, kf, kb, fmin, fmax, bmin, bmax)
            return kind, i1, i2, _cost(kind, i1, i2, n, m, history_f.rounds, history_b.rounds)


def _forward(a: list[int], b: list[int], kf: list[int], fmin: int, fmax: int, dmin: int, dmax: int) -> int:
    """One forward round of ``xdl_split``: widen the diagonals by one (the range
    turns back at the box's edges), move each one step and along its snake.
    Returns the longest snake."""
    if fmin > dmin:
        fmin -= 1
        kf[fmin - 1] = -1
    else:
        fmin += 1
    if fmax < dmax:
        fmax += 1
        kf[fmax + 1] = -1
    else:
        fmax -= 1
    longest = 0
    for d in range(fmax, fmin - 1, -2):
        x = kf[d - 1]
        y = kf[d + 1]
        x = x + 1 if x >= y else y
        if a[x] == b[x - d]:
            y = x
            x += 1
            while a[x] == b[x - d]:
                x += 1
            if x - y > longest:
                longest = x - y
        kf[d] = x
    return longest


def _backward(a1: list[int], b1: list[int], kb: list[int], bmin: int, bmax: int, dmin: int, dmax: int) -> int:
    """One backward round of ``xdl_split``, from the box's far corner; ``a1`` and
    ``b1`` are the box's sides shifted by one line, so a step back reads ``a1[x]``."""
    if bmin > dmin:
        bmin -= 1
        kb[bmin - 1] = LINE_MAX
    else:
        bmin += 1
    if bmax < dmax:
        bmax += 1
        kb[bmax + 1] = LINE_MAX
    else:
        bmax -= 1
    longest = 0
    for d in range(bmax, bmin - 1, -2):
        x = kb[d - 1]
        y = kb[d + 1]
        x = x if x < y else y - 1
        if a1[x] == b1[x - d]:
            y = x
            x -= 1
            while a1[x] == b1[x - d]:
                x -= 1
            if y - x > longest:
                longest = y - x
        kb[d] = x
    return longest


def _snake_heuristic(
    a: list[int], b: list[int], n: int, m: int, kf: list[int], kb: list[int], ec: int, *bounds: int
) -> tuple[int, int, int] | None:
    """``xdl_split``'s XDL_K_HEUR rule: a frontier point far along (more than
    4 * cost past its corner, off its middle diagonal) that ends a 20-line snake."""
    fmin, fmax, bmin, bmax = bounds
    best, found = 0, None
    for d in range(fmax, fmin - 1, -2):
        i1 = kf[d]
        i2 = i1 - d + m
        v = i1 + i2 - abs(d - m)
        if (
            v > K_HEUR * ec
            and v > best
            and SNAKE_CNT <= i1 < n
            and SNAKE_CNT <= i2 < m
            and all(a[i1 - k] == b[i1 - d - k] for k in range(1, SNAKE_CNT + 1))
        ):
            best, found = v, (LOW_MINIMAL, i1, i2)
    if found is not None:
        return found
    for d in range(bmax, bmin - 1, -2):
        i1 = kb[d]
        i2 = i1 - d + m
        v = (n - i1) + (m - i2) - abs(d - n)
        if (
            v > K_HEUR * ec
            and v > best
            and 0 < i1 <= n - SNAKE_CNT
            and 0 < i2 <= m - SNAKE_CNT
            and all(a[i1 + k] == b[i1 - d + k] for k in range(SNAKE_CNT))
        ):
            best, found = v, (HIGH_MINIMAL, i1, i2)
    return found


def _furthest(
    n: int, m: int, kf: list[int], kb: list[int], fmin: int, fmax: int, bmin: int, bmax: int
) -> tuple[int, int, int]:
    """``xdl_split`` at ``mxcost``: the frontier point that got furthest (x + y),
    forward or backward, clipped to the box."""
    fbest = fbest1 = -1
    for d in range(fmax, fmin - 1, -2):
        i1 = min(kf[d], n)
        i2 = i1 - d + m
        if i2 > m:
            i1, i2 = d, m
        if fbest < i1 + i2:
            fbest, fbest1 = i1 + i2, i1
    bbest = bbest1 = LINE_MAX
    for d in range(bmax, bmin - 1, -2):
        i1 = max(0, kb[d])
        i2 = i1 - d + m
        if i2 < 0:
            i1, i2 = d - m, 0
        if i1 + i2 < bbest:
            bbest, bbest1 = i1 + i2, i1
    if (n + m) - bbest < fbest:
        return LOW_MINIMAL, fbest1, fbest - fbest1
    return HIGH_MINIMAL, bbest1, bbest - bbest1


def _cost(
    kind: int,
    i1: int,
    i2: int,
    n: int,
    m: int,
    history_f: list[tuple[int, list[int]]],
    history_b: list[tuple[int, list[int]]],
) -> int | None:
    """The edit cost from the box's corner to the cut (i1, i2): the first round
    whose frontier on that diagonal reached it. None for a point off the recorded
    frontier (a clipped one, on the box's edge): the caller measures it instead."""
    d = i1 - i2 + m
    history = history_f if kind == LOW_MINIMAL else history_b
    rounds = [r for r in range(len(history)) if (history[r][0] - d) % 2 == 0]
    reached = None
    low, high = 0, len(rounds)
    while low < high:  # the frontiers only move on (away from the corner), round after round
        mid = (low + high) // 2
        first, values = history[rounds[mid]]
        k = (d - first) // 2
        value = values[k] if 0 <= k < len(values) else None
        hit = value is not None and (value >= i1 if kind == LOW_MINIMAL else value <= i1)
        if hit:
            reached, high = rounds[mid], mid
        else:
            low = mid + 1
    if reached is None:
        return None
    first, values = history[reached]
    x = values[(d - first) // 2]
    y = x - d + m
    inside = x <= n and y <= m if kind == LOW_MINIMAL else x >= 0 and y >= 0
    return reached + 1 if inside else None


def _box(ha1: list[int], o1: int, l1: int, ha2: list[int], o2: int, l2: int, pad: int) -> tuple[list[int], list[int]]:
    """The padded copies :func:`_split` reads."""
    a = ha1[o1:l1]
    a.extend([-1] * pad)
    b = [-2] * pad
    b.extend(ha2[o2:l2])
    return a, b


def _minimal_cost(ha1: list[int], o1: int, l1: int, ha2: list[int], o2: int, l2: int) -> int:
    """The minimal edit cost of a box (its exact middle snake tells it)."""
    n, m = l1 - o1, l2 - o2
    if n == 0 or m == 0:
        return n + m
    a, b = _box(ha1, o1, l1, ha2, o2, l2, n + m + 2)
    kf, kb = [0] * (n + m + 4), [0] * (n + m + 4)
    cost = _split(a, b, n, m, kf, kb, True, 0)[3]
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
        a, b = _box(ha1, o1, l1, ha2, o2, l2, mxcost + 2)
        record = (Half(), Half())
        replay = _reusable(last, o1, l1, o2, l2)
        kind, i1, i2, cost = _split(a, b, n, m, kf, kb, False, mxcost, replay, record)
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
        a, b = _box(ha1, o1, l1, ha2, o2, l2, n + m + 2 if need_min else mxcost + 2)
        kind, i1, i2, _ = _split(a, b, n, m, kf, kb, need_min, mxcost)
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
