"""Paging through a long history (issue #50): ``log`` (plain and in a session),
the MCP ``list_snapshots`` tool and the page's log requests read a page of it,
however deep, never the whole history; pages taken one after the other add up
to the whole log.

What a call costs is counted as snapshot commits parsed (``_Reads``, as
``test_long_history.py`` counts them), not timed.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from test_ref_reading import _Reads

from snapshotter import Retention, SnapshotInfo, Snapshotter
from snapshotter.frontends.cli import cli
from snapshotter.frontends.shared import rendering

SESSION = "claude-code-aa11"
TOTAL = 2000


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """2,000 snapshots of three sessions taking turns (18 snapshots a turn), the
    last one taken through the API as a real one is."""
    import longhistory

    root = tmp_path_factory.mktemp("paging")
    made = longhistory.History(root / "ws", root / "home", folders=4, files=10)
    made.build(TOTAL - 1)
    with Snapshotter(made.ws, home=made.home, retention=Retention.unlimited()) as snap:
        with open(made.path(3, 9), "a") as handle:
            handle.write("an edit\n")
        snap.snapshot("the last, taken as any is: the history index is saved with it")
    return made


@pytest.fixture(scope="module")
def everything(history: Any) -> list[SnapshotInfo]:
    with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
        return snap.list(limit=None)


def _store(history: Any) -> str:
    return Snapshotter(history.ws, home=history.home).store_path


def _cli(history: Any, *argv: str) -> tuple[int, str, int]:
    """(exit code, what ``snapshotter ARGV`` printed, snapshot commits it parsed), run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        reads = _Reads(_store(history), patch)
        code = cli.run([*argv, "-C", str(history.ws), "--home", str(history.home)], cli.Console(out, err, False))
    return code, out.getvalue() + err.getvalue(), reads.commits


def _ids(printed: str) -> list[str]:
    return [snapshot["id"] for snapshot in json.loads(printed)["result"]]


def _session_text(infos: list[SnapshotInfo], shown: int, base: str | None) -> str:
    """``log --session`` as it prints when given every one of the session's snapshots."""
    return "\n".join(rendering.session_log_lines(infos, shown, base)) + "\n"


# -- log ---------------------------------------------------------------------------------------


def test_log_before_a_ref_reads_a_page_however_deep(history: Any, everything: list[SnapshotInfo]) -> None:
    """``log --before REF -n 20`` lists the 20 snapshots older than REF, parsing
    about those 20 commits even near the oldest of 2,000; with ``--skip`` it
    leaves out the newest of them, as ``git log --skip``."""
    deep = everything[-40]
    code, printed, parsed = _cli(history, "log", "--before", deep.id, "-n", "20", "--json")
    assert code == 0, printed
    assert _ids(printed) == [info.id for info in everything[-39:-19]]
    assert parsed <= 30, parsed
    code, printed, _ = _cli(history, "log", "--before", deep.id[:12], "-n", "5", "--skip", "3", "--json")
    assert _ids(printed) == [info.id for info in everything[-36:-31]]
    code, printed, _ = _cli(history, "log", "-n", "4", "--skip", "2", "--json")
    assert _ids(printed) == [info.id for info in everything[2:6]]


