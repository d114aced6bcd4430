"""``snapshotter hook AGENT [EVENT]``: one agent hook call, a few milliseconds, failing open.

The agent runs it with one event as JSON on stdin (``agents``, ``hookevents``).
It exits 0 and prints nothing (``{}`` for an agent that reads stdout as
JSON) whatever happens: a broken store, a full disk, a lock held too long or a
bug never blocks or fails the agent's tool. What went wrong goes to the hooks
log (``hooklog``), which ``snapshotter hooks status`` reads. Each call has a
time budget below the timeout the agent was given; past it the call gives up,
and the bracket it was making stays open, so the next snapshot still takes
the change.

Fast where a watcher serves the workspace: the event is handed to it over its
socket (``wire``) and it records it in watch mode, in milliseconds. This
module imports nothing of the engine for that. Where none answers, the first
hook starts one: a copy of this process (``os.fork``, executing nothing),
detached (its own session, no terminal, no inherited streams, so the agent
never waits on it), which serves the workspace until its last agent session
ends or it has been idle for half an hour; meanwhile this call records the
event itself. Without a watcher (no watchdog, no ``fork``, Windows,
``SNAPSHOTTER_NO_WATCHER=1``) every call does so: correct, only slower.
"""

from __future__ import annotations

import json
import os
import sys
import time

from snapshotter import __version__
from snapshotter.frontends import hooklog, wire
from snapshotter.frontends.agents import AGENTS, SESSION_END, caller, event_name
from snapshotter.frontends.userfiles import snapshot_home
from snapshotter.gitstore.location import canonical_workspace, find_workspace, store_path_for

TYPE_CHECKING = False  # not ``typing``'s: every hook call pays for this module's imports
if TYPE_CHECKING:
    from typing import Any

    from snapshotter.frontends.agents import Agent

BUDGET = 20
"""Seconds a hook call may take (installed with a timeout of 30, ``hookinstall``)."""
SHORT_BUDGET = 2
"""For an event the agent gives little time (Codex's SessionEnd: 3 s at most)."""
MAX_PAYLOAD = 8 << 20
CONNECT_TIMEOUT = 0.3
STARTING_STALE = 30.0
"""Seconds after which another hook's note that it is starting a watcher is taken as dead."""
_store: list[str] = []
"""The store this call works on, once known: where a call that gives up logs it."""


def main(argv: list[str]) -> int:
    agent = AGENTS.get(argv[0]) if argv else None
    named = argv[1] if len(argv) > 1 else None
    answer = agent.answer if agent is not None else ""
    short = agent is not None and named is not None and named in agent.short_events
    _arm(SHORT_BUDGET if short else budget(), answer, argv[0] if argv else "?", named or "?")
    store: str | None = None
    try:
        if agent is None:
            raise ValueError(f"no agent {argv[0] if argv else ''!r}; hooks know {', '.join(sorted(AGENTS))}")
        agent, named, payload = caller(agent, named, _payload(), os.environ)  # Copilot runs Claude's hooks too
        name = event_name(payload, named)
        folder = agent.folder(payload, os.environ)
        if name is None or name not in agent.events or folder is None:
            return _answer(answer)  # an event no role takes, or one that names no folder: nothing to record
        home_path = snapshot_home()
        workspace = find_workspace(canonical_workspace(os.path.abspath(folder)), home_path)
        store = store_path_for(workspace, home_path)
        _store.append(store)
        project = {var: os.environ[var] for var in agent.project_env if os.environ.get(var)}
        if not _to_watcher(store, agent.name, name, payload, project):
            if agent.events[name] != SESSION_END and not short:
                _start_watcher(workspace, store)
            _directly(workspace, agent, name, payload, project)
    except BaseException as exc:  # noqa: BLE001 - a hook fails open, whatever failed
        hooklog.record(store, argv[0] if argv else "?", named or "?", f"{type(exc).__name__}: {exc}", failed=True)
    return _answer(answer)


def budget() -> int:
    """``BUDGET``, or ``SNAPSHOTTER_HOOK_BUDGET`` seconds (kept below the agent's timeout)."""
    try:
        return max(1, min(int(os.environ.get("SNAPSHOTTER_HOOK_BUDGET", BUDGET)), BUDGET))
    except ValueError:
        return BUDGET


def _answer(answer: str) -> int:
    try:
        if answer:
            sys.stdout.write(answer + "\n")
        sys.stdout.flush()
    except OSError:
        pass  # the agent closed our stdout: nothing to tell it
    return 0


