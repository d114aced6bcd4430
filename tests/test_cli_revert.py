"""The command line's reverts, sessions, tool brackets and forks, through the real console script."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from conftest import run_command, write

LINES = "".join(f"line {i}\n" for i in range(40))


def cli(ws: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_command(*args, "-C", str(ws), env={"SNAPSHOTTER_HOME": str(home)})


def result_of(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["result"]


def test_revert_and_turn_revert_keep_later_edits(ws: Path, home: Path) -> None:
    write(ws, {"agent.py": "a0\n", "mine.txt": "m0\n"})
    start = result_of(cli(ws, home, "turn", "begin", "--json"))
    write(ws, {"agent.py": "a1\n"})
    cli(ws, home, "turn", "end")
    write(ws, {"mine.txt": "my edit after the turn\n"})
    reverted = result_of(cli(ws, home, "turn", "revert", "--json"))
    assert reverted["reverted"] == ["agent.py"] and reverted["applied"] is True
    assert (ws / "agent.py").read_text() == "a0\n" and (ws / "mine.txt").read_text() == "my edit after the turn\n"
    text = cli(ws, home, "revert", start["id"], "--dry-run")  # the turn's change is undone already: nothing to do
    assert text.returncode == 0 and "already so" in text.stdout
    reset = result_of(cli(ws, home, "turn", "revert", "--reset", "--json"))
    assert "written_paths" in reset and (ws / "mine.txt").read_text() == "m0\n"


def test_a_turn_given_in_digits_that_are_not_ascii_is_a_ref_not_a_crash(ws: Path, home: Path) -> None:
    """``'²'.isdigit()`` is true and ``int('²')`` raises: it names no snapshot."""
    write(ws, {"a.txt": "1\n"})
    cli(ws, home, "snapshot", "-m", "one")
    done = cli(ws, home, "turn", "revert", "²")
    assert done.returncode == 3 and done.stderr.strip() == (
        "snapshotter: no snapshot labelled '²'; run `snapshotter log` to list them"
    )


def test_a_conflicting_revert_exits_5_and_writes_nothing(ws: Path, home: Path) -> None:
    write(ws, {"f.py": LINES})
    before = result_of(cli(ws, home, "snapshot", "--json"))
    write(ws, {"f.py": LINES.replace("line 3\n", "agent 3\n")})
    after = result_of(cli(ws, home, "snapshot", "--json"))
    write(ws, {"f.py": LINES.replace("line 3\n", "person 3\n")})
    done = cli(ws, home, "revert", before["id"], after["id"], "--json")
    assert done.returncode == 5 and "nothing was written" in done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["type"] == "Conflict" and error["result"]["conflicts"][0]["reason"] == "content"
    assert (ws / "f.py").read_text() == LINES.replace("line 3\n", "person 3\n")
    marked = cli(ws, home, "revert", before["id"], after["id"], "--conflicts", "markers")
    assert marked.returncode == 1 and "wrote conflict markers into f.py" in marked.stderr  # never a clean success
    assert "<<<<<<< workspace" in (ws / "f.py").read_text()


def test_sessions_and_tool_brackets_on_the_command_line(ws: Path, home: Path) -> None:
    write(ws, {"a.txt": "a0\n", "b.txt": "b0\n"})
    cli(ws, home, "--session", "A", "turn", "begin")
    cli(ws, home, "--session", "A", "tool", "begin", "call-1")
    write(ws, {"a.txt": "a1\n"})
    done = result_of(cli(ws, home, "--session", "A", "tool", "done", "call-1", "--json"))
    assert done["label"] == "tool-done:call-1" and done["session"] == "A"
    write(ws, {"b.txt": "b1 by someone else\n"})
    cli(ws, home, "--session", "A", "turn", "end")
    assert result_of(cli(ws, home, "--session", "A", "turn", "revert", "--json"))["reverted"] == [
        "a.txt"
    ]  # only A's bracketed call
    assert (ws / "a.txt").read_text() == "a0\n" and (ws / "b.txt").read_text() == "b1 by someone else\n"
    listed = result_of(cli(ws, home, "--session", "A", "log", "--json"))
    assert listed and {item["session"] for item in listed} == {"A"}
    everyone = result_of(cli(ws, home, "log", "--json"))
    assert len(everyone) >= len(listed)
    bad = cli(ws, home, "--session", "no/slashes", "log")
    assert bad.returncode != 0 and "session must be a name" in bad.stderr


def test_fork_merge_and_forks(ws: Path, home: Path, tmp_path: Path) -> None:
    write(ws, {"app.py": LINES})
    point = result_of(cli(ws, home, "snapshot", "--json"))
    dest = tmp_path / "fork"
    made = result_of(cli(ws, home, "fork", point["id"], str(dest), "--json"))
    assert made["fork_point"] == point["id"] and (dest / "app.py").read_text() == LINES
    write(dest, {"app.py": LINES.replace("line 1\n", "fork 1\n")})
    write(ws, {"app.py": LINES.replace("line 30\n", "parent 30\n")})
    merged = result_of(cli(ws, home, "merge", str(dest), "--json"))
    assert merged["merged"] == ["app.py"]
    assert (ws / "app.py").read_text() == LINES.replace("line 1\n", "fork 1\n").replace("line 30\n", "parent 30\n")
    forks = result_of(cli(ws, home, "forks", "--json"))
    assert [(f["path"], f["fork_point_id"], f["exists"]) for f in forks] == [(str(dest.resolve()), point["id"], True)]
    no_base = cli(ws, home, "merge", point["id"])
    assert no_base.returncode != 0 and "base" in no_base.stderr


def test_plain_commands_name_the_agent_sessions_and_the_flag_that_reaches_them(ws: Path, home: Path) -> None:
    """``log`` shows an agent's turns while ``turn revert`` and ``undo`` of the
    folder's own history find none: they say which sessions there are, and how
    to reach them, instead of a bare "0 turns" / "nothing to undo"."""
    write(ws, {"f.txt": "0\n"})
    for name, agent in (("claude-code-s1", "claude-code"), ("codex-k2", "codex")):
        meta = ("--meta", f"agent={agent}")
        assert cli(ws, home, "--session", name, "turn", "begin").returncode == 0
        assert cli(ws, home, "--session", name, "checkpoint", *meta).returncode == 0
    write(ws, {"f.txt": "1\n"})
    assert cli(ws, home, "--session", "codex-k2", "turn", "end").returncode == 0
    for args in (("turn", "revert"), ("turn", "hunks"), ("undo",), ("redo",)):
        done = cli(ws, home, *args)
        assert done.returncode != 0 and done.stdout == ""
        said = done.stderr.strip()
        assert len(said.splitlines()) == 1, said
        assert "codex-k2" in said and "claude-code-s1" in said, said
        assert "--session" in said and ("--agent" in said) == (args[0] == "turn"), said
        as_json = cli(ws, home, "--json", *args)
        assert "claude-code-s1" in json.loads(as_json.stdout)["error"]["message"]
    assert (
        "--agent" in cli(ws, home, "turn", "revert").stderr
        and cli(ws, home, "turn", "revert", "--agent", "codex").returncode == 0
    )
    assert (ws / "f.txt").read_text() == "0\n"


def test_plain_commands_without_agent_sessions_say_what_they_said(ws: Path, home: Path) -> None:
    write(ws, {"f.txt": "0\n"})
    assert cli(ws, home, "snapshot").returncode == 0
    assert cli(ws, home, "undo").stderr.strip() == "snapshotter: nothing to undo: no checkpoint has been taken"
    assert "--session" not in cli(ws, home, "turn", "revert").stderr
