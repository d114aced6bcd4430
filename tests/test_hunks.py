"""Hunks of a change with ids that hold across processes, and reverting chosen
hunks only: the rest of the change, a person's edit and another session's stay
byte for byte; a stale id is a typed error with nothing written; reverting
every hunk one by one, in any order, is reverting the whole change."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import COMMAND, contents, run_command, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapshotter import HunkNotFound, InvalidInput, Snapshotter

BODY = [f"line {i}\n" for i in range(40)]


def edited(lines: list[str], changes: dict[int, str]) -> str:
    out = list(lines)
    for at, text in changes.items():
        out[at] = text
    return "".join(out)


def test_one_hunk_of_a_turn_goes_and_everything_else_stays(ws: Path, make: Callable[..., Snapshotter]) -> None:
    write(ws, {"a.py": "".join(BODY), "b.py": "".join(BODY)})
    snap = make()
    snap.snapshot("start")
    agent, other = snap.in_session("agent"), snap.in_session("other")
    agent.begin_turn("edit a and b")
    agent.tool_snapshot("t1")
    write(ws, {"a.py": edited(BODY, {2: "agent 2\n", 30: "agent 30\n"}), "b.py": edited(BODY, {5: "agent b5\n"})})
    agent.tool_done("t1")
    agent.end_turn()
    other.tool_snapshot("o1")
    write(ws, {"b.py": edited(BODY, {5: "agent b5\n", 20: "other b20\n"})})
    other.tool_done("o1")
    write(ws, {"a.py": edited(BODY, {2: "agent 2\n", 15: "person 15\n", 30: "agent 30\n"})})
    listed = agent.turn_hunks()
    assert [(h.path, h.kind, h.old_start) for h in listed] == [
        ("a.py", "lines", 1),
        ("a.py", "lines", 28),
        ("b.py", "lines", 3),
    ]
    before = contents(ws)
    result = agent.revert_turn(hunks=[listed[1].id])
    assert result.applied and result.merged == ("a.py",)
    after = contents(ws)
    assert after["a.py"] == edited(BODY, {2: "agent 2\n", 15: "person 15\n"}).encode()  # only line 30 went back
    assert after["b.py"] == before["b.py"]  # the turn's other file, and the other session's edit, byte for byte
    with pytest.raises(InvalidInput):
        agent.revert_turn(reset=True, hunks=[listed[0].id])


def test_an_id_listed_by_one_process_reverts_that_hunk_in_another(ws: Path, home: Path) -> None:
    write(ws, {"f.txt": "".join(BODY)})
    env = {"SNAPSHOTTER_HOME": str(home)}
    assert run_command("snapshot", "--label", "start", cwd=ws, env=env).returncode == 0
    write(ws, {"f.txt": edited(BODY, {1: "one\n", 25: "twenty-five\n"})})
    assert run_command("snapshot", "--label", "end", cwd=ws, env=env).returncode == 0
    listing = run_command("--json", "diff", "start", "end", "--hunks", cwd=ws, env=env)
    hunks = json.loads(listing.stdout)["result"]
    assert [h["old_start"] for h in hunks] == [1, 23] and all(h["id"].startswith("f.txt:") for h in hunks)
    text = run_command("diff", "start", "end", "--hunks", cwd=ws, env=env).stdout
    assert text.startswith(f"hunk {hunks[0]['id']}\n@@ -1,5 +1,5 @@\n")
    done = run_command("revert", "start", "end", "--hunk", hunks[1]["id"], cwd=ws, env=env)
    assert done.returncode == 0, done.stderr
    assert (ws / "f.txt").read_text() == edited(BODY, {1: "one\n"})
    again = run_command("--json", "diff", "start", "end", "--hunks", cwd=ws, env=env)
    assert json.loads(again.stdout)["result"] == hunks  # the change between two snapshots never changes


def test_a_stale_hunk_id_is_a_typed_error_and_nothing_is_written(ws: Path, make: Callable[..., Snapshotter]) -> None:
    write(ws, {"f.txt": "".join(BODY)})
    snap = make()
    start = snap.snapshot("start")
    write(ws, {"f.txt": edited(BODY, {3: "three\n"})})
    (stale,) = snap.hunks(start.id, None)  # the change to the workspace now
    write(ws, {"f.txt": edited(BODY, {3: "three, edited again\n"})})
    before, count = contents(ws), len(snap.list(limit=None))
    with pytest.raises(HunkNotFound, match="nothing was written"):
        snap.revert(start.id, None, hunks=[stale.id])
    assert contents(ws) == before and len(snap.list(limit=None)) == count
    with pytest.raises(InvalidInput):
        snap.revert(start.id, None, hunks="f.txt:123")  # type: ignore[arg-type]


def test_a_hunk_whose_lines_changed_since_is_a_conflict(ws: Path, make: Callable[..., Snapshotter]) -> None:
    write(ws, {"f.txt": "".join(BODY)})
    snap = make()
    start = snap.snapshot("start")
    write(ws, {"f.txt": edited(BODY, {3: "agent\n", 30: "agent 30\n"})})
    end = snap.snapshot("end")
    first, second = snap.hunks(start.id, end.id)
    write(ws, {"f.txt": edited(BODY, {3: "person over the agent\n", 30: "agent 30\n"})})
    before = contents(ws)
    refused = snap.revert(start.id, end.id, hunks=[first.id])
    assert not refused and [c.path for c in refused.conflicts] == ["f.txt"] and contents(ws) == before
    fine = snap.revert(start.id, end.id, hunks=[second.id])
    assert fine.applied and (ws / "f.txt").read_text() == edited(BODY, {3: "person over the agent\n"})


def test_split_parts_mode_and_whole_file_hunks(ws: Path, make: Callable[..., Snapshotter]) -> None:
    write(ws, {"f.txt": "".join(BODY), "bin.dat": b"\0one", "gone.txt": "bye\n", "run.sh": "#!/bin/sh\n"})
    snap = make()
    start = snap.snapshot("start")
    write(ws, {"f.txt": edited(BODY, {10: "ten\n", 13: "thirteen\n"}), "bin.dat": b"\0two", "new.txt": "hi\n"})
    (ws / "gone.txt").unlink()
    os.chmod(ws / "run.sh", 0o755)
    end = snap.snapshot("end")
    listed = snap.hunks(start.id, end.id)
    assert [(h.path, h.kind) for h in listed] == [
        ("bin.dat", "file"),
        ("f.txt", "lines"),
        ("gone.txt", "lines"),
        ("new.txt", "lines"),
        ("run.sh", "mode"),
    ]
    parts = [h for h in snap.hunks(start.id, end.id, split=True) if h.path == "f.txt"]
    assert len(parts) == 2 and all(p.id != listed[1].id for p in parts)
    assert "+ten" in parts[0].patch and "thirteen" not in parts[0].patch
    snap.revert(start.id, end.id, hunks=[parts[1].id, listed[0].id, listed[2].id, listed[3].id, listed[4].id])
    assert contents(ws)["f.txt"] == edited(BODY, {10: "ten\n"}).encode()
    assert (ws / "bin.dat").read_bytes() == b"\0one" and (ws / "gone.txt").read_text() == "bye\n"
    assert not (ws / "new.txt").exists() and not os.access(ws / "run.sh", os.X_OK)


@st.composite
def changes(draw: st.DrawFn) -> tuple[dict[str, bytes], dict[str, bytes | None]]:
    """Files before, and what a change does to each (None: deletes it)."""
    files: dict[str, bytes] = {}
    done: dict[str, bytes | None] = {}
    for k in range(draw(st.integers(1, 4))):
        lines = [f"{k}-{i}\n" for i in range(draw(st.integers(0, 30)))]
        files[f"f{k}.txt"] = "".join(lines).encode()
        kind = draw(st.sampled_from(["edit", "edit", "delete", "same"]))
        if kind == "delete":
            done[f"f{k}.txt"] = None
        elif kind == "edit":
            out = list(lines)
            for _ in range(draw(st.integers(1, 4))):
                at = draw(st.integers(0, len(out)))
                what = draw(st.sampled_from(["insert", "delete", "replace"]))
                if what == "insert" or not out:
                    out[at:at] = [f"new {draw(st.integers(0, 99))}\n"]
                elif what == "delete":
                    del out[min(at, len(out) - 1)]
                else:
                    out[min(at, len(out) - 1)] = f"changed {draw(st.integers(0, 99))}\n"
            done[f"f{k}.txt"] = "".join(out).encode()
    if draw(st.booleans()):
        done["added.txt"] = b"a\nb\n"
    return files, done


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes(), st.randoms(use_true_random=False), st.booleans())
def test_every_hunk_one_by_one_in_any_order_is_the_whole_revert(
    tmp_path_factory: pytest.TempPathFactory,
    case: tuple[dict[str, bytes], dict[str, bytes | None]],
    rng,
    split: bool,  # type: ignore[no-untyped-def]
) -> None:
    files, done = case
    root = tmp_path_factory.mktemp("hunks")
    ws = root / "ws"
    ws.mkdir()
    write(ws, files)
    with Snapshotter(ws, home=root / "home") as snap:
        start = snap.snapshot("start")
        for path, content in done.items():
            if content is None:
                (ws / path).unlink()
            else:
                (ws / path).write_bytes(content)
        end = snap.snapshot("end")
        whole = snap.revert(start.id, end.id)
        assert whole.applied
        expected = contents(ws)
        snap.restore(end.id)
        ids = [h.id for h in snap.hunks(start.id, end.id, split=split)]
        rng.shuffle(ids)
        for hunk_id in ids:
            assert snap.revert(start.id, end.id, hunks=[hunk_id]).applied
        assert contents(ws) == expected


def _interactive(ws: Path, home: Path, answers: list[str], *args: str) -> tuple[int, str]:
    """Run the command with stdin and stderr on a terminal, answering each prompt."""
    master, slave = pty.openpty()
    env = {**os.environ, "SNAPSHOTTER_HOME": str(home), "SNAPSHOTTER_NO_WATCHER": "1"}
    process = subprocess.Popen([*COMMAND, *args], cwd=ws, env=env, stdin=slave, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = b""
    try:
        for answer in answers:
            while b"]? " not in seen:
                ready, _, _ = select.select([master], [], [], 30)
                assert ready, f"no prompt; the terminal showed {seen!r}"
                seen += os.read(master, 4096)
            seen = b""
            os.write(master, answer.encode() + b"\n")
        out, _ = process.communicate(timeout=60)
    finally:
        os.close(master)
    return process.returncode, out.decode()


def test_revert_p_asks_hunk_by_hunk_and_refuses_without_a_terminal(ws: Path, home: Path) -> None:
    write(ws, {"f.txt": "".join(BODY), "g.txt": "".join(BODY)})
    env = {"SNAPSHOTTER_HOME": str(home)}
    run_command("snapshot", "--label", "start", cwd=ws, env=env)
    write(
        ws,
        {"f.txt": edited(BODY, {2: "two\n", 30: "thirty\n", 33: "thirty-three\n"}), "g.txt": edited(BODY, {9: "g9\n"})},
    )
    run_command("snapshot", "--label", "end", cwd=ws, env=env)
    refused = run_command("revert", "start", "end", "-p", cwd=ws, env=env)
    assert refused.returncode == 2 and "--hunk" in refused.stderr
    # f.txt's first hunk: no; its second: split, then yes to 30, no to 33; g.txt: quit
    code, out = _interactive(ws, home, ["n", "s", "y", "n", "q"], "revert", "start", "end", "-p")
    assert code == 0, out
    assert "split into 2 hunks" in out
    assert (ws / "f.txt").read_text() == edited(BODY, {2: "two\n", 33: "thirty-three\n"})
    assert (ws / "g.txt").read_text() == edited(BODY, {9: "g9\n"})
    code, out = _interactive(ws, home, ["d", "y"], "revert", "start", "end", "-p")  # d: keep the rest of f.txt
    assert code == 0 and (ws / "g.txt").read_text() == "".join(BODY)
    code, out = _interactive(ws, home, ["n", "n", "n"], "revert", "start", "end", "-p")
    assert code == 0 and "no hunk chosen; nothing was written" in out


def test_turn_hunks_lists_a_turns_own_hunks_and_turn_revert_takes_their_ids(ws: Path, home: Path) -> None:
    write(ws, {"f.txt": "".join(BODY)})
    env = {"SNAPSHOTTER_HOME": str(home)}
    session = ["--session", "agent"]
    for step in (["turn", "begin"], ["tool", "begin", "t1"]):
        assert run_command(*session, *step, cwd=ws, env=env).returncode == 0
    write(ws, {"f.txt": edited(BODY, {4: "four\n", 30: "thirty\n"})})
    for step in (["tool", "done", "t1"], ["turn", "end"]):
        assert run_command(*session, *step, cwd=ws, env=env).returncode == 0
    listed = json.loads(run_command("--json", *session, "turn", "hunks", cwd=ws, env=env).stdout)["result"]
    assert [h["new_start"] for h in listed] == [2, 28]
    done = run_command(*session, "turn", "revert", "--hunk", listed[0]["id"], cwd=ws, env=env)
    assert done.returncode == 0, done.stderr
    assert (ws / "f.txt").read_text() == edited(BODY, {30: "thirty\n"})
    stale = run_command("--json", *session, "turn", "revert", "--hunk", "f.txt:0123456789ab", cwd=ws, env=env)
    assert stale.returncode == 3 and json.loads(stale.stdout)["error"]["type"] == "HunkNotFound"
    both = run_command(*session, "turn", "revert", "--reset", "--hunk", listed[1]["id"], cwd=ws, env=env)
    assert both.returncode == 2 and (ws / "f.txt").read_text() == edited(BODY, {30: "thirty\n"})
