"""One agent hook event, read from its payload and carried out on a Snapshotter.

What each role does (``agents``):

- ``prompt``: ``begin_turn`` with the prompt's first line (at most 72
  characters, never the whole prompt) as its message; a turn left open (the
  agent was killed before its stop hook) is ended first;
- ``tool-before``: ``tool_snapshot(id)``, in a turn (one is begun if none is
  open, e.g. hooks installed mid-session; for Codex, when the payload's
  ``turn_id`` is not the open turn's), with the file the call says it writes
  (a file tool's, where it is in the workspace; none for a tool that only
  reads: ``agents``), which tells its change from that of another session's
  call running at the same moment (``owners``);
- ``tool-after`` (a failed tool included): ``tool_done(id)``;
- ``stop``, ``session-end``: ``end_turn`` if a turn is open;
- ``session-start``: nothing to record.

Each event is recorded once, however many hooks files run it (a project's and
a user-level one; Copilot CLI's own and Claude Code's, which it runs too): an
event whose payload marks it as one moment of the agent's (a timestamp, a
call's or a turn's or a prompt's id) has a fingerprint, and one seen already
in its session is a copy, left alone (``hookpairs``). A payload without such a
mark (Claude Code's stop) has none: its agent runs one file's copy only, or
recording it twice changes nothing.

The session is ``<agent>-<the agent's session id>``: each agent session its own,
so one's revert keeps another's work. A subagent's tool calls come with its
parent's session id, so they count as the parent's calls. The workspace is the
folder the agent works in (its project-folder variable, else the payload's
``cwd``), never the hook's own working folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snapshotter.errors import InvalidInput
from snapshotter.frontends.hooks.agents import PROMPT, SESSION_END, STOP, TOOL_AFTER, TOOL_BEFORE, Agent
from snapshotter.frontends.hooks.hookpairs import Pairs, digest

MESSAGE_MAX = 72
ID_MAX = 64
"""Longest id (a tool call's, a turn's) kept as the payload gives it; a longer
one, or one with other characters than ``_ID``'s, is cut and hashed (``ident``)."""
AGENT_SESSION_MAX = 128
TOOL_MAX = 64
_ID = re.compile(r"[A-Za-z0-9._:-]+")
MARKS = ("timestamp", "tool_use_id", "turn_id", "prompt_id")
"""Payload fields that mark one moment of an agent's: an event that holds one has a fingerprint."""
_KEPT_FORMAT = frozenset("\u200c\u200d")
"""Format characters that join letters (some scripts need them), never turning text around."""


@dataclass(frozen=True)
class Event:
    """What one hook call asks for (see the module's docstring)."""

    agent: str
    name: str
    """The agent's own name for the event (``PreToolUse``)."""
    role: str
    session: str
    agent_session: str
    folder: str
    """Where the agent works: the workspace is found from it (``location.find_workspace``)."""
    call_id: str | None = None
    call_key: str | None = None
    """For agents that name no call: a digest of the tool and its arguments (``hookpairs``)."""
    turn_id: str | None = None
    message: str = ""
    tool: str | None = None
    fingerprint: str | None = None
    """What tells this event from any other of its session, and its copies from
    nothing (None: the payload holds no mark of its moment)."""
    writes: tuple[str, ...] | None = None
    """A tool call's files it says it writes, as absolute paths (None: it does not say)."""


