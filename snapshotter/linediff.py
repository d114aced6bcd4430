"""Line diffs: numstat counts that agree with ``git diff --numstat``, and unified hunks.

git's default algorithm is Myers' minimal edit script, so we use it too: with
``difflib.SequenceMatcher`` (even with ``autojunk=False``) the counts drift on
files with repeated lines, because it matches the longest block first rather
than minimising the edits. Myers costs O((N+M)·D) time and O(D²) memory for D
edits after trimming the common head and tail; past :data:`MAX_EDITS` edits we
fall back to SequenceMatcher, whose counts are close but not guaranteed equal.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence

BINARY_PROBE = 8000
MAX_EDITS = 2000
CONTEXT = 3

Opcode = tuple[str, int, int, int, int]


def is_binary(content: bytes) -> bool:
    """git's rule: a NUL byte in the first 8,000 bytes."""
    return content.find(b"\0", 0, BINARY_PROBE) != -1  # no copy of the first 8,000 bytes


def split_lines(content: bytes) -> list[bytes]:
    """Lines with their ``\\n`` terminators (git splits on nothing else); a last
    line without one counts as a line."""
    if not content:
        return []
    lines = [line + b"\n" for line in content.split(b"\n")]
    last = lines.pop()
    if last != b"\n":
        lines.append(last[:-1])
    return lines


def count_lines(content: bytes) -> int:
    if not content:
        return 0
    return content.count(b"\n") + (0 if content.endswith(b"\n") else 1)


def opcodes(a: Sequence[bytes], b: Sequence[bytes]) -> list[Opcode]:
    """difflib-style opcodes of a minimal edit script from ``a`` to ``b``."""
    n, m = len(a), len(b)
    head = 0
    while head < n and head < m and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < n - head and tail < m - head and a[n - 1 - tail] == b[m - 1 - tail]:
        tail += 1
    middle = _myers(a[head : n - tail], b[head : m - tail])
    if middle is None:
        matcher = difflib.SequenceMatcher(None, a[head : n - tail], b[head : m - tail], autojunk=False)
        middle = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    out: list[Opcode] = []
    if head:
        out.append(("equal", 0, head, 0, head))
    position_a, position_b = head, head
    for tag, i1, i2, j1, j2 in middle:
        i1, i2, j1, j2 = i1 + head, i2 + head, j1 + head, j2 + head
        if i1 > position_a:
            out.append(("equal", position_a, i1, position_b, j1))
        out.append((tag, i1, i2, j1, j2))
        position_a, position_b = i2, j2
    if position_a < n:
        out.append(("equal", position_a, n, position_b, m))
    return out


def _myers(a: Sequence[bytes], b: Sequence[bytes]) -> list[Opcode] | None:
    """Non-equal opcodes of a shortest edit script, or None past MAX_EDITS edits."""
    n, m = len(a), len(b)
    if n == 0 and m == 0:
        return []
    if n == 0:
        return [("insert", 0, 0, 0, m)]
    if m == 0:
        return [("delete", 0, n, 0, 0)]
    v = {1: 0}
    trace: list[dict[int, int]] = []
    for d in range(min(n + m, MAX_EDITS) + 1):
        trace.append(dict(v))
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[k - 1] < v[k + 1]):
                x = v[k + 1]
            else:
                x = v[k - 1] + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            v[k] = x
            if x >= n and y >= m:
                return _backtrack(trace, n, m)
    return None


def _backtrack(trace: list[dict[int, int]], n: int, m: int) -> list[Opcode]:
    edits: list[tuple[str, int, int]] = []  # ("delete", i, j) or ("insert", i, j), in reverse
    x, y = n, m
    for d in range(len(trace) - 1, 0, -1):
        v = trace[d]
        k = x - y
        if k == -d or (k != d and v[k - 1] < v[k + 1]):
            prev_k = k + 1
        else:
            prev_k = k - 1
        prev_x = v[prev_k]
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y:
            x -= 1
            y -= 1
        if x == prev_x:
            edits.append(("insert", prev_x, prev_y))
        else:
            edits.append(("delete", prev_x, prev_y))
        x, y = prev_x, prev_y
    edits.reverse()
    out: list[Opcode] = []
    for tag, i, j in edits:
        i2, j2 = (i + 1, j) if tag == "delete" else (i, j + 1)
        if out:
            last = out[-1]
            # Merge with the previous run when contiguous (delete+insert -> replace).
            if last[2] == i and last[4] == j:
                merged = last[0] if last[0] == tag else "replace"
                out[-1] = (merged, last[1], i2, last[3], j2)
                continue
        out.append((tag, i, i2, j, j2))
    return out


