"""The agent CLIs snapshotter hooks into, as data: where each keeps its hooks,
what its events are called, and how it wants a hook to answer.

Checked against the real binaries (Claude Code 2.1.332, Codex 0.171.0, Gemini
CLI 0.61.0, Copilot CLI 1.0.102), each driven headless by a scripted model
server. What every hook does with an event is one of six *roles*:

- ``session-start``, ``session-end``: a session of the agent begins or ends;
- ``prompt``: the person's prompt was submitted (a turn begins);
- ``tool-before``, ``tool-after``: around each tool call, MCP tools included;
- ``stop``: the agent's turn ended.

Claude Code and Codex name each tool call (``tool_use_id``); Gemini CLI and
Copilot CLI do not, and run parallel calls whose after-hooks come in the order
they finish: their calls are paired by tool and arguments (``hookpairs``).
Codex names each turn too (``turn_id``).

A hook call is not always the agent's whose file holds it: Copilot CLI runs the
project's Claude Code hooks (``.claude/settings.json``) too, with Claude-shaped
payloads, so :func:`caller` gives each call to the agent that made it. And an
agent runs a project's and a user-level file both (Codex at once, Copilot one
after the other, each with the same payload): ``hookevents`` records such an
event once (its fingerprint).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not ``typing``'s: every hook call loads this table
if TYPE_CHECKING:
    from collections.abc import Mapping

SESSION_START, SESSION_END, PROMPT, TOOL_BEFORE, TOOL_AFTER, STOP = (
    "session-start",
    "session-end",
    "prompt",
    "tool-before",
    "tool-after",
    "stop",
)
TOOL_ROLES = frozenset({TOOL_BEFORE, TOOL_AFTER})


class Agent:
    """One agent CLI's hook conventions (a value: never changed once made). Not a
    dataclass: every hook call loads this table, and ``dataclasses`` costs it
    more than the rest of its imports."""

    __slots__ = (
        "name",
        "title",
        "project_file",
        "user_file",
        "user_dir_env",
        "events",
        "layout",
        "timeout_ms",
        "answer",
        "session_field",
        "call_id_field",
        "turn_id_field",
        "project_env",
        "tool_matcher",
        "short_events",
        "writers",
        "readers",
    )

    def __init__(
        self,
        *,
        name: str,
        title: str,
        project_file: str,
        user_file: str,
        user_dir_env: str | None,
        events: dict[str, str],
        layout: str,
        timeout_ms: bool,
        answer: str,
        session_field: str,
        call_id_field: str | None,
        turn_id_field: str | None = None,
        project_env: tuple[str, ...] = (),
        tool_matcher: str | None = "*",
        short_events: frozenset[str] = frozenset(),
        writers: dict[str, str] | None = None,
        readers: frozenset[str] = frozenset(),
    ) -> None:
        self.name = name
        """As the command line names it (``snapshotter hooks install NAME``) and its sessions start."""
        self.title = title
        self.project_file = project_file
        """Its hooks file, relative to the workspace."""
        self.user_file = user_file
        """Its user-level hooks file, ``~`` for the home folder (see :meth:`user_path`)."""
        self.user_dir_env = user_dir_env
        """An environment variable that moves the user-level folder (the file's first part)."""
        self.events = events
        """The agent's event name -> its role."""
        self.layout = layout
        """``nested``: ``{"hooks": {Event: [{"matcher", "hooks": [entry]}]}}`` in a file of
        the agent's own (Claude Code, Codex, Gemini CLI); ``copilot``: a file of
        ours, ``{"version": 1, "hooks": {event: [entry]}}``."""
        self.timeout_ms = timeout_ms
        """Whether the agent reads a hook's timeout in milliseconds (else seconds)."""
        self.answer = answer
        """What a hook prints on stdout: nothing, or ``{}`` where the agent reads stdout as JSON."""
        self.session_field = session_field
        self.call_id_field = call_id_field
        """The payload's tool call id (None: the agent gives none)."""
        self.turn_id_field = turn_id_field
        self.project_env = project_env
        """Environment variables naming the project folder the agent was started in."""
        self.tool_matcher = tool_matcher
        """The matcher that takes every tool (None: leave the matcher out)."""
        self.short_events = short_events
        """Events the agent gives little time (Codex: SessionEnd, at most 3 s)."""
        self.writers = writers or {}
        """A tool that writes the one file it names -> the argument naming it (a call's ``writes``)."""
        self.readers = readers
        """Tools that write no file (a call's ``writes`` is empty)."""

    def user_path(self, environ: Mapping[str, str]) -> str:
        """The user-level hooks file: ``user_file`` in ``environ``'s home, or, where
        ``user_dir_env`` is set, in the folder it names in place of the first
        folder below the home (``CODEX_HOME`` for ``~/.codex``)."""
        own_folder, _, rest = self.user_file.removeprefix("~/").partition("/")
        moved = environ.get(self.user_dir_env) if self.user_dir_env else None
        if moved:
            return os.path.join(moved, *rest.split("/"))
        home = environ.get("HOME") or os.path.expanduser("~")
        return os.path.join(home, own_folder, *rest.split("/"))

    def folder(self, payload: Mapping[str, object], environ: Mapping[str, str]) -> str | None:
        """Where the agent works: its project-folder variable, else the payload's ``cwd``."""
        found = next((environ[var] for var in self.project_env if environ.get(var)), None) or payload.get("cwd")
        return found if isinstance(found, str) and found else None


AGENTS: dict[str, Agent] = {
    agent.name: agent
    for agent in (
        Agent(
            name="claude-code",
            title="Claude Code",
            project_file=".claude/settings.json",
            user_file="~/.claude/settings.json",
            user_dir_env="CLAUDE_CONFIG_DIR",
            events={
                "SessionStart": SESSION_START,
                "UserPromptSubmit": PROMPT,
                "PreToolUse": TOOL_BEFORE,
                "PostToolUse": TOOL_AFTER,
                "PostToolUseFailure": TOOL_AFTER,
                "Stop": STOP,
                "StopFailure": STOP,
                "SessionEnd": SESSION_END,
            },
            layout="nested",
            timeout_ms=False,
            answer="",
            session_field="session_id",
            call_id_field="tool_use_id",
            project_env=("CLAUDE_PROJECT_DIR",),
            writers={
                "Write": "file_path",
                "Edit": "file_path",
                "MultiEdit": "file_path",
                "NotebookEdit": "notebook_path",
            },
            readers=frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead", "WebFetch", "WebSearch", "TodoWrite"}),
        ),
        Agent(
            name="codex",
            title="Codex",
            project_file=".codex/hooks.json",
            user_file="~/.codex/hooks.json",
            user_dir_env="CODEX_HOME",
            events={
                "SessionStart": SESSION_START,
                "UserPromptSubmit": PROMPT,
                "PreToolUse": TOOL_BEFORE,
                "PostToolUse": TOOL_AFTER,
                "Stop": STOP,
                "Interrupt": STOP,
                "SessionEnd": SESSION_END,
            },
            layout="nested",
            timeout_ms=False,
            answer="",
            session_field="session_id",
            call_id_field="tool_use_id",
            turn_id_field="turn_id",
            tool_matcher=None,
            short_events=frozenset({"SessionEnd", "Interrupt"}),
        ),
        Agent(
            name="gemini",
            title="Gemini CLI",
            project_file=".gemini/settings.json",
            user_file="~/.gemini/settings.json",
            user_dir_env=None,
            events={
                "SessionStart": SESSION_START,
                "BeforeAgent": PROMPT,
                "BeforeTool": TOOL_BEFORE,
                "AfterTool": TOOL_AFTER,
                "AfterAgent": STOP,
                "SessionEnd": SESSION_END,
            },
            layout="nested",
            timeout_ms=True,
            answer="{}",
            session_field="session_id",
            call_id_field=None,
            project_env=("GEMINI_PROJECT_DIR",),
            writers={"write_file": "file_path", "replace": "file_path"},
            readers=frozenset(
                {"read_file", "read_many_files", "glob", "search_file_content", "list_directory", "web_fetch"}
            ),
        ),
        Agent(
            name="copilot",
            title="Copilot CLI",
            project_file=".github/hooks/snapshotter.json",
            user_file="~/.copilot/hooks/snapshotter.json",
            user_dir_env="COPILOT_HOME",
            events={
                "sessionStart": SESSION_START,
                "userPromptSubmitted": PROMPT,
                "preToolUse": TOOL_BEFORE,
                "postToolUse": TOOL_AFTER,
                "postToolUseFailure": TOOL_AFTER,
                "agentStop": STOP,
                "sessionEnd": SESSION_END,
            },
            layout="copilot",
            timeout_ms=False,
            answer="",
            session_field="sessionId",
            call_id_field=None,
            project_env=("COPILOT_PROJECT_DIR",),
            tool_matcher=None,
            writers={"create": "path", "edit": "path", "Write": "path", "Edit": "path"},  # its own, Claude-shaped
            readers=frozenset({"view"}),
        ),
    )
}


def event_name(payload: dict[str, object], named: str | None) -> str | None:
    """The event a payload is for: as the hook's command line names it (every
    installed hook names its event: Copilot's payloads do not say), else as the
    payload does (``hook_event_name``)."""
    if named:
        return named
    found = payload.get("hook_event_name") or payload.get("hookName")
    return found if isinstance(found, str) else None


def caller(
    agent: Agent, named: str | None, payload: dict[str, object], environ: Mapping[str, str]
) -> tuple[Agent, str | None, dict[str, object]]:
    """The agent that made a hook call, with its event and payload in that agent's
    terms (else as given). Copilot CLI (1.0.102) runs the project's Claude Code
    hooks with ``COPILOT_CLI=1`` in their environment and Claude-shaped payloads
    naming Copilot's own session: such a call is Copilot's, as its own hooks
    would have it. Claude Code started by Copilot's shell tool inherits
    ``COPILOT_CLI``, but its hooks have ``CLAUDE_CODE_SESSION_ID`` (Claude Code
    sets it) naming the payload's own session: those stay Claude Code's."""
    if agent.name != "claude-code" or environ.get("COPILOT_CLI") != "1":
        return agent, named, payload
    session = payload.get(agent.session_field)
    if environ.get("CLAUDE_CODE_SESSION_ID") == session:
        return agent, named, payload
    copilot = AGENTS["copilot"]
    name = event_name(payload, named)
    role = agent.events.get(name) if name is not None else None
    mapped = next((event for event, found in copilot.events.items() if found == role), None)
    return copilot, mapped, {**payload, copilot.session_field: session}
