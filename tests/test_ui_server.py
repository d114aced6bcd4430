"""The server of ``snapshotter ui``, without a browser: its JSON is the command
line's, what it refuses it refuses with nothing changed, and it serves no file
and no secret the snapshots do not hold."""

from __future__ import annotations

import http.client
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import contents, run_command
from ui_helpers import CLAUDE, CODEX, SECRET, api, change, make_history, request, serving

from snapshotter import Snapshotter
from snapshotter.frontends.cli import cli
from snapshotter.frontends.page import ui_commands


@pytest.fixture
def history(ws: Path, home: Path) -> dict[str, str]:
    return make_history(ws, home)


def cli_document(ws: Path, home: Path, *argv: str) -> dict[str, object]:
    """What ``snapshotter ARGV --json`` prints, run in this process on a fresh Snapshotter."""
    out = io.StringIO()
    cli.run([*argv, "-C", str(ws), "--home", str(home), "--json"], cli.Console(out, io.StringIO(), False))
    document: dict[str, object] = json.loads(out.getvalue())
    return document


def test_the_page_json_is_the_command_lines_own(ws: Path, home: Path, history: dict[str, str]) -> None:
    newest = Snapshotter(ws, home=home).list(limit=1)[0].id
    (ws / "app.py").write_text("changed since\n" + (ws / "app.py").read_text())  # blame sees a line not snapshotted
    with serving(ws, home) as running:
        pairs = [
            (api(running, "log", before=f"{newest}~2", limit="3"), ("log", "--before", f"{newest}~2", "-n", "3")),
            (api(running, "sessions"), ("sessions",)),
            (api(running, "diff", **{"from": f"{newest}~4", "to": newest}), ("diff", f"{newest}~4", newest)),
            (api(running, "hunks", **{"from": "@~6", "to": "@"}), ("diff", "--hunks", "@~6", "@")),
            (api(running, "blame", path="app.py"), ("blame", "app.py")),
            (api(running, "show", ref=newest), ("show", newest)),
            (
                api(running, "turn", pre=history[CLAUDE], session=CLAUDE),
                ("turn", "hunks", history[CLAUDE], "--session", CLAUDE),
            ),
        ]
    for served, argv in pairs:
        assert served == cli_document(ws, home, *argv), argv
    assert len(pairs[0][0]["result"]) == 3  # type: ignore[arg-type]
    assert [h["path"] for h in pairs[-1][0]["result"]] == ["app.py", "app.py"]  # type: ignore[index]


def test_log_pages_add_up_to_the_history_and_never_all_at_once(ws: Path, home: Path, history: dict[str, str]) -> None:
    with serving(ws, home) as running:
        pages = [api(running, "log", limit="4")["result"]]
        while pages[-1] and len(pages) < 10:  # each page older than the oldest snapshot shown, as the page asks
            pages.append(api(running, "log", before=pages[-1][-1]["id"], limit="4")["result"])
        status, _, body = request(running, "GET", "/api/log", query={"limit": "100000"})
        refused, _, said = request(running, "GET", "/api/log", query={"before": "--all"})
    whole = cli_document(ws, home, "log", "-n", "0")["result"]
    assert [s["id"] for page in pages for s in page] == [s["id"] for s in whole]  # type: ignore[union-attr, index]
    assert status == 400 and b"limit" in body
    assert refused == 400 and b"before" in said


