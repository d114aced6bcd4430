"""The ``snapshotter`` command line's grammar: its commands, their options, and
what a parse hands to the commands.

Kept apart from ``cli`` (which runs the commands and prints their results) so
the whole grammar reads in one place, ``--help`` included. Each command alias
is written once, in :data:`ALIASES`: the parser offers it and a parse names the
command it stands for, so the commands never see an alias.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Sequence

from snapshotter import __version__

TYPE_CHECKING = False  # not ``typing``'s: the grammar is loaded by every command line, handed over or not
if TYPE_CHECKING:
    from typing import Any, NoReturn

AGENT_NAMES = ("claude-code", "codex", "gemini", "copilot")
"""The agents ``hooks`` knows (``agents.AGENTS``; named here so the grammar loads no more)."""
ALIASES = {"track": "snapshot"}
"""Another name a command answers to -> the command's own name."""
TAKES_PATHS = {"diff", "status", "restore", "revert"}
"""The commands that take PATHs after ``--``."""
_WORDS = (
    "blame checkpoint cleanup clone config diff fetch fork forks gc hook hooks log mcp merge pin prune push redo "
    "remote restore revert sessions show snapshot stats status tool track turn ui undo unpin verify watch where"
)
COMMAND_WORDS = frozenset(_WORDS.split())
"""Every command's name and alias, as :func:`command_names` reads them from the
whole grammar (a test holds the two equal): whether a command line names one
decides, before anything is built, whether the grammar may be built for it alone."""


def _meta(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def _turn(text: str) -> int | str:
    """A turn: its number from the newest (``1``: the last one), or a REF of its pre-turn snapshot."""
    return int(text) if text.isascii() and text.isdigit() else text


def _global_options(parser: argparse.ArgumentParser, on_subcommand: bool) -> None:
    """The options every command takes, before or after its name.

    On a subcommand they default to "not given" (SUPPRESS), so a value given
    before the subcommand is never overwritten by the subcommand's default.
    """

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if on_subcommand else value

    add = parser.add_argument
    add("-C", "--workspace", default=default("."), help="the workspace folder (default: current folder)")
    add("--home", default=default(None), help="where stores live (default: $SNAPSHOTTER_HOME or user data)")
    add("--json", action="store_true", default=default(False), help="print one JSON document (docs/cli.md)")
    add("--debug", action="store_true", default=default(False), help="show tracebacks")
    add(
        "--exclude",
        action="append",
        default=default([]),
        metavar="PATTERN",
        help="also leave out paths matching this gitignore pattern (repeatable)",
    )
    add(
        "--no-default-excludes",
        dest="use_default_excludes",
        action="store_false",
        default=default(None),
        help="record .env, node_modules and the other built-in excludes too",
    )
    add(
        "--allow-unsafe-root",
        action="store_true",
        default=default(None),
        help="allow a home, Desktop, Documents, Downloads or filesystem-root folder",
    )
    add(
        "--session",
        default=default(None),
        metavar="NAME",
        help="work in this session: its own turns, tool calls, checkpoints, undo and redo (docs/library.md#sessions)",
    )
    for flag, help_text in (
        ("--max-new-file-size", "skip new files larger than this many bytes"),
        ("--max-workspace-entries", "refuse folders with more tracked entries (0: no cap)"),
        ("--max-workspace-bytes", "refuse folders with more tracked bytes (0: no cap)"),
    ):
        add(flag, type=_count, default=default(None), metavar="N", help=help_text)


def _conflicts_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--conflicts",
        choices=["abort", "markers", "ours"],
        default="abort",
        help="paths that cannot be merged: abort (write nothing, the default), ours (keep the folder's), "
        "markers (also write git-style conflict markers into clashing text files)",
    )


def _hunk_options(made: argparse.ArgumentParser) -> None:
    made.add_argument(
        "--hunk", action="append", default=None, metavar="ID", help="only this hunk (repeatable; ids: diff --hunks)"
    )
    made.add_argument(
        "-p", "--patch", action="store_true", help="choose the hunks at a terminal, one by one, as git add -p does"
    )


