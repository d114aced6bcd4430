"""``snapshotter watch``: keep one workspace watched and serve its command lines.

The watcher holds an open ``Snapshotter(workspace, watch=True)`` and listens on
the socket ``relay`` names (in the store folder, mode 0600, whatever the length
of its path: ``wire.reach``; a named pipe on Windows). Each command handed
over runs through the very code the command line runs (``cli.run``, given
here as ``run``), with buffers standing for the caller's stdout and stderr,
its terminal flags and its environment; the exit code and both texts go back. One command at a time: the watcher keeps
watching in between. A command is declined, so the caller runs it itself,
when the caller's version, store or resolved settings differ from the
watcher's.

Who may connect: the socket lives in the store folder, which only its owner
can enter; both sides prove they hold the key written in the store (mode
0600), which another user cannot read; on Linux the caller's uid
(``SO_PEERCRED``) must be the watcher's own. Only JSON crosses the socket.

The watcher stops on SIGTERM or Ctrl-C, or when its store disappears
(``snapshotter cleanup``), and removes its socket and key.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import secrets
import signal
import socket
import stat
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from snapshotter import __version__
from snapshotter.engine.gitstore.location import store_path_for
from snapshotter.engine.gitstore.transport import without_secrets
from snapshotter.frontends.shared import arguments, config, wire
from snapshotter.frontends.watch import relay

log = logging.getLogger("snapshotter")
HOOK_IDLE = 1800.0
"""Seconds without a call after which a watcher a hook started leaves."""

Runner = Callable[[Sequence[str], Any], int]
"""``cli.run``-like: (argv, console) -> exit code; ``console`` made by ``make_console``."""
ConsoleMaker = Callable[..., Any]


class Buffer(io.StringIO):
    """Text kept for the caller's stream, which is a terminal or not as the caller's is."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def peer_uid_allowed(sock: socket.socket, uid: int) -> bool:
    """Whether the process at the other end of a Unix socket runs as ``uid``
    (Linux ``SO_PEERCRED``; elsewhere the key alone decides)."""
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is None or sock.family != getattr(socket, "AF_UNIX", None):
        return True
    raw = sock.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i"))
    _pid, peer, _gid = struct.unpack("3i", raw)
    return bool(peer == uid)


def _peer_ok(conn: wire.Channel) -> bool:
    sock = conn.peer_socket()
    return sock is None or peer_uid_allowed(sock, os.getuid())


def _write_key(store: str) -> bytes:
    """A new random key in the store, mode 0600, written whole or not at all."""
    key = secrets.token_bytes(32)
    final = wire.key_path(store)
    temporary = f"{final}.{secrets.token_hex(8)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, key)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, final)
    return key


def _listen(address: str) -> wire.Listener:
    if sys.platform == "win32":
        return wire.Listener(address)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(address)  # a stale socket of a killed watcher
    saved = os.umask(0o177)
    try:
        listener = wire.Listener(address)
    finally:
        os.umask(saved)
    os.chmod(address, 0o600)
    found = os.lstat(address)
    if stat.S_IMODE(found.st_mode) != 0o600 or found.st_uid != os.getuid():
        listener.close()
        raise OSError(f"the socket {address} is not private (mode 0600, ours); not serving")
    return listener


