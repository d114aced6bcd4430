"""The command line's agent commands: ``hooks install|uninstall|status`` and
``sessions`` (the grammar is in ``arguments``; ``cli`` runs the rest; the
hooks themselves run ``snapshotter hook``, in ``hookclient``)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping

from snapshotter.errors import InvalidInput
from snapshotter.frontends.hooks.agents import AGENTS
from snapshotter.frontends.shared import rendering, wire

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hooks' files load with ``hooks``: ``sessions`` reads only the store
    from typing import Any

    from snapshotter.facade.api import Snapshotter
    from snapshotter.frontends.hooks import watchstart

Printer = Callable[[str], None]
TRUST_NOTES = {
    "codex": "Codex runs hooks it trusts only: trust them at its next start in this folder (codex asks), "
    "or run `codex exec --trust --dangerously-bypass-hook-trust ...`",
    "gemini": "Gemini CLI runs a folder's hooks only in a trusted folder (it asks when it starts there)",
    "copilot": "Copilot CLI runs a repository's hooks only in a trusted folder (--trust-folder, or it asks)",
}


def hooks(args: argparse.Namespace, workspace: str, environ: Mapping[str, str], say: Printer) -> tuple[Any, Any]:
    """``hooks install|uninstall AGENT [--user] [--dry-run] [--command CMD]``, ``hooks status``."""
    from snapshotter.frontends.hooks import hookinstall

    if args.action == "status":
        return status(workspace, environ, say)
    if args.agent is None:
        raise InvalidInput(f"hooks {args.action} takes the agent: one of {', '.join(AGENTS)}")
    agent = hookinstall.agent_of(args.agent)
    path = hookinstall.hooks_path(agent, workspace, args.user, environ)
    within = None if args.user else workspace  # a project's file may not lead out of it
    if args.action == "install":
        command = args.hook_command or hookinstall.default_command()
        before, after = hookinstall.install(agent, path, command, dry_run=args.dry_run, within=within)
        verb = "would install" if args.dry_run else "installed"
    else:
        before, after = hookinstall.uninstall(
            agent, path, dry_run=args.dry_run, within=within, command=args.hook_command
        )
        verb = "would remove" if args.dry_run else "removed"
        command = None
    changed = before != after
    body = {"agent": agent.name, "path": path, "action": args.action, "changed": changed, "dry_run": args.dry_run}
    if command is not None:
        body["command"] = command
    lines = [after.rstrip("\n")] if args.dry_run and after else []
    if not changed and args.action == "uninstall":
        lines.append(f"no snapshotter hooks for {agent.title} in {path}: nothing to remove")
    elif not changed:
        lines.append(f"{path}: nothing to change (snapshotter's {agent.title} hooks are installed already)")
    else:
        events = ", ".join(agent.events)
        lines.append(f"{verb} snapshotter's {agent.title} hooks ({events}) in {path}")
        if args.action == "install" and agent.name in TRUST_NOTES:
            lines.append(f"note: {TRUST_NOTES[agent.name]}")
    return body, lambda: _lines(say, lines)


def status(workspace: str, environ: Mapping[str, str], say: Printer) -> tuple[Any, Any]:
    """Which agents have our hooks here and for the user, whether their command
    runs, whether a watcher serves the folder, and the last failure logged."""
    from snapshotter.engine.gitstore.location import store_path_for
    from snapshotter.frontends.hooks import hookcommand, hookinstall, hooklog, watchstart
    from snapshotter.frontends.shared.userfiles import snapshot_home

    store = store_path_for(workspace, snapshot_home(environ))
    found: list[dict[str, Any]] = []
    for agent in AGENTS.values():
        for user in (False, True):
            info = hookinstall.inspect(agent, hookinstall.hooks_path(agent, workspace, user, environ))
            if info.events:
                found.append(
                    {
                        "agent": agent.name,
                        "user": user,
                        "path": info.path,
                        "events": list(info.events),
                        "complete": info.complete,
                        "command": info.command,
                        "runs": hookcommand.runs(info.program),
                    }
                )
    failure = hooklog.last_failure(store)
    watched = _watcher_answers(store)
    start = None if watched else watchstart.state(store)
    body = {
        "workspace": workspace,
        "installed": found,
        "watcher": watched,
        "watcher_start": _start_json(start),
        "last_failure": failure,
    }
    lines = [
        f"{item['agent']:<12} {'user' if item['user'] else 'here'}  {item['path']}"
        + ("" if item["complete"] else f"  (only {', '.join(item['events'])})")
        + ("" if item["runs"] else "  (its command does not run: install again)")
        for item in found
    ] or ["no agent hooks installed here or for this user (`snapshotter hooks install claude-code`)"]
    lines.append(f"watcher: {'serving this folder' if watched else _start_text(start, environ)}")
    lines.append(f"last failure: {failure}" if failure else "last failure: none logged")
    return body, lambda: _lines(say, lines)


def _watcher_answers(store: str) -> bool:
    """Whether a watcher serves ``store``: it answers, proving it holds the key, within a second."""
    key = wire.read_key(store)
    if key is None:
        return False
    try:
        wire.connect(wire.address_of(store), key, 1.0).close()
    except (OSError, EOFError, wire.Refused):
        return False
    return True


def _start_json(start: watchstart.StartState | None) -> dict[str, Any] | None:
    if start is None:
        return None
    body: dict[str, Any] = {"state": start.state, "since": _stamp(start.since)}
    if start.state == "starting":
        return {**body, "pid": start.pid or None}
    return {**body, "failures": start.failures, "reason": start.reason, "retry_at": _stamp(start.retry_at)}


def _start_text(start: watchstart.StartState | None, environ: Mapping[str, str]) -> str:
    """The watcher line of ``hooks status`` where none serves the folder."""
    if start is None:
        return f"none ({_no_watcher_why(environ) or 'the next hook starts one'})"
    if start.state == "starting":
        return f"starting since {_stamp(start.since)}" + (f" (process {start.pid})" if start.pid else "")
    times = "" if start.failures == 1 else f" ({start.failures} times in a row)"
    return (
        f"could not start at {_stamp(start.since)}{times}: {start.reason}; hook calls record their events "
        f"themselves (slower); the next hook tries again after {_stamp(start.retry_at)}"
    )


def _no_watcher_why(environ: Mapping[str, str]) -> str | None:
    """Why no hook here starts a watcher (as ``hookclient`` decides), or None."""
    import importlib.util
    import sys

    if not hasattr(os, "fork") or sys.platform == "win32":
        return "hooks start none on this system: each call records its event itself"
    if environ.get("SNAPSHOTTER_NO_WATCHER", "") not in ("", "0"):
        return "SNAPSHOTTER_NO_WATCHER is set: each call records its event itself"
    if importlib.util.find_spec("watchdog") is None:
        return "watchdog is not installed: each call records its event itself"
    return None


def _stamp(seconds: float) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(seconds))


def sessions(snap: Snapshotter, say: Printer) -> tuple[Any, Any]:
    """``sessions``: ``{"sessions": [{name, agent, agent_session_id, turns, open_turn, last_activity}]}``."""
    found = snap.sessions()
    rows = [
        f"{s.name:<52} {s.agent or '(none)':<12} {rendering.plural(s.turns, 'turn'):>9}"
        f"{'  (open)' if s.open_turn else '        '}  {s.last_activity.strftime('%Y-%m-%d %H:%M:%S')}"
        for s in found
    ]
    if rows:  # a header names the columns; an agent of (none): a session named by hand, no agent's hooks
        rows.insert(0, f"{'SESSION':<52} {'AGENT':<12} {'TURNS':>9}{'':8}  LAST ACTIVE")
    else:
        rows = ["no named sessions here yet"]
    return rendering.sessions_json(found), lambda: _lines(say, rows)


def newest_session_of(snap: Snapshotter, agent: str) -> str:
    """The name of ``agent``'s most recently active session here (``turn revert --agent``)."""
    for found in snap.sessions():
        if found.agent == agent or found.name.startswith(f"{agent}-"):
            return found.name
    raise InvalidInput(f"no {agent} session keeps history here; `snapshotter sessions` lists them")


def _lines(say: Printer, lines: list[str]) -> None:
    for line in lines:
        say(line)
