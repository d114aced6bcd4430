"""Line diffs: Myers gives minimal counts; hunks rebuild the new text."""

from __future__ import annotations

from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from snapshotter import linediff

lines = st.lists(st.sampled_from([b"a\n", b"b\n", b"c\n", b"}\n", b"\n"]), max_size=25)


def lcs_length(a: list[bytes], b: list[bytes]) -> int:
    @cache
    def go(i: int, j: int) -> int:
        if i == len(a) or j == len(b):
            return 0
        if a[i] == b[j]:
            return 1 + go(i + 1, j + 1)
        return max(go(i + 1, j), go(i, j + 1))

    return go(0, 0)


@settings(max_examples=300, deadline=None)
@given(lines, lines)
def test_numstat_is_minimal(a: list[bytes], b: list[bytes]) -> None:
    added, deleted = linediff.numstat(b"".join(a), b"".join(b))
    common = lcs_length(a, b)
    assert (added, deleted) == (len(b) - common, len(a) - common)


fragments = st.lists(st.sampled_from([b"a", b"b", b"\n", b"ab\n", b"x"]), max_size=12)


@settings(max_examples=500, deadline=None)
@given(fragments, fragments, fragments, fragments)
def test_numstat_is_minimal_with_partial_lines_and_shared_ends(
    head: list[bytes], a: list[bytes], b: list[bytes], tail: list[bytes]
) -> None:
    """The head and tail are trimmed on bytes: lines cut anywhere, a last line without newline."""
    old, new = b"".join(head + a + tail), b"".join(head + b + tail)
    old_lines, new_lines = linediff.split_lines(old), linediff.split_lines(new)
    common = lcs_length(old_lines, new_lines)
    assert linediff.numstat(old, new) == (len(new_lines) - common, len(old_lines) - common)


@settings(max_examples=300, deadline=None)
@given(lines, lines)
def test_opcodes_rebuild_the_new_side(a: list[bytes], b: list[bytes]) -> None:
    rebuilt: list[bytes] = []
    for tag, i1, i2, j1, j2 in linediff.opcodes(a, b):
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
            rebuilt.extend(a[i1:i2])
        else:
            rebuilt.extend(b[j1:j2])
    assert rebuilt == b


def test_repeated_lines_where_sequence_matcher_miscounts() -> None:
    old = b"".join([b"x\n", b"y\n"] * 30)
    new = b"".join([b"y\n", b"x\n"] * 30)
    added, deleted = linediff.numstat(old, new)
    assert (added, deleted) == (1, 1)


def test_counting_lines_and_binary_rule() -> None:
    assert linediff.count_lines(b"") == 0
    assert linediff.count_lines(b"a") == 1
    assert linediff.count_lines(b"a\nb\n") == 2
    assert linediff.is_binary(b"x" * 7999 + b"\0")
    assert not linediff.is_binary(b"x" * 8000 + b"\0")
    assert linediff.split_lines(b"a\r\nb\rc") == [b"a\r\n", b"b\rc"]


def test_hunk_header_and_missing_newline_marker() -> None:
    text = linediff.unified_hunks(b"a\nb", b"a\nc")
    assert text == "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    assert linediff.unified_hunks(b"", b"x\n") == "@@ -0,0 +1 @@\n+x\n"