class Server:
    """One watched workspace serving command lines, one at a time."""

    def __init__(
        self,
        workspace: str,
        settings: config.Resolved,
        snap: Any,
        run: Runner,
        console: ConsoleMaker,
        for_hooks: bool = False,
        ready: Callable[[], None] | None = None,
    ) -> None:
        self.workspace, self.snap, self.run, self.console = workspace, snap, run, console
        self.for_hooks = for_hooks
        self.ready = ready
        """Called once the socket listens."""
        """Started by an agent hook: it leaves when the last agent session ends, or after ``HOOK_IDLE``."""
        self.hook_sessions: set[str] = set()
        self.last_request = time.monotonic()
        self.store = store_path_for(workspace, settings.value("home"))
        self.settings = relay.settings_document(settings)
        self.address = wire.address_of(self.store)
        self.key = b""
        self.socket_inode = -1
        self.listener: wire.Listener | None = None
        self.busy = threading.Lock()
        self.stopping = threading.Event()
        self.served = 0

    def decline(self, request: Mapping[str, Any]) -> str | None:
        """Why this watcher may not run the request (the caller runs it), or None."""
        if request.get("version") != __version__:
            return f"version {request.get('version')} is not {__version__}"
        if request.get("store") != self.store:
            return "another store"
        args = relay.quiet_parse(request["argv"])
        if not relay.relayable(args, bool(request.get("interactive"))):
            return "not a command to serve"
        theirs = dict(request.get("env", {}))
        for name in wire.PLATFORM_ENV:
            if theirs.get(name) != os.environ.get(name):
                return f"another {name}"
        environ = self.environ(request)
        try:
            workspace, settings = config.locate(
                os.path.join(request["cwd"], args.workspace), arguments.flags(args), environ
            )
        except Exception as exc:  # the caller reports it the same way, itself
            return f"settings: {exc}"
        if workspace != self.workspace:
            return "another workspace"
        if relay.settings_document(settings) != self.settings:
            return "settings differ from the watcher's"
        return None

    def hook(self, request: Mapping[str, Any]) -> dict[str, str]:
        """Record one agent hook event (``hookclient``): ``{"done": ...}``,
        ``{"failed": ...}`` (both logged here), or ``{"declined": why}``, and the
        caller records it itself."""
        from snapshotter.frontends.hooks import hookevents, hooklog
        from snapshotter.frontends.hooks.agents import AGENTS

        why = self._declined_hook(request)
        if why is not None:
            return {"declined": why}
        agent, name = AGENTS[request["agent"]], str(request["event"])
        try:
            event = hookevents.parse(agent, name, request["payload"], request.get("project", {}))
            if event is None:
                return {"done": "nothing to record"}
            done = hookevents.apply(self.snap.in_session(event.session), event)
        except Exception as exc:  # the agent's tool goes on whatever failed here: the log says what
            failure = f"{type(exc).__name__}: {exc}"
            hooklog.record(self.store, agent.name, name, failure, failed=True)
            return {"failed": failure}
        hooklog.record(self.store, event.agent, event.name, f"{done} {hooklog.BY_WATCHER}")
        if event.role == "session-start":
            self.hook_sessions.add(event.session)
        elif event.role == "session-end":
            self.hook_sessions.discard(event.session)
            if self.for_hooks and not self.hook_sessions:
                self.stopping.set()  # the last agent session ended
        return {"done": done}

    def _declined_hook(self, request: Mapping[str, Any]) -> str | None:
        if request.get("version") != __version__ or request.get("store") != self.store:
            return "another version or store"
        theirs = dict(request.get("env", {}))
        if any(theirs.get(name) != os.environ.get(name) for name in wire.PLATFORM_ENV):
            return "another user environment"
        try:
            settings = config.resolve(self.workspace, {}, self.environ(request))
        except Exception as exc:  # the caller reports it the same way, itself
            return f"settings: {exc}"
        return None if relay.settings_document(settings) == self.settings else "settings differ from the watcher's"

    @staticmethod
    def environ(request: Mapping[str, Any]) -> dict[str, str]:
        own = {k: v for k, v in os.environ.items() if k not in wire.relevant_env(os.environ)}
        return {**own, **{str(k): str(v) for k, v in dict(request.get("env", {})).items()}}

    def handle(self, conn: wire.Channel) -> None:
        if not _peer_ok(conn):
            log.warning("refused a connection from another user")
            return
        wire.greet(conn, self.key, relay.HANDSHAKE_TIMEOUT * 5)
        request = json.loads(conn.recv(relay.HANDSHAKE_TIMEOUT * 5, limit=relay.MAX_MESSAGE))
        self.last_request = time.monotonic()
        if request.get("kind") == "hook":
            with self.busy, self.snap.cache_saved_after():  # answered first, then the cache saved
                conn.send(json.dumps(self.hook(request)).encode())
            return
        here = os.getcwd()
        with self.busy, self.snap.cache_saved_after():
            try:
                os.chdir(request["cwd"])  # relative paths in argv and settings mean the caller's
                why = self.decline(request)
            except OSError as exc:
                why = f"cannot enter {request['cwd']}: {exc}"
            try:
                self._answer(conn, request, why)
            finally:
                os.chdir(here)

    def _answer(self, conn: wire.Channel, request: Mapping[str, Any], why: str | None) -> None:
        conn.send(json.dumps({"accept": why is None, "why": why}).encode())
        if why is not None:
            sys.stderr.write(f"snapshotter watch: declined {_shown(request.get('argv'))}: {_hidden(why)}\n")
            return
        try:
            if conn.recv(relay.DECISION_TIMEOUT * 2, limit=64) != b'"go"':
                return
        except (OSError, EOFError):  # the caller gave up waiting and runs the command itself
            return
        out, err = Buffer(bool(request["stdout_tty"])), Buffer(bool(request["stderr_tty"]))
        console = self.console(out, err, bool(request["interactive"]), self.environ(request), self.snap)
        started = time.monotonic()
        try:
            code = self.run(request["argv"], console)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception:  # what an uncaught exception does to the command line: a traceback, exit 1
            err.write(traceback.format_exc())
            code = 1
        self.served += 1
        seconds = time.monotonic() - started
        sys.stderr.write(f"snapshotter watch: served {_shown(request['argv'])} (exit {code}, {seconds:.3f} s)\n")
        conn.send(json.dumps({"code": code, "out": out.getvalue(), "err": err.getvalue()}).encode())

    def accept_loop(self) -> None:
        assert self.listener is not None
        while not self.stopping.is_set():
            try:
                conn = self.listener.accept()
            except TimeoutError:
                continue
            except Exception as exc:  # a closed listener
                if not self.stopping.is_set():
                    log.debug("watch: a connection failed: %s", exc)
                    self.stopping.wait(0.01)
                continue
            try:
                with conn:
                    self.handle(conn)
            except Exception as exc:  # the caller went away; keep serving
                log.debug("watch: a request failed: %s", _hidden(str(exc)))
            if not os.path.isdir(self.store):
                self.stopping.set()

    def serve(self) -> None:
        from snapshotter.frontends.hooks import watchstart

        self.key = _write_key(self.store)
        try:
            with self.busy:  # where the socket is bound from inside its folder, no command changes folders meanwhile
                self.listener = _listen(self.address)
        except BaseException:
            self._remove()  # the key: no caller is to take it for a watcher's
            raise
        if sys.platform != "win32":
            self.socket_inode = os.lstat(self.address).st_ino
        watchstart.started(self.store)  # the failed starts before are over
        if self.ready is not None:
            self.ready()
        try:
            threading.Thread(target=self.accept_loop, name="snapshotter-watch", daemon=True).start()
            sys.stdout.write(f"watching {self.workspace}; serving its commands at {self.address}\n")
            sys.stdout.flush()
            while not self.stopping.wait(0.5):
                if not os.path.isdir(self.store):
                    sys.stderr.write("snapshotter watch: the store was removed; stopping\n")
                    break
                if self.for_hooks and time.monotonic() - self.last_request > _hook_idle():
                    break  # no agent has called for half an hour: the next hook starts another
        finally:
            self.stopping.set()
            with self.busy:  # a command running now finishes and is answered first
                self._remove()

    def _remove(self) -> None:
        if self.listener is not None:
            with contextlib.suppress(OSError):
                self.listener.close()
        with contextlib.suppress(OSError):
            if sys.platform != "win32" and os.lstat(self.address).st_ino == self.socket_inode:  # not a newer one's
                os.unlink(self.address)
        with contextlib.suppress(OSError):
            if wire.read_key(self.store) == self.key:  # not a newer watcher's
                os.unlink(wire.key_path(self.store))