def _arm(seconds: int, answer: str, agent: str, event: str) -> None:
    """Give up after ``seconds``: log it, answer, and leave at once (``os._exit``:
    nothing half done is waited for; the store is crash-safe at any moment)."""

    def give_up(*_: object) -> None:
        where = _store[0] if _store else None
        hooklog.record(where, agent, event, f"gave up after {seconds} s: the bracket stays open", failed=True)
        _answer(answer)
        os._exit(0)

    if hasattr(os, "fork"):  # POSIX: an alarm, which no lock in another thread can hold up
        import signal

        signal.signal(signal.SIGALRM, give_up)
        signal.alarm(seconds)
    else:
        import threading

        timer = threading.Timer(seconds, give_up)
        timer.daemon = True
        timer.start()


def _payload() -> dict[str, Any]:
    data = sys.stdin.buffer.read(MAX_PAYLOAD + 1)
    if len(data) > MAX_PAYLOAD:
        raise ValueError(f"the event is larger than {MAX_PAYLOAD} bytes")
    found = json.loads(data.decode("utf-8", "replace") or "{}")
    if not isinstance(found, dict):
        raise ValueError("the event is not a JSON object")
    return found


def _to_watcher(store: str, agent: str, name: str, payload: dict[str, Any], project: dict[str, str]) -> bool:
    """Whether the watcher serving ``store`` took the event (and logged what came of
    it); False where none answered or it declined: the caller records it itself."""
    if os.environ.get("SNAPSHOTTER_NO_WATCHER", "") not in ("", "0"):
        return False
    key = wire.read_key(store)
    if key is None:
        return False
    try:
        channel = wire.connect(wire.address_of(store), key, CONNECT_TIMEOUT)
    except (OSError, EOFError, wire.Refused):
        return False
    with channel:
        request = {
            "kind": "hook",
            "version": __version__,
            "store": store,
            "agent": agent,
            "event": name,
            "payload": payload,
            "project": project,
            "env": wire.relevant_env(os.environ),
        }
        channel.send(json.dumps(request).encode())
        reply = json.loads(channel.recv(budget()))
    return "declined" not in reply


def _directly(workspace: str, agent: Agent, name: str, payload: dict[str, Any], project: dict[str, str]) -> None:
    """Record the event in this process, as the watcher would."""
    from snapshotter.api import Snapshotter
    from snapshotter.frontends import config, hookevents

    event = hookevents.parse(agent, name, payload, project)
    if event is None:
        return
    settings = config.resolve(workspace, {})
    options = {**config.snapshotter_options(settings), "on_error": "raise"}
    options["lock_timeout"] = min(float(options.get("lock_timeout", 30.0)), budget() / 2)
    with Snapshotter(workspace, **options) as snap:
        done = hookevents.apply(snap.in_session(event.session), event)
        hooklog.record(snap.store_path, event.agent, event.name, done)


def _start_watcher(workspace: str, store: str) -> None:
    """A detached copy of this process serving ``workspace`` (see the module's
    docstring); nothing where it cannot be had or another hook is starting one."""
    if not hasattr(os, "fork") or sys.platform == "win32":
        return
    if os.environ.get("SNAPSHOTTER_NO_WATCHER", "") not in ("", "0"):
        return
    import importlib.util

    if importlib.util.find_spec("watchdog") is None:
        return
    import tempfile

    note = os.path.join(tempfile.gettempdir(), f"snapshotter-{os.getuid()}-{os.path.basename(store)}.starting")
    try:
        if time.time() - os.stat(note).st_mtime < STARTING_STALE:
            return  # another hook is starting one right now
        os.unlink(note)
    except OSError:
        pass
    try:
        os.close(os.open(note, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        return
    child = os.fork()
    if child:
        os.waitpid(child, 0)  # the go-between leaves at once; the watcher is its child
        return
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        _serve_detached(workspace, note)
    finally:
        os._exit(0)


def _serve_detached(workspace: str, note: str) -> None:
    """The watcher's side of the fork: no terminal, no streams of the agent's."""
    import signal

    signal.alarm(0)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    quiet = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(quiet, fd)
    os.closerange(3, 1024)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the standard streams, on /dev/null now
    sys.stdout = sys.stderr = open(1, "w", closefd=False)  # noqa: SIM115
    from snapshotter.frontends import cli, config, watchserver

    try:
        settings = config.resolve(workspace, {})
        watchserver.serve(workspace, settings, cli.run, cli.Console, for_hooks=True)
    finally:
        try:
            os.unlink(note)
        except OSError:
            pass