def test_a_request_without_the_token_or_with_a_foreign_host_changes_nothing(
    ws: Path, home: Path, history: dict[str, str]
) -> None:
    before = contents(ws)
    oldest = Snapshotter(ws, home=home).list(limit=None)[-1].id
    restore = {"ref": oldest, "dry_run": False}
    with serving(ws, home) as running:
        refusals = [
            request(running, "POST", "/api/restore", restore, token=None),
            request(running, "POST", "/api/restore", restore, token="x" * 43),
            request(running, "POST", "/api/restore", restore, host="attacker.example"),
            request(running, "POST", "/api/restore", restore, host=f"attacker.example:{running.port}"),
            request(running, "POST", "/api/restore", restore, headers={"Origin": "http://attacker.example"}),
            request(running, "POST", "/api/restore", restore, headers={"Sec-Fetch-Site": "cross-site"}),
            request(running, "POST", "/api/restore", restore, headers={"Content-Type": "text/plain"}),
            request(running, "GET", "/api/log", token=None),
            request(running, "GET", "/", token=None),
            request(running, "GET", "/events", token=None),
            request(running, "GET", "/page.js", host="localhost.attacker.example"),
        ]
        served = request(running, "GET", "/", query={"token": running.token})
        options = request(running, "OPTIONS", "/api/restore", headers={"Origin": "http://attacker.example"})
    assert [status for status, _, _ in refusals] == [403, 403, 421, 421, 403, 403, 415, 403, 403, 403, 421]
    assert all(json.loads(body)["error"] for _, _, body in refusals)
    assert contents(ws) == before
    assert len(Snapshotter(ws, home=home).list(limit=None)) == 10  # no safety snapshot either: nothing ran
    assert served[0] == 200 and b"snapshotter" in served[2]
    assert options[0] == 405
    for _, headers, _ in [*refusals, served, options]:
        assert not any(name.startswith("access-control-") for name in headers)  # no CORS, ever
    assert "default-src 'none'" in served[1]["content-security-policy"]


def test_it_listens_on_loopback_only(ws: Path, home: Path, history: dict[str, str]) -> None:
    with serving(ws, home) as running:
        assert running.server.server_address[0] == "127.0.0.1"
        assert running.url.startswith(f"http://127.0.0.1:{running.port}/?token=")
        outside = _an_address_not_loopback()
        if outside is None:
            pytest.skip("this machine has no address but loopback to try")
        with pytest.raises(OSError):
            socket.create_connection((outside, running.port), timeout=2).close()


def _an_address_not_loopback() -> str | None:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing address
        address: str = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") else address


def test_no_file_outside_the_workspace_and_no_secret_is_served(ws: Path, home: Path, history: dict[str, str]) -> None:
    outside = ws.parent / "outside.txt"
    outside.write_text("private outside the workspace\n")
    with serving(ws, home) as running:
        paths = ["/../outside.txt", "/page/../ui_server.py", "/ui_server.py", "/snapshotter/frontends/cli/cli.py"]
        paths += ["/%2e%2e/outside.txt", "/page.js/../../outside.txt", "//etc/passwd", "/api/../../outside.txt"]
        fetched = [request(running, "GET", path) for path in paths]
        blamed = [api(running, "blame", path=p) for p in ("../outside.txt", str(outside), ".env", "/etc/passwd")]
        newest = api(running, "log", limit="20")["result"]
        everything = [api(running, "diff", **{"from": s["id"], "to": "@"}) for s in newest]
        everything += [api(running, "hunks", **{"from": s["id"], "to": "@"}) for s in newest]
        everything += [api(running, "status"), *blamed]
    assert [status for status, _, _ in fetched] == [404] * len(paths)
    for document in blamed:
        assert document["error"]["type"] in ("PathNotFound", "InvalidInput")  # type: ignore[index]
    served = json.dumps(everything) + "".join(body.decode() for _, _, body in fetched)
    assert "private outside" not in served and SECRET not in served and "hunter2" not in served


def test_words_that_would_read_as_options_are_refused(ws: Path, home: Path, history: dict[str, str]) -> None:
    before = contents(ws)
    with serving(ws, home) as running:
        answers = [
            change(running, "restore", ref="--yes", dry_run=False),
            change(running, "restore", ref="@", paths="app.py", dry_run=False),
            change(running, "revert", before="-p", after="@", dry_run=False),
            change(running, "revert-turn", pre=history[CLAUDE], session="--reset", dry_run=False),
            change(running, "fork", ref="@", dest="/tmp/x"),
        ]
        status, _, _ = request(running, "GET", "/api/restore", query={"ref": "@"})
    assert [code for code, _ in answers] == [400, 400, 400, 400, 404]
    assert status == 404  # a change is never a GET
    assert contents(ws) == before
    assert ui_commands.CHANGES.keys() == {"restore", "revert", "revert-turn", "pin", "unpin"}


