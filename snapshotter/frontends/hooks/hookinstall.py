"""``snapshotter hooks install|uninstall|status``: our entries in an agent's hooks file.

The file is the user's (or the agent's), so an install changes only our own
entries and keeps every other byte (``jsontext`` edits the text in place): it
adds one entry per event, after the user's own; an entry of ours that is there
already is rewritten where it stands (twice is once; an older version's entry
is upgraded). Uninstall takes out exactly our entries, and a group, an event
list or the ``hooks`` table that only they filled and that install wrote:
a file installed into and uninstalled from is the same file, byte for byte,
and one that install made goes.

Our entries are known by their command, exactly (``hookcommand``): a person's
hook in a group of ours stays, and so does a hook that only mentions
``snapshotter hook``. What the file must be for us to touch it (no link into a
``.git`` folder or out of the workspace, a small regular writable file, JSON
that JSON can write back) is ``settingsfile``'s: whatever cannot be kept is
refused in one line with nothing written.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from snapshotter.errors import InvalidInput
from snapshotter.frontends.hooks import hookcommand, jsontext, settingsfile
from snapshotter.frontends.hooks.agents import AGENTS, TOOL_ROLES, Agent

TIMEOUT_SECONDS = 30
"""What an installed hook may take before the agent gives up on it (our own
budget, ``hookclient.BUDGET``, is below it); Codex gives SessionEnd 3 s at most."""
SHORT_TIMEOUT_SECONDS = 3


@dataclass(frozen=True)
class HookFile:
    """What one hooks file holds of ours."""

    agent: str
    path: str
    exists: bool
    events: tuple[str, ...]
    """The events with an entry of ours."""
    command: str | None
    """Our entries' command, as written (the first found)."""
    program: str | None = None
    """The program that command runs (``hookcommand.runs`` says whether it can start)."""

    @property
    def complete(self) -> bool:
        return set(self.events) == set(AGENTS[self.agent].events)


def agent_of(name: str) -> Agent:
    if name not in AGENTS:
        raise InvalidInput(f"no agent {name!r}: snapshotter hooks into {', '.join(sorted(AGENTS))}")
    return AGENTS[name]


def hooks_path(agent: Agent, workspace: str, user: bool, environ: Mapping[str, str]) -> str:
    return agent.user_path(dict(environ)) if user else os.path.join(workspace, *agent.project_file.split("/"))


def default_command() -> str:
    """The command that runs this snapshotter from anywhere: the absolute path of
    the console script that is running, else this interpreter with ``-m``."""
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(script).lower() in ("snapshotter", "snapshotter.exe") and os.access(script, os.X_OK):
        return _quoted(script)
    return f"{_quoted(os.path.abspath(sys.executable))} -m snapshotter"


def _quoted(path: str) -> str:
    return f'"{path}"' if os.name == "nt" else shlex.quote(path)


def install(agent: Agent, path: str, command: str, dry_run: bool = False, within: str | None = None) -> tuple[str, str]:
    """Put our entries into the hooks file at ``path``; returns (its text before,
    after). ``within``: the workspace of a project install, which the file may
    not lead out of."""
    target = settingsfile.target(path, within)
    before = settingsfile.read(target, path)
    after = created(agent, command) if not before.strip() else _merged(agent, before, command, path)
    if not dry_run and after != before:
        settingsfile.write(target, path, after)
    return before, after


def uninstall(
    agent: Agent, path: str, dry_run: bool = False, within: str | None = None, command: str | None = None
) -> tuple[str, str]:
    """Take our entries out of the hooks file at ``path``; returns (its text
    before, after: "" where the file goes). ``command``: a program given to
    ``install --command`` whose entries an older version wrote."""
    target = settingsfile.target(path, within)
    before = settingsfile.read(target, path)
    if not before.strip():
        return before, before
    after = _stripped(agent, before, path, command)
    if after == _left_of_created(agent):
        after = ""  # nothing else was ever in it: the file was install's
    if not dry_run and after != before:
        if after:
            settingsfile.write(target, path, after)
        else:
            settingsfile.check_writable(target, path)
            os.unlink(target)
    return before, after


