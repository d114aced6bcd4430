"""Unified hunks as ``git diff`` prints them, from git's marks of changed lines.

The Myers pass (:mod:`snapshotter.engine.compare.xdiff`) says which lines changed; git then
slides each group of changed lines up or down where equal lines allow it, merging
groups that touch, aligning a group with the other side's changes, and otherwise
picking the position its indent heuristic scores best (``xdl_change_compact`` in
git's xdiff/xdiffi.c, with ``diff.indentHeuristic``, on by default since git 2.14).
Sliding never changes how many lines are added or deleted, only where the hunks
fall. The hunks are cut with three lines of context and headed with the nearest
"function" line above them, a line starting with a letter, ``_`` or ``$``
(``xdl_emit_diff`` and ``def_ff`` in xdiff/xemit.c).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

CONTEXT = 3
MAX_INDENT = 200
MAX_BLANKS = 20
INDENT_HEURISTIC_MAX_SLIDING = 100
START_OF_FILE_PENALTY = 1
END_OF_FILE_PENALTY = 21
TOTAL_BLANK_WEIGHT = -30
POST_BLANK_WEIGHT = 6
RELATIVE_INDENT_PENALTY = -4
RELATIVE_INDENT_WITH_BLANK_PENALTY = 10
RELATIVE_OUTDENT_PENALTY = 24
RELATIVE_OUTDENT_WITH_BLANK_PENALTY = 17
RELATIVE_DEDENT_PENALTY = 23
RELATIVE_DEDENT_WITH_BLANK_PENALTY = 17
INDENT_WEIGHT = 60
FUNC_LINE_MAX = 80
SPACE = b" \t\n\r"  # git's own isspace (ctype.c): no \v, no \f


def indent_of(line: bytes) -> int:
    """``get_indent``: columns of leading blanks (a tab to the next multiple of 8),
    -1 for a line of whitespace only; capped at 200."""
    ret = 0
    for c in line:
        if c == 32:
            ret += 1
        elif c == 9:
            ret += 8 - ret % 8
        elif c not in (10, 13):
            return ret
        if ret >= MAX_INDENT:
            return MAX_INDENT
    return -1


class Side:
    """One file for ``xdl_change_compact``: line ids, marks (with a 0 before and
    after, so ``changed[i + 1]`` is line i), and indents computed on demand."""

    def __init__(self, ids: Sequence[int], lines: Sequence[bytes], marks: bytearray) -> None:
        self.ids, self.lines, self.n = ids, lines, len(ids)
        self.changed = bytearray(1) + marks + bytearray(1)
        self.indents: dict[int, int] = {}

    def indent(self, i: int) -> int:
        value = self.indents.get(i)
        if value is None:
            value = self.indents[i] = indent_of(self.lines[i])
        return value

    def group_end(self, start: int) -> int:
        end = start
        while self.changed[end + 1]:
            end += 1
        return end

    def group_start(self, end: int) -> int:
        start = end
        while self.changed[start]:  # line start - 1
            start -= 1
        return start

    def slide_down(self, g: list[int]) -> bool:
        """``group_slide_down``: move the group one line down if its first line
        equals the line after it, swallowing a group it then touches."""
        start, end = g
        if end < self.n and self.ids[start] == self.ids[end]:
            self.changed[start + 1] = 0
            self.changed[end + 1] = 1
            g[0], g[1] = start + 1, self.group_end(end + 1)
            return True
        return False

    def slide_up(self, g: list[int]) -> bool:
        start, end = g
        if start > 0 and self.ids[start - 1] == self.ids[end - 1]:
            self.changed[start] = 1
            self.changed[end] = 0
            g[0], g[1] = self.group_start(start - 1), end - 1
            return True
        return False

    def next_group(self, g: list[int]) -> bool:
        if g[1] == self.n:
            return False
        g[0] = g[1] + 1
        g[1] = self.group_end(g[0])
        return True

    def next_change(self, line: int) -> int:
        """The first changed line after ``line`` (``n``: none)."""
        found = self.changed.find(1, line + 2, self.n + 1)
        return found - 1 if found != -1 else self.n

    def previous_group(self, g: list[int]) -> bool:
        if g[0] == 0:
            return False
        g[1] = g[0] - 1
        g[0] = self.group_start(g[1])
        return True

    def measure(self, split: int) -> tuple[int, int, int, int, int, int]:
        """``measure_split``: (end of file, indent, blanks before, indent before,
        blanks after, indent after) of a split just above line ``split``."""
        end_of_file = split >= self.n
        indent = -1 if end_of_file else self.indent(split)
        pre_blank, pre_indent = self._blanks(range(split - 1, -1, -1))
        post_blank, post_indent = self._blanks(range(split + 1, self.n))
        return end_of_file, indent, pre_blank, pre_indent, post_blank, post_indent

    def _blanks(self, lines: range) -> tuple[int, int]:
        """(blank lines, indent of the first other line) walking ``lines`` away from
        a split: -1 if none follows; after ``MAX_BLANKS`` blanks, (MAX_BLANKS, 0)."""
        blank = 0
        for i in lines:
            indent = self.indent(i)
            if indent != -1:
                return blank, indent
            blank += 1
            if blank == MAX_BLANKS:
                return blank, 0
        return blank, -1


def _score(measured: tuple[int, int, int, int, int, int]) -> tuple[int, int]:
    """``score_add_split``: (effective indent, penalty) of one split."""
    end_of_file, indent, pre_blank, pre_indent, post_blank, post_indent = measured
    penalty = 0
    if pre_indent == -1 and pre_blank == 0:
        penalty += START_OF_FILE_PENALTY
    if end_of_file:
        penalty += END_OF_FILE_PENALTY
    post_blank = 1 + post_blank if indent == -1 else 0
    total_blank = pre_blank + post_blank
    penalty += TOTAL_BLANK_WEIGHT * total_blank + POST_BLANK_WEIGHT * post_blank
    effective = indent if indent != -1 else post_indent
    any_blanks = total_blank != 0
    if effective == -1 or pre_indent == -1 or effective == pre_indent:
        pass
    elif effective > pre_indent:
        penalty += RELATIVE_INDENT_WITH_BLANK_PENALTY if any_blanks else RELATIVE_INDENT_PENALTY
    elif post_indent != -1 and post_indent > effective:
        penalty += RELATIVE_OUTDENT_WITH_BLANK_PENALTY if any_blanks else RELATIVE_OUTDENT_PENALTY
    else:
        penalty += RELATIVE_DEDENT_WITH_BLANK_PENALTY if any_blanks else RELATIVE_DEDENT_PENALTY
    return effective, penalty


def compact(side: Side, other: Side, indent_heuristic: bool = True) -> None:
    """``xdl_change_compact`` on ``side``: with the indent heuristic, as ``git diff``
    runs it; without, as ``git merge-file`` does (a group stays slid down as far
    as it goes, unless a change on the other side lines it up)."""
    g, go = [0, side.group_end(0)], [0, other.group_end(0)]
    while True:
        if g[1] != g[0]:
            while True:
                size = g[1] - g[0]
                end_matching_other = -1
                while side.slide_up(g):
                    other.previous_group(go)
                earliest_end = g[1]
                if go[1] > go[0]:
                    end_matching_other = g[1]
                while side.slide_down(g):
                    other.next_group(go)
                    if go[1] > go[0]:
                        end_matching_other = g[1]
                if size == g[1] - g[0]:
                    break
            if g[1] == earliest_end:
                pass
            elif end_matching_other != -1:
                while go[1] == go[0]:
                    side.slide_up(g)
                    other.previous_group(go)
            elif indent_heuristic:
                _slide_to_best(side, other, g, go, size, earliest_end)
        if g[0] == g[1] and go[0] == go[1]:  # equal lines on both sides: step over them at once
            ahead = min(side.next_change(g[0]) - g[0], other.next_change(go[0]) - go[0]) - 1
            if ahead > 0:
                g[0] = g[1] = g[0] + ahead
                go[0] = go[1] = go[0] + ahead
        if not side.next_group(g):
            break
        other.next_group(go)


def _slide_to_best(side: Side, other: Side, g: list[int], go: list[int], size: int, earliest_end: int) -> None:
    """The indent heuristic: score each place the group can slide to (at most
    100 lines up) and move it to the best, the lowest one on ties."""
    lowest = max(earliest_end, g[1] - size - 1, g[1] - INDENT_HEURISTIC_MAX_SLIDING)
    best_shift, best = -1, (0, 0)
    for shift in range(lowest, g[1] + 1):
        top, bottom = _score(side.measure(shift)), _score(side.measure(shift - size))
        score = (top[0] + bottom[0], top[1] + bottom[1])
        cmp_indents = (score[0] > best[0]) - (score[0] < best[0])
        if best_shift == -1 or INDENT_WEIGHT * cmp_indents + (score[1] - best[1]) <= 0:
            best_shift, best = shift, score
    while g[1] > best_shift:
        side.slide_up(g)
        other.previous_group(go)


Change = tuple[int, int, int, int]
"""(first old line, first new line, old lines, new lines) of one change."""


def script(changed1: bytearray, changed2: bytearray) -> list[Change]:
    """``xdl_build_script``: the changes in order, from the two padded mark arrays."""
    out: list[Change] = []
    n1, n2 = len(changed1) - 2, len(changed2) - 2
    i1 = i2 = 0
    while i1 < n1 or i2 < n2:
        if changed1[i1 + 1] or changed2[i2 + 1]:
            s1, s2 = i1, i2
            while changed1[i1 + 1]:
                i1 += 1
            while changed2[i2 + 1]:
                i2 += 1
            out.append((s1, s2, i1 - s1, i2 - s2))
        else:
            i1, i2 = i1 + 1, i2 + 1
    return out


def _hunks(changes: list[Change]) -> Iterator[list[Change]]:
    """``xdl_get_hunk``: changes at most 2 * CONTEXT lines apart share a hunk."""
    group: list[Change] = []
    for change in changes:
        if group and change[0] - (group[-1][0] + group[-1][2]) > 2 * CONTEXT:
            yield group
            group = []
        group.append(change)
    if group:
        yield group


def function_line(line: bytes) -> bytes | None:
    """``def_ff``: a line that starts with a letter, ``_`` or ``$`` names the
    function; git keeps its first 80 bytes less trailing whitespace."""
    if line and (line[:1].isalpha() and line[0] < 128 or line[0] in b"_$"):
        return line[:FUNC_LINE_MAX].rstrip(SPACE)
    return None


def unified(lines1: Sequence[bytes], lines2: Sequence[bytes], changes: list[Change]) -> str:
    """The ``@@`` hunks of ``changes`` between two line lists (lines keep their newline)."""
    return "".join(text for _, text in unified_hunks(lines1, lines2, changes))


def unified_hunks(
    lines1: Sequence[bytes], lines2: Sequence[bytes], changes: list[Change]
) -> Iterator[tuple[list[Change], str]]:
    """Each ``@@`` hunk of ``changes``: the changes it holds and its text."""
    func = b""
    previous = -1
    for group in _hunks(changes):
        s1 = max(group[0][0] - CONTEXT, 0)
        for i in range(s1 - 1, previous, -1):  # get_func_line: back to the previous hunk's search start
            found = function_line(lines1[i])
            if found is not None:
                func = found
                break
        previous = s1 - 1
        yield group, hunk_text(lines1, lines2, group, func)


def hunk_bounds(
    lines1: Sequence[bytes],
    lines2: Sequence[bytes],
    group: Sequence[Change],
    room: tuple[int, int] = (CONTEXT, CONTEXT),
) -> tuple[int, int, int, int]:
    """(old start, old end, new start, new end) of ``group`` with its context:
    ``CONTEXT`` lines each side, or fewer where ``room`` (before, after) says."""
    first, last = group[0], group[-1]
    before = min(room[0], first[0], first[1])
    after = min(room[1], len(lines1) - (last[0] + last[2]), len(lines2) - (last[1] + last[3]))
    return first[0] - before, last[0] + last[2] + after, first[1] - before, last[1] + last[3] + after


def hunk_text(
    lines1: Sequence[bytes],
    lines2: Sequence[bytes],
    group: Sequence[Change],
    func: bytes = b"",
    room: tuple[int, int] = (CONTEXT, CONTEXT),
) -> str:
    """One ``@@`` hunk: ``group``'s changes with their context, headed by ``func``."""
    s1, e1, s2, e2 = hunk_bounds(lines1, lines2, group, room)
    first = group[0]
    header = f"@@ -{_range(s1, e1 - s1)} +{_range(s2, e2 - s2)} @@"
    out = [header + (" " + _text(func) if func else "") + "\n"]
    out.extend(_line(" ", line) for line in lines2[s2 : first[1]])
    position2 = first[1]
    for i1, i2, c1, c2 in group:
        out.extend(_line(" ", line) for line in lines2[position2:i2])  # equal lines, as many on each side
        out.extend(_line("-", line) for line in lines1[i1 : i1 + c1])
        out.extend(_line("+", line) for line in lines2[i2 : i2 + c2])
        position2 = i2 + c2
    out.extend(_line(" ", line) for line in lines2[position2:e2])
    return "".join(out)


def nearest_function(lines1: Sequence[bytes], before: int) -> bytes:
    """The function line a hunk starting at line ``before`` is headed by (searched to the top)."""
    for i in range(min(before, len(lines1)) - 1, -1, -1):
        found = function_line(lines1[i])
        if found is not None:
            return found
    return b""


def _range(start: int, count: int) -> str:
    """A hunk header's ``start,count`` (``,1`` left out; an empty side names the line before)."""
    first = start + 1 if count else start
    return str(first) if count == 1 else f"{first},{count}"


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _line(sign: str, line: bytes) -> str:
    text = _text(line)
    if text.endswith("\n"):
        return sign + text
    return sign + text + "\n\\ No newline at end of file\n"
