"""What the page of ``snapshotter ui`` may ask, as command lines: each request
names one of a fixed set of reads and changes, and runs as the command line
would run it, with ``--json``, on the server's open Snapshotter. The page's JSON
is therefore the CLI's own document (``rendering``), and the two never disagree.

Nothing the page sends becomes an option: a ref that could read as one
(``-x``) is refused, paths follow ``--``, hunk ids are ``--hunk=ID``, and a
path for ``blame`` is written ``./PATH``. Which commands exist, and which of
them change the workspace, is this module's table, not the page's choice.
"""

from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from snapshotter.errors import InvalidInput
from snapshotter.options import check_session

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.facade.api import Snapshotter

_REF = re.compile(r"[0-9A-Za-z@][0-9A-Za-z@~^:._/+-]{0,255}")
"""An id, prefix, label, ``@`` or ``REF~N``: never a word argparse would take for an option."""
PAGE_SIZE_MAX = 500
Words = Callable[[Mapping[str, Any]], list[str]]
"""A request's fields -> the command line that answers it."""


class BadRequest(Exception):
    """A request the page should never send: a missing or malformed field."""


@dataclass(frozen=True)
class Answer:
    """A command's JSON document (as ``--json`` prints it) and its exit code."""

    code: int
    document: dict[str, Any]


def ref(fields: Mapping[str, Any], name: str) -> str:
    value = fields.get(name)
    if not isinstance(value, str) or not _REF.fullmatch(value):
        raise BadRequest(f"{name}: expected a snapshot ref")
    return value


def _optional_ref(fields: Mapping[str, Any], name: str) -> list[str]:
    return [ref(fields, name)] if fields.get(name) not in (None, "") else []