def inspect(agent: Agent, path: str) -> HookFile:
    """What the hooks file at ``path`` holds of ours (a file that cannot be read holds nothing)."""
    try:
        text = settingsfile.read(path, path)
        document = settingsfile.document(text, path) if text.strip() else {}
    except InvalidInput:
        return HookFile(agent.name, path, True, (), None)
    events, command, program = [], None, None
    hooks = document.get("hooks") if isinstance(document, dict) else None
    for event, listed in hooks.items() if isinstance(hooks, dict) else ():
        for entry in _entries(agent, listed):
            found = hookcommand.program_of(_command_of(agent, entry), agent.name, event)
            if found is not None:
                events.append(event)
                command, program = command or _command_of(agent, entry), program or found
                break
    return HookFile(agent.name, path, os.path.lexists(path), tuple(events), command, program)


def created(agent: Agent, command: str) -> str:
    """The file install writes where there is none."""
    table = {event: [_group(agent, event, command)] for event in agent.events}
    document = {"version": 1, "hooks": table} if agent.layout == "copilot" else {"hooks": table}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


# -- merging and taking out ----------------------------------------------------------------------


def _merged(agent: Agent, text: str, command: str, path: str) -> str:
    settingsfile.document(text, path)
    hooks = _hooks_of(text, path)
    if hooks is None:
        table = {event: [_group(agent, event, command)] for event in agent.events}
        return jsontext.add(text, jsontext.root(text), table, key="hooks")
    for event in agent.events:
        text = _put(agent, text, event, command, path)
    return text


def _put(agent: Agent, text: str, event: str, command: str, path: str) -> str:
    hooks = _hooks_of(text, path)
    assert hooks is not None
    listed = jsontext.member(text, hooks, event)
    if listed is None:
        return jsontext.add(text, hooks, [_group(agent, event, command)], key=event)
    if listed.value.kind != "array":
        raise InvalidInput(f"{path}: the hooks of {event} are not a JSON list; fix them, then install again")
    found = _ours(agent, text, listed.value, event, command)
    if not found:
        return jsontext.add(text, listed.value, _group(agent, event, command))
    entry = _entry(agent, event, command)
    if jsontext.decoded(text, found[0][2].value) != entry:
        text = jsontext.replace(text, found[0][2], entry)  # where it stands: an older one upgraded
    for place in reversed(found[1:]):  # twice is once
        text = _take_out(agent, text, event, place[:2], path)
    return text


def _stripped(agent: Agent, text: str, path: str, command: str | None) -> str:
    """``text`` without our entries, and without what only they filled and install wrote."""
    settingsfile.document(text, path)
    hooks = _hooks_of(text, path, lenient=True)  # no table: nothing of ours to take out
    if hooks is None:
        return text
    for index in reversed(range(len(jsontext.items(text, hooks)))):
        event_item = jsontext.items(text, hooks)[index]
        event = event_item.key or ""
        if event_item.value.kind != "array":
            continue
        found = _ours(agent, text, event_item.value, event, command)
        for place in reversed(found):
            text = _take_out(agent, text, event, place[:2], path)
        hooks = _hooks_of(text, path)
        assert hooks is not None
        listed = jsontext.items(text, hooks)[index].value
        if found and jsontext.made_empty(text, listed):
            text = jsontext.remove(text, hooks, index)
    hooks = _hooks_of(text, path)
    if hooks is not None and jsontext.made_empty(text, hooks):
        top = jsontext.root(text)
        text = jsontext.remove(text, top, [item.key for item in jsontext.items(text, top)].index("hooks"))
    return text


@cache
def _left_of_created(agent: Agent) -> str:
    """What taking our entries out of a file install made leaves."""
    return _stripped(agent, created(agent, "snapshotter"), "", None)


def _ours(
    agent: Agent, text: str, listed: jsontext.Value, event: str, command: str | None
) -> list[tuple[int, int | None, jsontext.Item]]:
    """Where our entries are in an event's list: (index in the list, index in that
    group's ``hooks`` or None for Copilot's flat list, the entry)."""
    found: list[tuple[int, int | None, jsontext.Item]] = []
    for index, item in enumerate(jsontext.items(text, listed)):
        if agent.layout == "copilot":
            if _is_ours(agent, text, item, event, command):
                found.append((index, None, item))
            continue
        inner = jsontext.member(text, item.value, "hooks") if item.value.kind == "object" else None
        if inner is None or inner.value.kind != "array":
            continue
        for position, entry in enumerate(jsontext.items(text, inner.value)):
            if _is_ours(agent, text, entry, event, command):
                found.append((index, position, entry))
    return found


