"""The MCP server, driven by the official SDK's own client over stdio."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import write

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
anyio = pytest.importorskip("anyio")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402


def _payload(result: Any) -> dict[str, Any]:
    assert not _is_error(result), _error_text(result)
    return json.loads("".join(getattr(block, "text", "") for block in result.content))


def _is_error(result: Any) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def _error_text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def _server(ws: Path, home: Path) -> StdioServerParameters:
    """``snapshotter mcp`` for ``ws``, its stores under ``home``."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "snapshotter", "mcp", "-C", str(ws)],
        env=dict(os.environ, SNAPSHOTTER_HOME=str(home)),
    )


def test_mcp_server_over_stdio(ws: Path, home: Path) -> None:
    write(ws, {"app.py": "print('v1')\n", ".env": "SECRET=1\n"})
    params = _server(ws, home)

    async def session_run() -> None:
        async with stdio_client(params) as (read, send), ClientSession(read, send) as session:
            await session.initialize()
            listed = await session.list_tools()
            names = {tool.name for tool in listed.tools}
            assert {"snapshot", "list_snapshots", "diff", "restore", "undo", "redo", "revert_turn"} <= names
            first = _payload(await session.call_tool("snapshot", {"message": "before edit", "label": "start"}))
            assert first["label"] == "start" and len(first["id"]) == 40
            (ws / "app.py").write_text("print('v2')\n")
            changed = _payload(await session.call_tool("diff", {"from_ref": "start"}))
            assert [(f["path"], f["additions"], f["deletions"]) for f in changed["files"]] == [("app.py", 1, 1)]
            assert "+print('v2')" in changed["files"][0]["patch"]
            plan = _payload(await session.call_tool("restore", {"ref": "start"}))
            assert plan["dry_run"] and plan["written_paths"] == ["app.py"]
            assert (ws / "app.py").read_text() == "print('v2')\n"
            done = _payload(await session.call_tool("restore", {"ref": "start", "dry_run": False}))
            assert done["written_paths"] == ["app.py"] and (ws / "app.py").read_text() == "print('v1')\n"
            listing = _payload(await session.call_tool("list_snapshots", {}))
            assert listing["snapshots"][-1]["id"] == first["id"]
            bad = await session.call_tool("restore", {"ref": "no-such-snapshot"})
            assert _is_error(bad) and "no snapshot labelled" in _error_text(bad)
            outside = await session.call_tool("restore", {"ref": "start", "files": ["../escape"], "dry_run": False})
            assert _is_error(outside)
            taken_back = _payload(await session.call_tool("undo", {}))  # undo takes the restore back
            assert taken_back["ok"] and (ws / "app.py").read_text() == "print('v2')\n"
            nothing = await session.call_tool("undo", {})  # did nothing: an error result with the reason
            assert _is_error(nothing) and "nothing to undo" in _error_text(nothing)
            assert (ws / ".env").read_text() == "SECRET=1\n"

    anyio.run(session_run)


