"""The store's check of a ref's name takes and refuses what dulwich's does (and git's check-ref-format)."""

from __future__ import annotations

import string

from dulwich.refs import Ref, check_ref_format
from hypothesis import given, settings
from hypothesis import strategies as st

from snapshotter.engine.gitstore.refnames import valid_ref_name

PIECES = ["refs", "snapshots", "a", "-", ".", "..", "/", "//", "@", "@{", "{", "\\", ".lock", "x.lock", " ", "~", "^"]
PIECES += [":", "?", "*", "[", "\x7f", "\x01", "\t", "é", "0001", "lock", "HEAD"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.text(string.printable, max_size=3), min_size=1, max_size=8))
def test_a_ref_name_is_judged_as_dulwich_judges_it(parts: list[str]) -> None:
    name = "".join(parts).encode("utf-8", "surrogateescape")
    assert valid_ref_name(name) == check_ref_format(Ref(name)), name


def test_names_git_refuses_are_refused() -> None:
    good = [b"refs/snapshots/0001", b"refs/snapshotter/undo/0002", b"a/b"]
    bad = [b"@", b"refs", b"refs/a..b", b"refs/a.lock", b"refs/.a", b"refs/a/", b"refs//a", b"refs/a b"]
    bad += [b"refs/a@{1}", b"refs/a\\b", b"refs/a.", b"refs/a\x00b", b"refs/a:b", b"refs/a\x7f"]
    assert [name for name in good if not valid_ref_name(name)] == []
    assert [name for name in bad if valid_ref_name(name)] == []