def _is_ours(agent: Agent, text: str, item: jsontext.Item, event: str, command: str | None) -> bool:
    if item.value.kind != "object":
        return False
    entry = jsontext.decoded(text, item.value)
    return hookcommand.program_of(_command_of(agent, entry), agent.name, event, command) is not None


def _take_out(agent: Agent, text: str, event: str, place: tuple[int, int | None], path: str) -> str:
    """``text`` without the entry at ``place``, and without its group if that held only it."""
    hooks = _hooks_of(text, path)
    assert hooks is not None
    listed = jsontext.member(text, hooks, event)
    assert listed is not None
    index, position = place
    if position is None:
        return jsontext.remove(text, listed.value, index)
    group = jsontext.items(text, listed.value)[index]
    inner = jsontext.member(text, group.value, "hooks")
    assert inner is not None
    text = jsontext.remove(text, inner.value, position)
    hooks = _hooks_of(text, path)
    listed = jsontext.member(text, hooks, event) if hooks is not None else None
    assert listed is not None
    group = jsontext.items(text, listed.value)[index]
    rest = jsontext.decoded(text, group.value)
    if not rest.get("hooks") and set(rest) <= {"matcher", "hooks"}:
        text = jsontext.remove(text, listed.value, index)  # a group of ours alone
    return text


def _hooks_of(text: str, path: str, lenient: bool = False) -> jsontext.Value | None:
    """The document's ``hooks`` table (None: it has none; ``lenient``: nor one that is no table)."""
    top = jsontext.root(text)
    if top.kind != "object":
        raise InvalidInput(f"{path} does not hold a JSON object; nothing was written")
    members = jsontext.items(text, top)
    if [item.key for item in members].count("hooks") > 1:
        raise InvalidInput(f"{path} holds 'hooks' twice; fix it, then try again: nothing was written")
    found = next((item for item in members if item.key == "hooks"), None)
    if found is None:
        return None
    if found.value.kind != "object":
        if lenient:
            return None
        raise InvalidInput(f"{path}: its 'hooks' is not a JSON object; fix it, then try again: nothing was written")
    keys = [item.key for item in jsontext.items(text, found.value)]
    if len(set(keys)) < len(keys):
        raise InvalidInput(f"{path} names an event twice in 'hooks'; fix it, then try again: nothing was written")
    return found.value


# -- our entries -------------------------------------------------------------------------------


def _timeout(agent: Agent, event: str) -> int:
    seconds = SHORT_TIMEOUT_SECONDS if event in agent.short_events else TIMEOUT_SECONDS
    return seconds * 1000 if agent.timeout_ms else seconds


def _entry(agent: Agent, event: str, command: str) -> dict[str, Any]:
    if agent.layout == "copilot":
        return {
            "type": "command",
            "bash": hookcommand.line(command, agent.name, event, agent.answer),
            "powershell": hookcommand.line(command, agent.name, event, agent.answer, hookcommand.POWERSHELL),
            "timeoutSec": _timeout(agent, event),
        }
    shell = hookcommand.POWERSHELL if agent.name == "gemini" and os.name == "nt" else hookcommand.POSIX
    line = hookcommand.line(command, agent.name, event, agent.answer, shell)  # Gemini CLI on Windows: PowerShell
    entry: dict[str, Any] = {"type": "command", "command": line, "timeout": _timeout(agent, event)}
    if agent.name == "gemini":
        entry = {"name": f"snapshotter-{event}", **entry}
    return entry


def _group(agent: Agent, event: str, command: str) -> dict[str, Any]:
    if agent.layout == "copilot":
        return _entry(agent, event, command)
    group: dict[str, Any] = {}
    if agent.tool_matcher is not None and agent.events[event] in TOOL_ROLES:
        group["matcher"] = agent.tool_matcher
    group["hooks"] = [_entry(agent, event, command)]
    return group


def _entries(agent: Agent, listed: Any) -> list[Any]:
    """The entries of an event's list: Copilot's directly, the others' in groups."""
    if not isinstance(listed, list):
        return []
    if agent.layout == "copilot":
        return listed
    groups = [group.get("hooks") for group in listed if isinstance(group, dict)]
    return [entry for inner in groups if isinstance(inner, list) for entry in inner]


def _command_of(agent: Agent, entry: Any) -> str | None:
    if not isinstance(entry, dict) or entry.get("type") != "command":
        return None
    found = entry.get("bash" if agent.layout == "copilot" else "command")
    return found if isinstance(found, str) else None