def _count(fields: Mapping[str, Any], name: str, default: int, most: int) -> int:
    value = fields.get(name, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise BadRequest(f"{name}: expected a whole number") from None
    if not 0 <= number <= most:
        raise BadRequest(f"{name}: expected 0 to {most}")
    return number


def _page(fields: Mapping[str, Any]) -> int:
    """A page of the log: 1 to ``PAGE_SIZE_MAX`` snapshots (never the whole history)."""
    return max(1, _count(fields, "limit", 100, PAGE_SIZE_MAX))


def _before(fields: Mapping[str, Any]) -> list[str]:
    """A page of the log older than ``before`` (the oldest snapshot the page
    shows): each page costs a page, however far down the history it is."""
    return ["--before", ref(fields, "before")] if fields.get("before") not in (None, "") else []


def _strings(fields: Mapping[str, Any], name: str) -> list[str]:
    value = fields.get(name) or []
    if not isinstance(value, list) or not all(isinstance(v, str) and v and "\x00" not in v for v in value):
        raise BadRequest(f"{name}: expected a list of strings")
    return list(value)


def session_field(fields: Mapping[str, Any]) -> str | None:
    """The request's ``session``, absent or empty for none. A name the engine would
    refuse is the page's mistake (``BadRequest``, a 400), on a read as on a change,
    never a failure of the server: the rule is the engine's own ``check_session``."""
    value = fields.get("session")
    if value in (None, ""):
        return None
    try:
        return check_session(value)
    except InvalidInput:
        raise BadRequest("session: expected a session name (letters, digits, '.', '_', '-')") from None


def _session(fields: Mapping[str, Any]) -> list[str]:
    name = session_field(fields)
    return [] if name is None else [f"--session={name}"]


def _dry(fields: Mapping[str, Any]) -> list[str]:
    return ["--dry-run"] if fields.get("dry_run", True) is not False else []


def _hunks(fields: Mapping[str, Any]) -> list[str]:
    return [f"--hunk={hunk}" for hunk in _strings(fields, "hunks")]


def _blame_path(fields: Mapping[str, Any]) -> list[str]:
    path = fields.get("path")
    if not isinstance(path, str) or not path or "\x00" in path:
        raise BadRequest("path: expected a path in the folder")
    return ["blame", path if not path.startswith("-") else f"./{path}"]


def _restore(fields: Mapping[str, Any]) -> list[str]:
    dry = _dry(fields)
    return ["restore", ref(fields, "ref"), *(dry or ["--yes"]), "--", *_strings(fields, "paths")]


READS: dict[str, Words] = {
    "sessions": lambda q: ["sessions"],
    "log": lambda q: ["log", *_before(q), "-n", str(_page(q))],
    "show": lambda q: ["show", ref(q, "ref")],
    "diff": lambda q: ["diff", ref(q, "from"), *_optional_ref(q, "to")],
    "hunks": lambda q: ["diff", "--hunks", ref(q, "from"), *_optional_ref(q, "to")],
    "turn": lambda q: ["turn", "hunks", ref(q, "pre"), *_session(q)],
    "blame": _blame_path,
    "status": lambda q: ["status"],
}
"""GET /api/NAME: reads, which change nothing."""

CHANGES: dict[str, Words] = {
    "restore": _restore,
    "revert": lambda b: ["revert", ref(b, "before"), ref(b, "after"), *_hunks(b), *_dry(b)],
    "revert-turn": lambda b: ["turn", "revert", ref(b, "pre"), *_hunks(b), *_dry(b)],
    "pin": lambda b: ["pin", ref(b, "ref")],
    "unpin": lambda b: ["unpin", ref(b, "ref")],
}
"""POST /api/NAME: changes; each is a dry run unless the body says ``"dry_run": false``
(``pin`` and ``unpin`` write nothing in the workspace). A change made on the page
is the person's: it runs in no session (a ``session`` field is checked, not used),
so what it writes is filed in the person's lane and the person's ``undo`` takes it
back; a turn to revert is named by its pre-turn snapshot, whose session it is."""


CommandLine = Callable[[Sequence[str], Any], int]
"""``cli.run``: runs one command line on a console, returns its exit code."""
ConsoleMaker = Callable[..., Any]
"""``cli.Console``: (out, err, interactive, shared=Snapshotter) -> a console."""


class Runner:
    """Runs the page's commands one at a time (the command line keeps its console
    in a module global) on ``snap``, in its workspace: ``run`` and ``console`` are
    the command line's own (passed in, as ``watchserver`` takes them, so that this
    module sits below ``cli``)."""

    def __init__(self, snap: Snapshotter, run: CommandLine, console: ConsoleMaker) -> None:
        self.snap = snap
        self.workspace = snap.workspace
        self.run_line, self.console = run, console
        self._one_at_a_time = threading.Lock()

    def run(self, table: Mapping[str, Words], name: str, fields: Mapping[str, Any]) -> Answer:
        """Run ``name`` of ``table`` with the request's ``fields``; ``KeyError`` if there is none."""
        argv = table[name](fields)
        session = session_field(fields)
        return self.command(argv, None if table is CHANGES else session)

    def command(self, argv: Sequence[str], session: str | None = None) -> Answer:
        out, err = io.StringIO(), io.StringIO()
        with self._one_at_a_time:
            shared = self.snap.in_session(session) if session is not None else self.snap
            console = self.console(out, err, False, shared=shared)
            head, dashed = _split(list(argv))
            code = self.run_line([*head, "-C", self.workspace, "--json", *dashed], console)
        printed = out.getvalue().strip().splitlines()
        if not printed:  # a usage error prints its document too; this is a refusal without one
            return Answer(code, {"schema": 1, "error": {"type": "Failed", "message": err.getvalue().strip()}})
        return Answer(code, json.loads(printed[-1]))


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    """The words before ``--`` and ``--`` with the paths after it."""
    if "--" not in argv:
        return argv, []
    at = argv.index("--")
    return argv[:at], argv[at:] if argv[at + 1 :] else []