@functools.lru_cache(maxsize=2)  # the relay parses a command line, then the direct run parses it again
def _parser(words: frozenset[str] | None = None) -> argparse.ArgumentParser:
    """The grammar; with ``words`` (a command line's) naming a command, only the
    commands named among them: the command argparse picks is one of its words,
    and building all 35 costs a new process about 7 ms (argparse looks up a
    translation of each parser's strings). Without a command among the words, or
    with what may be ``--help`` (whose page lists every command), all of them,
    each with its options only if named."""
    parser = _Parser(
        prog="snapshotter",
        description="Snapshots of a folder in a hidden git store: take, list, diff, restore, undo.",
        epilog="REF: an id, a 7+ digit id prefix, a label, @ (the base: what the folder was last made "
        "equal to) or @~N (N snapshots before the base).",
    )
    _global_options(parser, on_subcommand=False)
    parser.add_argument("--version", action="version", version=f"snapshotter {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    narrow = words is not None and not words.isdisjoint(COMMAND_WORDS)
    narrow = narrow and not any(_may_ask_help(word) for word in words or ())

    def command(name: str, help_text: str) -> Any:
        aliases = [alias for alias, target in ALIASES.items() if target == name]
        if narrow and words is not None and words.isdisjoint((name, *aliases)):
            return _UNNAMED
        made = sub.add_parser(name, aliases=aliases, help=help_text, description=help_text)
        if words is None or not words.isdisjoint((name, *aliases)):
            _global_options(made, on_subcommand=True)
        return made

    snap = command("snapshot", "record the folder now")
    snap.add_argument("-m", "--message", default="", help="a message for the snapshot")
    snap.add_argument("--label", default=None, help="a label usable wherever a ref is")
    snap.add_argument("--meta", action="append", type=_meta, default=[], metavar="KEY=VALUE", help="metadata")

    log = command("log", "list snapshots, newest first; @ marks the base (with --session: only that session's)")
    log.add_argument("-n", "--limit", type=_count, default=50, help="how many (default 50; 0 for all)")
    log.add_argument("--skip", type=_count, default=0, metavar="N", help="leave out the newest N first, as git log")
    log.add_argument("--before", default=None, metavar="REF", help="only snapshots older than REF (the next page)")
    log.add_argument("--label", default=None, help="only snapshots with this label")
    log.add_argument("--meta", action="append", type=_meta, default=[], metavar="KEY=VALUE", help="only matching")

    show = command("show", "one snapshot's details")
    show.add_argument("ref", help="a REF (see below)")

    diff = command("diff", "what changed: FROM (default @, the base) to TO (default the folder now), or A..B; PATHs")
    diff.add_argument("words", nargs="*", metavar="[FROM [TO]] [PATH...]", help="refs (or A..B), then paths")
    shape = diff.add_mutually_exclusive_group()
    shape.add_argument("--stat", action="store_true", help="a summary per file")
    shape.add_argument("--name-status", action="store_true", help="status letter and path per file")
    shape.add_argument("--numstat", action="store_true", help="added and deleted lines per file")
    shape.add_argument("--hunks", action="store_true", help="each hunk with its id (for revert --hunk)")
    diff.add_argument(
        "-z", dest="nul", action="store_true", help="with --numstat or --name-status: raw paths, NUL-ended"
    )

    status = command("status", "what changed since the base (@); PATHs to limit it")
    status.add_argument("paths", nargs="*", help="only these paths or folders")
    status.add_argument("-z", dest="nul", action="store_true", help="raw paths, each line ended by NUL (not quoted)")

    restore = command("restore", "bring back a snapshot (all of it, or PATHs)")
    restore.add_argument("ref", help="a REF")
    restore.add_argument("paths", nargs="*", help="restore only these paths")
    restore.add_argument("--dry-run", action="store_true", help="show the plan, change nothing")
    restore.add_argument("-y", "--yes", action="store_true", help="do not ask (required where nobody can be asked)")
    restore.add_argument(
        "--overwrite-untracked",
        action="store_true",
        help="also replace ignored or too-large files in the way (saved in the safety snapshot first)",
    )

    revert = command("revert", "undo the change BEFORE -> AFTER (default: the next snapshot) and keep every other")
    revert.add_argument("before", help="a REF: the change's start (or BEFORE..AFTER)")
    revert.add_argument("after", nargs="?", default=None, help="a REF: its end (default: see docs/cli.md#revert)")
    revert.add_argument("paths", nargs="*", help="revert only these paths")
    revert.add_argument("--dry-run", action="store_true", help="show what would change, change nothing")
    _hunk_options(revert)
    _conflicts_option(revert)

    point = command("checkpoint", "record the folder now as an undo point (what undo goes back to)")
    point.add_argument("-m", "--message", default="", help="a message for the checkpoint")
    point.add_argument("--label", default=None, help="a label usable wherever a ref is")
    point.add_argument("--meta", action="append", type=_meta, default=[], metavar="KEY=VALUE", help="metadata")
    command("undo", "take back the last restore, or go back to the last checkpoint (in a session: its own changes)")
    command("redo", "return to what the last undo replaced")
    turn = command(
        "turn", "agent turns: begin, end, revert N (its own changes; --reset: the state before it), hunks N (to revert)"
    )
    turn.add_argument("action", choices=["begin", "end", "revert", "hunks"])
    turn.add_argument(
        "n",
        nargs="?",
        type=_turn,
        default=1,
        help="with revert or hunks: the n-th last turn (default 1), or the REF of its pre-turn snapshot",
    )
    turn.add_argument("--reset", action="store_true", help="with revert: restore the state before the turn")
    turn.add_argument("--dry-run", action="store_true", help="with revert: show what would change, change nothing")
    turn.add_argument(
        "--agent", choices=AGENT_NAMES, default=None, help="in that agent's newest session here (see `sessions`)"
    )
    _hunk_options(turn)
    _conflicts_option(turn)
    blame = command(
        "blame",
        "who last changed each line of PATH: its snapshot, session, turn and tool call (--session: only its lines)",
    )
    blame.add_argument("path", help="a file the folder tracks")
    blame.add_argument(
        "--limit",
        type=_count,
        default=1000,
        help="read at most this many snapshots (default 1000; 0: as far back as the lines go)",
    )
    fork = command("fork", "make DIR (new or empty, outside this folder) hold snapshot REF, for a parallel agent")
    fork.add_argument("ref", help="a REF")
    fork.add_argument("dest", metavar="DIR", help="the new folder")
    merge = command("merge", "bring a fork's changes (DIR) or a snapshot's since --base (REF) into this folder")
    merge.add_argument("source", metavar="DIR|REF", help="a fork's folder, or a REF with --base")
    merge.add_argument("--base", default=None, help="a REF: merge the changes since it (required for a REF)")
    merge.add_argument("--dry-run", action="store_true", help="show what would change, change nothing")
    _conflicts_option(merge)
    command("forks", "the folders forked from this one")
    hooks = command("hooks", "the agent hooks: `hooks install|uninstall AGENT [--user]`, `hooks status`")
    hooks.add_argument("action", choices=["install", "uninstall", "status"])
    hooks.add_argument("agent", nargs="?", choices=AGENT_NAMES, help="the agent (install and uninstall)")
    hooks.add_argument("--user", action="store_true", help="in the user's own settings, for every folder")
    hooks.add_argument("--dry-run", action="store_true", help="print the file as it would be, write nothing")
    hooks.add_argument(
        "--command", dest="hook_command", default=None, help="the command hooks run (default: this snapshotter's path)"
    )
    hook = command("hook", "one agent hook event on stdin, recorded (what installed hooks run; always exits 0)")
    hook.add_argument("agent", choices=AGENT_NAMES)
    hook.add_argument("event", nargs="?", default=None)
    command("sessions", "the agent sessions keeping history in this folder, the most recently active first")
    push = command("push", "send this folder's snapshots to a git remote, under refs/snapshotter/NAME/")
    push.add_argument("remote", nargs="?", default=None, help="a path or URL (default: the remote setting)")
    push.add_argument("--name", default=None, help="the namespace there (default: the folder's name and a hash)")
    push.add_argument("--prune", action="store_true", help="also delete there what retention dropped here")
    push.add_argument(
        "--skip-refused",
        action="store_true",
        help="send the other snapshots when one holds a path the excludes keep out now, or a file over the limit",
    )
    fetch = command("fetch", "bring a namespace's snapshots from a git remote into this folder's store")
    fetch.add_argument("remote", nargs="?", default=None, help="a path or URL (default: the remote setting)")
    fetch.add_argument("--name", default=None, help="the namespace (default: this folder's; `remote list`)")
    remote = command("remote", "what a git remote holds: `remote list [REMOTE]`")
    remote.add_argument("action", choices=["list"])
    remote.add_argument("remote", nargs="?", default=None, help="a path or URL (default: the remote setting)")
    clone = command("clone", "fill a new folder DIR with snapshot REF (default: the newest) of NAME on REMOTE")
    clone.add_argument("remote", help="a path or URL")
    clone.add_argument("name", help="the namespace (`remote list`)")
    clone.add_argument("ref", nargs="?", default=None, help="a REF there (default: the newest)")
    clone.add_argument("dest", metavar="DIR", help="the new folder")
    tool = command("tool", "bracket a tool call: `tool begin ID` before it, `tool done ID` after it")
    tool.add_argument("action", choices=["begin", "done"])
    tool.add_argument("call_id", metavar="ID", help="the tool call's id")
    for name, text in (("pin", "keep a snapshot whatever retention says"), ("unpin", "release a pinned snapshot")):
        command(name, text).add_argument("ref")
    prune = command("prune", "drop snapshots the retention policy says must go, then compact")
    prune.add_argument("--dry-run", action="store_true", help="only list what would go")
    command("gc", "compact the store now")
    command("stats", "size and contents of the store")
    verify = command("verify", "check every snapshot can be read back")
    verify.add_argument("--full", action="store_true", help="re-hash every object too")
    cleanup = command("cleanup", "delete this folder's store and all its snapshots")
    cleanup.add_argument("-y", "--yes", action="store_true", help="do not ask (required where nobody can be asked)")
    where = command("where", "the store this folder's snapshots live in (creates nothing)")
    where.add_argument("--folder", action="store_true", help="the folder snapshotted instead (maybe above this one)")
    command("config", "effective settings and where each came from")
    command("mcp", "serve this folder's snapshots to an MCP client over stdio")
    command("watch", "keep this folder watched and serve its commands to later `snapshotter` calls (docs/watch.md)")
    ui = command("ui", "serve a page of this folder's history on 127.0.0.1: lanes, diffs, revert (docs/ui.md)")
    ui.add_argument("--port", type=_count, default=0, help="the port (default: any free one)")
    ui.add_argument(
        "--no-open",
        action="store_true",
        help="taken for scripts that pass it: the page is never opened for you (snapshotter runs no other program)",
    )
    return parser


def _may_ask_help(word: str) -> bool:
    """Whether argparse may read ``word`` as ``--help`` (``-h``, with short options
    after it, or an abbreviation: ``--he``), which prints the whole grammar's page."""
    return word.startswith("-h") or (word.startswith("--h") and "--help".startswith(word))


class _Unnamed:
    """Stands in for the parser of a command the command line does not name: it
    takes that command's options and drops them."""

    def add_argument(self, *names: Any, **how: Any) -> None:
        return None

    def add_mutually_exclusive_group(self, **how: Any) -> _Unnamed:
        return self


_UNNAMED = _Unnamed()


class UsageError(Exception):
    """A command line that does not parse: what is wrong, and where to read more
    (``usage``: one line naming the command's ``--help``)."""

    def __init__(self, usage: str, message: str) -> None:
        super().__init__(message)
        self.usage = usage


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` finds it: ``COLUMNS``, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Parser(argparse.ArgumentParser):
    """argparse's parser, raising :class:`UsageError` instead of printing and exiting,
    so a ``--json`` caller gets its usage error as a document too. The error
    comes first and alone, with a pointer to ``--help`` (not argparse's usage:
    lines of global options before the one that matters), and a mistyped choice
    gets the nearest ones (``did you mean 'status'?``), as git suggests."""

    def _get_formatter(self) -> argparse.HelpFormatter:
        """argparse's formatter, as wide as ``shutil.get_terminal_size`` would make it, without importing
        ``shutil`` (with ``bz2``, ``lzma``, ``fnmatch``): argparse makes one for every option it adds.
        The grammar sets no ``formatter_class``: argparse's default is this one."""
        return argparse.HelpFormatter(prog=self.prog, width=_columns() - 2)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"see `{self.prog} --help`", f"{self.prog}: error: {message}")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is not None and value not in choices:
            import difflib  # only for a mistyped word

            names = [str(choice) for choice in choices]
            close = difflib.get_close_matches(str(value), names, n=3)
            hint = f"did you mean {' or '.join(map(repr, close))}?" if close else f"choose from {', '.join(names)}"
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}; {hint}")
        super()._check_value(action, value)


def _command_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[name]
            return found
    return parser


def command_names() -> frozenset[str]:
    """Every command's name, aliases included."""
    for action in _parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return frozenset(action.choices)
    return frozenset()


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """Parse, taking the paths after a ``--`` apart (``diff @~2 -- src/``);
    ``UsageError`` if the words do not parse (``--help`` and ``--version`` exit)."""
    parser = _parser(frozenset(argv))
    head, paths = list(argv), []
    if "--" in head:
        at = head.index("--")
        head, paths = head[:at], head[at + 1 :]
    try:
        args, extra = parser.parse_known_args(head)
    except UsageError:  # said by the whole grammar, so that an unknown word is offered every command
        parser = _parser()
        args, extra = parser.parse_known_args(head)
    if extra:  # said by the command's own parser, so its error points to its own --help
        _command_parser(parser, args.command).error(f"unrecognized arguments: {' '.join(extra)}")
    args.command = ALIASES.get(args.command, args.command)
    if paths:
        if args.command not in TAKES_PATHS:
            parser.error(f"{args.command} takes no paths after --")
        args.paths = [*getattr(args, "paths", []), *paths]
    elif not hasattr(args, "paths"):
        args.paths = []
    args.dashed = paths  # the paths after --: they need not exist
    if args.command == "diff" and args.nul and not (args.numstat or args.name_status):
        _command_parser(parser, "diff").error("-z goes with --numstat or --name-status")
    return args


def flags(args: argparse.Namespace) -> dict[str, Any]:
    """Settings given on the command line (None: not given)."""
    return {
        "home": args.home,
        "exclude": args.exclude or None,
        "use_default_excludes": args.use_default_excludes,
        "allow_unsafe_root": args.allow_unsafe_root,
        "max_new_file_size": args.max_new_file_size,
        "max_workspace_entries": args.max_workspace_entries,
        "max_workspace_bytes": args.max_workspace_bytes,
        "session": args.session,
    }
