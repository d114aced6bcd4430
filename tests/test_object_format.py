"""git's object rules that the store shares, each at its edges, without git.

When a file is binary (a NUL in its first 8,000 bytes), how many lines it has
(as ``git diff --numstat`` counts: a last line without a newline counts), the
git mode a stat gives, the tree a commit names, the order of two files whose
names are prefixes of each other, and the modes of trees written by older gits
(``100664``, kept as they are). tests/test_tree_order.py pins folder order,
tests/test_linediff_git.py checks line counts against git itself.
"""

from __future__ import annotations

import stat

import pytest

from snapshotter.engine.gitstore.objects import (
    BINARY_PROBE,
    MODE_EXEC,
    MODE_FILE,
    MODE_LINK,
    MODE_TREE,
    commit_tree,
    count_lines,
    describe_lines,
    git_mode,
    is_binary,
    parse_tree,
    serialize_tree,
)


@pytest.mark.parametrize(
    ("content", "binary"),
    [
        (b"", False),
        (b"plain text\n", False),
        (b"\0", True),
        (b"\0text", True),
        (b"t\0ext", True),
        (b"x" * (BINARY_PROBE - 1) + b"\0", True),  # the last byte git looks at
        (b"x" * BINARY_PROBE + b"\0", False),  # the first it does not
        (b"x" * BINARY_PROBE + b"\0" * 10, False),
    ],
    ids=["empty", "text", "nul", "nul-first", "nul-second", "nul-at-7999", "nul-at-8000", "nuls-after"],
)
def test_a_file_is_binary_when_a_nul_is_in_its_first_8000_bytes(content: bytes, binary: bool) -> None:
    assert is_binary(content) is binary
    assert describe_lines(content) == (None if binary else count_lines(content))


@pytest.mark.parametrize(
    ("content", "lines"),
    [(b"", 0), (b"\n", 1), (b"a", 1), (b"a\n", 1), (b"a\nb", 2), (b"a\nb\n", 2), (b"\n\n\n", 3), (b"a\n\nb", 3)],
)
def test_lines_are_counted_as_git_counts_them(content: bytes, lines: int) -> None:
    assert count_lines(content) == lines
    assert describe_lines(content) == lines


@pytest.mark.parametrize(
    ("st_mode", "mode"),
    [
        (stat.S_IFREG | 0o644, MODE_FILE),
        (stat.S_IFREG | 0o755, MODE_EXEC),
        (stat.S_IFREG | 0o744, MODE_EXEC),
        (stat.S_IFREG | 0o654, MODE_FILE),  # only the owner's exec bit counts, as in git
        (stat.S_IFREG | 0o645, MODE_FILE),
        (stat.S_IFLNK | 0o777, MODE_LINK),
        (stat.S_IFLNK | 0o644, MODE_LINK),
    ],
)
def test_the_git_mode_of_a_stat(st_mode: int, mode: int) -> None:
    assert git_mode(st_mode) == mode


def test_the_tree_a_commit_names() -> None:
    tree = bytes(range(20))
    commit = b"tree " + tree.hex().encode() + b"\nauthor a <a> 0 +0000\n\nmessage\ntree " + b"0" * 40 + b"\n"
    assert commit_tree(commit) == tree
    assert commit_tree(b"author a <a> 0 +0000\n\nno tree line\n") is None
    assert commit_tree(b"tree " + b"g" * 40 + b"\n") is None


def test_two_files_whose_names_are_prefixes_sort_by_bare_name() -> None:
    """Only a folder sorts as if it ended in ``/``: the file ``a`` comes before
    the file ``a.txt`` (a folder ``a`` would come after it)."""
    files = [(b"a.txt", MODE_FILE, b"\1" * 20), (b"a", MODE_EXEC, b"\2" * 20), (b"a-b", MODE_LINK, b"\3" * 20)]
    order = [name for name, _, _ in parse_tree(serialize_tree(files))]
    assert order == [b"a", b"a-b", b"a.txt"]
    folder = [(b"a.txt", MODE_FILE, b"\1" * 20), (b"a", MODE_TREE, b"\2" * 20)]
    assert [name for name, _, _ in parse_tree(serialize_tree(folder))] == [b"a.txt", b"a"]


def test_a_tree_from_an_older_git_keeps_its_unusual_modes() -> None:
    """Old gits wrote group-writable files as ``100664``: such a tree reads with
    that mode (the restore plan then refuses or maps it), never as another."""
    sha = b"\7" * 20
    content = b"100664 old.txt\0" + sha + b"40000 sub\0" + sha + b"100755 run\0" + sha
    assert parse_tree(content) == [(b"old.txt", 0o100664, sha), (b"sub", MODE_TREE, sha), (b"run", MODE_EXEC, sha)]


@pytest.mark.parametrize(
    "content",
    [
        b"100644 a\0" + b"\1" * 19,
        b"100644 a" + b"\1" * 20,
        b"100644 a\0" + b"\1" * 21,
        b"x" + b"100644 a\0" + b"\1" * 20,
    ],
    ids=["short-id", "no-nul", "trailing-byte", "leading-byte"],
)
def test_a_malformed_tree_is_refused(content: bytes) -> None:
    with pytest.raises(ValueError):
        parse_tree(content)
