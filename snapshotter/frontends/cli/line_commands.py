"""The command line's line-level commands: ``blame PATH``, ``diff --hunks`` and
reverting chosen hunks (``revert``/``turn revert`` with ``--hunk ID`` or ``-p``).

``-p`` asks at a terminal hunk by hunk, as ``git add -p`` does: ``y`` take it
back, ``n`` keep it, ``q`` stop here (what was chosen is reverted), ``a`` this
and the rest of the file, ``d`` none of the rest of the file, ``s`` split it
into its changes, ``?`` help. Without a terminal it refuses (exit 2).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from snapshotter.frontends.cli import words
from snapshotter.frontends.shared import rendering
from snapshotter.frontends.shared.failures import EXIT_USAGE, CommandFailed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.facade.api import Snapshotter
    from snapshotter.model import BlameResult, Hunk, LineOrigin

ALL = 1 << 62
"""``blame --limit 0``: every snapshot, as far back as the file's lines go (an explicit ask; the default is 1000)."""
Printer = Callable[[str], None]
Ask = Callable[[str], str]
HELP = """y - revert this hunk
n - keep this hunk
q - quit; revert the hunks chosen so far and none of the rest
a - revert this hunk and every later one in the file
d - keep this hunk and every later one in the file
s - split this hunk into its changes
? - print help
"""


def wanted(name: str, args: argparse.Namespace) -> bool:
    """Whether this module runs the command (``blame``, ``diff --hunks``)."""
    return name == "blame" or (name == "diff" and bool(args.hunks))


def dispatch(name: str, snap: Snapshotter, args: argparse.Namespace, start: str, say: Printer) -> tuple[Any, Any]:
    """(JSON result, text printer) of ``blame`` or ``diff --hunks``; paths are
    read from ``start``, the folder the command ran in."""
    if name == "blame":
        path = words.paths(start, [args.path])[0]
        found = snap.blame(path, limit=args.limit or ALL, session=args.session)
        if not args.limit:  # asked for all: the document says 0, as the flag did, not ALL
            found = dataclasses.replace(found, limit=0)
        return rendering.blame_json(found), lambda: _lines(say, blame_lines(found))
    refs, named = words.refs_and_paths(snap, args.words, start)
    start_ref, end_ref = (*refs, None, None)[:2]
    files = words.paths(start, named + args.paths) or None
    listed = snap.hunks(start_ref or "@", end_ref, files=files)
    return [rendering.plain_json(h) for h in listed], lambda: _lines(say, hunk_lines(listed))


def pick(
    args: argparse.Namespace, hunks: Callable[[bool], list[Hunk]], ask: Ask | None, say: Printer
) -> list[str] | None:
    """The hunk ids a ``revert``/``turn revert`` takes back: ``--hunk``'s, those a
    person chooses with ``-p`` (``hunks(split)`` lists them), or None: all."""
    if args.patch and args.hunk:
        raise CommandFailed("UsageError", "-p chooses the hunks itself: give it or --hunk, not both", code=EXIT_USAGE)
    if (args.patch or args.hunk) and getattr(args, "reset", False):
        raise CommandFailed(
            "UsageError", "--hunk and -p revert hunks; --reset restores the whole turn", code=EXIT_USAGE
        )
    if args.patch:
        return _choose(hunks(False), hunks(True), ask, args, say)
    return list(args.hunk) if args.hunk else None


def _choose(listed: Sequence[Hunk], parts: Sequence[Hunk], ask: Ask | None, args: Any, say: Printer) -> list[str]:
    """The ids a person chooses at a terminal (see the module's docstring)."""
    if ask is None or args.json:
        raise CommandFailed(
            "ConfirmationRequired",
            "-p asks at a terminal, hunk by hunk; here nobody can be asked: list the hunks with "
            "`diff --hunks` and pass --hunk ID; nothing was changed",
            code=EXIT_USAGE,
        )
    queue = list(listed)
    chosen: list[str] = []
    skip_file: str | None = None
    take_file: str | None = None
    while queue:
        hunk = queue.pop(0)
        if hunk.path == skip_file:
            continue
        if hunk.path == take_file:
            chosen.append(hunk.id)
            continue
        pieces = [p for p in parts if p.path == hunk.path and _inside(p, hunk) and p.id != hunk.id]
        for line in hunk_lines([hunk]):
            say(line)
        options = "y,n,q,a,d" + (",s" if pieces else "") + ",?"
        answer = ask(f"Revert this hunk [{options}]? ").strip().lower()[:1]
        if answer == "y":
            chosen.append(hunk.id)
        elif answer == "q":
            break
        elif answer == "a":
            chosen.append(hunk.id)
            take_file = hunk.path
        elif answer == "d":
            skip_file = hunk.path
        elif answer == "s" and pieces:
            say(f"split into {len(pieces)} hunks")
            queue[:0] = pieces
        elif answer != "n":
            say(HELP.rstrip("\n"))
            queue.insert(0, hunk)
    return chosen


def _inside(part: Hunk, hunk: Hunk) -> bool:
    """A part of ``hunk``: its lines lie within the hunk's, on the new side."""
    return hunk.new_start <= part.new_start and part.new_start + part.new_lines <= hunk.new_start + hunk.new_lines


def terminal_asker(out: TextIO, stdin: TextIO) -> Ask:
    def ask(question: str) -> str:
        out.write(question)
        out.flush()
        answer = stdin.readline()
        if not answer:
            return "q"  # the terminal closed: stop, as git does
        return answer

    return ask


def hunk_lines(listed: Sequence[Hunk]) -> list[str]:
    """Each hunk under a line naming its id (and the path), then its ``@@`` text."""
    out = []
    for hunk in listed:
        out.append(f"hunk {hunk.id}")
        out.extend(hunk.patch.rstrip("\n").split("\n"))
    return out


def blame_lines(found: BlameResult) -> list[str]:
    """One line per line of the file, as ``git blame`` prints them: the snapshot
    (``^`` for a boundary, zeros for a line not snapshotted yet), who, when, the
    line number, the text; a last line says where a limited walk stopped."""
    rows = []
    for run in found.runs:
        for k in range(run.count):
            rows.append((run.origin, run.start + k))
    names = [_who(origin) for origin, _ in rows]
    width = max((len(name) for name in names), default=0)
    digits = len(str(len(found.lines)))
    out = []
    for (origin, number), name in zip(rows, names):
        mark = "^" if origin.boundary else ""
        ident = (origin.snapshot_id or "0" * 40)[: 12 - len(mark)]
        when = origin.created_at.strftime("%Y-%m-%d %H:%M:%S") if origin.created_at else " " * 19
        out.append(f"{mark}{ident} ({name:<{width}} {when} {number:>{digits}}) {found.lines[number - 1]}")
    if found.session is not None:
        out.append(f"({len(rows)} of {len(found.lines)} lines by session {found.session})")
    if found.limited:
        out.append(f"(stopped at the limit: {found.limit} snapshots read; ^ lines are at least that old)")
    return out


def _who(origin: LineOrigin) -> str:
    if origin.who == "workspace":
        return "not snapshotted"
    if origin.who != "session":
        return origin.who
    name = origin.session or "(anonymous)"
    if origin.agent and name.startswith(origin.agent + "-"):
        name = f"{origin.agent} {name[len(origin.agent) + 1 :][:8]}"
    return f"{name} turn {origin.turn}" if origin.turn is not None else name


def _lines(say: Printer, lines: Sequence[str]) -> None:
    for line in lines:
        say(line)
