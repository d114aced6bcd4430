"""Line diffs: numstat counts equal to ``git diff --numstat``, and git's unified hunks.

The counts come from :mod:`snapshotter.engine.compare.xdiff`, a port of git's default diff
(xdiff's Myers with its cost heuristics): git does not count a minimal edit
script on big, heavily changed files, so a minimal differ prints other numbers.
The hunks come from the same marks, slid into place as git slides them
(:mod:`snapshotter.engine.compare.hunks`). Lines are split on ``\\n`` alone, each keeping its
terminator, so ``a\\r\\n`` and ``a\\n`` differ, as in git; a last line without a
newline is a line of its own, unequal to the same text with one.

Counting in Python costs about 20 times what git's C costs on big, heavily changed
files (benchmarks/bench_linediff.py). When pygit2 is installed (the optional
``fastdiff`` extra), the counts come from libgit2's copy of git's xdiff instead,
the same numbers (checked against git in tests/test_linediff_git.py) at git's speed;
``SNAPSHOTTER_LINE_COUNTS=python`` keeps them in Python.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache

from snapshotter.engine.compare import hunks, xdiff, xprepare
from snapshotter.engine.gitstore.objects import count_lines

CONTEXT = hunks.CONTEXT


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


def line_keys(content: bytes) -> list[bytes]:
    """One key per line, equal exactly where git's records are equal, made
    without a copy per line: the text before each ``\\n``, and for a last line
    without one its text plus ``\\n`` (which no other key can contain)."""
    if not content:
        return []
    keys = content.split(b"\n")
    last = keys.pop()
    if last:
        keys.append(last + b"\n")
    return keys


def numstat(old: bytes, new: bytes) -> tuple[int, int]:
    """(added lines, deleted lines) from ``old`` to ``new``, as ``git diff --numstat``; text only.

    The common head and tail lines are found on the bytes first (a few C-speed
    comparisons): when one side has nothing left, the other side's remaining
    lines are the answer, as in git, and no line is split."""
    if old == new:
        return 0, 0
    middle_old, middle_new = _trimmed(old, new)
    if not middle_old or not middle_new:
        return count_lines(middle_new), count_lines(middle_old)
    if len(old) + len(new) > SMALL_CHANGE_MIN_BYTES:
        small = _small_change(old, new, line_keys(middle_old), line_keys(middle_new))
        if small is not None:
            return small
    counter = accelerator()
    if counter is not None:
        try:
            return counter(old, new)
        except Exception:  # anything libgit2 refuses is counted in Python, the same way
            pass
    return xdiff.counts(line_keys(old), line_keys(new))


SMALL_CHANGE_MIN_BYTES = 64 << 10  # below this, the whole-file pass costs little anyway
SMALL_CHANGE_LINES = 256  # per side: the middle's edit cost stays within git's exact search
SMALL_CHANGE_KEYS = 8  # distinct middle lines, each counted in the other file with one bytes.count


def _small_change(old: bytes, new: bytes, keys1: list[bytes], keys2: list[bytes]) -> tuple[int, int] | None:
    """git's counts for a change of a few lines in big files, without a pass over every line.

    Only the middle lines (after the common head and tail) reach git's discard step
    and search, but the discard step weighs each against its count in the whole
    other file. With few distinct middle lines, those counts come from one
    ``bytes.count`` each; a non-overlapping count c bounds the true count to
    [c, 2c] (a repeat of the line right after a counted one shares its newline),
    which decides the line's class unless the file's limit falls in between: then
    None, and the caller takes the whole-file path. The rest is git's algorithm
    on the middle, as :func:`xdiff.counts` would run it."""
    if len(keys1) > SMALL_CHANGE_LINES or len(keys2) > SMALL_CHANGE_LINES:
        return None
    distinct = set(keys1) | set(keys2)
    if len(distinct) > SMALL_CHANGE_KEYS:
        return None
    classes: list[bytes] = []
    for keys, other, own in ((keys1, new, old), (keys2, old, new)):
        limit = min(xprepare.bogosqrt(count_lines(own)), xprepare.MAX_EQLIMIT)
        kind: dict[bytes, int] = {}
        for key in set(keys):
            found = _occurrences(key, other)
            if found == 0:
                kind[key] = 0
            elif found >= limit:
                kind[key] = 2
            elif 2 * found < limit:
                kind[key] = 1
            else:
                return None
        classes.append(bytes(kind[key] for key in keys))
    numbering = {key: i for i, key in enumerate(distinct)}
    kept1, kept2 = xprepare.kept(classes[0]), xprepare.kept(classes[1])
    ha1 = [numbering[key] for key, keep in zip(keys1, kept1) if keep]
    ha2 = [numbering[key] for key, keep in zip(keys2, kept2) if keep]
    deleted, added = xdiff.core_counts(ha1, ha2)
    return added + len(keys2) - len(ha2), deleted + len(keys1) - len(ha1)


def _occurrences(key: bytes, content: bytes) -> int:
    """How many lines of ``content`` have this key, counted without overlaps: for
    a terminated line, its text between newlines (the first line by ``startswith``);
    for an unterminated last line (its key ends with ``\\n``), 1 or 0, exactly."""
    if key.endswith(b"\n"):
        text = key[:-1]
        last = content.rfind(b"\n") + 1
        return int(not content.endswith(b"\n") and content[last:] == text)
    line = key + b"\n"
    return content.count(b"\n" + line) + content.startswith(line)


@cache
def accelerator() -> Callable[[bytes, bytes], tuple[int, int]] | None:
    """libgit2's line counts through pygit2, if installed and not turned off; else None.

    libgit2 bundles git's xdiff (the same discards and cost heuristics), so its
    counts are git's; text is forced because the caller has already applied git's
    binary rule (libgit2's own rule differs). Looked up once, on first use."""
    if os.environ.get("SNAPSHOTTER_LINE_COUNTS") == "python":
        return None
    try:
        import pygit2

        create, force_text = pygit2.Patch.create_from, pygit2.enums.DiffOption.FORCE_TEXT
    except Exception:  # not installed, or too old, or its libgit2 fails to load: count in Python
        return None

    def counts(old: bytes, new: bytes) -> tuple[int, int]:
        _, added, deleted = create(old, new, flag=force_text).line_stats
        return added, deleted

    return counts


def change_script(old: bytes, new: bytes) -> tuple[int, int, list[hunks.Change]]:
    """(old lines, new lines, the changes between them) as ``line_changes`` has
    them; through libgit2 when pygit2 is installed (its xdiff is git's, the
    indent heuristic included), else in Python. What ``blame`` walks with."""
    fast = script_accelerator()
    if fast is None:
        lines1, lines2, changes = line_changes(old, new)
        return len(lines1), len(lines2), changes
    return count_lines(old), count_lines(new), fast(old, new)


@cache
def script_accelerator() -> Callable[[bytes, bytes], list[hunks.Change]] | None:
    """libgit2's change script through pygit2 (see ``accelerator``), or None."""
    if os.environ.get("SNAPSHOTTER_LINE_COUNTS") == "python":
        return None
    try:
        import pygit2

        create = pygit2.Patch.create_from
        flags = pygit2.enums.DiffOption.FORCE_TEXT | pygit2.enums.DiffOption.INDENT_HEURISTIC
    except Exception:  # not installed, or too old, or its libgit2 fails to load: in Python
        return None

    def script(old: bytes, new: bytes) -> list[hunks.Change]:
        out = []
        for hunk in create(old, new, flag=flags, context_lines=0, interhunk_lines=0).hunks:
            i1 = hunk.old_start - 1 if hunk.old_lines else hunk.old_start
            i2 = hunk.new_start - 1 if hunk.new_lines else hunk.new_start
            out.append((i1, i2, hunk.old_lines, hunk.new_lines))
        return out

    return script


def unified_hunks(old: bytes, new: bytes) -> str:
    """The ``@@`` hunks of a unified diff, as ``git diff`` prints them (no file header)."""
    lines1, lines2, changes = line_changes(old, new)
    return hunks.unified(lines1, lines2, changes)


def line_changes(old: bytes, new: bytes) -> tuple[list[bytes], list[bytes], list[hunks.Change]]:
    """Both sides' lines and the changes between them, placed as git places them
    (slid by the indent heuristic): what ``git diff`` and ``git blame`` see."""
    keys1, keys2 = line_keys(old), line_keys(new)
    prep = xprepare.Prepared(keys1, keys2)
    marks1, marks2 = xdiff.changed_lines(prep, len(keys1), len(keys2))
    side1 = hunks.Side(prep.ids1, split_lines(old), marks1)
    side2 = hunks.Side(prep.ids2, split_lines(new), marks2)
    hunks.compact(side1, side2)
    hunks.compact(side2, side1)
    return list(side1.lines), list(side2.lines), hunks.script(side1.changed, side2.changed)


def _trimmed(old: bytes, new: bytes) -> tuple[bytes, bytes]:
    """``old`` and ``new`` without the whole lines they share at the start and
    then at the end (git's ``xdl_trim_ends``), found on the bytes."""
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
