"""One Snapshotter serving many sessions of a folder (``in_session``), and the
sessions a folder keeps (``sessions()``, ``open_turn()``): what a watcher or an
MCP server serving several agents at once relies on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from conftest import contents, write

from snapshotter import SessionInfo, Snapshotter


def test_views_share_one_store_and_the_listing_names_each_session(ws: Path, make: Callable[..., Snapshotter]) -> None:
    write(ws, {"a.txt": "a0\n", "b.txt": "b0\n"})
    snap = make()
    a, b = snap.in_session("agent-a"), snap.in_session("agent-b")
    assert (snap.session, a.session, b.session) == (None, "agent-a", "agent-b")
    a.begin_turn("fix a", metadata={"agent": "claude-code", "agent-session": "xyz"})
    a.tool_snapshot("t1")
    write(ws, {"a.txt": "a1\n"})
    a.tool_done("t1")
    a.end_turn()
    b.begin_turn("work on b")
    b.tool_snapshot("u1")
    write(ws, {"b.txt": "b1\n"})
    b.tool_done("u1")
    opened = b.open_turn()
    assert opened is not None and opened.label == "pre-turn:1" and opened.session == "agent-b"
    assert a.open_turn() is None and snap.open_turn() is None
    newest, older = snap.sessions()
    assert newest == SessionInfo("agent-b", None, None, 1, True, newest.last_activity)
    assert older == SessionInfo("agent-a", "claude-code", "xyz", 1, False, older.last_activity)
    assert newest.last_activity >= older.last_activity
    a.close()  # a view's close closes nothing: the others go on
    a.revert_turn()
    assert contents(ws) == {"a.txt": b"a0\n", "b.txt": b"b1\n"}
    b.end_turn()
    b.revert_turn()
    assert contents(ws) == {"a.txt": b"a0\n", "b.txt": b"b0\n"}
    assert [s.name for s in snap.sessions()] == ["agent-b", "agent-a"]
    assert snap.list(session="agent-a") == a.list(session="agent-a")


def test_a_folder_without_named_sessions_lists_none(ws: Path, make: Callable[..., Snapshotter]) -> None:
    write(ws, {"f.txt": "f\n"})
    snap = make()
    snap.begin_turn("anonymous")
    assert snap.sessions() == [] and snap.open_turn() is not None


def test_a_message_from_any_caller_is_shown_as_it_reads(ws: Path, make: Callable[..., Snapshotter]) -> None:
    """An agent may set a turn's message itself (the MCP server's begin_turn): an
    escape or a bidi control in it is shown, not obeyed, by ``log`` and ``show``."""
    import json
    import unicodedata

    from conftest import run_command

    write(ws, {"f.txt": "f\n"})
    snap = make()
    agent = snap.in_session("agent-a")
    agent.begin_turn("\u202eevil\x1b[2J\x07 turn", metadata={"note": "x\u2066y\x1b"})
    home = {"SNAPSHOTTER_HOME": str(Path(snap.store_path).parent.parent)}
    for args in (("--session", "agent-a", "log"), ("log",), ("show", "pre-turn:1")):
        shown = run_command(*args, cwd=ws, env=home).stdout
        obeyed = {ch for ch in shown if unicodedata.category(ch) in ("Cc", "Cf") and ch != "\n"}
        assert not obeyed and "\\u202eevil\\x1b[2J\\x07 turn" in shown, (args, shown)
    as_json = json.loads(run_command("--json", "show", "pre-turn:1", cwd=ws, env=home).stdout)["result"]
    assert as_json["message"] == "\u202eevil\x1b[2J\x07 turn"  # the data itself, unchanged, in --json
