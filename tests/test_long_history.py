"""Long histories (issue #50): what a call reads does not grow with the history,
git reads every snapshot of a long one as it is, and the default retention keeps
every tool call of a week of agent work.

Histories of thousands of snapshots are written fast by ``longhistory``; what
is counted or checked afterwards goes through the public API and the real hook
command. Timings are in ``benchmarks/bench_long_history.py``, not here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_ref_reading import _Reads

from snapshotter import Retention, Snapshotter

GIT = shutil.which("git")
COMMAND = [sys.executable, "-m", "snapshotter"]
SESSION = "claude-code-aa11"

CALLS: dict[str, Callable[[Snapshotter], object]] = {
    "open": lambda snap: snap.base(),
    "log -n 20": lambda snap: snap.list(limit=20),
    "sessions": lambda snap: snap.sessions(),
    "stats": lambda snap: snap.store_stats(),
    "undo": lambda snap: snap.in_session(SESSION).can_undo(),
    "turn revert": lambda snap: snap.in_session(SESSION).revert_turn(1, dry_run=True),
    "turn hunks": lambda snap: snap.in_session(SESSION).turn_hunks(1),
    "blame": lambda snap: snap.blame("d00/f000.txt", limit=50),
    "snapshot": lambda snap: snap.snapshot("one more"),
    "a call in a turn left open": lambda snap: snap.in_session("left-open").open_turn(),
}


def _reads(history: Any, call: Callable[[Snapshotter], object]) -> tuple[int, int, int, int, int]:
    """What ``call`` reads of the store in a new Snapshotter (as a CLI call opens
    one): ref files opened, bytes of ``packed-refs`` read, snapshot commits
    parsed, bytes of pack indexes read or hashed whole, entries of the store's
    folders listed."""
    with open(history.path(1, 1), "a") as handle:
        handle.write("an edit\n")  # a snapshot has something to record
    store_path = Snapshotter(history.ws, home=history.home).store_path
    with pytest.MonkeyPatch.context() as patch:
        reads = _Reads(store_path, patch)
        listed = _Listed(store_path, patch)
        with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
            call(snap)
        return (*reads.total(), reads.index_bytes, listed.entries)


class _Listed:
    """Entries listed of the store's folders (``os.scandir``, which ``os.walk`` and ``os.listdir``'s users share)."""

    def __init__(self, store_path: str, patch: pytest.MonkeyPatch) -> None:
        self.entries = 0
        real = os.scandir
        counter = self

        class Counted:
            def __init__(self, path: Any) -> None:
                self.listing = real(path)
                self.inside = os.fsdecode(path).startswith(store_path) if not isinstance(path, int) else False

            def __iter__(self) -> Counted:
                return self

            def __next__(self) -> os.DirEntry[str]:
                entry = next(self.listing)
                counter.entries += self.inside
                return entry

            def __enter__(self) -> Counted:
                return self

            def __exit__(self, *exc: object) -> None:
                self.listing.close()

            def close(self) -> None:
                self.listing.close()

        patch.setattr(os, "scandir", Counted)


def test_no_call_reads_more_of_a_longer_history(tmp_path: Path) -> None:
    """Each call opens as many ref files and parses as many snapshot commits at
    3,000 snapshots as at 300 (a few more at most: where the newest turn falls
    differs), and reads a small part of ``packed-refs`` (binary searches, which
    grow as the log of its size) and of the pack indexes (checked whole once,
    by the first call: see ``checkedindexes``), and lists as many entries of
    the store's folders (``stats`` walks them: bounded by upkeep, 256 object
    folders and 2,000 loose objects, never a file per snapshot): none reads the
    whole history."""
    import longhistory

    history = longhistory.History(tmp_path / "ws", tmp_path / "home", folders=4, files=10)
    history.build(300)
    with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
        snap.in_session("left-open").begin_turn("a turn whose agent never ends it")
    for call in CALLS.values():
        _reads(history, call)  # the first of each reads what a first does (a folder walk, the index)
    short = {name: _reads(history, call) for name, call in CALLS.items()}
    history.build(3000)
    for call in CALLS.values():
        _reads(history, call)
    long = {name: _reads(history, call) for name, call in CALLS.items()}
    whole = os.path.getsize(Path(Snapshotter(history.ws, home=history.home).store_path) / "packed-refs")
    grown = {}
    for name in CALLS:
        files, _, commits, _, listed = (b - a for a, b in zip(short[name], long[name]))
        if files > 4 or commits > 8 or long[name][1] > max(4 * short[name][1], 32 << 10):  # a read of all: 10x
            grown[name] = (short[name], long[name])
        if long[name][3] > max(2 * short[name][3], 4 << 10):  # a pack index read or hashed whole: 10x
            grown[name] = (short[name], long[name])
        if listed > 64:  # a folder of a file per snapshot: 2,700 more
            grown[name] = (short[name], long[name])
    assert not grown, (
        f"(ref files, packed-refs bytes of {whole}, commits parsed, pack index bytes, entries listed) "
        f"at 300 and 3,000: {grown}"
    )


@pytest.mark.skipif(GIT is None, reason="git is the oracle here")
def test_git_reads_every_snapshot_of_a_long_history(tmp_path: Path) -> None:
    """At a few thousand snapshots, packed refs and loose ones mixed, the store is
    a repository git reads as it is: ``fsck --strict`` clean, and ``log --all``
    lists every snapshot kept."""
    import longhistory

    history = longhistory.History(tmp_path / "ws", tmp_path / "home", folders=4, files=10)
    history.build(2500)
    with Snapshotter(history.ws, home=history.home, retention=Retention(max_snapshots=2400)) as snap:
        for i in range(5):  # loose refs over the packed ones; the count limit drops a batch from packed-refs
            with open(history.path(0, i), "a") as handle:
                handle.write("after the packing\n")
            snap.snapshot(f"loose {i}")
        kept = {info.id for info in snap.list(limit=None)}
        store = snap.store_path
    assert 2000 < len(kept) <= 2400
    assert (Path(store) / "packed-refs").exists()
    assert GIT is not None
    fsck = subprocess.run([GIT, "--git-dir", store, "fsck", "--strict", "--no-progress"], capture_output=True)
    assert fsck.returncode == 0, fsck.stderr.decode()
    logged = subprocess.run([GIT, "--git-dir", store, "log", "--all", "--format=%H"], capture_output=True, check=True)
    assert set(logged.stdout.decode().split()) == kept


def _hook(ws: Path, env: dict[str, str], event: str, **payload: Any) -> None:
    document = {"session_id": "day-1", "cwd": str(ws), "hook_event_name": event, **payload}
    done = subprocess.run(
        [*COMMAND, "hook", "claude-code", event],
        cwd=ws,
        env=env,
        input=json.dumps(document),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stderr == "", done


def test_a_day_of_hook_calls_keeps_every_tool_calls_snapshots(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The day of issue #50 through the real ``snapshotter hook claude-code``
    command, with the default settings: turns of 8 Bash calls, each editing one
    of 2,000 files (6 turns; 60 with ``--long``). Every call's ``tool:`` and
    ``tool-done:`` snapshot is kept, the latest turn's and the first one's."""
    turns = 60 if request.config.getoption("--long") else 6
    ws, home = tmp_path / "ws", tmp_path / "home"
    for folder in range(20):
        (ws / f"d{folder:02d}").mkdir(parents=True)
        for name in range(100):
            (ws / f"d{folder:02d}" / f"f{name:03d}.txt").write_text(f"file {folder}/{name}\n")
    env = dict(
        os.environ,
        SNAPSHOTTER_HOME=str(home),
        SNAPSHOTTER_NO_WATCHER="1",
        SNAPSHOTTER_CONFIG=str(tmp_path / "no-user-config.toml"),
        SNAPSHOTTER_HOOKS_LOG=str(tmp_path / "hooks.log"),
    )
    made: list[str] = []
    for turn in range(turns):
        _hook(ws, env, "UserPromptSubmit", prompt=f"turn {turn}")
        for call in range(8):
            ident = f"toolu_{turn:02d}_{call}"
            bash = {"tool_name": "Bash", "tool_input": {"command": "edit"}, "tool_use_id": ident}
            _hook(ws, env, "PreToolUse", **bash)
            with open(ws / f"d{call:02d}" / f"f{turn:03d}.txt", "a") as handle:
                handle.write(f"edited in turn {turn}\n")
            _hook(ws, env, "PostToolUse", **bash)
            made.append(ident)
        _hook(ws, env, "Stop", stop_hook_active=False)
    with Snapshotter(ws, home=home) as snap:
        labels = {info.label for info in snap.list(limit=None)}
    missing = [ident for ident in made if f"tool:{ident}" not in labels or f"tool-done:{ident}" not in labels]
    assert not missing, f"{len(missing)} of {len(made)} tool calls lost a snapshot, first {missing[:3]}"


