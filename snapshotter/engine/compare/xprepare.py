"""git's line preparation before the Myers search (xdiff/xprepare.c), in pure Python.

``xdl_prepare_env`` interns every line to a small int (equal ids, equal lines),
``xdl_trim_ends`` trims the common head and tail, and ``xdl_cleanup_records``
decides which middle lines the search sees at all: a line that never occurs on
the other side is changed outright; one that occurs there too often (at least
``xdl_bogosqrt`` of its own file's length times, at most 1,024) is dropped too
when ``xdl_clean_mmatch`` finds it inside a run of such lines. On real files this
leaves the search much less to do; to give git's counts it must drop exactly
the lines git drops. Every step is a C-speed builtin over the whole file (dicts,
``Counter``, bytes searches), with Python work only per dropped-candidate line.
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import compress
from operator import itemgetter

KPDIS_RUN = 4  # XDL_KPDIS_RUN
MAX_EQLIMIT = 1024  # XDL_MAX_EQLIMIT
SIMSCAN_WINDOW = 100  # XDL_SIMSCAN_WINDOW


def bogosqrt(n: int) -> int:
    """``xdl_bogosqrt``: a power of two near the square root of ``n``."""
    i = 1
    while n > 0:
        n >>= 2
        i <<= 1
    return i


class Prepared:
    """Both files after ``xdl_prepare_env``: line ids, the trimmed middle, and
    the lines left to the Myers core (``ha``) with their line numbers (``rindex``)."""

    __slots__ = ("ids1", "ids2", "start", "end1", "end2", "dis1", "dis2", "ha1", "ha2", "rindex1", "rindex2")

    def __init__(self, lines1: list[bytes], lines2: list[bytes]) -> None:
        table = dict.fromkeys(lines1)
        table.update(dict.fromkeys(lines2))
        numbering = dict(zip(table, range(len(table))))
        ids1 = self.ids1 = list(map(numbering.__getitem__, lines1))
        ids2 = self.ids2 = list(map(numbering.__getitem__, lines2))
        n1, n2 = len(ids1), len(ids2)
        start, tail = _common_ends(ids1, ids2)
        self.start, self.end1, self.end2 = start, n1 - tail, n2 - tail
        mid1, mid2 = ids1[start : n1 - tail], ids2[start : n2 - tail]
        self.dis1 = _classify(mid1, Counter(ids2), min(bogosqrt(n1), MAX_EQLIMIT), len(table))
        self.dis2 = _classify(mid2, Counter(ids1), min(bogosqrt(n2), MAX_EQLIMIT), len(table))
        keep1, keep2 = kept(self.dis1), kept(self.dis2)
        self.ha1, self.ha2 = list(compress(mid1, keep1)), list(compress(mid2, keep2))
        self.rindex1 = list(compress(range(start, n1 - tail), keep1))
        self.rindex2 = list(compress(range(start, n2 - tail), keep2))


def _common_ends(ids1: list[int], ids2: list[int]) -> tuple[int, int]:
    """``xdl_trim_ends``: how many lines the two share at the start, then at the end."""
    n1, n2 = len(ids1), len(ids2)
    limit = min(n1, n2)
    start = 0
    if ids1[:limit] == ids2[:limit]:
        start = limit
    else:
        step = 64
        while start + step <= limit and ids1[start : start + step] == ids2[start : start + step]:
            start += step
        while ids1[start] == ids2[start]:
            start += 1
    tail, limit = 0, limit - start
    step = 64
    while tail + step <= limit and ids1[n1 - tail - step : n1 - tail] == ids2[n2 - tail - step : n2 - tail]:
        tail += step
    while tail < limit and ids1[n1 - 1 - tail] == ids2[n2 - 1 - tail]:
        tail += 1
    return start, tail


def _classify(mid: list[int], other: Counter[int], limit: int, ids: int) -> bytes:
    """``xdl_cleanup_records``' first pass: per line, 0 if the other file lacks it,
    2 if the other file has it ``limit`` times or more, else 1."""
    kind = bytearray(ids)
    for value, count in other.items():
        kind[value] = 2 if count >= limit else 1
    if len(mid) < 2:  # itemgetter of one index returns the item itself, not a tuple
        return bytes(kind[value] for value in mid)
    return bytes(itemgetter(*mid)(kind))


_RUNS = re.compile(rb"[\x00\x02]{3,}")
"""Three or more lines in a row that are missing from the other file or too
frequent there: only inside such a run can a frequent line be dropped."""


def kept(dis: bytes) -> bytearray:
    """Which middle lines reach the Myers core: every 1, and a 2 unless
    ``xdl_clean_mmatch`` finds it inside a run of discarded lines (at most 100
    lines looked at each way), with more missing lines than 3 times the frequent ones.

    A 2 next to a 1 always stays (its run on that side is empty), so only the
    inside of runs of 0s and 2s that hold a 0 is looked at, each 2 with a few
    counts over the bytes."""
    keep = bytearray(dis.replace(b"\x02", b"\x01"))
    find, count = dis.find, dis.count
    for run in _RUNS.finditer(dis):
        start, end = run.span()  # the lines just outside are 1s, or the ends of the middle
        if find(0, start, end) == -1:
            continue
        i = find(2, start + 1, end - 1)
        while i != -1:
            first = max(start, i - SIMSCAN_WINDOW)
            zeros_before = count(0, first, i)
            if zeros_before:
                last = min(end, i + SIMSCAN_WINDOW + 1)
                zeros_after = count(0, i + 1, last)
                if zeros_after:
                    multi = (i - first - zeros_before) + (last - i - 1 - zeros_after) + 2
                    if multi * KPDIS_RUN < multi + zeros_before + zeros_after:
                        keep[i] = 0
            i = find(2, i + 1, end - 1)
    return keep
