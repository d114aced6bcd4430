"""Three-way text merges (engine/compare/merge.py) against ``git merge-file``."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest
from conftest import GIT, git_merge_file, needs_git

from snapshotter.engine.compare.linediff import split_lines
from snapshotter.engine.compare.merge import GitLineMatcher, Merged, changes_of, merge_text, mergeable


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


def _gits(tmp_path: Path, base: bytes, ours: bytes, theirs: bytes, expected: bytes) -> bytes:
    """``expected`` (as ``git merge-file`` 2.39 gave it), checked against the git on PATH if any."""
    if GIT is not None:
        assert git_merge_file(tmp_path, ours, base, theirs)[0] == expected
    return expected


def test_a_change_one_side_made_between_two_conflicts_keeps_them_apart(tmp_path: Path) -> None:
    """git joins only conflicts next to each other (``xdl_simplify_non_conflicts``):
    a change only ours made, one line from each, keeps them two."""
    base, ours, theirs = b"a\nb\nc\nd\ne\n", b"A1\nb\nC\nd\nE1\n", b"A2\nb\nc\nd\nE2\n"
    expected = _gits(
        tmp_path,
        base,
        ours,
        theirs,
        b"<<<<<<< ours\nA1\n=======\nA2\n>>>>>>> theirs\nb\nC\nd\n<<<<<<< ours\nE1\n=======\nE2\n>>>>>>> theirs\n",
    )
    assert merge_text(base, ours, theirs) == Merged(expected, 2)
    # changed alike on both sides, the line in between is no change of one side: joined, as git joins it
    theirs = b"A2\nb\nC\nd\nE2\n"
    expected = _gits(
        tmp_path, base, ours, theirs, b"<<<<<<< ours\nA1\nb\nC\nd\nE1\n=======\nA2\nb\nC\nd\nE2\n>>>>>>> theirs\n"
    )
    assert merge_text(base, ours, theirs) == Merged(expected, 1)


def _conflict(ours: bytes, theirs: bytes) -> bytes:
    return b"<<<<<<< ours\n" + ours + b"=======\n" + theirs + b">>>>>>> theirs\n"


@pytest.mark.parametrize(
    "base,ours,theirs,expected,conflicts",
    [
        pytest.param(  # three lines apart: one conflict
            b"a\nb\nc\nd\ne\n",
            b"A1\nb\nc\nd\nE1\n",
            b"A2\nb\nc\nd\nE2\n",
            _conflict(b"A1\nb\nc\nd\nE1\n", b"A2\nb\nc\nd\nE2\n"),
            1,
            id="three lines apart",
        ),
        pytest.param(  # four lines apart, with letters: two
            b"a\nb\nc\nd\nx\ne\n",
            b"A1\nb\nc\nd\nx\nE1\n",
            b"A2\nb\nc\nd\nx\nE2\n",
            _conflict(b"A1\n", b"A2\n") + b"b\nc\nd\nx\n" + _conflict(b"E1\n", b"E2\n"),
            2,
            id="four lines apart",
        ),
        pytest.param(  # four lines apart, none with a letter or digit: one
            b"a\n}\n\n}\n)\ne\n",
            b"A1\n}\n\n}\n)\nE1\n",
            b"A2\n}\n\n}\n)\nE2\n",
            _conflict(b"A1\n}\n\n}\n)\nE1\n", b"A2\n}\n\n}\n)\nE2\n"),
            1,
            id="four lines without letters",
        ),
        pytest.param(  # the distance is counted in ours, though theirs grew above the conflicts
            b"top\na\nb\nc\nd\nx\ne\n",
            b"top\nA1\nb\nc\nd\nx\nE1\n",
            b"t1\nt2\nt3\nt4\nt5\ntop\nA2\nb\nc\nd\nx\nE2\n",
            b"t1\nt2\nt3\nt4\nt5\ntop\n" + _conflict(b"A1\n", b"A2\n") + b"b\nc\nd\nx\n" + _conflict(b"E1\n", b"E2\n"),
            2,
            id="theirs grew above",
        ),
    ],
)
def test_conflicts_close_together_are_joined_as_git_joins_them(
    base: bytes, ours: bytes, theirs: bytes, expected: bytes, conflicts: int, tmp_path: Path
) -> None:
    """git's ``XDL_MERGE_ZEALOUS_ALNUM``: conflicts at most three lines apart in
    ours, or apart only by lines without a letter or digit, are one."""
    assert merge_text(base, ours, theirs) == Merged(_gits(tmp_path, base, ours, theirs, expected), conflicts)


def test_matching_blocks_keep_difflibs_contract_of_one_empty_block_last() -> None:
    """difflib: the last triple is ``(len(a), len(b), 0)`` and "the only triple
    with n == 0" (merge3 relies on what a SequenceMatcher gives)."""
    for a, b in [(b"x\nb\n", b"b\n"), (b"a\nb\n", b"a\nb\n"), (b"a\n", b"a\nz\n"), (b"a\nb\nc\n", b"a\nX\nc\n")]:
        blocks = GitLineMatcher(None, split_lines(a), split_lines(b)).get_matching_blocks()
        assert [n for _, _, n in blocks[:-1]] == [n for _, _, n in blocks[:-1] if n > 0], (a, b, blocks)
    assert GitLineMatcher(None, [b"x\n", b"b\n"], [b"b\n"]).get_matching_blocks() == [(1, 0, 1), (2, 1, 0)]
    assert GitLineMatcher(None, [b"a\n", b"b\n"], [b"a\n", b"b\n"]).get_matching_blocks() == [(0, 0, 2), (2, 2, 0)]


def test_changes_of_an_empty_side_and_of_nothing() -> None:
    assert changes_of([], []) == []
    assert changes_of([], [b"x\n", b"y\n"]) == [(0, 0, 0, 2)]
    assert changes_of([b"x\n"], []) == [(0, 0, 1, 0)]


def test_changes_slide_as_git_merge_file_slides_them_without_the_indent_heuristic(tmp_path: Path) -> None:
    """``git merge-file`` compacts without the indent heuristic (``git diff``
    uses it): an insertion that could slide stays where git's plain pass puts it."""
    a = b"}\n    return x\n    x = 1\n\n"
    b = b"}\n    x = 1\n}\n    return x\n    x = 1\n\n"
    if GIT is not None:
        (tmp_path / "a").write_bytes(a)
        (tmp_path / "b").write_bytes(b)
        done = subprocess.run(
            [GIT, "diff", "--no-index", "--no-indent-heuristic", "-U0", "a", "b"], cwd=tmp_path, capture_output=True
        )
        assert b"@@ -1,0 +2,2 @@" in done.stdout  # after line 1, two lines (with the heuristic: before line 1)
    assert changes_of(split_lines(a), split_lines(b)) == [(1, 1, 0, 2)]
