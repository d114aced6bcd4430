"""``snapshotter ui``: one workspace's history as a page on 127.0.0.1.

The standard library's threading HTTP server is enough for one local user.
What keeps it safe (SECURITY.md, "The local page"):

- it listens on 127.0.0.1 only;
- every request carries the random token the URL was printed with (``?token=``
  or the ``X-Snapshotter-Token`` header), compared in constant time;
- a ``Host`` header that is not this loopback address and port is refused, so a
  page on a name rebound to 127.0.0.1 (DNS rebinding) gets nothing;
- no CORS: no ``Access-Control-*`` header is ever sent, and ``OPTIONS`` is refused;
- reads are GET, changes are POST with a JSON body (``ui_commands`` names them),
  and a POST from another origin (``Origin``, ``Sec-Fetch-Site``) is refused;
- the only files served are the page's own assets, by fixed name; everything
  else the page sees is a command's JSON, which holds only what the snapshots
  track (their patches, a tracked file's blame), never an excluded secret.

A refusal is a 4xx answer, one JSON line, with nothing run. New snapshots reach
the page as server-sent events (``/events``): a filesystem watcher on the
store's refs (watchdog, where installed; else a poll twice a second) wakes it.
"""

from __future__ import annotations

import hmac
import html
import json
import logging
import os
import secrets
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, TextIO
from urllib.parse import parse_qsl, urlsplit

from snapshotter.frontends.page.ui_commands import CHANGES, READS, BadRequest, CommandLine, ConsoleMaker, Runner
from snapshotter.frontends.shared.failures import CommandFailed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.facade.api import Snapshotter

log = logging.getLogger("snapshotter")
ASSETS = {"/page.js": "text/javascript", "/page.css": "text/css"}
MAX_BODY = 1 << 20
HEARTBEAT = 15.0
HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}


def _asset(name: str) -> bytes:
    return resources.files("snapshotter.frontends.page").joinpath(name).read_bytes()


class Newest:
    """The store's newest snapshot, watched: ``wait`` returns when it changes.

    A filesystem watcher on the store (watchdog) only wakes the check; the
    check itself reads the refs, so a missed or spurious event costs nothing
    but a poll (twice a second without watchdog, every two seconds with it)."""

    def __init__(self, snap: Snapshotter) -> None:
        self.snap = snap
        self.changed = threading.Condition()
        self.stopping = threading.Event()
        self.wake = threading.Event()
        self.current = self._read()
        self.version = 0
        self._observer: Any = None
        self._thread = threading.Thread(target=self._loop, name="snapshotter-ui-newest", daemon=True)

    def _read(self) -> str | None:
        newest = self.snap.list(limit=1)
        return newest[0].id if newest else None

    def start(self) -> None:
        self._observer = _watch(self.snap.store_path, self.wake.set)
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()
        if self._observer is not None:
            self._observer.stop()
        with self.changed:
            self.changed.notify_all()

    def _loop(self) -> None:
        pause = 2.0 if self._observer is not None else 0.5
        while not self.stopping.is_set():
            self.wake.wait(pause)
            self.wake.clear()
            try:
                found = self._read()
            except Exception as exc:  # the store is busy or gone: the next wake tries again
                log.debug("ui: reading the newest snapshot failed: %s", exc)
                continue
            if found != self.current:
                with self.changed:
                    self.current, self.version = found, self.version + 1
                    self.changed.notify_all()

    def wait(self, seen: int, timeout: float) -> int:
        with self.changed:
            self.changed.wait_for(lambda: self.version != seen or self.stopping.is_set(), timeout)
            return self.version


def _watch(path: str, wake: Callable[[], None]) -> Any:
    """A watchdog observer calling ``wake`` when a ref of the store changes; None without watchdog."""
    try:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer
    except ImportError:
        return None

    class RefsChanged(FileSystemEventHandler):
        def on_any_event(self, event: Any) -> None:
            where = os.fsdecode(getattr(event, "dest_path", "") or event.src_path)
            if f"{os.sep}refs{os.sep}" in where or where.endswith("packed-refs"):
                wake()

    observer = Observer()
    try:
        observer.schedule(RefsChanged(), path, recursive=True)
        observer.daemon = True
        observer.start()
    except OSError as exc:  # out of inotify watches, say: polling still works
        log.debug("ui: cannot watch %s: %s", path, exc)
        return None
    return observer


def _length(header: str | None) -> int:
    try:
        return int(header or 0)
    except ValueError:
        return -1


class _Server(ThreadingHTTPServer):
    """The standard server, but a connection that fails (a browser gone away, a
    request cut off) is a debug line, not a traceback on stderr, and stopping
    never waits for a browser's idle keep-alive connection (Python 3.10 joined
    every handler thread on close, and one blocked reading hung Ctrl-C)."""

    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("ui: a connection failed", exc_info=True)


@dataclass(frozen=True)
class Serving:
    """A running page server: its URL (with the token) and how to stop it."""

    url: str
    token: str
    port: int
    server: ThreadingHTTPServer
    newest: Newest

    def stop(self) -> None:
        self.newest.stop()
        self.server.shutdown()
        self.server.server_close()


def start(snap: Snapshotter, run: CommandLine, console: ConsoleMaker, port: int = 0) -> Serving:
    """Serve ``snap``'s workspace on 127.0.0.1:``port`` (0: any free port) in a
    background thread, answering with the command line ``run`` on ``console``s
    (``cli.run``, ``cli.Console``); ``OSError`` if the port cannot be had."""
    token = secrets.token_urlsafe(32)
    newest = Newest(snap)
    runner = Runner(snap, run, console)
    ports: list[int] = []
    server = _Server(("127.0.0.1", port), _handler(token, runner, newest, snap.workspace, ports))
    server.daemon_threads = True
    bound = server.server_port
    ports.append(bound)
    newest.start()
    threading.Thread(target=server.serve_forever, name="snapshotter-ui", daemon=True).start()
    return Serving(f"http://127.0.0.1:{bound}/?token={token}", token, bound, server, newest)


