"""The ``snapshotter`` command (also ``python -m snapshotter``): runs the command
a parse names (the grammar is in ``arguments``) and prints its result, as text
or as one JSON document.

Exit codes: 0 ok, 1 error (or nothing to undo/redo, a failed verify, a
declined confirmation), 2 usage (also: a dangerous command that cannot ask and
was not given ``--yes``), 3 snapshot, ref or path not found, 4 store locked,
5 restore refused (conflict or unsafe snapshot), 130 interrupted (Ctrl-C, one
line), 141 output pipe closed (as git). Errors are one line on stderr, never a traceback unless ``--debug``;
with ``--json`` the error is also printed as a JSON document on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from snapshotter.engine.gitstore.location import store_exists
from snapshotter.frontends.shared import arguments, collecting
from snapshotter.frontends.shared.failures import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_LOCKED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_PIPE,
    EXIT_REFUSED,
    EXIT_USAGE,
    INTERRUPTED,
    CommandFailed,
)
from snapshotter.frontends.watch import relay

TYPE_CHECKING = False  # not ``typing``'s: see ``_load``
if TYPE_CHECKING:  # loaded by ``_load`` when a command runs in this process; a command handed to a watcher needs none
    import logging
    from typing import Any, TextIO

    from snapshotter.errors import (
        InvalidRef,
        PathNotFound,
        RestoreConflict,
        SnapshotError,
        SnapshotNotFound,
        StoreLocked,
        UnsafeTree,
    )
    from snapshotter.facade.api import Snapshotter
    from snapshotter.frontends.cli import words
    from snapshotter.frontends.shared import config, rendering

WORKFLOW_COMMANDS = frozenset({"checkpoint", "undo", "redo", "turn", "tool", "revert", "fork", "merge", "forks"})
"""Run by ``workflow_commands`` (its ``NAMES``), imported only when one of them runs."""
REMOTE_COMMANDS = frozenset({"push", "fetch", "remote"})
"""Run on an open Snapshotter by ``remote_commands`` (its ``NAMES``), imported only when one of them runs."""


class Console:
    """Where one command prints and what it may ask: this process's own streams, or
    (in a watcher serving the command for another process, see ``watchserver``)
    buffers standing for the requesting process's streams, with its terminal
    flags (``interactive``: stdin and stderr are both terminals, a person can be
    asked) and environment, and the watcher's open Snapshotter (``shared``, never
    closed here; else each command opens a fresh one)."""

    def __init__(
        self,
        out: TextIO,
        err: TextIO,
        interactive: bool,
        environ: Mapping[str, str] | None = None,
        shared: Snapshotter | None = None,
    ) -> None:
        self.out, self.err, self.interactive = out, err, interactive
        self.environ = os.environ if environ is None else environ
        self.shared = shared

    @classmethod
    def standard(cls) -> Console:
        return cls(sys.stdout, sys.stderr, sys.stdin.isatty() and sys.stderr.isatty())


_console = Console(sys.stdout, sys.stderr, False)
"""The console of the command running now (one at a time in a process)."""


def _confirm(question: str, refusal: str, args: argparse.Namespace) -> None:
    """Ask a person at a terminal; where nobody can be asked, refuse unless ``--yes``."""
    if getattr(args, "yes", False):
        return
    if not _console.interactive:
        raise CommandFailed(
            "ConfirmationRequired", f"{refusal}; nothing was changed. Pass --yes to go ahead", code=EXIT_USAGE
        )
    _console.err.write(f"{question} [y/N] ")
    _console.err.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise CommandFailed("Cancelled", "cancelled; nothing was changed")


def _settings(args: argparse.Namespace) -> tuple[str, config.Resolved]:
    workspace, settings = config.locate(os.path.abspath(args.workspace), arguments.flags(args), _console.environ)
    for warning in settings.warnings:
        logging.getLogger("snapshotter").warning("%s", warning)  # loaded by ``run``
    return workspace, settings


def _open(args: argparse.Namespace, workspace: str, settings: config.Resolved) -> Snapshotter:
    if _console.shared is not None:
        return _console.shared
    from snapshotter.facade.api import Snapshotter

    snap = Snapshotter(workspace, **config.snapshotter_options(settings))
    if not args.json and _console.err.isatty():
        snap.progress = rendering.ProgressLine(_console.err)
    return snap


def _print(text: str = "") -> None:
    _console.out.write(text + "\n")


def _printer(lines: Sequence[str]) -> Callable[[], None]:
    def show() -> None:
        for line in lines:
            _print(line)

    return show


def _run(args: argparse.Namespace) -> tuple[Any, Callable[[], None]]:
    """Run the command; returns (JSON result, text printer)."""
    name = args.command
    if name == "hook":  # the command's entry (entry.py) runs a hook before any of this
        raise CommandFailed("UsageError", "hook takes no options: snapshotter hook AGENT EVENT", code=EXIT_USAGE)
    if name == "mcp":
        from snapshotter.frontends.mcp.mcp_server import serve

        collecting.begin()
        serve(os.path.abspath(args.workspace), arguments.flags(args))
        return None, lambda: None
    workspace, settings = _settings(args)
    from snapshotter.frontends.cli import folders

    _console.err.write(folders.note(args, workspace))
    if name == "watch":
        from snapshotter.frontends.watch import watchserver

        collecting.begin()
        refused = watchserver.serve(workspace, settings, run, Console)
        if refused is not None:
            raise CommandFailed("WatcherRunning", refused)
        return None, lambda: None
    if name == "config":
        from snapshotter.engine.gitstore.redact import shown

        shown_value = {
            k: shown(v) if k == "remote" and isinstance(v, str) else v for k, (v, _) in settings.values.items()
        }
        result = {k: {"value": shown_value[k], "source": s} for k, (_, s) in settings.values.items()}
        return result, _printer(
            [f"{k} = {rendering.setting_text(v['value'])}  ({v['source']})" for k, v in result.items()]
        )
    if name == "clone":
        from snapshotter.frontends.cli import remote_commands

        collecting.begin()
        return remote_commands.clone(args, config.snapshotter_options(settings), _console.environ, _print)
    if name == "hooks":
        from snapshotter.frontends.cli import agent_commands

        return agent_commands.hooks(args, workspace, _console.environ, _print)
    if name == "ui":
        from snapshotter.frontends.page import ui_server

        with _open(args, workspace, settings) as snap:
            collecting.begin()
            ui_server.serve(snap, args.port, _console.out, run, Console)
        return None, lambda: None
    store = folders.store_or_none(name, workspace, settings.value("home"))
    if name == "where" and store is not None:
        found, line = folders.where(args, workspace, store)
        return found, lambda: _print(line())
    new_store = name == "snapshot" and store is not None and not store_exists(store)
    snap = _open(args, workspace, settings)
    collecting.begin()  # what the command imported is loaded: its work collects as usual
    try:
        result, show = _dispatch(name, snap, args)
    finally:
        if isinstance(snap.progress, rendering.ProgressLine):
            snap.progress.finish()
        if snap is not _console.shared:
            snap.close()
    if new_store and store is not None and not args.json:
        hint = folders.first_snapshot_hint(workspace, store, folders.elsewhere(args, workspace) is not None)

        def show_with_hint() -> None:
            show()
            _console.err.write(hint)

        return result, show_with_hint
    return result, show


def _dispatch(name: str, snap: Snapshotter, args: argparse.Namespace) -> tuple[Any, Callable[[], None]]:
    f = rendering
    if name == "snapshot":
        info = snap.snapshot(args.message, label=args.label, metadata=dict(args.meta) or None)

        def show_snapshot() -> None:
            _print(f.snapshot_line(info))
            for skipped in info.skipped:
                _console.err.write(f"skipped ({skipped.reason.value}): {skipped.path}\n")

        return f.snapshot_json(info), show_snapshot
    if name == "log":
        from snapshotter.frontends.cli import logpages

        grouped = snap.session is not None and not args.label and not args.meta  # by turn
        meta = dict(args.meta) or None
        page = logpages.read(snap, args.limit, args.skip, args.before, args.label, meta, grouped)
        infos, base = page.shown, snap.base()
        base_id = base.id if base is not None else None
        if grouped:
            lines = f.session_log_lines(infos + page.context, len(infos), base_id, begun_earlier=page.cut)
            return [f.snapshot_json(i) for i in infos], _printer(lines)
        return [f.snapshot_json(i) for i in infos], _printer([f.snapshot_line(i, i.id == base_id) for i in infos])
    if name == "show":
        info = snap.get(args.ref)
        return f.snapshot_json(info), _printer(f.show_lines(info))
    if name == "blame" or (name == "diff" and args.hunks):
        from snapshotter.frontends.cli import line_commands

        return line_commands.dispatch(name, snap, args, os.path.abspath(args.workspace), _print)
    if name == "diff":
        from snapshotter.frontends.cli import listings

        start = os.path.abspath(args.workspace)
        refs, named = words.refs_and_paths(snap, args.words, start)
        from_ref, to_ref = (*refs, None, None)[:2]
        diffs = snap.diff(from_ref, to_ref, files=words.paths(start, named + args.paths) or None)
        # The JSON result (every patch) only for --json: the text a flag asks for may need no patch.
        documents = [f.diff_json(d, with_patch=True) for d in diffs] if args.json else None
        return documents, lambda: listings.diff(diffs, args, _console.out, _console.err, _console.environ)
    if name == "status":
        start = os.path.abspath(args.workspace)
        words.refs_and_paths(snap, args.paths[: len(args.paths) - len(args.dashed)], start, at_most=0)
        changes = snap.status(words.paths(start, args.paths) or None)
        from snapshotter.frontends.cli import listings

        return [f.change_json(c) for c in changes], lambda: listings.status(_console.out, changes, args.nul)
    if name == "restore":
        if not args.paths and not args.dry_run:
            plan = snap.restore(args.ref, dry_run=True, overwrite_untracked=args.overwrite_untracked)
            from snapshotter.frontends.cli.folders import restore_question

            _confirm(*restore_question(args, snap.workspace, plan.written, plan.deleted, plan.target_id), args)
        files = words.paths(os.path.abspath(args.workspace), args.paths) or None
        result = snap.restore(args.ref, files, dry_run=args.dry_run, overwrite_untracked=args.overwrite_untracked)
        return f.restore_json(result), lambda: _print_restore(result)
    if name == "sessions":
        from snapshotter.frontends.cli import agent_commands

        return agent_commands.sessions(snap, _print)
    if name in WORKFLOW_COMMANDS:
        from snapshotter.frontends.cli import workflow_commands
        from snapshotter.frontends.cli.line_commands import terminal_asker

        ask = terminal_asker(_console.err, sys.stdin) if _console.interactive else None
        return workflow_commands.dispatch(name, snap, args, _print, ask)
    if name in REMOTE_COMMANDS:
        from snapshotter.frontends.cli import remote_commands

        return remote_commands.dispatch(name, snap, args, _print, _console.environ)
    if name in ("pin", "unpin"):
        info = snap.pin(args.ref) if name == "pin" else snap.unpin(args.ref)
        return f.snapshot_json(info), lambda: _print(f"{name}ned {info.id[:12]}")
    if name == "prune":
        pruned = snap.prune(dry_run=args.dry_run)
        verb = "would drop" if pruned.dry_run else "dropped"
        line = f"{verb} {len(pruned.pruned)}, kept {pruned.kept}; "
        line += f"store {pruned.bytes_before:,} -> {pruned.bytes_after:,} bytes"
        return f.prune_json(pruned), _printer([line])
    if name == "gc":
        done = snap.gc()
        return f.gc_json(done), lambda: _print(
            f"kept {done.objects_kept:,} objects, removed {done.objects_removed:,}; "
            f"store {done.bytes_before:,} -> {done.bytes_after:,} bytes in {done.seconds:.1f} s"
        )
    if name == "stats":
        stats = f.stats_json(snap.store_stats())
        return stats, _printer([f"{k}: {rendering.setting_text(v, quoted=False)}" for k, v in stats.items()])
    if name == "verify":
        checked = snap.verify(full=args.full)
        if not checked.ok:
            message = f"{len(checked.problems)} problems: " + "; ".join(checked.problems)
            raise CommandFailed("VerifyFailed", message, f.verify_json(checked))
        return f.verify_json(checked), lambda: _print(
            f"ok: {checked.snapshots_checked} snapshots, {checked.objects_checked:,} objects checked"
        )
    if name == "cleanup":
        count = snap.store_stats().snapshots  # not list(): it would count safety snapshots' lines first
        _confirm(
            f"delete the store of {snap.workspace} and its {count} snapshots?",
            f"cleanup would delete the store of {snap.workspace} and its {count} snapshots",
            args,
        )
        store = snap.store_path
        snap.cleanup()
        return {"removed": store}, lambda: _print(f"removed {store}")
    raise AssertionError(f"unknown command {name}")  # argparse refuses it first


def _print_restore(result: Any) -> None:
    for line in rendering.restore_lines(result):
        _print(line)


def _exit_code(error: BaseException) -> int:
    if isinstance(error, CommandFailed):
        return error.code
    if isinstance(error, (SnapshotNotFound, InvalidRef, PathNotFound)):
        return EXIT_NOT_FOUND
    if isinstance(error, StoreLocked):
        return EXIT_LOCKED
    if isinstance(error, (RestoreConflict, UnsafeTree)):
        return EXIT_REFUSED
    return EXIT_ERROR


@contextmanager
def _warnings_shown() -> Iterator[rendering.CaughtWarnings]:
    logger = logging.getLogger("snapshotter")
    handler = rendering.CaughtWarnings(echo=True, stream=_console.err)
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False  # shown once, by us
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def _usage_error(argv: Sequence[str], error: arguments.UsageError) -> int:
    """The error and where to read more, and exit 2; with ``--json`` among the
    words, also the error as a document on stdout."""
    _console.err.write(f"{error}\n{error.usage}\n")
    given = list(argv[: list(argv).index("--")] if "--" in argv else argv)
    if "--json" in given:
        names = arguments.command_names()
        command = next((arguments.ALIASES.get(word, word) for word in given if word in names), None)
        detail = {"type": "UsageError", "message": str(error), "exit_code": EXIT_USAGE}
        _print(_document(command or "", {"error": detail}, []))
    return EXIT_USAGE


def _document(name: str, body: dict[str, Any], warnings: list[str]) -> str:
    document: dict[str, Any] = {"schema": rendering.SCHEMA, "command": name, **body}
    if warnings:
        document["warnings"] = warnings
    return json.dumps(document)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        code = relay.hand_over(argv)  # to a watcher serving this workspace, if one answers
        if code is None:
            code = run(argv, Console.standard())
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return code
    except BrokenPipeError:
        # The reader went away (`snapshotter log | head -1`): stop quietly, as git does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_PIPE


def run(argv: Sequence[str], console: Console) -> int:
    """Run one command line, printing to ``console``; returns its exit code."""
    global _console
    saved, _console = _console, console
    try:
        return _main(argv)
    finally:
        _console = saved


def _load() -> None:
    """Import what running a command here needs, for the whole module: the command
    line imports only the grammar and ``relay`` first, so a command handed to a
    watcher costs its process as little as possible (``python -X importtime``)."""
    global logging, config, rendering, words
    global InvalidRef, PathNotFound, RestoreConflict, SnapshotError, SnapshotNotFound, StoreLocked, UnsafeTree
    import logging

    from snapshotter.errors import (
        InvalidRef,
        PathNotFound,
        RestoreConflict,
        SnapshotError,
        SnapshotNotFound,
        StoreLocked,
        UnsafeTree,
    )
    from snapshotter.frontends.cli import words
    from snapshotter.frontends.shared import config, rendering


def _main(argv: Sequence[str]) -> int:
    try:
        args = arguments.parse(argv)
    except arguments.UsageError as error:
        _load()
        return _usage_error(argv, error)
    _load()  # after the parse: ``--version`` and ``--help`` need none of it
    name = args.command
    with _warnings_shown() as warned:
        try:
            result, show = _run(args)
        except (SnapshotError, CommandFailed) as error:
            if args.debug:
                raise
            code = _exit_code(error)
            message = error.for_cli() if isinstance(error, SnapshotError) else str(error)
            _console.err.write(f"snapshotter: {message}\n")
            if args.json:
                kind = error.kind if isinstance(error, CommandFailed) else type(error).__name__
                detail: dict[str, Any] = {"type": kind, "message": message, "exit_code": code}
                if isinstance(error, CommandFailed) and error.result is not None:
                    detail["result"] = error.result
                _print(_document(name, {"error": detail}, warned.messages))
            return code
        except KeyboardInterrupt:
            _console.err.write(INTERRUPTED + "\n")
            return EXIT_INTERRUPTED
    if name in ("mcp", "watch", "ui"):
        return EXIT_OK
    if args.json:
        _print(_document(name, {"result": result}, warned.messages))
    else:
        show()
    return EXIT_OK