def test_the_default_retention_keeps_a_week_of_tool_calls(tmp_path: Path) -> None:
    """A week of the day's work (18 snapshots a turn, 60 turns a day, spread over
    the past 7 days less an hour), then a snapshot with the default retention:
    every tool call's snapshots are still there, and the store is under its
    size limit."""
    import longhistory

    history = longhistory.History(tmp_path / "ws", tmp_path / "home", folders=20, files=100, days=7 - 1 / 24)
    history.build(7 * 60 * longhistory.SNAPSHOTS_PER_TURN)
    with Snapshotter(history.ws, home=history.home) as snap:  # the defaults
        with open(history.path(0, 0), "a") as handle:
            handle.write("the week's last edit\n")
        snap.snapshot("after a week")
        kept = snap.list(limit=None)
        size = snap.store_stats().bytes_on_disk
    calls = [info for info in kept if (info.label or "").startswith(("tool:", "tool-done:"))]
    assert len(calls) == 7 * 60 * 2 * longhistory.CALLS_PER_TURN
    assert size < Retention().max_store_bytes  # type: ignore[operator]


def test_a_page_deep_in_a_long_history_costs_a_page(tmp_path: Path) -> None:
    """``list(before=...)`` pages through the history: the pages, one after the
    other, are the whole log, and the page near the oldest snapshot of 2,000
    parses its 20 commits (and the one it starts below), not those above it."""
    import longhistory

    history = longhistory.History(tmp_path / "ws", tmp_path / "home", folders=4, files=10)
    history.build(2000)
    with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
        everything = snap.list(limit=None)
        paged = snap.list(limit=500)
        while len(paged) < len(everything):
            paged += snap.list(limit=500, before=paged[-1])
        assert [info.id for info in paged] == [info.id for info in everything]
        deep = everything[-30]
    store_path = Snapshotter(history.ws, home=history.home).store_path
    with pytest.MonkeyPatch.context() as patch:
        reads = _Reads(store_path, patch)
        with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
            page = snap.list(limit=20, before=deep.id)
        assert [info.id for info in page] == [info.id for info in everything[-29:-9]]
        assert reads.commits <= 25, reads.total()


