"""Line diffs without git: the invariants of git's algorithm as ported (the
counts against git itself are in test_linediff_git.py)."""

from __future__ import annotations

from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from snapshotter.engine.compare import linediff, xdiff, xprepare
from snapshotter.engine.gitstore.objects import count_lines, is_binary

lines = st.lists(st.sampled_from([b"a\n", b"b\n", b"c\n", b"}\n", b"\n"]), max_size=40)


def lcs_length(a: list[bytes], b: list[bytes]) -> int:
    @cache
    def go(i: int, j: int) -> int:
        if i == len(a) or j == len(b):
            return 0
        if a[i] == b[j]:
            return 1 + go(i + 1, j + 1)
        return max(go(i + 1, j), go(i, j + 1))

    return go(0, 0)


def marks(old: bytes, new: bytes) -> tuple[bytearray, bytearray]:
    keys1, keys2 = linediff.line_keys(old), linediff.line_keys(new)
    return xdiff.changed_lines(xprepare.Prepared(keys1, keys2), len(keys1), len(keys2))


@settings(max_examples=150, deadline=None)
@given(lines, lines)
def test_counts_are_a_valid_edit_script_and_never_below_minimal(a: list[bytes], b: list[bytes]) -> None:
    """git does not always find a minimal script (it discards lines first); but
    the lines it leaves unchanged match up, and the counts are those of the marks."""
    old, new = b"".join(a), b"".join(b)
    added, deleted = linediff.numstat(old, new)
    common = lcs_length(a, b)
    assert added >= len(b) - common and deleted >= len(a) - common
    changed1, changed2 = marks(old, new)
    assert (added, deleted) == (sum(changed2), sum(changed1))
    kept1 = [line for line, mark in zip(a, changed1) if not mark]
    kept2 = [line for line, mark in zip(b, changed2) if not mark]
    assert kept1 == kept2


fragments = st.lists(st.sampled_from([b"a", b"b", b"\n", b"ab\n", b"x", b"\r\n"]), max_size=12)


@settings(max_examples=150, deadline=None)
@given(fragments, fragments, fragments, fragments)
def test_byte_trimmed_shortcut_agrees_with_the_line_algorithm(
    head: list[bytes], a: list[bytes], b: list[bytes], tail: list[bytes]
) -> None:
    """The head and tail are trimmed on bytes first (lines cut anywhere, a last
    line without newline): the shortcut gives what the whole algorithm gives."""
    old, new = b"".join(head + a + tail), b"".join(head + b + tail)
    full = xdiff.counts(linediff.line_keys(old), linediff.line_keys(new))
    assert linediff.numstat(old, new) == (full if old != new else (0, 0))


def apply(old: bytes, patch: str) -> bytes:
    """Apply ``@@`` hunks (of UTF-8 text) to ``old``."""
    source = linediff.split_lines(old)
    out: list[bytes] = []
    position, last = 0, ""
    for row in patch.split("\n")[:-1]:
        if row.startswith("@@"):
            start, _, count = row.split()[1][1:].partition(",")
            first = int(start) if count == "0" else int(start) - 1
            out.extend(source[position:first])
            position = first
        elif row[0] == " ":
            out.append(source[position])
            position += 1
        elif row[0] == "-":
            position += 1
        elif row[0] == "+":
            out.append(row[1:].encode() + b"\n")
        elif last == "+":  # "\ No newline at end of file" after an added line
            out[-1] = out[-1][:-1]
        last = row[0]
    out.extend(source[position:])
    return b"".join(out)


@settings(max_examples=150, deadline=None)
@given(lines, lines, st.booleans(), st.booleans())
def test_hunks_rebuild_the_new_side(a: list[bytes], b: list[bytes], cut_old: bool, cut_new: bool) -> None:
    old, new = b"".join(a), b"".join(b)
    old, new = old[:-1] if cut_old else old, new[:-1] if cut_new else new
    patch = linediff.unified_hunks(old, new)
    assert apply(old, patch) == new
    added = sum(1 for row in patch.split("\n") if row.startswith("+"))
    deleted = sum(1 for row in patch.split("\n") if row.startswith("-"))
    assert (added, deleted) == linediff.numstat(old, new)


def test_repeated_lines_where_sequence_matcher_miscounts() -> None:
    old = b"".join([b"x\n", b"y\n"] * 30)
    new = b"".join([b"y\n", b"x\n"] * 30)
    assert linediff.numstat(old, new) == (1, 1)


def test_a_line_found_only_on_one_side_is_changed_before_any_search() -> None:
    """xdl_cleanup_records: lines missing from the other file never reach Myers."""
    prep = xprepare.Prepared([b"a", b"x", b"b"], [b"a", b"y", b"b"])
    assert (prep.start, prep.ha1, prep.ha2) == (1, [], [])
    assert linediff.numstat(b"a\nx\nb\n", b"a\ny\nb\n") == (1, 1)


def test_bogosqrt_is_gits() -> None:
    assert [xprepare.bogosqrt(n) for n in (0, 1, 3, 4, 15, 16, 16383, 16384, 65535, 65536)] == [
        1, 2, 2, 4, 4, 8, 128, 256, 256, 512,
    ]  # fmt: skip


def test_counting_lines_and_binary_rule() -> None:
    assert count_lines(b"") == 0
    assert count_lines(b"a") == 1
    assert count_lines(b"a\nb\n") == 2
    assert is_binary(b"x" * 7999 + b"\0")
    assert not is_binary(b"x" * 8000 + b"\0")
    assert linediff.split_lines(b"a\r\nb\rc") == [b"a\r\n", b"b\rc"]
    assert linediff.line_keys(b"a\nb") == [b"a", b"b\n"]  # a last line without newline is its own line
    assert linediff.line_keys(b"a\nb\n") == [b"a", b"b"]


def test_hunk_header_and_missing_newline_marker() -> None:
    text = linediff.unified_hunks(b"a\nb", b"a\nc")
    assert text == "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    assert linediff.unified_hunks(b"", b"x\n") == "@@ -0,0 +1 @@\n+x\n"


def test_hunk_header_names_the_function_above_it() -> None:
    old = b"int main(void)\n{\n" + b"".join(b"\tx%d;\n" % i for i in range(10)) + b"}\n"
    new = old.replace(b"\tx7;\n", b"\ty7;\n")
    assert linediff.unified_hunks(old, new).startswith("@@ -7,7 +7,7 @@ int main(void)\n")


BASE = b"".join(b"%d\n" % (i % 499) if i % 3 else b"\n" for i in range(30000))  # 30,000 lines, ~110 KB


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, 30000), st.integers(0, 4), st.lists(st.sampled_from([b"\n", b"5\n", b"498\n", b"x\n"]), max_size=5)
)
def test_small_change_shortcut_is_the_whole_algorithm(at: int, size: int, inserted: list[bytes]) -> None:
    """A few lines changed in a big file: counting from the middle lines alone
    gives what the whole-file pass gives, or declines."""
    lines = linediff.split_lines(BASE)
    new = b"".join(lines[:at] + inserted + lines[at + size :])
    if new == BASE:
        return
    middle_old, middle_new = linediff._trimmed(BASE, new)
    if not middle_old or not middle_new:
        return
    quick = linediff._small_change(BASE, new, linediff.line_keys(middle_old), linediff.line_keys(middle_new))
    full = xdiff.counts(linediff.line_keys(BASE), linediff.line_keys(new))
    assert quick is None or quick == full
