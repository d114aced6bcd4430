"""pathspec's gitignore matching measured against git, so the choice of our own matcher can be revisited.

The ignore rules are our own (``snapshotter/engine/worktree/ignorelines.py``)
because pathspec 1.1.1, measured against ``git check-ignore``, gave wrong
verdicts on a few percent of git's own edge cases (docs/architecture.md,
"Dependency decisions"). This measures it again on the edge cases of
``test_ignore_oracle.py`` (the bug reports, git's t0008 and t3001 lines) and
on seeded random lines: each case is a workspace with one root ``.gitignore``;
every path our walker judges gets git's verdict (``check-ignore --no-index``),
ours and pathspec's ``GitIgnoreSpec`` (lines cut as git cuts them, so only the
matching is measured; a folder tested with its trailing ``/``).

It measures, it does not judge pathspec: the test fails only if it cannot
measure (git's answers unusable) or if our own matcher disagrees with git. The
rate is printed (``pytest -s``) and recorded as a property (``--junitxml``);
``python tests/test_pathspec_measure.py`` prints it alone. Needs git and the
optional pathspec (in the ``test`` extra); skips cleanly without either.
"""

from __future__ import annotations

import os
import random
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import GIT, git, git_env, needs_git
from test_ignore_oracle import CASES, DEEP, NAMES, _git_z, _random_line, build, our_verdicts

pytestmark = needs_git

RANDOM_SEEDS = 40
"""Seeded random files of a few lines each, beside the fixed edge cases."""


@dataclass(frozen=True)
class Measure:
    """Verdicts compared with git's: how many, and how many pathspec and we got wrong."""

    cases: int
    verdicts: int
    ours_wrong: int
    pathspec_judged: int  # verdicts in the cases pathspec could read
    pathspec_wrong: int
    pathspec_refused: int  # cases whose file pathspec raised on (git takes every line)

    def line(self) -> str:
        rate = 100.0 * self.pathspec_wrong / self.pathspec_judged if self.pathspec_judged else 0.0
        return (
            f"pathspec vs git check-ignore: {self.pathspec_wrong} of {self.pathspec_judged} verdicts wrong "
            f"({rate:.1f}%), and {self.pathspec_refused} of {self.cases} cases refused outright; "
            f"ours: {self.ours_wrong} of {self.verdicts} wrong"
        )


def _lines_as_git_cuts(content: bytes) -> list[str]:
    """git's dir.c: a line ends at ``\\n`` only and loses one ``\\r`` before it."""
    text = content.decode("utf-8", "surrogateescape")
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def _contents() -> list[bytes]:
    randoms = []
    for seed in range(RANDOM_SEEDS):
        rng = random.Random(seed)
        randoms.append("".join(_random_line(rng) + "\n" for _ in range(rng.randint(1, 4))).encode())
    return [*CASES, *randoms]


def measure(scratch: Path) -> Measure:
    import pathspec

    verdicts = ours_wrong = judged = pathspec_wrong = refused = 0
    contents = _contents()
    for number, content in enumerate(contents):
        workspace = scratch / f"w{number}"
        build(workspace, [*NAMES, *DEEP], {".gitignore": content})
        git("init", "-q", str(workspace), env=git_env(scratch))
        ours = our_verdicts(workspace)
        stdin = b"".join(b"./" + os.fsencode(p) + b"\0" for p in sorted(ours))
        theirs = _git_z(["check-ignore", "--no-index", "-z", "--stdin"], scratch, workspace, stdin)
        assert theirs <= set(ours), "git named a path it was not asked about: the measure is broken"
        try:
            with warnings.catch_warnings():  # its regexes warn of nested sets; the verdicts speak for them
                warnings.simplefilter("ignore")
                spec = pathspec.GitIgnoreSpec.from_lines(_lines_as_git_cuts(content))
        except Exception:  # noqa: BLE001 - pathspec's own errors for lines git takes; counted, not judged
            spec = None
            refused += 1
        for path, ignored in ours.items():
            truth = path in theirs
            verdicts += 1
            ours_wrong += ignored != truth
            if spec is None:
                continue  # no verdict at all: counted as a refused case
            judged += 1
            tested = path + "/" if (workspace / path).is_dir() and not (workspace / path).is_symlink() else path
            try:
                pathspec_wrong += spec.match_file(tested) != truth
            except Exception:  # noqa: BLE001 - a name pathspec cannot judge is a wrong verdict
                pathspec_wrong += 1
    return Measure(len(contents), verdicts, ours_wrong, judged, pathspec_wrong, refused)


def test_pathspec_is_measured_against_git(tmp_path: Path, record_property: pytest.RecordProperty) -> None:
    pytest.importorskip("pathspec")
    found = measure(tmp_path)
    print(found.line())
    record_property("pathspec_wrong_verdicts", found.pathspec_wrong)
    record_property("pathspec_judged_verdicts", found.pathspec_judged)
    record_property("pathspec_refused_cases", found.pathspec_refused)
    assert found.verdicts > 1000 and found.pathspec_judged > 0  # the measure ran
    assert found.ours_wrong == 0  # the yardstick: our matcher agrees with git on every verdict


if __name__ == "__main__":  # pragma: no cover - a by-hand measurement
    if GIT is None:
        raise SystemExit("git is not on PATH")
    with tempfile.TemporaryDirectory() as scratch:
        print(measure(Path(scratch)).line())
