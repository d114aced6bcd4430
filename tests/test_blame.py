"""``blame(path)``: each line's origin through the snapshot history, checked
against ``git blame --porcelain`` over the same history replayed as commits,
and whose each change was (a session's tool call or turn, a person, unknown,
not snapshotted yet)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import forge_snapshot, git, git_env, needs_git, run_command, write

from snapshotter import BlameResult, InvalidInput, PathNotFound, Snapshotter, StoreError
from snapshotter.engine.compare import linediff
from snapshotter.engine.gitstore.objects import MODE_TREE

WORDS = ["alpha", "beta", "", "}", "return x", "    pass", "def f():", "gamma"]


def per_line(result: BlameResult) -> list[tuple[str | None, int, str]]:
    """(snapshot id, line in that snapshot's version, who) of every line now."""
    out = []
    for run in result.runs:
        for k in range(run.count):
            out.append((run.origin.snapshot_id, run.source_start + k, run.origin.who))
    assert len(out) == len(result.lines)
    return out


def random_edit(lines: list[str], rng: random.Random) -> list[str]:
    """An edit an agent or a person might make: lines inserted, deleted or
    replaced, often with text the file already holds (diffs must choose)."""
    out = list(lines)
    for _ in range(rng.randint(1, 3)):
        where = rng.randint(0, len(out))
        kind = rng.random()
        if kind < 0.4 or not out:
            out[where:where] = [rng.choice(WORDS) for _ in range(rng.randint(1, 4))]
        elif kind < 0.7:
            del out[where : where + rng.randint(1, 3)]
        else:
            out[where : where + 1] = [rng.choice(WORDS) + f" {rng.randint(0, 9)}"]
    return out


def replay(snap: Snapshotter, tmp: Path) -> dict[str, str]:
    """Every snapshot as a commit of a chain in the store itself (one commit per
    snapshot, oldest first, authored by its session): snapshot id -> commit."""
    env = git_env(tmp)
    store = snap.store_path
    parent: str | None = None
    commits: dict[str, str] = {}
    for info in sorted(snap.list(limit=None), key=lambda i: i.sequence):
        author = info.session or "person"
        env.update(GIT_AUTHOR_NAME=author, GIT_AUTHOR_EMAIL=f"{author}@snapshots")
        args = ["--git-dir", store, "commit-tree", info.tree_id, "-m", info.id]
        parent = git(*args, *(["-p", parent] if parent else []), env=env).strip()
        commits[info.id] = parent
    return commits


def git_blame(store: str, commit: str, path: str, tmp: Path) -> list[tuple[str, int]]:
    """(commit, original line number) per line, from ``git blame --porcelain``."""
    out = git("--git-dir", store, "blame", "--porcelain", commit, "--", path, env=git_env(tmp))
    found = []
    for line in out.splitlines():
        words = line.split(" ")
        if len(words) >= 3 and len(words[0]) == 40 and all(c in "0123456789abcdef" for c in words[0]):
            found.append((words[0], int(words[1])))
    return found


@pytest.fixture(params=["python", "libgit2"])
def differ(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Blame's diff in Python, then through pygit2 (libgit2's xdiff) where it is installed."""
    if request.param == "python":
        monkeypatch.setenv("SNAPSHOTTER_LINE_COUNTS", "python")
    elif linediff.script_accelerator() is None:
        pytest.skip("pygit2 is not installed (the fastdiff extra)")
    linediff.script_accelerator.cache_clear()
    yield request.param
    linediff.script_accelerator.cache_clear()


@needs_git
@pytest.mark.parametrize("seed", range(6))
def test_every_line_has_the_origin_git_blame_gives_it(seed: int, differ: str, ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    lines = [rng.choice(WORDS) + f" {i}" for i in range(rng.randint(5, 25))]
    write(ws, {"f.py": "".join(line + "\n" for line in lines), "other.txt": "0\n"})
    snap = make()
    snap.snapshot("first")
    for step in range(30):
        if rng.random() < 0.25:
            write(ws, {"other.txt": f"{step}\n"})  # a snapshot where f.py did not change
        else:
            lines = random_edit(lines, rng)
            write(ws, {"f.py": "".join(line + "\n" for line in lines)})
        snap.snapshot(f"step {step}")
    commits = replay(snap, tmp_path)
    newest = commits[snap.list(limit=1)[0].id]
    ours = [(commits[sid], source) for sid, source, _ in per_line(snap.blame("f.py")) if sid is not None]
    assert ours == git_blame(snap.store_path, newest, "f.py", tmp_path)


@needs_git
def test_a_file_born_late_and_moved_lines_match_git_too(differ: str, ws: Path, make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"keep.txt": "k\n"})
    snap = make()
    snap.snapshot("before the file")
    body = [f"line {i}\n" for i in range(12)]
    write(ws, {"g.py": "".join(body)})
    snap.snapshot("born")
    body = body[6:] + body[:6]  # halves swapped: git blames one half on the move
    write(ws, {"g.py": "".join(body)})
    snap.snapshot("moved")
    (ws / "g.py").unlink()
    snap.snapshot("gone")
    write(ws, {"g.py": "".join(body[:4]) + "new\n"})
    snap.snapshot("back")
    commits = replay(snap, tmp_path)
    ours = [(commits[sid], source) for sid, source, _ in per_line(snap.blame("g.py")) if sid is not None]
    assert ours == git_blame(snap.store_path, commits[snap.list(limit=1)[0].id], "g.py", tmp_path)


def test_whose_each_line_is(ws: Path, make: Callable[..., Snapshotter]) -> None:
    write(ws, {"a.py": "one\ntwo\nthree\n"})
    snap = make()
    first = snap.snapshot("first")
    agent = snap.in_session("claude-code-s1")
    agent.begin_turn("fix two", metadata={"agent": "claude-code"})
    agent.tool_snapshot("t1")
    write(ws, {"a.py": "one\nTWO by the agent\nthree\n"})
    agent.tool_done("t1")
    write(ws, {"a.py": "one\nTWO by the agent\nthree\nby a person, between calls\n"})
    agent.tool_snapshot("t2")
    agent.tool_done("t2")
    agent.end_turn()
    other = snap.in_session("codex-s2")  # a session that brackets nothing: its turn is all it can say
    other.begin_turn("add zero")
    write(ws, {"a.py": "zero by codex\none\nTWO by the agent\nthree\nby a person, between calls\n"})
    other.end_turn()
    write(ws, {"a.py": "zero by codex\none\nTWO by the agent\nthree\nby a person, between calls\nnot yet\n"})
    found = snap.blame("a.py")
    origins = [run.origin for run in found.runs for _ in range(run.count)]
    assert [o.who for o in origins] == ["session", "boundary", "session", "boundary", "person", "workspace"]
    assert (origins[0].session, origins[0].turn, origins[0].tool_call, origins[0].agent) == ("codex-s2", 1, None, None)
    assert (origins[2].session, origins[2].turn, origins[2].tool_call) == ("claude-code-s1", 1, "t1")
    assert origins[2].agent == "claude-code"
    assert origins[1].snapshot_id == first.id and origins[1].boundary
    assert origins[5].snapshot_id is None
    assert found.lines[-1] == "not yet" and found.depth == len(snap.list(limit=None)) and not found.limited
    narrowed = snap.blame("a.py", session="claude-code-s1")
    assert [(run.start, run.count, run.origin) for run in narrowed.runs] == [(3, 1, origins[2])]
    assert narrowed.session == "claude-code-s1" and narrowed.lines == found.lines
    with pytest.raises(InvalidInput, match="no session named"):
        snap.blame("a.py", session="claude-code-s9")


def test_two_sessions_writing_at_once_are_unknown(ws: Path, make: Callable[..., Snapshotter]) -> None:
    write(ws, {"a.txt": "a\n"})
    snap = make()
    snap.snapshot("first")
    one, two = snap.in_session("one"), snap.in_session("two")
    one.tool_snapshot("x")
    two.tool_snapshot("y")
    write(ws, {"a.txt": "a\nwritten while both calls ran\n"})
    one.tool_done("x")
    two.tool_done("y")
    origins = [run.origin.who for run in snap.blame("a.txt").runs]
    assert origins == ["boundary", "unknown"]


def test_the_depth_limit_stops_the_walk_and_says_so(ws: Path, make: Callable[..., Snapshotter]) -> None:
    snap = make()
    for i in range(6):
        write(ws, {"f.txt": "".join(f"{j}\n" for j in range(i + 1))})
        snap.snapshot(f"v{i}")
    found = snap.blame("f.txt", limit=3)
    assert found.limited and found.depth == 3
    whos = [run.origin.who for run in found.runs for _ in range(run.count)]
    assert whos == ["boundary"] * 4 + ["person", "person"]
    oldest_read = sorted(snap.list(limit=None), key=lambda i: i.sequence)[-3]
    assert found.runs[0].origin.snapshot_id == oldest_read.id
    assert not snap.blame("f.txt").limited


def test_blame_refuses_what_has_no_lines(ws: Path, make: Callable[..., Snapshotter]) -> None:
    write(ws, {"bin.dat": b"\0\1\2", "t.txt": "t\n", ".env": "SECRET=1\n"})
    snap = make()
    snap.snapshot("first")
    for path, error in (("bin.dat", InvalidInput), ("missing.txt", PathNotFound), (".env", PathNotFound)):
        with pytest.raises(error):
            snap.blame(path)
    with pytest.raises(InvalidInput):
        snap.blame("../outside.txt")
    with pytest.raises(InvalidInput):
        snap.blame("t.txt", limit=0)


def test_the_command_prints_a_line_each_as_git_blame_does_and_runs_in_json(ws: Path, home: Path) -> None:
    write(ws, {"a.py": "one\ntwo\n"})
    env = {"SNAPSHOTTER_HOME": str(home)}
    assert run_command("snapshot", "-m", "first", cwd=ws, env=env).returncode == 0
    write(ws, {"a.py": "one\ntwo\nthree\n"})
    text = run_command("blame", "a.py", cwd=ws, env=env)
    assert text.returncode == 0, text.stderr
    rows = text.stdout.splitlines()
    assert len(rows) == 3 and rows[0].endswith(") one") and rows[2].endswith(") three")
    assert "not snapshotted" in rows[2] and rows[0].startswith("^")
    import json

    document = json.loads(run_command("--json", "blame", "a.py", cwd=ws, env=env).stdout)["result"]
    assert [(r["start"], r["count"], r["origin"]["who"]) for r in document["runs"]] == [
        (1, 2, "boundary"),
        (3, 1, "workspace"),
    ]
    assert document["limited"] is False and document["path"] == "a.py"
    for words in (["--session", "s1", "turn", "begin"], ["--session", "s1", "turn", "end"]):
        if words[-1] == "end":
            write(ws, {"a.py": "one\ntwo\nthree\nfour\n"})
        assert run_command(*words, cwd=ws, env=env).returncode == 0
    mine = run_command("blame", "a.py", "--session", "s1", cwd=ws, env=env)
    assert mine.returncode == 0, mine.stderr
    *lines, summary = mine.stdout.splitlines()
    assert len(lines) == 1 and "(s1 turn 1 " in lines[0] and lines[0].endswith(" 4) four")  # "three" came before
    assert summary == "(1 of 4 lines by session s1)"
    unknown = run_command("blame", "a.py", "--session", "nobody", cwd=ws, env=env)
    assert unknown.returncode != 0 and "no session named" in unknown.stderr


@pytest.mark.parametrize("damage", ["malformed tree", "blob for a folder", "damaged object"])
def test_a_forged_folder_tree_in_the_history_is_a_typed_one_line_error(
    damage: str, ws: Path, make: Callable[..., Snapshotter]
) -> None:
    """A tree an agent forged straight into the store, on the path blame
    walks, is a ``StoreError`` naming it (non-negotiable 7), never
    ``parse_tree``'s ValueError or a decompression error."""
    write(ws, {"src/a.txt": "one\ntwo\n"})
    snap = make()
    snap.snapshot("first")
    writer = snap._engine_ok().store.writer
    if damage == "malformed tree":
        folder = writer.write(b"tree", b"100644 a.txt\0short")
    elif damage == "blob for a folder":
        folder = writer.write(b"blob", b"one\ntwo\n")
    else:
        folder = bytes.fromhex("ab" * 20)
        loose = Path(writer.loose_path(folder))
        loose.parent.mkdir(parents=True, exist_ok=True)
        loose.write_bytes(b"not zlib at all")
    forge_snapshot(snap, [(b"src", MODE_TREE, folder)])
    with pytest.raises(StoreError) as caught:
        snap.blame("src/a.txt")
    assert folder.hex() in str(caught.value) and "\n" not in str(caught.value)
