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


def test_counts_agree_with_their_nouns(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n"})
    cli("snapshot")
    cli("turn", "begin")
    write(ws, {"a.txt": "b\n"})
    cli("turn", "end")
    code, _, err = cli("turn", "revert", "2")
    assert code == 3 and "only 1 turn is recorded" in err
    code, out, _ = cli("turn", "revert", "1")
    assert code == 0 and "changed 1 path (0 merged), 0 already so, 0 conflicts" in out


def test_sessions_have_a_header_naming_each_column(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n"})
    cli("--session", "worker-1", "turn", "begin")
    code, out, _ = cli("sessions")
    header, row = out.splitlines()
    assert header.split() == ["SESSION", "AGENT", "TURNS", "LAST", "ACTIVE"]
    assert row.startswith("worker-1") and "(none)" in row and "(open)" in row


def test_a_usage_error_is_one_useful_line_with_a_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "statsu")
    lines = err.splitlines()
    assert code == 2 and len(lines) <= 2, err
    assert "invalid choice: 'statsu'" in lines[0] and "did you mean" in lines[0] and "'status'" in lines[0]
    assert "--max-workspace-bytes" not in err
    code, _, err = run(capsys, "diff", "--frobnicate")
    assert code == 2 and len(err.splitlines()) <= 2 and "--frobnicate" in err.splitlines()[0]
    assert "snapshotter diff --help" in err


def test_a_root_folder_is_refused_as_such_before_any_home_question(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "-C", "/", "--home", str(home), "status")
    assert code == 1 and "refusing to snapshot /" in err and "--home" not in err


def test_an_empty_home_is_refused_not_taken_for_the_current_folder(
    ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)  # where an empty home used to put its store
    code, _, err = run(capsys, "-C", str(ws), "--home", "", "snapshot")
    assert code == 1 and len(err.splitlines()) == 1 and "home" in err and "empty" in err
    assert not any(ws.iterdir()) and not any(here.iterdir())


def test_undo_and_redo_list_what_they_overwrite_and_say_how_to_go_back(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n", "gone.txt": "g\n"})
    cli("checkpoint")
    write(ws, {"a.txt": "edited\n", "new.txt": "n\n"})
    (ws / "gone.txt").unlink()
    code, undone, _ = cli("undo")
    assert code == 0 and (ws / "a.txt").read_text() == "a\n"
    assert {"write  a.txt", "write  gone.txt", "delete new.txt"} <= set(undone.splitlines())
    assert "redo with: snapshotter redo" in undone.splitlines()[-1]
    code, redone, _ = cli("redo")
    assert code == 0 and (ws / "a.txt").read_text() == "edited\n"
    assert {"write  a.txt", "write  new.txt", "delete gone.txt"} <= set(redone.splitlines())
    assert "undo with: snapshotter undo" in redone.splitlines()[-1]


def test_a_sessions_undo_lists_its_paths_too(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n"})
    cli("--session", "s1", "turn", "begin")
    write(ws, {"a.txt": "agent\n"})
    cli("--session", "s1", "turn", "end")
    code, undone, _ = cli("--session", "s1", "undo")
    assert code == 0 and "revert   a.txt" in undone.splitlines() and "reverted 1 path of session s1" in undone
    assert "redo with: snapshotter --session s1 redo" in undone.splitlines()[-1]


def test_a_command_in_a_subfolder_names_the_folder_it_acts_on(
    tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    write(repo, {".git/HEAD": "ref: refs/heads/main\n", "pkg/mod.py": "m\n", "top.txt": "t\n"})
    below = ["-C", str(repo / "pkg"), "--home", str(home)]
    root = str(repo.resolve())
    code, _, err = run(capsys, *below, "snapshot")
    assert code == 0 and "this folder" not in err and f"the first snapshot of {root}" in err
    (repo / "top.txt").write_text("changed\n")
    code, _, err = run(capsys, *below, "restore", "@")  # nobody to ask: refused, naming the folder
    assert code == 2 and f"a full restore of {root}" in err
    code, _, err = run(capsys, *below, "status")
    assert code == 0 and f"snapshotter: acting on {root}" in err
    code, out, err = run(capsys, *below, "where", "--folder")
    assert code == 0 and out.strip() == root
    code, out, err = run(capsys, *below, "where")
    assert code == 0 and out.strip().startswith(str(home)) and f"acting on {root}" in err
    code, out, err = run(capsys, "-C", root, "--home", str(home), "status")  # in the folder itself: no note
    assert code == 0 and err == ""
    code, out, err = run(capsys, *below, "--json", "status")  # a document says nothing on stderr
    assert code == 0 and err == ""
