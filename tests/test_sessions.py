"""Sessions sharing one folder: each reverts, undoes and redoes its own changes only.

Two ``Snapshotter`` objects on the same workspace and store, each with its own
``session=``, stand for two agents. Checked byte for byte on real folders;
the hypothesis test drives random interleavings of both sessions' edits and reverts.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import contents, run_command, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapshotter import ConflictReason, InvalidInput, Retention, Snapshotter

LINES = [f"line {i} of the shared file\n" for i in range(100)]


def edit_lines(ws: Path, rel: str, start: int, end: int, tag: str) -> None:
    lines = (ws / rel).read_text().splitlines(keepends=True)
    for i in range(start, end):
        lines[i] = f"{tag} edit of line {i}\n"
    (ws / rel).write_text("".join(lines))


@pytest.fixture
def two(ws: Path, make) -> tuple[Snapshotter, Snapshotter]:  # type: ignore[no-untyped-def]
    write(ws, {"f1.py": "f1 original\n", "f2.py": "f2 original\n", "shared.py": "".join(LINES)})
    return make(session="A"), make(session="B")


def test_two_sessions_interleaving_turns_each_revert_only_their_own(ws: Path, two) -> None:  # type: ignore[no-untyped-def]
    a, b = two
    a.begin_turn()
    write(ws, {"f1.py": "f1 by A\n"})
    edit_lines(ws, "shared.py", 0, 10, "A")
    a.end_turn()
    b.begin_turn()
    write(ws, {"f2.py": "f2 by B\n"})
    edit_lines(ws, "shared.py", 50, 60, "B")
    b.end_turn()
    b_file, b_lines = (ws / "f2.py").read_bytes(), (ws / "shared.py").read_text().splitlines()[50:60]
    result = a.revert_turn()
    assert result and result.reverted == ("f1.py",) and result.merged == ("shared.py",)
    assert (ws / "f1.py").read_text() == "f1 original\n"
    shared = (ws / "shared.py").read_text().splitlines(keepends=True)
    assert shared[:10] == LINES[:10]
    assert (ws / "f2.py").read_bytes() == b_file and [s.rstrip("\n") for s in shared[50:60]] == b_lines


def test_concurrent_turns_are_told_apart_by_their_tool_calls(ws: Path, two) -> None:  # type: ignore[no-untyped-def]
    a, b = two
    a.begin_turn()
    b.begin_turn()
    a.tool_snapshot("a1")
    write(ws, {"f1.py": "f1 by A\n"})
    edit_lines(ws, "shared.py", 0, 10, "A")
    a.tool_done("a1")
    b.tool_snapshot("b1")
    write(ws, {"f2.py": "f2 by B\n"})
    edit_lines(ws, "shared.py", 50, 60, "B")
    b.tool_done("b1")
    a.tool_snapshot("a2")
    write(ws, {"new_by_a.py": "A made this\n"})
    a.tool_done("a2")
    a.end_turn()
    before = contents(ws)
    result = a.revert_turn()  # A's turn spans B's call: only A's two calls are reverted
    assert set(result.reverted) == {"f1.py", "new_by_a.py"} and result.merged == ("shared.py",)
    after = contents(ws)
    assert after["f2.py"] == before["f2.py"] == b"f2 by B\n"
    shared = after["shared.py"].decode().splitlines(keepends=True)
    assert shared[:10] == LINES[:10] and shared[50:60] == before["shared.py"].decode().splitlines(keepends=True)[50:60]
    assert "new_by_a.py" not in after


def test_overlapping_lines_are_a_conflict_and_nothing_is_written(ws: Path, two) -> None:  # type: ignore[no-untyped-def]
    a, b = two
    a.begin_turn()
    edit_lines(ws, "shared.py", 0, 10, "A")
    write(ws, {"f1.py": "f1 by A\n"})
    a.end_turn()
    b.begin_turn()
    edit_lines(ws, "shared.py", 5, 15, "B")
    b.end_turn()
    state = contents(ws)
    result = a.revert_turn()
    assert not result and [(c.path, c.reason) for c in result.conflicts] == [("shared.py", ConflictReason.CONTENT)]
    assert contents(ws) == state
    kept = a.revert_turn(conflicts="ours")
    assert kept.reverted == ("f1.py",) and contents(ws)["shared.py"] == state["shared.py"]


def test_a_sessions_undo_and_redo_touch_only_its_own_calls(ws: Path, two) -> None:  # type: ignore[no-untyped-def]
    a, b = two
    a.checkpoint("A's point")
    a.tool_snapshot("a1")
    write(ws, {"f1.py": "f1 by A\n"})
    edit_lines(ws, "shared.py", 0, 10, "A")
    a.tool_done("a1")
    write(ws, {"f2.py": "f2 by B, no bracket\n"})
    edit_lines(ws, "shared.py", 50, 60, "B")
    done_by_a = contents(ws)
    assert a.can_undo()
    undone = a.undo()
    assert undone.ok and undone.revert is not None
    now = contents(ws)
    assert now["f1.py"] == b"f1 original\n" and now["f2.py"] == b"f2 by B, no bracket\n"
    assert now["shared.py"].decode().splitlines(keepends=True)[:10] == LINES[:10]
    assert "B edit of line 55" in now["shared.py"].decode()
    assert not b.can_undo() and not b.undo().ok  # B took no checkpoint: nothing of B's to undo
    assert a.can_redo()
    redone = a.redo()
    assert redone.ok and contents(ws) == done_by_a
    assert not a.can_redo()


def test_undo_that_would_clash_is_refused_and_changes_nothing(ws: Path, two) -> None:  # type: ignore[no-untyped-def]
    a, b = two
    a.checkpoint()
    a.tool_snapshot("a1")
    edit_lines(ws, "shared.py", 0, 10, "A")
    a.tool_done("a1")
    edit_lines(ws, "shared.py", 5, 15, "B")
    state = contents(ws)
    undone = a.undo()
    assert not undone.ok and undone.revert is not None and undone.revert.conflicts
    assert contents(ws) == state and a.can_undo() and not a.can_redo()


def test_sessions_keep_their_own_turn_numbers_labels_and_listings(ws: Path, two) -> None:  # type: ignore[no-untyped-def]
    a, b = two
    pre_a = a.begin_turn()
    pre_b = b.begin_turn()
    assert pre_a.label == pre_b.label == "pre-turn:1"
    assert (pre_a.session, pre_b.session) == ("A", "B")
    assert a.get("pre-turn:1").id == pre_a.id and b.get("pre-turn:1").id == pre_b.id
    plain = Snapshotter(ws, home=Path(a.store_path).parent.parent)
    try:
        assert plain.get("pre-turn:1").id == pre_b.id  # the anonymous session has none: the newest
        assert [i.id for i in plain.list(session="A")] == [pre_a.id]
        assert plain.list(session="") == []
        anonymous = plain.snapshot("mine")
        assert [i.id for i in plain.list(session="")] == [anonymous.id]
    finally:
        plain.close()
    with pytest.raises(InvalidInput):
        Snapshotter(ws, home=Path(a.store_path).parent.parent, session="../escape")


def test_a_checkpoint_after_undo_keeps_the_redo_side_as_abandoned(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"f": "1\n"})
    snap = make()
    snap.checkpoint()
    write(ws, {"f": "2\n"})
    snap.checkpoint()
    write(ws, {"f": "3, not checkpointed\n"})
    assert snap.undo().ok
    write(ws, {"f": "4\n"})
    snap.checkpoint()
    assert not snap.can_redo()
    abandoned = snap.list(label="abandoned:1")
    assert len(abandoned) == 1
    snap.restore("abandoned:1")
    assert (ws / "f").read_text() == "3, not checkpointed\n"


def test_turn_numbers_and_pairs_survive_retention_dropping_old_turns(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """Retention drops old pre-turn snapshots from the turns stack: a turn's number
    still follows the last one's, its post-turn has its number, and revert_turn
    reverts that turn only (a person's later edit stays)."""
    write(ws, {"agent.txt": "0\n", "mine.txt": "m0\n"})
    snap = make(retention=Retention(max_snapshots=4, max_age=None, max_store_bytes=None, max_undo=1))
    for turn in range(1, 5):
        pre = snap.begin_turn()
        write(ws, {"agent.txt": f"{turn}\n"})
        post = snap.end_turn()
        assert (pre.label, post.label) == (f"pre-turn:{turn}", f"post-turn:{turn}")
    write(ws, {"mine.txt": "a person's edit after the last turn\n"})
    result = snap.revert_turn()
    assert result.reverted == ("agent.txt",), result
    assert (ws / "agent.txt").read_text() == "3\n"
    assert (ws / "mine.txt").read_text() == "a person's edit after the last turn\n"


def test_a_turn_revert_takes_back_the_sessions_own_undo_too(ws: Path, two) -> None:  # type: ignore[no-untyped-def]
    """A session that brackets its calls, and undoes an earlier turn's call inside
    a turn: reverting that turn puts back what the undo took away as well (found
    by the model below: only the bracketed calls were reverted)."""
    a, b = two
    b.begin_turn()
    a.begin_turn()
    a.tool_snapshot("c1")
    write(ws, {"f1.py": "f1 by A's first call\n"})
    a.tool_done("c1")
    a.end_turn()
    a.begin_turn()
    assert a.undo().ok  # inside the second turn: takes the first call back
    assert (ws / "f1.py").read_text() == "f1 original\n"
    a.tool_snapshot("c2")
    write(ws, {"f2.py": "f2 by A's second call\n"})
    a.tool_done("c2")
    result = a.revert_turn()
    assert set(result.reverted) == {"f1.py", "f2.py"}, result
    assert (ws / "f1.py").read_text() == "f1 by A's first call\n"  # as when the turn began
    assert (ws / "f2.py").read_text() == "f2 original\n"


@pytest.mark.parametrize("opening", ["empty turn", "checkpoint", "empty turn after a bracketed one"])
def test_a_sessions_undo_never_takes_a_persons_edit_after_it_stopped(opening: str, ws: Path, two) -> None:  # type: ignore[no-untyped-def]
    """Session A's turn (or checkpoint) changes nothing; a person then edits. A's
    undo leaves the person's edit byte for byte, as revert_turn(1) does."""
    a, b = two
    write(ws, {"notes.txt": "the person's notes\n"})
    if opening == "empty turn after a bracketed one":
        a.begin_turn()
        a.tool_snapshot("c1")
        write(ws, {"f1.py": "f1 by A\n"})
        a.tool_done("c1")
        a.end_turn()
    if opening == "checkpoint":
        a.checkpoint()
    else:
        a.begin_turn()
        a.end_turn()
    write(ws, {"notes.txt": "the person's notes, edited by the person\n"})
    edited = (ws / "notes.txt").read_bytes()
    if opening != "checkpoint":
        reverted = a.revert_turn(1)
        assert (ws / "notes.txt").read_bytes() == edited and not reverted.reverted and not reverted.merged
    undone = a.undo()
    assert (ws / "notes.txt").read_bytes() == edited
    if opening == "empty turn after a bracketed one":  # undo goes back to what A did before: its own call
        assert undone.ok and (ws / "f1.py").read_text() == "f1 original\n"
    else:
        assert not undone.ok and "nothing to undo" in undone.message
    assert not a.can_undo() or opening == "empty turn after a bracketed one"


def test_an_unbracketed_turn_still_open_is_the_sessions_to_undo(ws: Path, two) -> None:  # type: ignore[no-untyped-def]
    """A session that brackets nothing: inside its open turn, every change is its
    own (the documented limit), so its undo takes the turn's edit back."""
    a, b = two
    a.begin_turn()
    write(ws, {"f1.py": "f1 by A, unbracketed\n"})
    undone = a.undo()
    assert undone.ok and (ws / "f1.py").read_text() == "f1 original\n"


def test_tool_done_needs_its_tool_snapshot(ws: Path, two) -> None:  # type: ignore[no-untyped-def]
    a, b = two
    b.tool_snapshot("shared-id")
    with pytest.raises(InvalidInput):
        a.tool_done("shared-id")  # B's call, not A's
    with pytest.raises(InvalidInput):
        a.tool_done("never-begun")


@pytest.mark.parametrize("kept", [9, 10])
def test_a_sessions_undo_never_brings_back_an_edit_it_undid_once_retention_dropped_the_call(
    kept: int,
    ws: Path,
    make: Callable[..., Snapshotter],
) -> None:
    """A's calls edit line 3 (c1) and line 7 (c2); A undoes both, edits line 5 (c3)
    and checkpoints. Retention then drops c1's snapshots (9: the whole call; 10:
    its opening snapshot alone), keeping c2 and the undo. Undoing what led up to
    the checkpoint reverted the undo (c1 and c2 back) and c2, but not c1, whose
    change was no longer known: line 3 came back from a call undone long ago.
    The undo takes back its whole step exactly, or, the step no longer knowable,
    changes nothing."""
    write(ws, {"shared.py": "".join(LINES)})
    a, b = make(session="A"), make(session="B")
    b.begin_turn()
    a.begin_turn()
    for call, line in (("c1", 3), ("c2", 7)):
        a.tool_snapshot(call)
        edit_lines(ws, "shared.py", line, line + 1, f"A {call}")
        a.tool_done(call)
    assert a.undo().ok and (ws / "shared.py").read_text() == "".join(LINES)
    a.tool_snapshot("c3")
    edit_lines(ws, "shared.py", 5, 6, "A c3")
    a.tool_done("c3")
    a.checkpoint()
    make(session="A", retention=Retention(max_snapshots=kept)).prune()
    held = {(i.label or "") for i in a.list(limit=None)}
    assert "tool:c1" not in held and {"tool:c2", "tool-done:c2", "post-undo"} <= held  # as described above
    before = (ws / "shared.py").read_text()
    done = a.undo()
    after = (ws / "shared.py").read_text()
    assert "A c1" not in after, "the undo brought back an edit the session had undone"
    assert after == ("".join(LINES) if done.ok else before)
    assert done.ok or "retention" in done.message


def test_a_lone_named_sessions_undo_takes_back_its_revert(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """With no other session in the store, a named session's revert was written
    without the snapshot that closes it: its undo, which reverts its own changes
    since its undo point, did not see the revert and said there was nothing to undo."""
    write(ws, {"shared.py": "".join(LINES)})
    a = make(session="A")
    a.begin_turn()
    a.tool_snapshot("c1")
    edit_lines(ws, "shared.py", 3, 4, "A c1")
    a.tool_done("c1")
    a.end_turn()
    edited = (ws / "shared.py").read_text()
    a.checkpoint()
    assert a.revert_turn().reverted == ("shared.py",) and (ws / "shared.py").read_text() == "".join(LINES)
    undone = a.undo()
    assert undone.ok, undone.message
    assert (ws / "shared.py").read_text() == edited


def test_retention_keeps_the_opening_snapshot_of_a_call_still_running(
    ws: Path, make: Callable[..., Snapshotter]
) -> None:
    """B's call runs while A's calls fill a small store: the call's ``tool:`` snapshot
    (its state held by newer ones, so first to go) stays, and its end pairs with
    it; dropped, ``tool_done`` was refused and the call was no call of B's."""
    write(ws, {"shared.py": "".join(LINES)})
    a, b = make(session="A", retention=Retention(max_snapshots=6)), make(session="B")
    b.begin_turn()
    b.tool_snapshot("long")  # the folder as A's first call finds it: "held by a newer snapshot"
    for n in range(8):
        a.tool_snapshot(f"c{n}")
        edit_lines(ws, "shared.py", n, n + 1, f"A c{n}")
        a.tool_done(f"c{n}")
    assert "tool:long" in {i.label for i in a.list(limit=None)}
    edit_lines(ws, "shared.py", 50, 51, "B long")
    b.tool_done("long")
    assert {"tool:long", "tool-done:long"} <= {i.label for i in b.list(session="B", limit=None)}


# -- tool calls that overlap in time (#46 item 7) -------------------------------------------------


def test_a_call_made_inside_another_sessions_longer_call_is_its_own(ws: Path, two) -> None:  # type: ignore[no-untyped-def]
    """A's Bash call takes 2 s (``sleep 2; echo A > a.txt``); while it runs, B's
    Write creates b.txt inside B's own bracket. A's revert takes back a.txt
    only, B's b.txt only: B's work is not lost to A's revert."""
    a, b = two
    a.begin_turn()
    b.begin_turn()
    a.tool_snapshot("a1")
    b.tool_snapshot("b1")
    write(ws, {"b.txt": "B\n"})
    b.tool_done("b1")
    write(ws, {"a.txt": "A\n"})
    a.tool_done("a1")
    a.end_turn()
    b.end_turn()
    result = a.revert_turn()
    assert result.reverted == ("a.txt",) and result.unattributed == (), result
    assert (ws / "b.txt").read_text() == "B\n" and not (ws / "a.txt").exists()
    assert b.revert_turn().reverted == ("b.txt",) and not (ws / "b.txt").exists()


def test_a_file_the_inner_call_did_not_name_stays_the_outer_calls(ws: Path, two) -> None:  # type: ignore[no-untyped-def]
    """B's Write names the one file it writes (``writes=``): what else changed
    inside B's bracket, while A's longer Bash call ran, is A's."""
    a, b = two
    a.begin_turn()
    b.begin_turn()
    a.tool_snapshot("a1")
    write(ws, {"f1.py": "f1 by A, early\n"})
    b.tool_snapshot("b1", writes=["b.txt"])
    write(ws, {"b.txt": "B\n", "a.txt": "A, written while B's call ran\n"})
    b.tool_done("b1")
    a.tool_done("a1")
    before = contents(ws)
    reverted_a = a.revert_turn()
    assert set(reverted_a.reverted) == {"a.txt", "f1.py"} and reverted_a.unattributed == (), reverted_a
    assert (ws / "b.txt").read_bytes() == before["b.txt"]
    assert b.revert_turn().reverted == ("b.txt",)
    assert contents(ws) == {"f1.py": b"f1 original\n", "f2.py": b"f2 original\n", "shared.py": before["shared.py"]}


def test_calls_overlapping_but_not_nested_keep_what_cannot_be_told_and_say_so(ws: Path, two) -> None:  # type: ignore[no-untyped-def]
    """A's call opens, B's opens, a file changes, A's closes, B's closes: whose
    the change was cannot be told. Each session's revert keeps the file and
    names it; a change made while only one of them ran is that one's."""
    a, b = two
    a.begin_turn()
    b.begin_turn()
    a.tool_snapshot("a1")
    write(ws, {"a.txt": "A alone\n"})
    b.tool_snapshot("b1")
    write(ws, {"x.txt": "while both ran\n"})
    a.tool_done("a1")
    write(ws, {"b.txt": "B alone\n"})
    b.tool_done("b1")
    a.end_turn()
    b.end_turn()
    for snap, own in ((a, "a.txt"), (b, "b.txt")):
        dry = snap.revert_turn(dry_run=True)
        assert dry.reverted == (own,) and dry.unattributed == ("x.txt",), dry
        result = snap.revert_turn()
        assert result.reverted == (own,) and result.unattributed == ("x.txt",), result
        assert not (ws / own).exists() and (ws / "x.txt").read_text() == "while both ran\n"
    done = run_command(
        "--session",
        "A",
        "turn",
        "revert",
        "--dry-run",
        cwd=ws,
        env={"SNAPSHOTTER_HOME": str(Path(a.store_path).parent.parent)},
    )
    assert "x.txt" in done.stdout and "cannot be told" in done.stdout, done.stdout


# -- the model: random interleavings never touch the other session's work -------------------

OWN = {"A": (0, 10), "B": (50, 60), "P": (80, 90)}
"""Each session edits its own lines of the shared files, and files of its own;
so does the person (P), between any two calls, in no session at all."""
SHARED = ("s1.txt", "s2.txt")


def _person_edits(ws: Path, step: int, rng: random.Random) -> None:
    low, high = OWN["P"]
    rel = rng.choice(SHARED)
    start = rng.randrange(low, high - 2)
    edit_lines(ws, rel, start, start + 2, f"P{step}")
    write(ws, {f"p{rng.randint(0, 2)}.txt": f"the person's edit {step}\n"})


def _call(ws: Path, snap: Snapshotter, session: str, call: str, rng: random.Random) -> None:
    """A bracketed call of ``session`` editing its own lines (and, often, a file of its own)."""
    snap.tool_snapshot(call)
    low, high = OWN[session]
    for rel in rng.sample(SHARED, rng.randint(1, 2)):  # every call edits: the model must have work to check
        start = rng.randrange(low, high - 2)
        edit_lines(ws, rel, start, start + rng.randint(1, 2), f"{session}{call}")
    if rng.random() < 0.6:
        own = f"{session.lower()}{rng.randint(0, 2)}.txt"
        write(ws, {own: f"{session} call {call}\n"})
    snap.tool_done(call)


def _owned(files: dict[str, bytes], session: str) -> dict[str, bytes]:
    """What ``session`` owns: its files and its lines of the shared ones."""
    low, high = OWN[session]
    out = {rel: data for rel, data in files.items() if rel.startswith(session.lower())}
    for rel in SHARED:
        out[rel] = b"".join(files[rel].splitlines(keepends=True)[low:high])
    return out


def _others(files: dict[str, bytes], session: str) -> dict[str, bytes]:
    return {who: _owned(files, who) for who in "ABP" if who != session}


STEPS = st.lists(
    st.tuples(st.sampled_from("ABP"), st.sampled_from(["call", "call", "turn", "revert", "undo"])), max_size=14
)
"""Steps of the model: a session's call, turn (begun or ended), revert or undo;
for P, whatever the action, the person edits."""


def test_model_reverts_never_touch_the_other_sessions_work(request: pytest.FixtureRequest, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    """Random interleavings of two sessions' bracketed calls, turns (sometimes with a
    checkpoint), reverts and undos, and a person's edits between any two of them:
    a session's revert or undo never changes what the other session or the
    person owns, nor any path outside the session's own work; and a revert of
    its last turn (nothing of its own done after the turn ended) leaves what it
    owns as at the turn's start, conflicting paths aside. Derandomized (the
    same examples each run, so a failure is reproducible); ``--long`` runs 400
    random ones and prints the blob that replays a failure."""
    long = bool(request.config.getoption("--long"))
    effective = [0]

    @settings(
        max_examples=400 if long else 25,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=not long,
        print_blob=True,
    )
    @given(STEPS, st.integers(0, 2**16))
    def run(steps: list[tuple[str, str]], seed: int) -> None:
        opening = [("A", "turn"), ("B", "turn"), ("A", "call"), ("B", "call")]  # both at work, interleaved
        effective[0] += _play(tmp_path_factory.mktemp("model"), [*opening, *steps, ("A", "revert")], seed)

    run()
    assert effective[0] > 0, "no revert or undo changed anything: the model proved nothing"


def _play(root: Path, steps: list[tuple[str, str]], seed: int) -> int:
    """Play ``steps``; returns how many reverts and undos changed the folder."""
    effective = 0
    ws, home = root / "ws", root / "home"
    ws.mkdir()
    write(ws, {rel: "".join(LINES) for rel in SHARED})
    rng = random.Random(seed)
    sessions = {name: Snapshotter(ws, home=home, session=name) for name in "AB"}
    open_turn = {"A": False, "B": False}
    at_turn_start: dict[str, dict[str, bytes] | None] = {"A": None, "B": None}
    """What each session owned when its last turn began; None: unknown, or it acted after the turn."""
    try:
        for number, (who, action) in enumerate(steps):
            if who == "P":
                _person_edits(ws, number, rng)
                continue
            snap = sessions[who]
            if action in ("call", "undo") and not open_turn[who]:
                at_turn_start[who] = None  # its own later work: the turn's start is no longer the target
            if action == "call":
                _call(ws, snap, who, f"c{number}", rng)
            elif action == "turn":
                if open_turn[who]:
                    snap.end_turn()
                else:
                    at_turn_start[who] = _owned(contents(ws), who)
                    snap.begin_turn()
                    if rng.random() < 0.5:
                        snap.checkpoint()
                open_turn[who] = not open_turn[who]
            else:
                before = contents(ws)
                if action == "revert" and any(
                    i.label and i.label.startswith("pre-turn:") for i in snap.list(session=who)
                ):
                    result = snap.revert_turn(conflicts="ours")
                    start = at_turn_start[who]
                    if start is not None:
                        clashed = {c.path for c in result.conflicts}
                        mine = _owned(contents(ws), who)
                        for rel in (set(start) | set(mine)) - clashed:
                            assert mine.get(rel) == start.get(rel), ("not reverted", who, number, rel)
                elif action == "undo":
                    snap.undo()
                after = contents(ws)
                effective += after != before
                assert _others(after, who) == _others(before, who), (who, action, number)
                for rel in set(before) | set(after):  # nothing outside the session's own work moved
                    if rel in SHARED or rel.startswith(who.lower()):
                        continue
                    assert before.get(rel) == after.get(rel), rel
    finally:
        for snap in sessions.values():
            snap.close()
    return effective


@pytest.mark.parametrize("call_id", ["x" * 50_000, "t\u202e1", "t\x1b[2J", "t\n1", "t\u20281", "t\u200b1"])
def test_a_tool_call_id_that_cannot_be_a_label_is_refused_before_anything_is_recorded(
    call_id: str, ws: Path, two
) -> None:  # type: ignore[no-untyped-def]
    """``tool:<id>`` is a label: at most 200 characters, one line that reads as
    stored (no control, bidi or other format characters). An id that cannot
    make one is refused, nothing recorded (the hooks cut and hash theirs first)."""
    a, b = two
    with pytest.raises(InvalidInput):
        a.tool_snapshot(call_id)
    with pytest.raises(InvalidInput):
        a.tool_done(call_id)
    with pytest.raises(InvalidInput):
        a.checkpoint(label=f"mine{call_id}")
    assert a.list() == []


# -- the model, with tool calls that overlap in time --------------------------------------------
# Each session opens and closes its calls as separate steps, so its brackets and the other's
# interleave: nested, overlapping, one inside the other's longer call. A shell call may edit
# any of its session's work; a file call names the files it writes (``writes=``) and edits only
# them. Edits the rule cannot give to their maker are not made: a session's edit of a path while
# a call of the other session that could write that path (a shell call, or a file call naming
# it) opened after the editing call is open (the rule gives such a change to the inner call: the
# documented limit); and the person edits only while no call is open (inside a bracket, a
# person's edit is the bracket's). Reverts and undos run whenever drawn, calls open or not.

OVERLAP_STEPS = st.lists(
    st.tuples(
        st.sampled_from("ABP"),
        st.sampled_from(["open-shell", "open-file", "edit", "edit", "close", "turn", "revert", "undo"]),
    ),
    max_size=24,
)
OVERLAP_OPENINGS = [
    [  # A's slow shell call, during which B writes a file between its own hooks (the case)
        ("A", "turn"),
        ("B", "turn"),
        ("A", "open-shell"),
        ("B", "open-file"),
        ("B", "edit"),
        ("A", "edit"),
        ("B", "close"),
        ("A", "edit"),
        ("A", "close"),
    ],
    [  # two shell calls overlapping without nesting: what B did while both ran cannot be told
        ("A", "turn"),
        ("B", "turn"),
        ("A", "open-shell"),
        ("A", "edit"),
        ("B", "open-shell"),
        ("B", "edit"),
        ("A", "close"),
        ("B", "edit"),
        ("B", "close"),
    ],
    [  # both at work one after the other (each session brackets its calls from the start: an
        # unbracketed open turn would own a person's edit, the documented limit)
        ("A", "turn"),
        ("B", "turn"),
        ("A", "open-file"),
        ("A", "edit"),
        ("A", "close"),
        ("B", "open-shell"),
        ("B", "edit"),
        ("B", "close"),
    ],
]


def test_model_overlapping_tool_calls_are_reverted_apart(request: pytest.FixtureRequest, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    """Random interleavings of two sessions' tool-call brackets (open and closed
    as separate steps, nested and overlapping), their edits, turns, reverts and
    undos, and a person's edits: a session's revert or undo never changes what
    the other session or the person owns, nor anything outside its own work; a
    revert of its last turn leaves what it owns as at the turn's start, but for
    conflicting paths and those it names as unattributed (kept: calls of both
    ran when they changed). Derandomized (the same examples each run, so a
    failure is reproducible); ``--long`` runs 300 random ones, and a failure
    prints its example and the blob to replay it."""
    long = bool(request.config.getoption("--long"))
    seen = {"effective": 0, "overlapping": 0, "unattributed": 0}

    @settings(
        max_examples=300 if long else 30,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=not long,
        print_blob=True,
    )
    @given(st.sampled_from(OVERLAP_OPENINGS), OVERLAP_STEPS, st.integers(0, 2**16))
    def run(opening: list[tuple[str, str]], steps: list[tuple[str, str]], seed: int) -> None:
        played = _play_overlapping(tmp_path_factory.mktemp("overlap"), [*opening, *steps], seed)
        for key, count in played.items():
            seen[key] += count

    run()
    assert all(seen.values()), f"the model did not reach every case: {seen}"


class _Call:
    """One open tool call of the model: its id, and the files it names (None: a shell call)."""

    def __init__(self, call_id: str, names: list[str] | None, opened: int) -> None:
        self.call_id, self.names, self.opened = call_id, names, opened


def _play_overlapping(root: Path, steps: list[tuple[str, str]], seed: int) -> dict[str, int]:
    ws, home = root / "ws", root / "home"
    ws.mkdir()
    write(ws, {rel: "".join(LINES) for rel in SHARED})
    rng = random.Random(seed)
    sessions = {name: Snapshotter(ws, home=home, session=name) for name in "AB"}
    calls: dict[str, list[_Call]] = {"A": [], "B": []}
    in_turn = {"A": False, "B": False}
    at_turn_start: dict[str, dict[str, bytes] | None] = {"A": None, "B": None}
    counts = {"effective": 0, "overlapping": 0, "unattributed": 0}
    try:
        for number, (who, action) in enumerate([*steps, ("A", "close-all"), ("B", "close-all"), ("A", "revert")]):
            if who == "P":
                if not calls["A"] and not calls["B"]:
                    _person_edits(ws, number, rng)
                continue
            snap, other = sessions[who], "B" if who == "A" else "A"
            if action in ("open-shell", "open-file", "edit", "undo") and not in_turn[who]:
                at_turn_start[who] = None  # its own work after its turn: the turn's start is no target
            if action.startswith("open"):
                names = None if action == "open-shell" else _file_call_names(who, rng)
                call = _Call(f"c{number}", names, number)
                snap.tool_snapshot(call.call_id, writes=names)
                calls[who].append(call)
            elif action == "edit" and calls[who]:
                counts["overlapping"] += _edit_in_call(ws, who, calls[who][-1], calls[other], number, rng)
            elif action in ("close", "close-all"):
                while calls[who]:
                    snap.tool_done(calls[who].pop(rng.randrange(len(calls[who]))).call_id)  # any order
                    if action == "close":
                        break
            elif action == "turn":
                _close_all(snap, calls[who])
                if in_turn[who]:
                    snap.end_turn()
                else:
                    at_turn_start[who] = _owned(contents(ws), who)
                    snap.begin_turn()
                    if rng.random() < 0.5:
                        snap.checkpoint()
                in_turn[who] = not in_turn[who]
            elif action in ("revert", "undo"):
                _close_all(snap, calls[who])
                before = contents(ws)
                if action == "revert" and any((i.label or "").startswith("pre-turn:") for i in snap.list(session=who)):
                    result = snap.revert_turn(conflicts="ours")
                    counts["unattributed"] += bool(result.unattributed)
                    start = at_turn_start[who]
                    if start is not None:
                        kept = {c.path for c in result.conflicts} | set(result.unattributed)
                        mine = _owned(contents(ws), who)
                        for rel in (set(start) | set(mine)) - kept:
                            assert mine.get(rel) == start.get(rel), ("not reverted", who, number, rel, result)
                elif action == "undo":
                    snap.undo()
                after = contents(ws)
                counts["effective"] += after != before
                assert _others(after, who) == _others(before, who), (who, action, number)
                for rel in set(before) | set(after):  # nothing outside the session's own work moved
                    if rel in SHARED or rel.startswith(who.lower()):
                        continue
                    assert before.get(rel) == after.get(rel), (who, action, number, rel)
    finally:
        for snap in sessions.values():
            snap.close()
    return counts


def _file_call_names(who: str, rng: random.Random) -> list[str]:
    """What a file call of ``who`` writes: one of its own files, or a shared one (its lines of it)."""
    return [rng.choice([f"{who.lower()}{rng.randint(0, 2)}.txt", *SHARED])]


def _edit_in_call(ws: Path, who: str, call: _Call, theirs: list[_Call], number: int, rng: random.Random) -> int:
    """``who``'s edit, made by its newest open ``call``, unless the rule could not
    give it to ``who`` (see above): then nothing. 1 if the other session had a
    call open meanwhile (the brackets overlap), else 0."""
    if call.names is not None:
        paths = list(call.names)
    else:
        paths = rng.sample(SHARED, rng.randint(1, 2))
        if rng.random() < 0.6:
            paths.append(f"{who.lower()}{rng.randint(0, 2)}.txt")
    inner = [c for c in theirs if c.opened > call.opened and (c.names is None or set(c.names) & set(paths))]
    if inner:
        return 0  # a call of the other's that could write it opened inside ours: the change would be its
    low, high = OWN[who]
    for rel in paths:
        if rel in SHARED:
            start = rng.randrange(low, high - 2)
            edit_lines(ws, rel, start, start + rng.randint(1, 2), f"{who}{number}")
        else:
            write(ws, {rel: f"{who} call {call.call_id}, edit {number}\n"})
    return 1 if theirs else 0


def _close_all(snap: Snapshotter, open_calls: list[_Call]) -> None:
    while open_calls:
        snap.tool_done(open_calls.pop().call_id)


# -- the undo model: B leaves its calls open while A calls, turns, reverts and undoes ------


UNDO_STEPS = st.lists(
    st.tuples(st.sampled_from("AAABP"), st.sampled_from(["call", "call", "turn", "checkpoint", "revert", "undo"])),
    min_size=16,
    max_size=40,
)
"""Steps of the undo model: A's call, turn (begun or ended), checkpoint, revert or undo;
B opens a call (left open for a while, closed at one of its later steps) or a turn;
for P, whatever the action, the person edits."""


def test_model_a_sessions_undo_takes_back_exactly_its_last_undo_step(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Random runs of A's bracketed calls, turns, checkpoints, reverts and undos, with
    B's calls left open across them and a person's edits between, under the
    default retention (which drops old brackets as the run grows): each undo of
    A either takes back exactly its last undo step (what A owns is as at its
    newest undo point, or at the one before when A changed nothing since) or
    changes nothing; and never anything B or the person owns.
    ``--long`` runs 300 examples."""
    long = bool(request.config.getoption("--long"))
    effective = [0]

    @settings(max_examples=300 if long else 6, deadline=None, suppress_health_check=list(HealthCheck))
    @given(UNDO_STEPS, st.integers(0, 2**16))
    def run(steps: list[tuple[str, str]], seed: int) -> None:
        effective[0] += _play_undo(tmp_path_factory.mktemp("undo-model"), [*UNDO_OPENING, *steps], seed)

    run()
    assert effective[0] > 0, "no undo changed anything: the model proved nothing"


UNDO_OPENING = [("A", "turn"), ("B", "turn"), ("A", "call"), ("B", "call")]
UNDO_RETENTION = Retention(max_snapshots=20)
"""The default retention but for the count, so that it drops brackets within a short run."""


def _b_step(ws: Path, snap: Snapshotter, number: int, open_call: str | None, rng: random.Random) -> str | None:
    """B's call: open one (its edits made inside it), or edit more in the open one;
    either may close it. Returns the call still open."""
    if open_call is None:
        open_call = f"b{number}"
        snap.tool_snapshot(open_call)
    low, high = OWN["B"]
    for rel in rng.sample(SHARED, rng.randint(1, 2)):
        start = rng.randrange(low, high - 2)
        edit_lines(ws, rel, start, start + rng.randint(1, 2), f"B{number}")
    if rng.random() < 0.6:
        write(ws, {f"b{rng.randint(0, 2)}.txt": f"B call {number}\n"})
    if rng.random() < 0.4:
        snap.tool_done(open_call)
        return None
    return open_call


def _play_undo(root: Path, steps: list[tuple[str, str]], seed: int) -> int:
    """Play ``steps`` of the undo model; returns how many of A's undos changed the folder."""
    effective = 0
    ws, home = root / "ws", root / "home"
    ws.mkdir()
    write(ws, {rel: "".join(LINES) for rel in SHARED})
    rng = random.Random(seed)
    a, b = (Snapshotter(ws, home=home, session=name, retention=UNDO_RETENTION) for name in "AB")
    b_call: str | None = None
    turn_open = {"A": False, "B": False}
    points: list[dict[str, bytes]] = []
    """What A owned at each of its undo points, oldest first (the model of its undo stack)."""
    changed = False
    """A changed something since its newest undo point."""
    try:
        for number, (who, action) in enumerate(steps):
            if who == "P":
                _person_edits(ws, number, rng)
            elif who == "B":
                if action == "turn":
                    (b.end_turn if turn_open["B"] else b.begin_turn)()
                    turn_open["B"] = not turn_open["B"]
                else:
                    b_call = _b_step(ws, b, number, b_call, rng)
            elif action == "call":
                _call(ws, a, "A", f"c{number}", rng)
                changed = True
            elif action in ("turn", "checkpoint"):
                if action == "turn" and turn_open["A"]:
                    a.end_turn()
                else:
                    a.begin_turn() if action == "turn" else a.checkpoint()
                    points.append(_owned(contents(ws), "A"))
                    changed = False
                turn_open["A"] ^= action == "turn"
            else:
                before = contents(ws)
                if action == "revert":
                    if not any((i.label or "").startswith("pre-turn:") for i in a.list(session="A")):
                        continue
                    a.revert_turn(conflicts="ours")
                    changed |= contents(ws) != before
                else:
                    done = a.undo()
                    after = contents(ws)
                    if not done.ok:
                        assert after == before, ("a refused undo changed the folder", number, done.message)
                    elif after != before:
                        effective += 1
                        popped = not changed
                        assert not popped or len(points) >= 2, ("undid past the first undo point", number)
                        expected = points[-2] if popped else points[-1]
                        mine = _owned(after, "A")
                        assert mine == expected, ("the undo went elsewhere", number, popped, done.message)
                        if popped:
                            points.pop()
                        changed = True  # the undo is itself a change since the (new) newest point
                assert _others(contents(ws), "A") == _others(before, "A"), (action, number)
    finally:
        a.close()
        b.close()
    return effective


def test_the_undo_models_run_where_retention_made_an_undo_go_elsewhere(tmp_path: Path) -> None:
    """Found by the undo model (seed 101, shrunk): by step 12 retention had dropped the
    opening snapshot of A's first call; A's undo of what led up to its checkpoint
    reverted the undo of that call, but not the call, and put back its line."""
    steps = [("A", "call"), ("A", "call"), ("B", "revert"), ("B", "checkpoint"), ("A", "call")]
    steps += [("B", "checkpoint"), ("A", "call"), ("A", "undo"), ("A", "undo")]
    assert _play_undo(tmp_path, [*UNDO_OPENING, *steps], 101) >= 1


def test_a_checkpoints_abandoned_copy_is_no_step_of_a_sessions_history(tmp_path: Path) -> None:
    """Found by the undo model (--long): A's checkpoint kept the redo side of its
    earlier undo as ``abandoned:1``, a snapshot numbered after the checkpoint but
    holding the folder as it was before that undo. Read as a step of history, it
    made A's revert look like a change from that old state, and A's undo of the
    revert went back there instead of to the checkpoint."""
    steps = [("A", "call")] * 7 + [("A", "undo")] + [("A", "call")] * 5
    steps += [("A", "checkpoint"), ("A", "revert"), ("A", "undo")]
    assert _play_undo(tmp_path, [*UNDO_OPENING, *steps], 0) >= 1