def test_log_pages_by_before_add_up_to_the_whole_log(history: Any, everything: list[SnapshotInfo]) -> None:
    paged = _ids(_cli(history, "log", "-n", "500", "--json")[1])
    for _ in range(TOTAL // 500 + 1):  # bounded: a cursor that did nothing would loop forever
        page = _ids(_cli(history, "log", "-n", "500", "--before", paged[-1], "--json")[1])
        if not page:
            break
        paged += page
    assert paged == [info.id for info in everything]


def test_log_in_a_session_reads_a_page_not_the_sessions_history(history: Any, everything: list[SnapshotInfo]) -> None:
    """``log --session NAME`` (by turn) lists the newest 50 by default, and parses
    a few pages' worth of commits (the session's, the others' between them, back
    to the pre-turn that heads the oldest listed), not the 2,000; what it prints
    is what grouping the session's whole history prints."""
    mine = [info for info in everything if info.session == SESSION]
    base = everything[0].id
    code, printed, parsed = _cli(history, "log", "--session", SESSION)
    assert code == 0, printed
    assert printed == _session_text(mine, 50, base)
    assert parsed <= 300, parsed
    deep = mine[-60]
    older = [info for info in mine if info.sequence < deep.sequence]
    code, printed, parsed = _cli(history, "log", "--session", SESSION, "--before", deep.id, "-n", "20")
    assert code == 0, printed
    assert printed == _session_text(older, 20, base)
    assert parsed <= 150, parsed
    code, printed, _ = _cli(history, "log", "--session", SESSION, "-n", "7", "--skip", "30")
    assert printed == _session_text(mine[30:], 7, base)
    code, printed, _ = _cli(history, "log", "--session", SESSION, "-n", "20", "--json")
    assert _ids(printed) == [info.id for info in mine[:20]]


# -- the MCP tool --------------------------------------------------------------------------------


@pytest.fixture
def mcp_server(history: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from snapshotter.frontends.mcp import mcp_server

    monkeypatch.setenv("SNAPSHOTTER_HOME", str(history.home))
    monkeypatch.setattr(mcp_server, "watch_available", lambda: False)
    yield mcp_server.build_server(str(history.ws), {})


def _call(server: Any, name: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
    """(whether it failed, its JSON result or its error text)."""
    import anyio
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        result = anyio.run(server.call_tool, name, arguments)
    except ToolError as refused:  # arguments the schema refuses (over stdio: an error result)
        return True, str(refused)
    text = "".join(getattr(block, "text", "") for block in result.content)
    failed = bool(getattr(result, "is_error", None) or getattr(result, "isError", None))
    return failed, text if failed else json.loads(text)


def test_mcp_list_snapshots_pages_with_before_and_never_lists_all(
    history: Any, everything: list[SnapshotInfo], mcp_server: Any
) -> None:
    """``list_snapshots`` takes ``before`` (a ref) and says whether older ones
    remain; a page deep in 2,000 parses about its own commits; ``limit=0`` and a
    limit over a page are refused, not an answer of the whole history."""
    deep = everything[-30].id
    with pytest.MonkeyPatch.context() as patch:
        reads = _Reads(_store(history), patch)
        failed, found = _call(mcp_server, "list_snapshots", {"limit": 20, "before": deep})
    assert not failed, found
    assert [s["id"] for s in found["snapshots"]] == [info.id for info in everything[-29:-9]]
    assert found["more"] is True
    assert reads.commits <= 30, reads.total()
    for too_many in (0, 501, 100_000):
        failed, said = _call(mcp_server, "list_snapshots", {"limit": too_many})
        assert failed and "limit" in said, (too_many, said)
    failed, last = _call(mcp_server, "list_snapshots", {"limit": 50, "before": everything[-20].id})
    assert [s["id"] for s in last["snapshots"]] == [info.id for info in everything[-19:]]
    assert last["more"] is False
    mine = [info.id for info in everything if info.session == SESSION]
    failed, found = _call(mcp_server, "list_snapshots", {"limit": 10, "session": SESSION, "before": mine[5]})
    assert [s["id"] for s in found["snapshots"]] == mine[6:16]


# -- the page's log requests -----------------------------------------------------------------------


def test_the_pages_log_requests_page_by_the_oldest_id_shown(history: Any, everything: list[SnapshotInfo]) -> None:
    """The page asks for older snapshots ``before`` the oldest it shows: that
    page deep in 2,000 parses about its own commits, and the pages add up."""
    from snapshotter.frontends.page import ui_commands

    assert ui_commands.READS["log"]({"before": "abc1234", "limit": 20}) == ["log", "--before", "abc1234", "-n", "20"]
    assert ui_commands.READS["log"]({}) == ["log", "-n", "100"]
    with pytest.raises(ui_commands.BadRequest):
        ui_commands.READS["log"]({"before": "--all"})
    with Snapshotter(history.ws, home=history.home, retention=Retention.unlimited()) as snap:
        runner = ui_commands.Runner(snap, cli.run, cli.Console)
        with pytest.MonkeyPatch.context() as patch:
            reads = _Reads(_store(history), patch)
            answer = runner.run(ui_commands.READS, "log", {"before": everything[-30].id, "limit": "20"})
        assert [s["id"] for s in answer.document["result"]] == [info.id for info in everything[-29:-9]]
        assert reads.commits <= 30, reads.total()
        paged: list[str] = []
        for _ in range(TOTAL // 500 + 2):  # bounded: a cursor that did nothing would loop forever
            fields = {"limit": "500", **({"before": paged[-1]} if paged else {})}
            page = [s["id"] for s in runner.run(ui_commands.READS, "log", fields).document["result"]]
            if not page:
                break
            paged += page
    assert paged == [info.id for info in everything]


def test_log_in_a_session_heads_a_turn_begun_beyond_the_look_back_as_such(
    history: Any, everything: list[SnapshotInfo], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The look-back for the oldest listed snapshot's turn stops at
    ``LOOK_BACK_MOST``: past it, the heading says the turn began earlier (or
    there was none) rather than guess "outside any turn"."""
    from snapshotter.frontends.cli import logpages

    mine = [info for info in everything if info.session == SESSION]
    pre = next(k for k, info in enumerate(mine) if k > 10 and (info.label or "").startswith("pre-turn:"))
    argv = ("log", "--session", SESSION, "--before", mine[pre - 6].id, "-n", "1")
    code, printed, _ = _cli(history, *argv)
    assert code == 0 and printed.splitlines()[0].startswith("turn "), printed
    monkeypatch.setattr(logpages, "LOOK_BACK_MOST", 3)
    code, printed, _ = _cli(history, *argv)
    assert printed.splitlines()[0] == rendering.BEGUN_EARLIER, printed
    assert printed.splitlines()[1].split()[0] == mine[pre - 5].id[:12]


# -- blame -----------------------------------------------------------------------------------------


def test_blame_reads_a_bounded_stretch_unless_all_is_asked_for(history: Any, everything: list[SnapshotInfo]) -> None:
    """``blame`` reads at most 1,000 snapshots by default (a line older than that
    is a boundary at the 1,000th) and parses about as many commits; ``--limit 0``
    is the explicit way to follow lines back through the whole history, and its
    document says so (``limit`` 0), not a number nobody asked for."""
    code, printed, parsed = _cli(history, "blame", "d00/f000.txt", "--json")
    assert code == 0, printed
    found = json.loads(printed)["result"]
    assert (found["depth"], found["limit"], found["limited"]) == (1000, 1000, True)
    assert parsed <= 1100, parsed
    code, printed, _ = _cli(history, "blame", "d00/f000.txt", "--limit", "0", "--json")
    found = json.loads(printed)["result"]
    assert (found["depth"], found["limit"], found["limited"]) == (TOTAL, 0, False)
    assert found["runs"][0]["origin"]["snapshot_id"] == everything[-1].id
