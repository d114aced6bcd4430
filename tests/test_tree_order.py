"""git's order of a tree's entries, pinned without git.

git sorts a folder's name as if it ended in ``/``: the folder ``a`` comes after
the file ``a.txt``, since ``.`` sorts before ``/``. That order differs from a
sort by bare name only where a folder's name is a prefix of a sibling's and
the next byte sorts before ``/`` (one of `` !"#$%&'()*+,-.``); a tree written
in the other order gets an id that is not git's, and ``git fsck --strict``
flags it (``treeNotSorted``). The ids here are git's, pinned, so that the suite
run without git checks them too; ``test_the_pinned_tree_is_gits`` checks the
pin against git where it is installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git_shadow_tree, needs_git, write

from snapshotter.engine.gitstore.objects import MODE_FILE, MODE_TREE, parse_tree, serialize_tree

PREFIX_PAIRS = {
    "a.txt": "a\n",
    "a/f": "f\n",
    "foo-bar": "fb\n",
    "foo/f": "f\n",
    "x.c": "x\n",
    "x/f": "f\n",
    "b/c": "c\n",
    "b-c/d": "d\n",  # a folder beside a folder
    "b0": "b0\n",  # "0" sorts after "/": the same order either way
}
GIT_TREE = "89d307fb1cd8c97c09dec204254f129f4f8570aa"
"""``git add -A && git write-tree`` of ``PREFIX_PAIRS`` (git 2.39)."""
GIT_ORDER = [b"a.txt", b"a", b"b-c", b"b", b"b0", b"foo-bar", b"foo", b"x.c", b"x"]
"""``git ls-tree`` of ``GIT_TREE``: its entries as git orders them."""

BEFORE_SLASH = b" !\"#$%&'()*+,-."
"""Every byte a name may hold that sorts before ``/``."""


def _top_level(files: dict[str, str]) -> list[tuple[bytes, int, bytes]]:
    """The root tree's entries of ``files``, with made-up ids."""
    entries = {}
    for path in files:
        name, slash, _ = path.partition("/")
        entries[name.encode()] = MODE_TREE if slash else MODE_FILE
    return [(name, mode, bytes([n]) * 20) for n, (name, mode) in enumerate(sorted(entries.items()))]


@pytest.mark.parametrize("turn", range(len(GIT_ORDER)))
def test_a_tree_lists_its_entries_in_gits_order_whatever_order_they_come_in(turn: int) -> None:
    entries = _top_level(PREFIX_PAIRS)
    for given in (entries[turn:] + entries[:turn], (entries[turn:] + entries[:turn])[::-1]):
        assert [name for name, _, _ in parse_tree(serialize_tree(given))] == GIT_ORDER


@pytest.mark.parametrize("byte", list(BEFORE_SLASH) + list(b"0A_az~"))
def test_a_folder_sorts_as_if_its_name_ended_in_a_slash(byte: int) -> None:
    sibling = b"n" + bytes([byte]) + b"x"
    for mode in (MODE_FILE, MODE_TREE):
        given = [(b"n", MODE_TREE, b"\1" * 20), (sibling, mode, b"\2" * 20)]
        order = [name for name, _, _ in parse_tree(serialize_tree(given))]
        assert order == ([sibling, b"n"] if byte < ord("/") else [b"n", sibling])
        assert [name for name, _, _ in parse_tree(serialize_tree(given[::-1]))] == order


def test_a_workspace_of_prefix_pairs_snapshots_to_gits_tree(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, PREFIX_PAIRS)
    snap = make()
    assert snap.snapshot().tree_id == GIT_TREE
    assert make().snapshot().tree_id == GIT_TREE  # again from the stat cache and the cached folder trees


@needs_git
def test_the_pinned_tree_is_gits(ws: Path, tmp_path: Path) -> None:
    write(ws, PREFIX_PAIRS)
    assert git_shadow_tree(ws, tmp_path / "git") == GIT_TREE