def _handler(
    token: str, runner: Runner, newest: Newest, workspace: str, ports: list[int]
) -> type[BaseHTTPRequestHandler]:
    """The request handler; ``ports`` holds the port once the server has it."""
    page = _asset("index.html").decode()
    title = html.escape(os.path.basename(workspace.rstrip(os.sep)) or workspace)
    index = page.replace("{{token}}", token).replace("{{workspace}}", title).encode()

    class Handler(BaseHTTPRequestHandler):
        server_version = "snapshotter-ui"
        timeout = 120  # an idle connection is closed after two minutes (the event stream speaks every 15 s)
        sys_version = ""
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # the token must not reach a log
            log.debug("ui: %s", self.command)

        # -- the checks every request passes first ----------------------------------------

        def _refused(self) -> bool:
            port = ports[0]
            host = (self.headers.get("Host") or "").lower()
            if host not in (f"127.0.0.1:{port}", f"localhost:{port}"):
                return self._answer(421, {"error": "this server answers only to 127.0.0.1"})
            given = self.headers.get("X-Snapshotter-Token") or dict(parse_qsl(urlsplit(self.path).query)).get(
                "token", ""
            )
            if not hmac.compare_digest(given.encode(), token.encode()):
                return self._answer(403, {"error": "a missing or wrong token"})
            return False

        def _foreign(self) -> bool:
            port = ports[0]
            origin = self.headers.get("Origin")
            if origin is not None and origin not in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
                return True
            return self.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none")

        # -- methods --------------------------------------------------------------------

        def do_GET(self) -> None:
            if self._refused():
                return
            route = urlsplit(self.path)
            fields = dict(parse_qsl(route.query))
            if route.path in ("/", "/index.html"):
                self._send(200, "text/html; charset=utf-8", index)
            elif route.path in ASSETS:
                self._send(200, ASSETS[route.path] + "; charset=utf-8", _asset(route.path[1:]))
            elif route.path == "/events":
                self._events()
            elif route.path.startswith("/api/") and route.path[5:] in READS:
                self._command(READS, route.path[5:], fields)
            else:
                self._answer(404, {"error": "no such page"})

        def do_POST(self) -> None:
            if self._refused():
                return
            route = urlsplit(self.path)
            if self._foreign():
                self._answer(403, {"error": "a change must come from this page"})
                return
            if not route.path.startswith("/api/") or route.path[5:] not in CHANGES:
                self._answer(404, {"error": "no such change"})
                return
            if (self.headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
                self._answer(415, {"error": "a change is a JSON body"})
                return
            length = _length(self.headers.get("Content-Length"))
            if not 0 < length <= MAX_BODY:
                self._answer(413, {"error": "a change's body is 1 byte to 1 MiB"})
                return
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError:
                body = None
            if not isinstance(body, dict):
                self._answer(400, {"error": "the body is not a JSON object"})
                return
            self._command(CHANGES, route.path[5:], body)

        def _refuse_method(self) -> None:
            if not self._refused():
                self._answer(405, {"error": "GET reads, POST changes; nothing else"})

        do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse_method

        # -- answers --------------------------------------------------------------------

        def _command(self, table: Any, name: str, fields: dict[str, Any]) -> None:
            try:
                done = runner.run(table, name, fields)
            except BadRequest as exc:
                self._answer(400, {"error": str(exc)})
                return
            except Exception as exc:  # a bug below: one line to the page, never a traceback
                log.warning("snapshotter: ui: %s failed: %s: %s", name, type(exc).__name__, exc)
                self._answer(500, {"error": f"{name} failed: {type(exc).__name__}: {exc}"})
                return
            self._answer(200 if done.code == 0 else 409, done.document)

        def _events(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            for key, value in HEADERS.items():
                self.send_header(key, value)
            self.end_headers()
            seen = -1
            while not newest.stopping.is_set():
                if seen != newest.version:
                    seen = newest.version
                    message = f"event: snapshot\ndata: {json.dumps({'newest': newest.current})}\n\n"
                else:
                    message = ": still here\n\n"
                try:
                    self.wfile.write(message.encode())
                    self.wfile.flush()
                except OSError:  # the page went away
                    return
                newest.wait(seen, HEARTBEAT)
            self.close_connection = True

        def _answer(self, status: int, document: dict[str, Any]) -> bool:
            self._send(status, "application/json", json.dumps(document).encode())
            return True

        def _send(self, status: int, kind: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            for key, value in HEADERS.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

    return Handler


def serve(snap: Snapshotter, port: int, out: TextIO, run: CommandLine, console: ConsoleMaker) -> None:
    """``snapshotter ui``: serve until Ctrl-C (or SIGTERM, SIGHUP), printing the URL to ``out`` first.

    The page is not opened for you: the package starts no other program (a
    browser included); the URL is printed for a click or a copy."""
    try:
        serving = start(snap, run, console, port)
    except OSError as exc:
        raise CommandFailed("PortUnavailable", f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    stopping = threading.Event()
    if threading.current_thread() is threading.main_thread():  # as `snapshotter watch` does
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), lambda *_: stopping.set())
    try:
        out.write(f"snapshotter ui: {serving.url}\nopen it in a browser on this machine; Ctrl-C stops the server\n")
        out.flush()
        while not stopping.wait(0.5):  # wakes to let a signal's handler run
            pass
    finally:
        serving.stop()