def test_retention_reads_what_it_drops_not_the_whole_history(tmp_path: Path) -> None:
    """The age limit drops the oldest ~150 of 3,000 snapshots of three sessions'
    turns (each session's undo stack reaching back past them): what the drop
    reads to keep the sessions' undo exact (``anchors.before_dropping``) is
    the stretch around what goes, not every snapshot from the oldest undo
    point to now; and the drop itself reads no more than it drops."""
    from datetime import timedelta

    import longhistory

    from snapshotter.facade import maintenance
    from snapshotter.history import anchors

    history = longhistory.History(tmp_path / "ws", tmp_path / "home", folders=4, files=10, days=6.0)
    history.build(3000)
    step = timedelta(days=6.0) / 3000
    retention = Retention(max_snapshots=None, max_age=timedelta(days=6.0) - 150 * step, max_store_bytes=None)
    store_path = Snapshotter(history.ws, home=history.home).store_path
    with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
        snap.sessions()  # the history index made (a store's usual state)
        before = {info.id for info in snap.list(limit=None)}
    parsed: dict[str, int] = {}
    with pytest.MonkeyPatch.context() as patch:
        reads = _Reads(store_path, patch)
        real_before, real_maintain = anchors.before_dropping, maintenance.maintain

        def counted_before(*args: Any) -> None:
            start = reads.commits
            real_before(*args)
            parsed["before_dropping"] = parsed.get("before_dropping", 0) + reads.commits - start

        def counted_maintain(*args: Any) -> None:
            start = reads.commits
            real_maintain(*args)
            parsed["maintain"] = parsed.get("maintain", 0) + reads.commits - start

        patch.setattr(maintenance, "before_dropping", counted_before)
        patch.setattr(maintenance, "maintain", counted_maintain)
        with Snapshotter(history.ws, home=history.home, retention=retention) as snap:
            with open(history.path(0, 0), "a") as handle:
                handle.write("an edit\n")
            snap.snapshot("after a pause")
    with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
        after = {info.id for info in snap.list(limit=None)}
        assert snap.verify().ok
    dropped = len(before - after)
    assert 100 <= dropped <= 200, dropped
    assert parsed["before_dropping"] <= 4 * dropped, parsed
    assert parsed["maintain"] <= 6 * dropped, parsed