def test_changes_are_dry_runs_unless_the_page_says_go(ws: Path, home: Path, history: dict[str, str]) -> None:
    before = contents(ws)
    with serving(ws, home) as running:
        hunks = api(running, "turn", pre=history[CLAUDE], session=CLAUDE)["result"]
        plan = change(running, "revert-turn", pre=history[CLAUDE], session=CLAUDE, hunks=[hunks[0]["id"]])
        assert plan[0] == 200 and plan[1]["result"]["dry_run"] and plan[1]["result"]["reverted"] == ["app.py"]
        assert contents(ws) == before
        done = change(
            running, "revert-turn", pre=history[CLAUDE], session=CLAUDE, hunks=[hunks[0]["id"]], dry_run=False
        )
        assert done[0] == 200 and not done[1]["result"]["dry_run"]
    app = (ws / "app.py").read_text().splitlines()
    assert app[4] == "line 5" and app[30] == "line 31 by claude"  # one hunk back, the other kept
    assert (ws / "README.md").read_text().endswith("added by codex\n")  # the other session's turn stays
    assert (ws / "notes.txt").read_text() == "the person's notes\n"
    assert (ws / ".env").read_text() == SECRET + "\n"


def test_a_conflict_answers_409_with_the_plan(ws: Path, home: Path, history: dict[str, str]) -> None:
    (ws / "README.md").write_text("rewritten by the person\n")
    with serving(ws, home) as running:
        planned = change(running, "revert-turn", pre=history[CODEX], session=CODEX)
        status, document = change(running, "revert-turn", pre=history[CODEX], session=CODEX, dry_run=False)
    assert planned[0] == 200 and planned[1]["result"]["conflicts"][0]["path"] == "README.md"  # the page shows it
    assert status == 409
    assert document["error"]["type"] == "Conflict"
    assert document["error"]["result"]["conflicts"][0]["path"] == "README.md"
    assert (ws / "README.md").read_text() == "rewritten by the person\n"


def test_a_new_snapshot_reaches_the_page_as_an_event(ws: Path, home: Path, history: dict[str, str]) -> None:
    with serving(ws, home) as running:
        connection = http.client.HTTPConnection("127.0.0.1", running.port, timeout=20)
        connection.request("GET", f"/events?token={running.token}")
        stream = connection.getresponse()
        assert stream.status == 200 and stream.getheader("Content-Type") == "text/event-stream"
        first = _event(stream)
        (ws / "notes.txt").write_text("more notes\n")
        with Snapshotter(ws, home=home) as other:  # another instance, as a hook's process would be
            made = other.snapshot("from elsewhere").id
        started = time.monotonic()
        second = _event(stream)
        waited = time.monotonic() - started
        connection.close()
    assert first["newest"] != made and second["newest"] == made
    assert waited < 10


