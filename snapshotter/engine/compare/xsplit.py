"""``xdl_split``: the bidirectional Myers search of one box, with git's cost heuristics.

A search walks diagonals from both corners of a box until the frontiers meet
(an exact middle snake) or, when a minimal answer is not needed, until a cost
heuristic cuts the box at a point that is "good enough": a far-reaching point
that ends a 20-line snake (``XDL_K_HEUR``), or at ``mxcost`` the point that got
furthest. Those cuts are what make git's counts non-minimal, so they follow
git 2.39's ``xdiffi.c`` exactly (the names in comments are git's). Which boxes
are searched, and how the cuts add up to counts or marks, is ``xdiff``'s part.

The sequences a search reads are copies padded with sentinels (-1 on the old
side, -2 on the new; see :func:`padded`) so that the hot loops need no bounds
checks. This is the hot path of line counting: it is kept as flat loops over
lists, on purpose.
"""

from __future__ import annotations

HEUR_MIN_COST = 256  # XDL_HEUR_MIN_COST
SNAKE_CNT = 20  # XDL_SNAKE_CNT
K_HEUR = 4  # XDL_K_HEUR
LINE_MAX = 1 << 62  # XDL_LINE_MAX: "no backward reach yet"

EXACT, LOW_MINIMAL, HIGH_MINIMAL = 0, 1, 2
"""How :func:`split` cut a box: at a middle snake (both halves minimal), or by a
heuristic with only the lower (or only the upper) half to be solved minimally."""


class Half:
    """One direction of a search, round by round: the frontier (its first
    diagonal and its values, every other diagonal) and the round's longest snake."""

    __slots__ = ("rounds", "longest")

    def __init__(self, rounds: list[tuple[int, list[int]]] | None = None, longest: list[int] | None = None) -> None:
        self.rounds = rounds if rounds is not None else []
        self.longest = longest if longest is not None else []


def split(
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
    from the same corner, still valid in this box (see ``xdiff._reusable``), to copy
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


def padded(ha1: list[int], o1: int, l1: int, ha2: list[int], o2: int, l2: int, pad: int) -> tuple[list[int], list[int]]:
    """The copies of a box's two sides that :func:`split` reads, padded with
    ``pad`` sentinels."""
    a = ha1[o1:l1]
    a.extend([-1] * pad)
    b = [-2] * pad
    b.extend(ha2[o2:l2])
    return a, b
