"""A folder with two agent sessions and a person in its history, and the page
server of ``snapshotter ui`` on it, for the page's tests."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from snapshotter import Snapshotter
from snapshotter.frontends.cli import cli
from snapshotter.frontends.page import ui_server

CLAUDE = "claude-code-1111aaaa"
CODEX = "codex-2222bbbb"
SECRET = "SECRET=hunter2-do-not-show"
APP = "".join(f"line {i}\n" for i in range(1, 41))


def make_history(ws: Path, home: Path) -> dict[str, str]:
    """Claude edits two far-apart lines of app.py in a turn, Codex adds a line to
    README.md in another, then the person writes notes.txt; ``.env`` is never
    recorded. Returns the pre-turn snapshot ids by session."""
    (ws / "app.py").write_text(APP)
    (ws / "README.md").write_text("# demo\n\nhello\n")
    (ws / ".env").write_text(SECRET + "\n")
    pre: dict[str, str] = {}
    with Snapshotter(ws, home=home) as snap:
        snap.snapshot("first")
        for session, agent in ((CLAUDE, "claude-code"), (CODEX, "codex")):
            view = snap.in_session(session)
            meta = {"agent": agent}
            pre[session] = view.begin_turn(f"{agent}: please tidy", metadata=meta).id
            view.tool_snapshot("t1", metadata=meta)
            if agent == "claude-code":
                lines = APP.splitlines(keepends=True)
                lines[4], lines[30] = "line 5 by claude\n", "line 31 by claude\n"
                (ws / "app.py").write_text("".join(lines))
            else:
                (ws / "README.md").write_text("# demo\n\nhello\nadded by codex\n")
            view.tool_done("t1", metadata=meta)
            view.end_turn(metadata=meta)
        (ws / "notes.txt").write_text("the person's notes\n")
        snap.snapshot("my notes")
    return pre


@contextmanager
def serving(ws: Path, home: Path) -> Iterator[ui_server.Serving]:
    with Snapshotter(ws, home=home) as snap:
        running = ui_server.start(snap, cli.run, cli.Console)
        try:
            yield running
        finally:
            running.stop()


def request(
    running: ui_server.Serving,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str | None = "",
    host: str | None = None,
    headers: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """One request; ``token=""`` sends the right one in the header, None none at all."""
    sent = {"Host": host or f"127.0.0.1:{running.port}", **(headers or {})}
    if token is not None:
        sent["X-Snapshotter-Token"] = token or running.token
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        sent.setdefault("Content-Type", "application/json")
    connection = http.client.HTTPConnection("127.0.0.1", running.port, timeout=30)
    try:
        connection.putrequest(method, path + (f"?{urlencode(query)}" if query else ""), skip_host=True)
        for key, value in sent.items():
            connection.putheader(key, value)
        if payload is not None:
            connection.putheader("Content-Length", str(len(payload)))
        connection.endheaders(payload)
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


def api(running: ui_server.Serving, name: str, **query: str) -> dict[str, Any]:
    status, _, body = request(running, "GET", f"/api/{name}", query=query)
    document: dict[str, Any] = json.loads(body)
    assert status in (200, 409), (status, body)
    return document


def change(running: ui_server.Serving, name: str, **body: Any) -> tuple[int, dict[str, Any]]:
    status, _, answer = request(running, "POST", f"/api/{name}", body)
    return status, json.loads(answer)
