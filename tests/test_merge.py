"""Three-way text merges (engine/compare/merge.py) against ``git merge-file``."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import git_merge_file, needs_git

from snapshotter.engine.compare.linediff import split_lines
from snapshotter.engine.compare.merge import GitLineMatcher, merge_text, mergeable


def _mutated(rng: random.Random, lines: list[bytes], pool: list[bytes]) -> list[bytes]:
    out = list(lines)
    for _ in range(rng.randint(0, 4)):
        roll = rng.random()
        if roll < 0.35 and out:
            out[rng.randrange(len(out))] = rng.choice(pool)
        elif roll < 0.7:
            out.insert(rng.randint(0, len(out)), rng.choice(pool))
        elif out:
            del out[rng.randrange(len(out))]
    if out and rng.random() < 0.1:
        out[-1] = out[-1].rstrip(b"\n")  # no newline at the end
    return out


def _case(rng: random.Random) -> tuple[bytes, bytes, bytes]:
    pool = [b"}\n", b"\n", b"    return x\n", *(b"line %d\n" % i for i in range(12))]
    pool += [b"new %d\n" % i for i in range(6)]
    base = [rng.choice(pool) for _ in range(rng.randint(0, 25))]
    return b"".join(base), b"".join(_mutated(rng, base, pool)), b"".join(_mutated(rng, base, pool))


@needs_git
def test_merges_agree_with_git_merge_file(tmp_path: Path) -> None:
    """Seeded random edits on both sides, with repeated and blank lines. Clean or
    not is git's verdict every time, and a clean merge is git's byte for byte.
    Conflicts are laid out as git lays them out (cut to the differing lines,
    close ones joined) but for rare cases where bzr's regions and git's
    differ: at most 2%, counted here."""
    rng = random.Random(20)
    cases = clean = layout_differs = 0
    for _ in range(400):
        base, ours, theirs = _case(rng)
        expected, git_conflicts = git_merge_file(tmp_path, ours, base, theirs)
        merged = merge_text(base, ours, theirs)
        cases += 1
        assert (merged.conflicts > 0) == (git_conflicts > 0), (base, ours, theirs)
        if git_conflicts == 0:
            clean += 1
            assert merged.content == expected, (base, ours, theirs)
        elif merged.content != expected:
            layout_differs += 1
    assert clean > 100 and cases - clean > 100, "the cases must exercise both outcomes"
    assert layout_differs <= cases // 50, f"{layout_differs} conflict layouts differ from git's"


@needs_git
def test_a_simple_conflict_has_gits_markers(tmp_path: Path) -> None:
    base, ours, theirs = b"a\nb\nc\n", b"a\nB ours\nc\n", b"a\nB theirs\nc\n"
    expected, conflicts = git_merge_file(tmp_path, ours, base, theirs)
    merged = merge_text(base, ours, theirs)
    assert conflicts == 1 and merged.conflicts == 1
    assert merged.content == expected == b"a\n<<<<<<< ours\nB ours\n=======\nB theirs\n>>>>>>> theirs\nc\n"


def test_trivial_merges_take_a_side_whole() -> None:
    assert merge_text(b"x\n", b"x\n", b"y\n").content == b"y\n"
    assert merge_text(b"x\n", b"y\n", b"x\n").content == b"y\n"
    assert merge_text(b"x\n", b"z\n", b"z\n").content == b"z\n"
    assert merge_text(b"", b"", b"new\n").content == b"new\n"


@pytest.mark.parametrize(
    "a,b",
    [
        (b"", b""),
        (b"a\nb\nc\n", b"a\nb\nc\n"),
        (b"a\nb\nc\n", b"a\nx\nc\n"),
        (b"a\nb\nc\nd\n", b"d\nc\nb\na\n"),
        (b"", b"a\n"),
        (b"a\nb\n", b""),
        (b"one\ntwo\n" * 50, (b"one\ntwo\n" * 25) + b"three\n" + (b"one\ntwo\n" * 25)),
    ],
)
def test_matching_blocks_are_true_and_end_as_difflib_ends(a: bytes, b: bytes) -> None:
    lines_a, lines_b = split_lines(a), split_lines(b)
    blocks = GitLineMatcher(None, lines_a, lines_b).get_matching_blocks()
    assert blocks[-1] == (len(lines_a), len(lines_b), 0)
    at_a = at_b = 0
    for i, j, n in blocks:
        assert i >= at_a and j >= at_b and lines_a[i : i + n] == lines_b[j : j + n]
        at_a, at_b = i + n, j + n


def test_binary_content_is_not_mergeable() -> None:
    assert mergeable(b"text\n", b"more text\n")
    assert not mergeable(b"text\n", b"bin\x00ary")
