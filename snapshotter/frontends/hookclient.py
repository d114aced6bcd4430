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
socket (``wire``, whatever the length of the store's path) and it records it
in watch mode, in milliseconds. This module imports nothing of the engine for
that. Where none answers, the first hook starts one: a copy of this process
(``os.fork``, executing nothing), detached (its own session, no terminal, no
inherited streams, so the agent never waits on it), which serves the
workspace until its last agent session ends or it has been idle for half an
hour; meanwhile this call records the event itself. One that cannot start
says why in the hooks log, and is not started again before its back-off
(``watchstart``). Without a watcher (no watchdog, no ``fork``, Windows,
``SNAPSHOTTER_NO_WATCHER=1``) every call records its event itself: correct,
only slower.
"""

from __future__ import annotations

import json
import os
import sys
import time

from snapshotter import __version__
from snapshotter.engine.gitstore.location import canonical_workspace, find_workspace, store_path_for
from snapshotter.frontends.hooks import hooklog
from snapshotter.frontends.hooks.agents import AGENTS, SESSION_END, caller, event_name
from snapshotter.frontends.shared import collecting, wire
from snapshotter.frontends.shared.userfiles import snapshot_home

TYPE_CHECKING = False  # not ``typing``'s: every hook call pays for this module's imports
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from snapshotter.frontends.hooks.agents import Agent

BUDGET = 20
"""Seconds a hook call may take (installed with a timeout of 30, ``hookinstall``)."""
SHORT_BUDGET = 2
"""For an event the agent gives little time (Codex's SessionEnd: 3 s at most)."""
MAX_PAYLOAD = 8 << 20
CONNECT_TIMEOUT = 0.3
_store: list[str] = []
"""The store this call works on, once known: where a call that gives up logs it."""


def main(argv: list[str]) -> int:
    agent = AGENTS.get(argv[0]) if argv else None
    named = argv[1] if len(argv) > 1 else None
    answer = agent.answer if agent is not None else ""
    short = agent is not None and named is not None and named in agent.short_events
    disarm = _arm(SHORT_BUDGET if short else budget(), answer, argv[0] if argv else "?", named or "?")
    try:
        return _call(argv, agent, named, answer, short)
    finally:
        disarm()  # answered: an alarm during the interpreter's exit (handlers reset) would kill it, exit -14


def _call(argv: list[str], agent: Agent | None, named: str | None, answer: str, short: bool) -> int:
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
        taken = _to_watcher(store, agent.name, name, payload, project)
        if taken is None and agent.events[name] != SESSION_END and not short:
            _start_watcher(workspace, store)  # none listens
        if not taken:
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


def _arm(seconds: int, answer: str, agent: str, event: str) -> Callable[[], None]:
    """Give up after ``seconds``: log it, answer, and leave at once (``os._exit``:
    nothing half done is waited for; the store is crash-safe at any moment).
    Returns what disarms it."""

    def give_up(*_: object) -> None:
        where = _store[0] if _store else None
        hooklog.record(where, agent, event, f"gave up after {seconds} s: the bracket stays open", failed=True)
        _answer(answer)
        os._exit(0)

    if hasattr(os, "fork"):  # POSIX: an alarm, which no lock in another thread can hold up
        import signal

        signal.signal(signal.SIGALRM, give_up)
        signal.alarm(seconds)

        def disarm() -> None:
            signal.alarm(0)

        return disarm
    import threading

    timer = threading.Timer(seconds, give_up)
    timer.daemon = True
    timer.start()
    return timer.cancel


def _payload() -> dict[str, Any]:
    data = sys.stdin.buffer.read(MAX_PAYLOAD + 1)
    if len(data) > MAX_PAYLOAD:
        raise ValueError(f"the event is larger than {MAX_PAYLOAD} bytes")
    found = json.loads(data.decode("utf-8", "replace") or "{}")
    if not isinstance(found, dict):
        raise ValueError("the event is not a JSON object")
    return found


def _to_watcher(store: str, agent: str, name: str, payload: dict[str, Any], project: dict[str, str]) -> bool | None:
    """Whether the watcher serving ``store`` took the event (and logged what came of
    it); the caller records it itself where not: False where one listens but
    declined or did not answer in time (busy: starting another would be no
    use), None where none listens."""
    if os.environ.get("SNAPSHOTTER_NO_WATCHER", "") not in ("", "0"):
        return False
    key = wire.read_key(store)
    if key is None:
        return None
    try:
        channel = wire.connect(wire.address_of(store), key, CONNECT_TIMEOUT)
    except (FileNotFoundError, ConnectionRefusedError):  # none, or the socket a killed one left
        return None
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
    from snapshotter.facade.api import Snapshotter
    from snapshotter.frontends.hooks import hookevents
    from snapshotter.frontends.shared import config

    event = hookevents.parse(agent, name, payload, project)
    if event is None:
        return
    collecting.begin()  # what recording imported is loaded: the snapshot collects as usual
    settings = config.resolve(workspace, {})
    options = {**config.snapshotter_options(settings), "on_error": "raise"}
    options["lock_timeout"] = min(float(options.get("lock_timeout", 30.0)), budget() / 2)
    with Snapshotter(workspace, **options) as snap:
        done = hookevents.apply(snap.in_session(event.session), event)
        hooklog.record(snap.store_path, event.agent, event.name, done)


def _start_watcher(workspace: str, store: str) -> None:
    """A detached copy of this process serving ``workspace`` (see the module's
    docstring); nothing where it cannot be had, another hook is starting one, or
    the last ones failed and their back-off has not passed (``watchstart``)."""
    if not hasattr(os, "fork") or sys.platform == "win32":
        return
    if os.environ.get("SNAPSHOTTER_NO_WATCHER", "") not in ("", "0"):
        return
    import importlib.util

    if importlib.util.find_spec("watchdog") is None:
        return
    from snapshotter.frontends.hooks import watchstart

    if not watchstart.claim(store):
        return
    collecting.begin()  # the watcher (a copy of this process) lives on: it collects its garbage
    try:
        child = os.fork()
    except OSError:
        watchstart.released(store)
        return
    if child:
        os.waitpid(child, 0)  # the go-between leaves at once; the watcher is its child
        return
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        _serve_detached(workspace, store)
    finally:
        os._exit(0)


def _serve_detached(workspace: str, store: str) -> None:
    """The watcher's side of the fork: no terminal, no streams of the agent's; it
    gives up if it does not listen within ``watchstart.START_LIMIT`` seconds, and
    says why it could not start (or stopped) in the hooks log."""
    import signal

    from snapshotter.frontends.hooks import watchstart

    watchstart.starting(store, os.getpid())

    def too_slow(*_: object) -> None:
        _start_failed(store, f"it did not listen within {watchstart.START_LIMIT:.0f} s")
        os._exit(0)

    signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(int(watchstart.START_LIMIT))
    quiet = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(quiet, fd)
    os.closerange(3, 1024)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the standard streams, on /dev/null now
    sys.stdout = sys.stderr = open(1, "w", closefd=False)  # noqa: SIM115
    listening: list[bool] = []

    def ready() -> None:
        signal.alarm(0)
        listening.append(True)

    try:
        from snapshotter.frontends.cli import cli
        from snapshotter.frontends.shared import config
        from snapshotter.frontends.watch import watchserver

        settings = config.resolve(workspace, {})
        why = watchserver.serve(workspace, settings, cli.run, cli.Console, for_hooks=True, ready=ready)
    except BaseException as exc:  # noqa: BLE001 - said in the hooks log, whatever it was
        signal.alarm(0)
        _start_failed(store, f"{type(exc).__name__}: {exc}", stopped=bool(listening))
    else:
        if why is not None:  # another watcher serves the workspace already: no failure
            watchstart.released(store)


def _start_failed(store: str, reason: str, stopped: bool = False) -> None:
    """Record that the watcher could not start (or stopped on an error), and when the next hook tries again."""
    from snapshotter.frontends.hooks import watchstart

    found = watchstart.failed(store, reason)
    again = time.strftime("%H:%M:%S", time.localtime(found.retry_at))
    what = "stopped" if stopped else "could not start"
    outcome = f"{what}: {reason}; hook calls record their events themselves (slower); the next hook tries at {again}"
    hooklog.record(store, "watcher", "start", outcome, failed=True)
