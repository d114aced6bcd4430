"""The command line speaks its own words: errors name its commands and flags,
not the library's calls; counts agree with their nouns; what a command acts on
is named when it is not the folder it ran in (issue #52)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write

from snapshotter.frontends.cli.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def cli(ws: Path, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.delenv("SNAPSHOTTER_REMOTE", raising=False)
    monkeypatch.setenv("SNAPSHOTTER_NO_WATCHER", "1")

    def call(*args: str) -> tuple[int, str, str]:
        return run(capsys, "-C", str(ws), "--home", str(home), *args)

    return call


def test_push_without_a_remote_names_the_real_ways_to_give_one(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n"})
    cli("snapshot")
    code, _, err = cli("push")
    assert code == 1 and "--remote" not in err
    assert "snapshotter push REMOTE" in err and "SNAPSHOTTER_REMOTE" in err


@pytest.mark.parametrize(
    ("words", "library_terms", "cli_terms"),
    [
        (("turn", "revert", "0"), "revert_turn(n)", "snapshotter turn revert 1"),
        (("merge", "/nonexistent"), "base=", "--base"),
        (("tool", "done", "neverbegun"), "tool_snapshot", "snapshotter tool begin neverbegun"),
    ],
)
def test_errors_are_in_command_line_words(
    ws: Path, cli, words: tuple[str, ...], library_terms: str, cli_terms: str
) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n"})
    cli("snapshot")
    code, _, err = cli(*words)
    assert code != 0 and len(err.splitlines()) == 1
    assert library_terms not in err and cli_terms in err, err
