"""The store's check of a ref's name takes and refuses what dulwich's does (and git's check-ref-format)."""

from __future__ import annotations

import random
import string
import subprocess

import pytest
from conftest import GIT
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
    # dulwich 0.25 (our floor) took an empty component (a leading "/", "//") and a component
    # ending in ".lock" before the last, which git refuses (`git check-ref-format` of
    # /refs/a, refs//a, x.lock/refs fails) and later dulwich refuses too.
    parts_ok = all(part and not part.endswith(b".lock") for part in name.split(b"/"))
    dulwich_says = check_ref_format(Ref(name)) and parts_ok
    assert valid_ref_name(name) == dulwich_says, name


def test_names_git_refuses_are_refused() -> None:
    good = [b"refs/snapshots/0001", b"refs/snapshotter/undo/0002", b"a/b"]
    bad = [b"@", b"refs", b"refs/a..b", b"refs/a.lock", b"refs/.a", b"refs/a/", b"refs//a", b"refs/a b"]
    bad += [b"refs/a@{1}", b"refs/a\\b", b"refs/a.", b"refs/a\x00b", b"refs/a:b", b"refs/a\x7f"]
    bad += [b"/refs/a", b"refs//a", b"x.lock/refs"]
    assert [name for name in good if not valid_ref_name(name)] == []
    assert [name for name in bad if valid_ref_name(name)] == []


@pytest.mark.skipif(GIT is None, reason="git is the oracle")
def test_a_ref_name_is_judged_as_git_judges_it() -> None:
    """git's own check-ref-format, over 300 names of the same pieces (a fixed draw)."""
    draw = random.Random(51)
    names = {"".join(draw.choices(PIECES, k=draw.randint(1, 6))) for _ in range(300)}
    wrong = []
    for name in sorted(names):
        raw = name.encode("utf-8")
        if b"\x00" in raw or raw.startswith(b"-"):  # no argument can hold a NUL; a leading "-" is an option
            continue
        done = subprocess.run([str(GIT), "check-ref-format", name], capture_output=True, check=False)
        if (done.returncode == 0) != valid_ref_name(raw):
            wrong.append(name)
    assert wrong == []