def numstat(old: bytes, new: bytes) -> tuple[int, int]:
    """(added lines, deleted lines) from ``old`` to ``new``; text only.

    The common head and tail lines are found on the bytes first (a few
    C-speed comparisons, no list of lines), so the usual small edit (lines
    appended, or one block changed) is counted without splitting the files.
    """
    old, new = _trimmed(old, new)
    if not old:
        return count_lines(new), 0
    if not new:
        return 0, count_lines(old)
    added = deleted = 0
    for tag, i1, i2, j1, j2 in opcodes(split_lines(old), split_lines(new)):
        if tag != "equal":
            deleted += i2 - i1
            added += j2 - j1
    return added, deleted


def _trimmed(old: bytes, new: bytes) -> tuple[bytes, bytes]:
    """``old`` and ``new`` without the whole lines they share at the start and
    then at the end: what :func:`opcodes` would trim, found on the bytes."""
    shared = _common_length(old, new, from_end=False)
    head = old.rfind(b"\n", 0, shared) + 1  # whole lines only: up to the last shared newline
    limit = min(len(old), len(new)) - head
    shared = _common_length(old, new, from_end=True, limit=limit)
    start_old, start_new = len(old) - shared, len(new) - shared
    at_line_starts = (start_old == 0 or old[start_old - 1] == 10) and (start_new == 0 or new[start_new - 1] == 10)
    if shared and not at_line_starts:  # the shared tail starts mid-line: begin after its first newline
        newline = old.find(b"\n", start_old)
        shared = len(old) - newline - 1 if newline != -1 else 0
    return old[head : len(old) - shared], new[head : len(new) - shared]


def _common_length(a: bytes, b: bytes, *, from_end: bool, limit: int | None = None) -> int:
    """How many bytes ``a`` and ``b`` share at the start (or the end), by halving."""
    low, high = 0, min(len(a), len(b)) if limit is None else limit
    end_a, end_b = len(a), len(b)
    while low < high:  # a and b share ``low`` bytes; they share at most ``high``
        mid = (low + high + 1) // 2
        if from_end:
            same = a[end_a - mid : end_a - low] == b[end_b - mid : end_b - low]
        else:
            same = a[low:mid] == b[low:mid]
        if same:
            low = mid
        else:
            high = mid - 1
    return low


def _range(start: int, stop: int) -> str:
    length = stop - start
    first = start + 1
    if length == 1:
        return str(first)
    if length == 0:
        first -= 1
    return f"{first},{length}"


def _grouped(codes: list[Opcode], context: int) -> Iterator[list[Opcode]]:
    if not codes:
        return
    codes = list(codes)
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = (tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = (tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, i1 + context, j1, j1 + context))
            yield group
            group = []
            i1, j1 = i2 - context, j2 - context
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def unified_hunks(old: bytes, new: bytes, context: int = CONTEXT) -> str:
    """The ``@@`` hunks of a unified diff, git style (no file header)."""
    a, b = split_lines(old), split_lines(new)
    out: list[str] = []
    for group in _grouped(opcodes(a, b), context):
        first, last = group[0], group[-1]
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(_line(" ", line) for line in a[i1:i2])
                continue
            out.extend(_line("-", line) for line in a[i1:i2])
            out.extend(_line("+", line) for line in b[j1:j2])
    return "".join(out)


def _line(sign: str, line: bytes) -> str:
    text = line.decode("utf-8", "replace")
    if text.endswith("\n"):
        return sign + text
    return sign + text + "\n\\ No newline at end of file\n"