def _hook_idle() -> float:
    """``HOOK_IDLE``, or ``SNAPSHOTTER_HOOK_IDLE`` seconds."""
    try:
        return float(os.environ.get("SNAPSHOTTER_HOOK_IDLE", HOOK_IDLE))
    except ValueError:
        return HOOK_IDLE


def _hidden(text: str) -> str:
    """``text`` with every URL's user part left out (it may be a token), as the
    command line shows remotes."""
    return without_secrets(text, None)


def _shown(argv: object) -> str:
    """A served command line as the watcher's log names it: every URL in it without its user part."""
    return _hidden(str(argv))


def serve(
    workspace: str,
    settings: config.Resolved,
    run: Runner,
    console: ConsoleMaker,
    for_hooks: bool = False,
    ready: Callable[[], None] | None = None,
) -> str | None:
    """Watch ``workspace`` and serve its commands (and agent hooks) until stopped;
    returns None, or why it did not start (a watcher already serves it); what
    else stops it from starting is raised. ``for_hooks``: started by a hook, it
    leaves when the last agent session ends or after ``HOOK_IDLE`` seconds
    without a call. ``ready`` is called once it listens."""
    store = store_path_for(workspace, settings.value("home"))
    address = wire.address_of(store)
    if os.path.isdir(store) and wire.probe(address, relay.HANDSHAKE_TIMEOUT):
        return f"a watcher already serves {workspace} (at {address})"
    from snapshotter.facade.api import Snapshotter

    snap = Snapshotter(workspace, watch=True, **config.snapshotter_options(settings))
    try:
        if not snap.watching:
            log.warning("watch mode is not running (see docs/watch.md); serving commands without it")
            if for_hooks:
                from snapshotter.frontends.hooks import hooklog

                hooklog.record(
                    store, "watcher", "start", "watch mode is not running (see docs/watch.md): serving without it"
                )
        os.makedirs(os.path.dirname(wire.key_path(store)), mode=0o700, exist_ok=True)
        server = Server(workspace, settings, snap, run, console, for_hooks, ready)
        stop = server.stopping.set
        if threading.current_thread() is threading.main_thread():
            for name in ("SIGTERM", "SIGINT", "SIGHUP"):
                if hasattr(signal, name):
                    signal.signal(getattr(signal, name), lambda *_: stop())
        server.serve()
    finally:
        snap.close()
    return None