def session_name(agent: Agent, agent_session: str) -> str:
    """``<agent>-<id>``, in the letters a session name may hold (at most 64); an
    id too long for that is cut and ends in a digest of the whole, so two long
    ids that begin alike stay two sessions."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", agent_session).strip(".-") or "unknown"
    name = f"{agent.name}-{cleaned}"
    if len(name) > 64:
        name = f"{name[:47].rstrip('.-')}-{_digest(agent_session)[:16]}"
    return name.replace("..", "-").removesuffix(".lock")


def ident(raw: str, limit: int = ID_MAX) -> str:
    """An id from a payload as a label or metadata may hold it: as given when it
    is short and plain (letters, digits, ``._:-``); else its plain letters, cut,
    then ``+`` and a digest of the whole (``+`` is never in a plain id, so the
    two kinds never meet; the same id always gives the same, so pairs pair)."""
    if len(raw) <= limit and _ID.fullmatch(raw):
        return raw
    plain = "".join(_ID.findall(raw))[: max(limit - 25, 0)]
    return f"{plain}+{_digest(raw)[:24]}"


def readable(text: str, limit: int) -> str:
    """``text`` as one line that reads as it is stored: control characters and
    line breaks become spaces, bidi and other format characters (which turn a
    line around, or hide in it) go, spaces are collapsed; at most ``limit``
    characters (a cut one ends in ``...``)."""
    kept = []
    for ch in text:
        kind = unicodedata.category(ch)
        if kind in ("Cc", "Zl", "Zp"):
            kept.append(" ")
        elif kind == "Cs":
            kept.append("\ufffd")  # a lone surrogate: not text that can be stored
        elif kind != "Cf" or ch in _KEPT_FORMAT:
            kept.append(ch)
    line = " ".join("".join(kept).split())
    return line if len(line) <= limit else line[: limit - 3].rstrip() + "..."


def first_line(prompt: object) -> str:
    """A prompt's first non-empty line, readable (``readable``), at most 72 characters: a turn's message."""
    text = prompt if isinstance(prompt, str) else ""
    return next((line for line in (readable(part, MESSAGE_MAX) for part in text.splitlines()) if line), "")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def parse(agent: Agent, name: str, payload: Mapping[str, Any], environ: Mapping[str, str]) -> Event | None:
    """The event a payload describes; None for an event no role takes (a
    subagent's start, a model request...). ``InvalidInput`` for a payload
    without the session or the folder it must name."""
    role = agent.events.get(name)
    if role is None:
        return None
    agent_session = payload.get(agent.session_field)
    if isinstance(agent_session, int) and not isinstance(agent_session, bool):
        agent_session = str(agent_session)  # a number names a session as well as its digits do
    if not isinstance(agent_session, str) or not agent_session:
        raise InvalidInput(f"{agent.title}'s {name} payload names no session ({agent.session_field})")
    folder = agent.folder(payload, environ)
    if folder is None:
        raise InvalidInput(f"{agent.title}'s {name} payload names no folder (cwd)")
    tool = payload.get("tool_name") if "tool_name" in payload else payload.get("toolName")
    arguments = payload.get("tool_input") if "tool_input" in payload else payload.get("toolArgs")
    call_id = payload.get(agent.call_id_field) if agent.call_id_field else None
    turn_id = payload.get(agent.turn_id_field) if agent.turn_id_field else None
    return Event(
        agent=agent.name,
        name=name,
        role=role,
        session=session_name(agent, agent_session),
        agent_session=ident(agent_session, AGENT_SESSION_MAX),
        folder=os.path.abspath(folder),
        call_id=ident(call_id) if isinstance(call_id, str) and call_id else None,
        call_key=digest(tool, arguments) if role in (TOOL_BEFORE, TOOL_AFTER) and agent.call_id_field is None else None,
        turn_id=ident(turn_id) if isinstance(turn_id, str) and turn_id else None,
        message=first_line(payload.get("prompt")) if role == PROMPT else "",
        tool=(readable(tool, TOOL_MAX) or None) if isinstance(tool, str) else None,
        fingerprint=fingerprint(role, agent_session, payload, arguments),
        writes=written(agent, tool, arguments, payload.get("cwd") or folder) if role == TOOL_BEFORE else None,
    )


def written(agent: Agent, tool: object, arguments: object, base: object) -> tuple[str, ...] | None:
    """The files a call of ``tool`` says it writes, absolute (relative ones are
    the agent's ``cwd``'s): none for a tool that only reads; None where the tool
    does not say (a shell command may write anything)."""
    if not isinstance(tool, str):
        return None
    if tool in agent.readers:
        return ()
    key = agent.writers.get(tool)
    named = arguments.get(key) if key is not None and isinstance(arguments, Mapping) else None
    if not isinstance(named, str) or not named or "\0" in named or not isinstance(base, str):
        return None
    return (os.path.normpath(os.path.join(base, named)),)


def fingerprint(role: str, agent_session: str, payload: Mapping[str, Any], arguments: object) -> str | None:
    """The digest of what makes an event itself: its session, role, the marks of
    its moment (``MARKS``; a timestamp as milliseconds, whether the payload gives
    a number or ISO text, as Copilot's own hooks and Claude-shaped ones do) and
    its tool's arguments (two calls may start in one millisecond). None where the
    payload has no mark."""
    marks = {key: payload[key] for key in MARKS if isinstance(payload.get(key), (str, int, float))}
    if not marks:
        return None
    if "timestamp" in marks:
        marks["timestamp"] = _milliseconds(marks["timestamp"])
    text = json.dumps([agent_session, role, marks, arguments], sort_keys=True, default=str)
    return _digest(text)[:32]


def _milliseconds(stamp: object) -> object:
    """A timestamp as milliseconds since 1970 (as given where it is neither a number nor ISO text)."""
    if isinstance(stamp, (int, float)):
        return round(stamp)
    from datetime import datetime

    try:
        return round(datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return stamp


def apply(snap: Any, event: Event) -> str:
    """Carry ``event`` out on ``snap`` (a Snapshotter working in the event's
    session); returns what was done, one line for the hooks log."""
    meta = {"agent": event.agent, "agent-session": event.agent_session}
    if event.fingerprint is not None and not Pairs(snap.store_path, event.session).first(event.fingerprint):
        return "a copy of an event recorded already (its hooks run from two files): left alone"
    if event.role == PROMPT:
        closed = _end_open_turn(snap, "ended by the next prompt")
        info = snap.begin_turn(event.message, metadata={**meta, **_turn(event)})
        return f"{closed}began {info.label}"
    if event.role == TOOL_BEFORE:
        began = _ensure_turn(snap, event, meta)
        call = event.call_id or Pairs(snap.store_path, event.session).opened(event.call_key or "")
        writes = _in_workspace(snap.workspace, event.writes)
        snap.tool_snapshot(call, f"before {event.tool or 'a tool'}", metadata={**meta, **_tool(event)}, writes=writes)
        return f"{began}tool:{call}"
    if event.role == TOOL_AFTER:
        closing = event.call_id or Pairs(snap.store_path, event.session).closed(event.call_key or "")
        if closing is None:
            return "no open call to close"
        snap.tool_done(closing, f"after {event.tool or 'a tool'}", metadata=meta)
        return f"tool-done:{closing}"
    if event.role in (STOP, SESSION_END):
        ended = _end_open_turn(snap, "ended" if event.role == STOP else "ended with the session")
        return ended.strip() or "no turn open"
    return "nothing to record"


def _in_workspace(workspace: str, paths: tuple[str, ...] | None) -> list[str] | None:
    """The workspace's paths among ``paths``, as named and as reached through
    symlinks (the tool writes there); None if one lies outside (or there are
    none to say): the call then says nothing, and is taken as writing anything."""
    if paths is None:
        return None
    found: list[str] = []
    for path in paths:
        inside = [p for p in dict.fromkeys((path, os.path.realpath(path))) if _within(workspace, p)]
        if not inside:
            return None
        found.extend(inside)
    return found


def _within(workspace: str, path: str) -> bool:
    rel = os.path.relpath(path, workspace)
    return rel != "." and rel != os.pardir and not rel.startswith(os.pardir + os.sep) and not os.path.isabs(rel)


def _turn(event: Event) -> dict[str, str]:
    return {"turn-id": event.turn_id} if event.turn_id else {}


def _tool(event: Event) -> dict[str, str]:
    return {"tool": event.tool} if event.tool else {}


def _end_open_turn(snap: Any, why: str) -> str:
    opened = snap.open_turn()
    if opened is None:
        return ""
    info = snap.end_turn(why)
    return f"{info.label} ({why}); "


def _ensure_turn(snap: Any, event: Event, meta: dict[str, str]) -> str:
    """A turn for a tool call: the open one, unless it is another turn of the
    agent's (Codex names each); else one begun here (its prompt was not seen)."""
    opened = snap.open_turn()
    if opened is not None and (event.turn_id is None or opened.metadata.get("turn-id") == event.turn_id):
        return ""
    closed = _end_open_turn(snap, "ended: the agent began another turn") if opened is not None else ""
    info = snap.begin_turn("(its prompt was not seen)", metadata={**meta, **_turn(event)})
    return f"{closed}began {info.label}; "
