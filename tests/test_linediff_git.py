"""Line counts and hunks against the git binary: ``git diff --no-index`` on the same pairs.

Random edits (hypothesis) and a seeded corpus of real-looking files (kernel-like C,
gettext catalogues, a generated parser, minified JavaScript, CSV; see textcorpus.py)
must give exactly git's ``--numstat`` and exactly git's hunks. Each test batches its
pairs into two folders and asks git once. The big files (tens of thousands of
lines, where git's cost heuristics cut the search) run with ``pytest --long``.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest
import textcorpus
from conftest import GIT, git_env, needs_git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapshotter.engine.compare import linediff

pytestmark = needs_git

Pair = tuple[bytes, bytes]


@pytest.fixture(params=["python", "pygit2"])
def counter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test runs twice: counting in Python, and through the optional pygit2 accelerator."""
    if request.param == "python":
        monkeypatch.setattr(linediff, "accelerator", lambda: None)
    elif linediff.accelerator() is None:
        pytest.skip("pygit2 is not installed (the fastdiff extra)")
    return str(request.param)


def git_diffs(pairs: list[Pair], scratch: Path) -> list[tuple[tuple[int, int], str]]:
    """git's (added, deleted) and hunks for each pair, from one ``git diff --no-index``."""
    old, new = scratch / "a", scratch / "b"
    for side in (old, new):
        side.mkdir(parents=True, exist_ok=True)
        for stale in side.iterdir():
            stale.unlink()
    for i, (before, after) in enumerate(pairs):
        (old / f"f{i}").write_bytes(before)
        (new / f"f{i}").write_bytes(after)
    env = git_env(scratch)
    base = [str(GIT), "diff", "--no-index", "--no-renames", "--no-color"]
    numstat = subprocess.run([*base, "--numstat", str(old), str(new)], env=env, capture_output=True).stdout.decode()
    raw = subprocess.run([*base, str(old), str(new)], env=env, capture_output=True).stdout  # bytes: CRs kept
    patches = raw.decode("utf-8", "replace")
    counts: dict[int, tuple[int, int]] = {}
    for line in numstat.splitlines():
        added, deleted, path = line.split("\t")
        counts[int(path.rsplit("/f", 1)[1].rstrip("}"))] = (int(added), int(deleted))
    hunks: dict[int, str] = {}
    for chunk in patches.split("diff --git ")[1:]:
        index = int(chunk.split(" ", 1)[0].rsplit("/f", 1)[1])
        start = chunk.find("\n@@ ")
        hunks[index] = chunk[start + 1 :] if start != -1 else ""
    return [(counts.get(i, (0, 0)), hunks.get(i, "")) for i in range(len(pairs))]


def assert_like_git(pairs: list[Pair], scratch: Path, *, patches: bool = True) -> None:
    expected = git_diffs(pairs, scratch)
    for i, ((before, after), (counts, hunks)) in enumerate(zip(pairs, expected)):
        assert linediff.numstat(before, after) == counts, f"pair {i}: numstat differs from git's"
        if patches:
            assert linediff.unified_hunks(before, after) == hunks, f"pair {i}: hunks differ from git's"


LINES = [b"", b"}", b"{", b"\treturn 0;", b"int f(void)", b"  x = 1;", b"\t\tbreak;", b"# note", b"a", b"b"]


@st.composite
def edited(draw: st.DrawFn) -> Pair:
    """A file of repeated and unique lines, then block inserts, deletes, replaces and moves."""
    pool = draw(st.sampled_from([LINES[:3], LINES[:6], LINES]))
    line = st.one_of(st.sampled_from(pool), st.integers(0, 10**6).map(lambda k: b"u%d" % k))
    old = draw(st.lists(line, max_size=60))
    new = list(old)
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, len(new)))
        size = draw(st.integers(1, 8))
        kind = draw(st.sampled_from(["insert", "delete", "replace", "move"]))
        if kind == "insert":
            new[at:at] = draw(st.lists(line, min_size=1, max_size=size))
        elif kind == "delete":
            del new[at : at + size]
        elif kind == "replace":
            new[at : at + size] = draw(st.lists(line, min_size=1, max_size=size))
        else:
            block = new[at : at + size]
            del new[at : at + size]
            to = draw(st.integers(0, len(new)))
            new[to:to] = block
    end = draw(st.sampled_from([b"\n", b"\r\n"]))

    def text(lines: list[bytes], cut: bool) -> bytes:
        out = b"".join(one + end for one in lines)
        return out[: -len(end)] if cut and out else out

    return text(old, draw(st.booleans())), text(new, draw(st.booleans()))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=st.lists(edited(), min_size=1, max_size=8))