def test_mcp_tools_for_turns_checkpoints_status_and_show(ws: Path, home: Path) -> None:
    write(ws, {"app.py": "v1\n"})
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "snapshotter", "-C", str(ws), "mcp"],  # a global option before the command, too
        env=dict(os.environ, SNAPSHOTTER_HOME=str(home)),
    )

    async def session_run() -> None:
        async with stdio_client(params) as (read, send), ClientSession(read, send) as session:
            started = await session.initialize()
            from snapshotter import __version__

            assert started.server_info.name == "snapshotter" and started.server_info.version == __version__
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert {"checkpoint", "begin_turn", "end_turn", "tool_snapshot", "status", "show"} <= names
            nothing = await session.call_tool("redo", {})
            assert _is_error(nothing) and "nothing to redo" in _error_text(nothing)
            early = await session.call_tool("end_turn", {})
            assert _is_error(early) and "call begin_turn first" in _error_text(early)
            begun = _payload(await session.call_tool("begin_turn", {}))
            assert begun["label"] == "pre-turn:1"
            assert _payload(await session.call_tool("tool_snapshot", {"call_id": "c1"}))["label"] == "tool:c1"
            (ws / "app.py").write_text("v2\n")
            changed = _payload(await session.call_tool("status", {}))
            assert [(c["path"], c["status"]) for c in changed["changes"]] == [("app.py", "modified")]
            ended = _payload(await session.call_tool("end_turn", {}))
            assert ended["label"] == "post-turn:1"
            assert _payload(await session.call_tool("status", {}))["changes"] == []
            assert _payload(await session.call_tool("show", {}))["id"] == ended["id"]  # @, the base
            assert _payload(await session.call_tool("show", {"ref": "@~2"}))["id"] == begun["id"]
            point = _payload(await session.call_tool("checkpoint", {"label": "mine"}))
            again = _payload(await session.call_tool("checkpoint", {"label": "mine"}))
            assert "warnings" not in point and "now names the new snapshot" in again["warnings"][0]
            missing = await session.call_tool("show", {"ref": "nope"})
            assert _is_error(missing) and "call list_snapshots to see them" in _error_text(missing)
            reverted = _payload(await session.call_tool("revert_turn", {}))
            assert reverted["reverted"] == ["app.py"] and (ws / "app.py").read_text() == "v1\n"
            undone = _payload(await session.call_tool("undo", {}))
            assert undone["ok"] is True

    anyio.run(session_run)


def test_mcp_sessions_brackets_and_a_three_way_revert(ws: Path, home: Path) -> None:
    """Two sessions through one server: each brackets its tool call; one session's
    revert_turn keeps the other's edit; a clash is an error result, nothing written."""
    write(ws, {"a.py": "a0\n", "b.py": "b0\n"})
    params = _server(ws, home)

    async def session_run() -> None:
        async with stdio_client(params) as (read, send), ClientSession(read, send) as session:
            await session.initialize()
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert {"revert", "tool_done"} <= names
            for who in ("A", "B"):
                assert _payload(await session.call_tool("begin_turn", {"session": who}))["session"] == who
            await session.call_tool("tool_snapshot", {"call_id": "a1", "session": "A"})
            (ws / "a.py").write_text("a1\n")
            await session.call_tool("tool_done", {"call_id": "a1", "session": "A"})
            await session.call_tool("tool_snapshot", {"call_id": "b1", "session": "B"})
            (ws / "b.py").write_text("b1\n")
            await session.call_tool("tool_done", {"call_id": "b1", "session": "B"})
            reverted = _payload(await session.call_tool("revert_turn", {"session": "A"}))
            assert reverted["reverted"] == ["a.py"] and (ws / "b.py").read_text() == "b1\n"
            assert (ws / "a.py").read_text() == "a0\n"
            mine = _payload(await session.call_tool("list_snapshots", {"session": "A", "limit": 50}))
            assert mine["snapshots"] and {s["session"] for s in mine["snapshots"]} == {"A"} and not mine["more"]
            newest = _payload(await session.call_tool("list_snapshots", {"limit": 1}))
            older = _payload(await session.call_tool("list_snapshots", {"before": newest["snapshots"][0]["id"]}))
            assert newest["more"] and older["snapshots"][0]["sequence"] == newest["snapshots"][0]["sequence"] - 1
            everything = await session.call_tool("list_snapshots", {"limit": 0})  # never "all": a page at most
            assert _is_error(everything) and "limit" in _error_text(everything)
            listed = _payload(await session.call_tool("sessions", {}))["sessions"]
            assert {s["name"]: s["turns"] for s in listed} == {"A": 1, "B": 1}
            assert all(s["open_turn"] is True and s["agent"] is None for s in listed)
            before = _payload(await session.call_tool("snapshot", {"message": "before"}))
            (ws / "a.py").write_text("agent\n")
            after = _payload(await session.call_tool("snapshot", {"message": "after"}))
            (ws / "a.py").write_text("person\n")
            clash = await session.call_tool("revert", {"before": before["id"], "after": after["id"]})
            assert _is_error(clash) and "nothing was written" in _error_text(clash)
            assert (ws / "a.py").read_text() == "person\n"

    anyio.run(session_run)


