"""The real console script in subprocesses: every command, JSON, exit codes, prompts, pipes."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conftest import COMMAND, run_command, write


def cli(ws: Path, home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_command(*args, "-C", str(ws), env={"SNAPSHOTTER_HOME": str(home), **(env or {})})


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    document = json.loads(result.stdout)
    assert document["schema"] == 1
    return document


def test_every_command_with_json(ws: Path, home: Path) -> None:
    write(ws, {"src/a.py": "one\n", ".env": "SECRET=1\n"})
    first = as_json(cli(ws, home, "snapshot", "-m", "first", "--label", "start", "--meta", "session=s1", "--json"))
    assert first["command"] == "snapshot" and first["result"]["label"] == "start"
    assert first["result"]["metadata"] == {"session": "s1"} and len(first["result"]["id"]) == 40
    assert as_json(cli(ws, home, "track", "--json"))["command"] == "snapshot"
    write(ws, {"src/a.py": "one\ntwo\n", "src/b.py": "b\n"})
    status = as_json(cli(ws, home, "status", "--json"))["result"]
    assert {(c["path"], c["status"]) for c in status} == {("src/a.py", "modified"), ("src/b.py", "added")}
    diff = as_json(cli(ws, home, "diff", "start", "--json"))["result"]
    assert {d["path"]: (d["additions"], d["deletions"]) for d in diff} == {"src/a.py": (1, 0), "src/b.py": (1, 0)}
    assert "+two" in next(d["patch"] for d in diff if d["path"] == "src/a.py")
    assert cli(ws, home, "diff", "start", "--numstat").stdout.splitlines() == ["1\t0\tsrc/a.py", "1\t0\tsrc/b.py"]
    assert cli(ws, home, "diff", "start", "--name-status").stdout.splitlines() == ["M\tsrc/a.py", "A\tsrc/b.py"]
    assert cli(ws, home, "diff", "start", "--stat").stdout.splitlines()[-1] == " 2 files changed, 2 insertions(+)"
    plain = cli(ws, home, "diff", "start").stdout
    assert "+two\n" in plain and "\x1b[" not in plain  # piped: no colour
    assert as_json(cli(ws, home, "turn", "begin", "--json"))["result"]["label"] == "pre-turn:1"
    write(ws, {"src/c.py": "c\n"})
    assert as_json(cli(ws, home, "turn", "end", "--json"))["result"]["label"] == "post-turn:1"
    log = as_json(cli(ws, home, "log", "--json", "-n", "10"))["result"]
    assert [i["label"] for i in log][:2] == ["post-turn:1", "pre-turn:1"]
    assert [i["id"] for i in as_json(cli(ws, home, "log", "--meta", "session=s1", "--json"))["result"]] == [
        first["result"]["id"]
    ]
    assert as_json(cli(ws, home, "log", "--label", "start", "--json"))["result"][0]["id"] == first["result"]["id"]
    assert as_json(cli(ws, home, "show", "start", "--json"))["result"]["message"] == "first"
    undone = as_json(cli(ws, home, "undo", "--json"))["result"]
    assert undone["ok"] and not (ws / "src/c.py").exists()
    assert as_json(cli(ws, home, "redo", "--json"))["result"]["ok"] and (ws / "src/c.py").exists()
    reverted = as_json(cli(ws, home, "turn", "revert", "1", "--json"))["result"]
    assert reverted["reverted"] == ["src/c.py"]
    assert as_json(cli(ws, home, "pin", "start", "--json"))["result"]["id"] == first["result"]["id"]
    assert as_json(cli(ws, home, "stats", "--json"))["result"]["pinned"] == 1
    assert as_json(cli(ws, home, "unpin", "start", "--json"))["command"] == "unpin"
    plan = as_json(cli(ws, home, "restore", "start", "--dry-run", "--json"))["result"]
    assert plan["dry_run"] and plan["written_paths"] == ["src/a.py"] and (ws / "src/a.py").read_text() == "one\ntwo\n"
    refused = cli(ws, home, "restore", "start", "--json")  # not a terminal: nobody to ask, so --yes is needed
    assert refused.returncode == 2 and as_json(refused)["error"]["type"] == "ConfirmationRequired"
    assert (ws / "src/a.py").read_text() == "one\ntwo\n"
    done = as_json(cli(ws, home, "restore", "start", "--json", "--yes"))["result"]
    assert done["written_paths"] == ["src/a.py"] and (ws / "src/a.py").read_text() == "one\n"
    assert (ws / ".env").read_text() == "SECRET=1\n"
    pruned = as_json(cli(ws, home, "prune", "--dry-run", "--json"))["result"]
    assert pruned["dry_run"] and pruned["pruned"] == []
    assert as_json(cli(ws, home, "gc", "--json"))["result"]["objects_kept"] > 0
    assert as_json(cli(ws, home, "verify", "--full", "--json"))["result"]["ok"] is True
    settings = as_json(cli(ws, home, "config", "--json"))["result"]
    assert settings["home"] == {"value": str(home), "source": "environment"}
    assert cli(ws, home, "cleanup", "--json").returncode == 2  # nobody to ask: refused without --yes
    removed = as_json(cli(ws, home, "cleanup", "--json", "--yes"))["result"]["removed"]
    assert not os.path.exists(removed) and (ws / "src/a.py").exists()


def test_exit_codes_and_one_line_errors(ws: Path, home: Path) -> None:
    write(ws, {"a": "1"})
    assert cli(ws, home, "snapshot").returncode == 0
    missing = cli(ws, home, "restore", "nope")
    assert missing.returncode == 3 and missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr
    bad = cli(ws, home, "restore", "nope", "--json")
    error = as_json(bad)["error"]
    assert error["type"] == "SnapshotNotFound" and error["exit_code"] == 3
    assert cli(ws, home, "frobnicate").returncode == 2
    nothing = cli(ws, home, "undo", "--json")
    assert nothing.returncode == 1 and as_json(nothing)["error"]["result"]["ok"] is False
    assert as_json(nothing)["error"]["type"] == "NothingToDo"
    outside = cli(ws / "missing", home, "log")
    assert outside.returncode == 1 and outside.stderr.startswith("snapshotter: ")
    assert "Traceback" in cli(ws / "missing", home, "log", "--debug").stderr


def test_store_locked_exit_code(ws: Path, home: Path) -> None:
    write(ws, {"a": "1"})
    cli(ws, home, "snapshot")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys,time; from snapshotter import Snapshotter;"
            "s=Snapshotter(sys.argv[1], home=sys.argv[2]); s._engine_ok().lock.acquire();"
            "print('x', flush=True); time.sleep(60)",
            str(ws),
            str(home),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline()
        locked = cli(ws, home, "snapshot", env={"SNAPSHOTTER_LOCK_TIMEOUT": "0.2"})
        assert locked.returncode == 4 and "locked by pid" in locked.stderr
    finally:
        holder.kill()
        holder.wait()


def _run_in_terminal(args: list[str], env: dict[str, str], answer: bytes | None) -> tuple[int, str]:
    master, slave = pty.openpty()
    proc = subprocess.Popen([*COMMAND, *args], stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    output = b""
    deadline = time.monotonic() + 60
    answered = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
            if answer is not None and not answered and b"[y/N]" in output:
                os.write(master, answer)
                answered = True
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    os.close(master)
    return proc.returncode, output.decode(errors="replace")


def test_terminal_user_is_asked_before_a_full_restore_and_sees_colour_and_progress(ws: Path, home: Path) -> None:
    write(ws, {f"f{i}.txt": f"{i}\n" for i in range(250)})
    env = dict(os.environ, SNAPSHOTTER_HOME=str(home), TERM="xterm")
    env.pop("NO_COLOR", None)
    code, shown = _run_in_terminal(["snapshot", "-C", str(ws)], env, None)
    assert code == 0 and "hashing" in shown  # a progress line on a terminal
    (ws / "f1.txt").write_text("changed\n")
    snapshot_id = json.loads(cli(ws, home, "log", "--json").stdout)["result"][0]["id"]
    code, shown = _run_in_terminal(["restore", snapshot_id, "-C", str(ws)], env, b"n\n")
    assert code == 1 and "[y/N]" in shown and "cancelled" in shown
    assert (ws / "f1.txt").read_text() == "changed\n"
    code, shown = _run_in_terminal(["diff", "-C", str(ws)], env, None)
    assert "\x1b[32m+changed" in shown  # colour on a terminal
    code, shown = _run_in_terminal(["restore", snapshot_id, "-C", str(ws)], env, b"y\n")
    assert code == 0 and (ws / "f1.txt").read_text() == "1\n"
    code, shown = _run_in_terminal(["restore", snapshot_id, "--yes", "-C", str(ws)], env, None)
    assert code == 0 and "[y/N]" not in shown
    piped = cli(ws, home, "snapshot")
    assert piped.stderr == ""  # no progress in pipes
    no_color = dict(env, NO_COLOR="1")
    (ws / "f1.txt").write_text("again\n")
    code, shown = _run_in_terminal(["diff", "-C", str(ws)], no_color, None)
    assert "+again" in shown and "\x1b[32m" not in shown


def test_config_sources_and_precedence(ws: Path, home: Path, tmp_path: Path) -> None:
    write(ws, {"pyproject.toml": "[tool.snapshotter]\nmax_undo = 170\nexclude = ['*.tmp']\n"})
    write(ws, {"snapshotter.toml": "max_undo = 190\nlock_timeout = 3\n"})
    settings = as_json(cli(ws, home, "config", "--json", env={"SNAPSHOTTER_LOCK_TIMEOUT": "4"}))["result"]
    assert settings["max_undo"] == {"value": 190, "source": str(ws / "snapshotter.toml")}
    assert settings["exclude"]["value"] == ["*.tmp"] and "pyproject.toml" in settings["exclude"]["source"]
    assert settings["lock_timeout"] == {"value": 4.0, "source": "environment"}
    flagged = as_json(cli(ws, home, "config", "--json", "--home", str(tmp_path / "flag-home")))["result"]
    assert flagged["home"] == {"value": str(tmp_path / "flag-home"), "source": "command line"}
    write(ws, {"a.tmp": "x", "b.txt": "y"})
    info = as_json(cli(ws, home, "snapshot", "--json"))["result"]
    assert info["files_changed"] == 3  # b.txt, pyproject.toml, snapshotter.toml; *.tmp excluded by config
    write(ws, {"snapshotter.toml": "max_snapshotz = 1\n"})  # the agent can write it: a warning, never a failure
    typo = cli(ws, home, "config")
    assert typo.returncode == 0 and "ignored unknown setting 'max_snapshotz'" in typo.stderr
