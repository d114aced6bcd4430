"""The history index is a cache of the refs (issue #50): a stale one is rebuilt
once, by whichever call meets it first, and saved only under the store lock
when it matches the refs; a reader never waits for the lock to save it.

A history made by ``longhistory`` (refs written and packed straight through the
store, as another tool or a crashed writer could leave them) has an index that
no longer matches its refs. Counted: the snapshot commits a call parses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_ref_reading import _Reads

from snapshotter import Retention, Snapshotter


def _history(tmp_path: Path, size: int = 300) -> Any:
    import longhistory

    history = longhistory.History(tmp_path / "ws", tmp_path / "home", folders=4, files=10)
    history.build(size)
    return history


def _parsed(history: Any, call: str = "sessions") -> tuple[int, object]:
    """Snapshot commits a read-only call parses in a new Snapshotter, and what it returned."""
    ws, home = history.ws, history.home
    store_path = Snapshotter(ws, home=home).store_path
    with pytest.MonkeyPatch.context() as patch:
        reads = _Reads(store_path, patch)
        with Snapshotter(ws, home=home, retention=Retention.unlimited()) as snap:
            found = snap.sessions() if call == "sessions" else snap.store_stats().snapshots
        return reads.commits, found


def test_a_stale_history_index_is_rebuilt_by_one_read_only_call_not_each(tmp_path: Path) -> None:
    """``sessions`` on a store whose index is stale rebuilds it from every
    snapshot; the next call, in another new Snapshotter, loads what the first
    saved (it took the free lock) and parses no snapshot."""
    history = _history(tmp_path)
    first, sessions = _parsed(history)
    assert first >= 300  # the rebuild
    again, same = _parsed(history)
    assert again == 0, f"{again} snapshot commits parsed by the second call"
    assert same == sessions
    counted, count = _parsed(history, "stats")
    assert counted <= 2 and count == 300


def test_a_reader_rebuilds_without_saving_while_another_holds_the_lock(tmp_path: Path) -> None:
    """While a writer holds the store lock, a reader rebuilds the stale index for
    itself (never waiting, never writing), with the same answer; once the lock
    is free, the next reader saves it, and the one after parses nothing."""
    history = _history(tmp_path)
    index_file = Path(Snapshotter(history.ws, home=history.home).store_path) / "snapshotter" / "history-index"
    before = index_file.read_bytes() if index_file.exists() else None
    with Snapshotter(history.ws, home=history.home) as writer, writer._engine_ok().lock:
        held, sessions = _parsed(history)
        assert held >= 300
        assert (index_file.read_bytes() if index_file.exists() else None) == before
    freed, same = _parsed(history)
    assert freed >= 300 and same == sessions  # rebuilt again (nobody saved it), and saved now
    after, again = _parsed(history)
    assert after == 0 and again == sessions


def test_a_saved_rebuild_counts_what_the_refs_hold(tmp_path: Path) -> None:
    """The index a reader saved agrees with the refs: the count is every
    snapshot listed, and a snapshot taken afterwards is counted in."""
    history = _history(tmp_path, 200)
    _parsed(history)
    with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
        assert snap.store_stats().snapshots == len(snap.list(limit=None)) == 200
        with open(history.path(0, 0), "a") as handle:
            handle.write("one more\n")
        snap.snapshot("one more")
    counted, count = _parsed(history, "stats")
    assert count == 201 and counted <= 2


def test_calls_a_killed_agent_left_open_end_with_their_turn_in_the_index_as_in_a_rebuild(tmp_path: Path) -> None:
    """The index kept call by call says where each call never closed ends (its
    turn's end) as a rebuild from the refs says it; an index saved before it
    kept that (version 1, every such call read as open to now, so each later
    step of the session was the call's) is rebuilt once, never used."""
    import json
    import os

    from test_long_history import _a_killed_call_then_a_turn

    from snapshotter.engine.gitstore import historyindex

    ws = tmp_path / "ws"
    ws.mkdir()
    with _a_killed_call_then_a_turn(ws, tmp_path / "home", killed=3) as snap:
        store_path = snap.store_path
        kept = snap._engine_ok().catalog.index.current().sessions["killed-agent"]
    assert sorted(kept.ended_calls) == ["killed_0", "killed_1", "killed_2"]
    assert set(kept.open_calls) == set(kept.ended_calls)
    index_file = Path(store_path, "snapshotter", historyindex.FILE_NAME)
    saved = json.loads(index_file.read_text())
    os.remove(index_file)
    with Snapshotter(ws, home=tmp_path / "home", retention=Retention.unlimited()) as snap:
        rebuilt = snap._engine_ok().catalog.index.current().sessions["killed-agent"]
    assert rebuilt.as_json() == kept.as_json()
    del saved["sessions"]["killed-agent"]["ended_calls"]
    saved["version"] = 1
    index_file.write_text(json.dumps(saved))
    with Snapshotter(ws, home=tmp_path / "home", retention=Retention.unlimited()) as snap:
        read = snap._engine_ok().catalog.index.current().sessions["killed-agent"]
    assert read.as_json() == kept.as_json()
    assert json.loads(index_file.read_text())["version"] == historyindex.VERSION