def _a_killed_call_then_a_turn(ws: Path, home: Path, killed: int) -> Snapshotter:
    """A session that brackets its calls: ``killed`` turns each left with a call
    never closed (its agent killed mid-call; the next prompt ended the turn, as
    the hooks end it), then a turn with one call editing ``a.txt`` and, between
    its calls, a person's edit to ``b.txt``."""
    (ws / "a.txt").write_text("a\n")
    (ws / "b.txt").write_text("b\n")
    snap = Snapshotter(ws, home=home, retention=Retention.unlimited())
    agent = snap.in_session("killed-agent")
    for n in range(killed):
        agent.begin_turn(f"turn {n}")
        agent.tool_snapshot(f"done_{n}")
        agent.tool_done(f"done_{n}")
        agent.tool_snapshot(f"killed_{n}")  # the agent dies here: no tool_done, no end of its turn
        agent.end_turn("ended: the agent began another turn")
    agent.begin_turn("the last turn")
    agent.tool_snapshot("edit_a")
    (ws / "a.txt").write_text("a, by the agent\n")
    agent.tool_done("edit_a")
    (ws / "b.txt").write_text("b, by a person between the calls\n")
    agent.snapshot("a person's edit")
    agent.end_turn("done")
    return snap


def test_a_call_never_closed_holds_nothing_after_its_turn_ended(tmp_path: Path) -> None:
    """A call whose agent was killed runs to its turn's end (``owners``): a later
    turn's revert takes back that turn's calls, not a person's edit made between
    them, however long ago the call was left open."""
    ws = tmp_path / "ws"
    ws.mkdir()
    with _a_killed_call_then_a_turn(ws, tmp_path / "home", killed=1) as snap:
        reverted = snap.in_session("killed-agent").revert_turn(1, dry_run=True)
    assert sorted(reverted.reverted) == ["a.txt"], reverted


def test_calls_never_closed_add_no_reads_to_a_later_turns_revert(tmp_path: Path) -> None:
    """Undo and a turn's revert read the brackets open across their stretch: a
    call left open by a killed agent, in a turn that ended, is not one of them
    (each such call was one more commit read by every later undo and revert)."""
    parsed = {}
    for killed in (1, 20):
        ws = tmp_path / f"ws{killed}"
        ws.mkdir()
        _a_killed_call_then_a_turn(ws, tmp_path / f"home{killed}", killed).close()
        store_path = Snapshotter(ws, home=tmp_path / f"home{killed}").store_path
        for name in ("turn revert", "undo"):
            with pytest.MonkeyPatch.context() as patch:
                reads = _Reads(store_path, patch)
                with Snapshotter(ws, home=tmp_path / f"home{killed}", retention=Retention.unlimited()) as snap:
                    session = snap.in_session("killed-agent")
                    session.revert_turn(1, dry_run=True) if name == "turn revert" else session.undo()
                parsed[name, killed] = reads.commits
    assert parsed["undo", 20] <= parsed["undo", 1] + 2, parsed
    assert parsed["turn revert", 20] <= parsed["turn revert", 1] + 2, parsed


def test_sessions_left_in_a_turn_add_no_reads_to_another_sessions_revert(tmp_path: Path) -> None:
    """Each agent killed in a turn and never resumed leaves its session's turn
    open for good: another session's undo and turn revert read nothing of it
    (whose each step of their stretch is does not depend on it), however many
    there are."""
    parsed = {}
    for left in (1, 20):
        ws, home = tmp_path / f"ws{left}", tmp_path / f"home{left}"
        ws.mkdir()
        (ws / "a.txt").write_text("a\n")
        with Snapshotter(ws, home=home, retention=Retention.unlimited()) as snap:
            for n in range(left):
                snap.in_session(f"killed-{n}").begin_turn("a turn never ended")
            agent = snap.in_session("agent")
            agent.begin_turn("the turn")
            agent.tool_snapshot("edit_a")
            (ws / "a.txt").write_text("a, by the agent\n")
            agent.tool_done("edit_a")
            agent.end_turn("done")
            store_path = snap.store_path
        for name in ("turn revert", "undo"):
            with pytest.MonkeyPatch.context() as patch:
                reads = _Reads(store_path, patch)
                with Snapshotter(ws, home=home, retention=Retention.unlimited()) as snap:
                    session = snap.in_session("agent")
                    if name == "turn revert":
                        assert session.revert_turn(1, dry_run=True).reverted == ("a.txt",)
                    else:
                        undone = session.undo()
                        assert undone.ok and undone.revert is not None and undone.revert.reverted == ("a.txt",), undone
                parsed[name, left] = reads.commits
    assert parsed["undo", 20] <= parsed["undo", 1] + 2, parsed
    assert parsed["turn revert", 20] <= parsed["turn revert", 1] + 2, parsed