def test_random_edits_count_and_cut_hunks_like_git(pairs: list[Pair], tmp_path: Path, counter: str) -> None:
    assert_like_git([pair for pair in pairs if pair[0] != pair[1]], tmp_path, patches=counter == "python")


def corpus(lines: int, fractions: tuple[float, ...], seeds: range) -> list[Pair]:
    pairs = []
    for kind in textcorpus.KINDS:
        size = max(lines // 40, 3) if kind == "js" else lines
        for fraction in fractions:
            for seed in seeds:
                pairs.append(textcorpus.text_pair(kind, size, fraction, seed))
    old, new = textcorpus.text_pair("c", lines, 0.3, 99, crlf=True)
    pairs.append((old, new[:-2]))  # CRLF, and the last line loses its line end
    bundle = [line + b";" for line in textcorpus.text_pair("js", 300, 0.1, 7)[0].split(b"\n")]
    changed = list(bundle)
    random.Random(7).shuffle(changed[100:120])
    pairs.append((b"".join(bundle), b"".join(changed)))  # one huge line without a line end
    return pairs


def noisy(lines: int, alphabet: int, seed: int) -> Pair:
    """Lines drawn from a small alphabet, half of them redrawn: the Myers core keeps
    nearly every line and costs thousands of edits, so git cuts it again and again,
    at the forward and at the backward frontier."""
    rng = random.Random(seed)
    old = [b"%d\n" % rng.randrange(alphabet) for _ in range(lines)]
    new = [line if rng.random() < 0.5 else b"%d\n" % rng.randrange(alphabet) for line in old]
    return b"".join(old), b"".join(new)


def test_real_looking_files_count_like_git(tmp_path: Path, counter: str) -> None:
    """~1,500-line files, 5% to 40% changed: big enough for the discard rules and for
    git's mxcost cut (the core of a heavily changed file costs more than 512 edits)."""
    pairs = corpus(1500, (0.05, 0.4), range(2))
    pairs += [noisy(3000, 40, 1), noisy(3000, 400, 2), noisy(2000, 8, 3)]
    assert_like_git(pairs, tmp_path, patches=counter == "python")  # hunks never come from pygit2


def small_edits(count: int, seed: int) -> list[Pair]:
    """A few lines changed in one place of a big file, with lines taken from the file
    itself (blank lines, braces, repeated references) as well as new ones."""
    rng = random.Random(seed)
    pairs = []
    for i in range(count):
        kind = ("c", "po", "parser", "csv")[i % 4]
        old, _ = textcorpus.text_pair(kind, 6000, 0.1, i, crlf=i % 5 == 0)
        end = b"\r\n" if i % 5 == 0 else b"\n"
        lines = old.split(end)[:-1]
        new = list(lines)
        at = rng.choice([0, len(new), rng.randrange(len(new))])
        fresh = [
            rng.choice(lines) if rng.random() < 0.7 else b"new %d" % rng.randrange(99) for _ in range(rng.randint(0, 4))
        ]
        new[at : at + rng.randint(0, 4)] = [b""] * rng.randint(0, 2) + fresh
        after = end.join(new) + end
        pairs.append((old, after[: -len(end)] if i % 7 == 0 else after))
    return [(old, new) for old, new in pairs if old != new]


def test_small_edits_in_big_files_count_like_git(tmp_path: Path, counter: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A change of a few lines in a big file is counted from the middle lines alone
    (each weighed by one bytes.count over the other file): git's numbers all the same."""
    taken = []
    small_change = linediff._small_change

    def spy(*args: object) -> tuple[int, int] | None:
        result = small_change(*args)  # type: ignore[arg-type]
        taken.append(result is not None)
        return result

    monkeypatch.setattr(linediff, "_small_change", spy)
    assert_like_git(small_edits(24, 5), tmp_path, patches=False)
    assert any(taken) and not all(taken)  # the shortcut was taken, and fell back where it could not decide


@pytest.mark.skipif("not config.getoption('--long')", reason="big files: run with pytest --long")
def test_big_real_looking_files_count_like_git(tmp_path: Path, counter: str) -> None:
    """5,000 to 40,000 lines: every heuristic of xdl_split, the 20-line-snake rule
    included (past 65,536 core lines, mxcost is 512), and mmatch windows."""
    pairs = corpus(5000, (0.1, 0.4), range(2)) + corpus(40000, (0.4,), range(1))
    assert_like_git(pairs, tmp_path, patches=False)
    if counter == "python":
        assert_like_git(pairs[::5], tmp_path)