def test_mcp_push_goes_only_to_the_remote_the_server_was_started_with(ws: Path, home: Path, tmp_path: Path) -> None:
    import subprocess

    from conftest import GIT

    if GIT is None:
        pytest.skip("git makes the bare repository")
    write(ws, {"a.py": "a\n"})
    remote = tmp_path / "snaps.git"
    subprocess.run([GIT, "init", "-q", "--bare", str(remote)], check=True)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "snapshotter", "mcp", "-C", str(ws)],
        env=dict(os.environ, SNAPSHOTTER_HOME=str(home), SNAPSHOTTER_REMOTE=str(remote)),
    )

    async def session_run() -> None:
        async with stdio_client(params) as (read, send), ClientSession(read, send) as session:
            await session.initialize()
            await session.call_tool("snapshot", {"message": "one"})
            pushed = _payload(await session.call_tool("push", {}))
            assert pushed["snapshots_sent"] == 1
            elsewhere = await session.call_tool("push", {"remote": str(tmp_path / "exfiltrate.git")})
            assert _is_error(elsewhere) and "refused" in _error_text(elsewhere)
            assert not (tmp_path / "exfiltrate.git").exists()

    anyio.run(session_run)


def test_every_tool_and_parameter_is_described_and_annotated(
    ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an MCP client shows its model: each tool's description, each
    parameter's, and the hints (read-only, destructive) clients use to ask first.
    docs/integrations.md lists every tool."""
    from snapshotter.frontends.mcp import mcp_server
    from snapshotter.frontends.mcp.mcp_server import build_server

    monkeypatch.setenv("SNAPSHOTTER_HOME", str(home))
    monkeypatch.setattr(mcp_server, "watch_available", lambda: False)  # no watcher threads left behind
    server = build_server(str(ws), {})
    tools = anyio.run(server.list_tools)
    documented = (Path(__file__).parent.parent / "docs" / "integrations.md").read_text()
    for tool in tools:
        assert tool.description and len(tool.description) > 20, tool.name
        for name, schema in tool.input_schema["properties"].items():
            assert schema.get("description"), (tool.name, name)
        assert f"`{tool.name}`" in documented, f"{tool.name} is not in docs/integrations.md"
    hints = {tool.name: tool.annotations for tool in tools}
    read_only = ("status", "diff", "show", "list_snapshots", "sessions", "list_hunks", "blame")
    assert all(hints[name].read_only_hint for name in read_only)
    assert all(hints[name].destructive_hint for name in ("restore", "undo", "redo", "revert", "revert_turn"))
    assert not hints["snapshot"].read_only_hint and not hints["snapshot"].destructive_hint


def test_mcp_lists_and_reverts_hunks_and_blames(ws: Path, home: Path) -> None:
    body = [f"line {i}\n" for i in range(30)]
    write(ws, {"a.py": "".join(body)})
    params = _server(ws, home)

    async def session_run() -> None:
        async with stdio_client(params) as (read, send), ClientSession(read, send) as session:
            await session.initialize()
            start = _payload(await session.call_tool("snapshot", {"label": "start"}))
            changed = list(body)
            changed[1], changed[25] = "one\n", "twenty-five\n"
            (ws / "a.py").write_text("".join(changed))
            end = _payload(await session.call_tool("snapshot", {"label": "end"}))
            listed = _payload(await session.call_tool("list_hunks", {"before": start["id"], "after": end["id"]}))
            first, second = listed["hunks"]
            assert first["path"] == "a.py" and first["kind"] == "lines" and "+one" in first["patch"]
            done = _payload(
                await session.call_tool(
                    "revert_hunks", {"before": start["id"], "after": end["id"], "hunks": [second["id"]]}
                )
            )
            assert done["applied"] and (ws / "a.py").read_text().count("twenty-five") == 0
            stale = await session.call_tool("revert_hunks", {"before": start["id"], "hunks": ["a.py:000000000000"]})
            assert _is_error(stale) and "nothing was written" in _error_text(stale)
            blamed = _payload(await session.call_tool("blame", {"path": "a.py"}))
            whos = [run["origin"]["who"] for run in blamed["runs"]]
            assert whos == ["boundary", "person", "boundary", "workspace", "boundary"]  # the revert: not snapshotted

    anyio.run(session_run)