def _event(stream: http.client.HTTPResponse) -> dict[str, str]:
    while True:
        line = stream.readline().decode()
        if line.startswith("data: "):
            found: dict[str, str] = json.loads(line[6:])
            return found


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_the_ui_command_prints_its_url_and_stops_on_ctrl_c(
    ws: Path, home: Path, history: dict[str, str], stop: signal.Signals
) -> None:
    command = [sys.executable, "-m", "snapshotter", "-C", str(ws), "--home", str(home), "ui", "--no-open"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("snapshotter ui: http://127.0.0.1:") and "?token=" in line
        url = line.split()[-1]
        port = int(url.split(":")[2].split("/")[0])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", url[url.index("/?") :])
        assert connection.getresponse().status == 200
        server.send_signal(stop)  # the browser's connection still open, as a browser keeps it
        assert server.wait(timeout=20) == 0
    finally:
        server.kill()
        server.wait()


def test_a_port_taken_is_a_one_line_error(ws: Path, home: Path, history: dict[str, str]) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        done = run_command("-C", str(ws), "--home", str(home), "ui", "--port", str(taken.getsockname()[1]))
    finally:
        taken.close()
    assert done.returncode == 1
    assert done.stderr.startswith("snapshotter: cannot listen on 127.0.0.1:") and done.stderr.count("\n") == 1


def test_turn_revert_takes_a_pre_turn_ref_and_a_dry_run(ws: Path, home: Path, history: dict[str, str]) -> None:
    before = contents(ws)
    with Snapshotter(ws, home=home, session=CLAUDE) as snap:
        assert snap.turn_number(history[CLAUDE]) == 1
        planned = snap.revert_turn(1, dry_run=True)
        reset = snap.revert_turn(1, reset=True, dry_run=True)
    assert planned.dry_run and planned.reverted == ("app.py",)
    assert reset.dry_run and "app.py" in reset.written_paths
    shown = cli_document(ws, home, "turn", "revert", history[CLAUDE][:12], "--session", CLAUDE, "--dry-run")
    assert shown["result"]["reverted"] == ["app.py"]  # type: ignore[index]
    refused = cli_document(ws, home, "turn", "hunks", history[CODEX], "--session", CLAUDE)
    assert refused["error"]["type"] == "InvalidInput"  # type: ignore[index]
    assert contents(ws) == before
    assert os.path.exists(ws / ".env")


def test_a_malformed_request_is_a_one_line_refusal(
    ws: Path, home: Path, history: dict[str, str], capfd: pytest.CaptureFixture[str]
) -> None:
    with serving(ws, home) as running:
        raw = (
            f"POST /api/pin HTTP/1.1\r\nHost: 127.0.0.1:{running.port}\r\nX-Snapshotter-Token: {running.token}\r\n"
            "Content-Type: application/json\r\nContent-Length: many\r\n\r\n"
        )
        with socket.create_connection(("127.0.0.1", running.port), timeout=10) as raw_socket:
            raw_socket.sendall(raw.encode())
            answer = raw_socket.recv(65536).decode()
        broken = request(running, "POST", "/api/pin", headers={"Content-Type": "application/json"})
        with socket.create_connection(("127.0.0.1", running.port), timeout=10) as cut:
            cut.sendall(b"GET /api/log HTTP/1.1\r\nHost: 127.0.0.1")  # and goes away mid-header
        not_an_object = request(running, "POST", "/api/pin", "a JSON string, not an object")
    assert answer.startswith("HTTP/1.1 413 ")
    assert broken[0] == 413 and not_an_object[0] == 400
    assert "Traceback" not in capfd.readouterr().err


def test_a_bad_session_field_is_a_400_with_no_warning(
    ws: Path, home: Path, history: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """A session name the engine would refuse, on any read or change, is the page's
    mistake (400, one line), never a failure of the server (500 and a warning)."""
    bad_names = ["has space", "a/b", "x" * 65, "..", "-dash", "name.lock"]
    with caplog.at_level("WARNING"), serving(ws, home) as running:
        reads = [request(running, "GET", "/api/log", query={"session": name})[0] for name in bad_names]
        pre = history[CLAUDE]
        turns = [request(running, "GET", "/api/turn", query={"pre": pre, "session": n})[0] for n in bad_names]
        changes = [change(running, "pin", ref=history[CLAUDE], session=name)[0] for name in bad_names]
        not_a_string = change(running, "pin", ref=history[CLAUDE], session=["a"])[0]
        fine = request(running, "GET", "/api/log", query={"session": CLAUDE})[0]
    assert reads == turns == changes == [400] * len(bad_names)
    assert not_a_string == 400 and fine == 200
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []
