"""``snapshotter hooks install|uninstall|status``: our entries in an agent's hooks file.

The file is the user's (or the agent's) as much as ours, so an install merges:
it adds one entry per event, after the user's own, and changes nothing else
(no key dropped, reordered or rewritten). Twice is once: an entry of ours that
is there already is replaced where it stands. Uninstall removes only our
entries (and an event list, or the ``hooks`` table, that only they filled; a
file left empty goes), so a file installed into and uninstalled from reads as
before, byte for byte where it was written as the agents write theirs (JSON
with two-space indents).
A file that is not valid JSON is refused (``InvalidInput``) with nothing
written; every write is a temporary file renamed into place.

Our entries are known by their command: ``<snapshotter> hook <agent> <event>``.
The command is the absolute path of the ``snapshotter`` that ran the install
(an agent starts hooks without the user's virtualenv on its ``PATH``), or the
interpreter with ``-m snapshotter``; ``--command`` gives another.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from snapshotter.errors import InvalidInput, WorkspaceError
from snapshotter.frontends.agents import AGENTS, TOOL_ROLES, Agent

TIMEOUT_SECONDS = 30
"""What an installed hook may take before the agent gives up on it (our own
budget, ``hookclient.BUDGET``, is below it); Codex gives SessionEnd 3 s at most."""
SHORT_TIMEOUT_SECONDS = 3
_OURS = re.compile(r"(?:^|[\s/\\\"'])(?:snapshotter(?:\.exe)?[\"']?|-m\s+snapshotter)\s+hook\s+(?P<agent>[a-z-]+)\b")


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


def install(agent: Agent, path: str, command: str, dry_run: bool = False) -> tuple[str, str]:
    """Put our entries into the hooks file at ``path``; returns (its text before, after)."""
    before, document = _read(path)
    if agent.layout == "copilot":
        document = _copilot_document(agent, command)
    else:
        hooks = document.setdefault("hooks", {})
        if not isinstance(hooks, dict):
            raise InvalidInput(f"{path}: its 'hooks' is not a JSON object; fix it, then install again")
        for event in agent.events:
            _put(agent, hooks, event, command)
    after = _text(document, before)
    if not dry_run and after != before:
        _write(path, after)
    return before, after


def uninstall(agent: Agent, path: str, dry_run: bool = False) -> tuple[str, str]:
    """Take our entries out of the hooks file at ``path``; returns (its text before, after)."""
    before, document = _read(path)
    if not before:
        return before, before
    if agent.layout == "copilot":
        after = "" if _ours_in(agent, document) else before
    else:
        hooks = document.get("hooks")
        if isinstance(hooks, dict):
            for event in list(hooks):
                groups = hooks[event]
                if not isinstance(groups, list):
                    continue
                kept = [group for group in groups if not _is_ours(agent, group)]
                if len(kept) != len(groups):
                    if kept:
                        hooks[event] = kept
                    else:
                        del hooks[event]
            if not hooks:
                del document["hooks"]
        after = _text(document, before) if document else ""  # nothing left: the file was ours alone
    if not dry_run and after != before:
        if after:
            _write(path, after)
        else:
            os.unlink(path)
    return before, after


def inspect(agent: Agent, path: str) -> HookFile:
    """What the hooks file at ``path`` holds of ours (a file that cannot be read holds nothing)."""
    try:
        _, document = _read(path)
    except InvalidInput:
        return HookFile(agent.name, path, True, (), None)
    events, command = [], None
    for event, groups in _event_lists(agent, document):
        for group in groups:
            found = _command_of(agent, group)
            if found is not None and _is_ours(agent, group):
                events.append(event)
                command = command or found
                break
    return HookFile(agent.name, path, os.path.exists(path), tuple(events), command)


# -- reading and writing the file ----------------------------------------------------------------


def _read(path: str) -> tuple[str, dict[str, Any]]:
    """(the file's text, its JSON object); ("", {}) where there is none yet."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return "", {}
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {path} ({exc}); nothing was written") from None
    if not text.strip():
        return text, {}
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"{path} is not valid JSON ({exc}); fix it, then try again: nothing was written") from None
    if not isinstance(document, dict):
        raise InvalidInput(f"{path} does not hold a JSON object; nothing was written")
    return text, document


def _text(document: dict[str, Any], before: str) -> str:
    """``document`` as the file held it: its indentation, and its last newline."""
    if not document and not before.strip():
        return ""
    indent = _indent_of(before)
    text = json.dumps(document, indent=indent, ensure_ascii=False)
    return text + "\n" if before.endswith("\n") or not before else text


def _indent_of(text: str) -> int | str:
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            return lead if "\t" in lead else len(lead)
    return 2


def _write(path: str, text: str) -> None:
    folder = os.path.dirname(path) or "."
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise WorkspaceError(f"cannot write {path}: {folder} is not a folder")
    os.makedirs(folder, exist_ok=True)
    mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o644
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".snapshotter-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


# -- our entries -------------------------------------------------------------------------------


def _timeout(agent: Agent, event: str) -> int:
    seconds = SHORT_TIMEOUT_SECONDS if event in agent.short_events else TIMEOUT_SECONDS
    return seconds * 1000 if agent.timeout_ms else seconds


def _entry(agent: Agent, event: str, command: str) -> dict[str, Any]:
    line = f"{command} hook {agent.name} {event}"
    if agent.layout == "copilot":
        return {"type": "command", "bash": line, "powershell": f"& {line}", "timeoutSec": _timeout(agent, event)}
    entry: dict[str, Any] = {"type": "command", "command": line, "timeout": _timeout(agent, event)}
    if agent.name == "gemini":
        entry = {"name": f"snapshotter-{event}", **entry}
    return entry


def _group(agent: Agent, event: str, command: str) -> dict[str, Any]:
    group: dict[str, Any] = {}
    if agent.tool_matcher is not None and agent.events[event] in TOOL_ROLES:
        group["matcher"] = agent.tool_matcher
    group["hooks"] = [_entry(agent, event, command)]
    return group


def _put(agent: Agent, hooks: dict[str, Any], event: str, command: str) -> None:
    groups = hooks.setdefault(event, [])
    if not isinstance(groups, list):
        raise InvalidInput(f"the hooks of {event} are not a JSON list; fix them, then install again")
    made = _group(agent, event, command)
    for index, group in enumerate(groups):
        if _is_ours(agent, group):
            groups[index] = made  # twice is once: where it stood
            return
    groups.append(made)


def _copilot_document(agent: Agent, command: str) -> dict[str, Any]:
    return {"version": 1, "hooks": {event: [_entry(agent, event, command)] for event in agent.events}}


def _event_lists(agent: Agent, document: dict[str, Any]) -> list[tuple[str, list[Any]]]:
    hooks = document.get("hooks")
    if not isinstance(hooks, dict):
        return []
    return [(event, groups) for event, groups in hooks.items() if isinstance(groups, list)]


def _command_of(agent: Agent, group: Any) -> str | None:
    if not isinstance(group, dict):
        return None
    if agent.layout == "copilot":
        found = group.get("bash") or group.get("command")
        return found if isinstance(found, str) else None
    for entry in group.get("hooks", []) if isinstance(group.get("hooks"), list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("command"), str):
            return str(entry["command"])
    return None


def _is_ours(agent: Agent, group: Any) -> bool:
    """A group (or Copilot entry) whose command is ``... snapshotter hook <this agent> ...``."""
    command = _command_of(agent, group)
    found = _OURS.search(command) if command is not None else None
    return found is not None and found["agent"] == agent.name


def _ours_in(agent: Agent, document: dict[str, Any]) -> bool:
    return any(_is_ours(agent, group) for _, groups in _event_lists(agent, document) for group in groups)
