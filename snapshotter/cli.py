"""The ``snapshotter`` command (also ``python -m snapshotter``).

Exit codes: 0 ok, 1 error (or nothing to undo/redo, a failed verify, a
declined confirmation), 2 usage, 3 snapshot not found or bad ref, 4 store
locked, 5 restore refused (conflict or unsafe snapshot). Errors are one line
on stderr, never a traceback unless ``--debug``; with ``--json`` the error is
also printed as a JSON document on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from . import __version__, cliformat, config
from .errors import (
    InvalidInput,
    InvalidRef,
    RestoreConflict,
    SnapshotError,
    SnapshotNotFound,
    StoreLocked,
    UnsafeTree,
)
from .snapshotter import Snapshotter

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_LOCKED, EXIT_REFUSED = 0, 1, 2, 3, 4, 5


class _Failed(Exception):
    """A command that ran but did not succeed (nothing to undo, verify found problems...)."""

    def __init__(self, message: str, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


def _meta(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-C", "--workspace", default=".", help="the workspace folder (default: current folder)")
    common.add_argument("--home", default=None, help="where stores live (default: $SNAPSHOTTER_HOME or user data)")
    common.add_argument("--json", action="store_true", help="print one JSON document (schema in README)")
    common.add_argument("--debug", action="store_true", help="show tracebacks")
    parser = argparse.ArgumentParser(
        prog="snapshotter",
        description="Snapshots of a folder in a hidden git store: take, list, diff, restore, undo.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"snapshotter {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, aliases: Sequence[str] = ()) -> argparse.ArgumentParser:
        return sub.add_parser(name, aliases=list(aliases), parents=[common], help=help_text, description=help_text)

    snap = command("snapshot", "record the folder now", aliases=["track"])
    snap.add_argument("-m", "--message", default="", help="a message for the snapshot")
    snap.add_argument("--label", default=None, help="a label usable wherever a ref is")
    snap.add_argument("--meta", action="append", type=_meta, default=[], metavar="KEY=VALUE", help="metadata")

    log = command("log", "list snapshots, newest first")
    log.add_argument("-n", "--limit", type=int, default=50, help="how many (default 50; 0 for all)")
    log.add_argument("--label", default=None, help="only snapshots with this label")
    log.add_argument("--meta", action="append", type=_meta, default=[], metavar="KEY=VALUE", help="only matching")

    show = command("show", "one snapshot's details")
    show.add_argument("ref", help="snapshot id, id prefix or label")

    diff = command("diff", "what changed: FROM (default newest) to TO (default the folder now)")
    diff.add_argument("from_ref", nargs="?", default=None)
    diff.add_argument("to_ref", nargs="?", default=None)
    shape = diff.add_mutually_exclusive_group()
    shape.add_argument("--stat", action="store_true", help="a summary per file")
    shape.add_argument("--name-status", action="store_true", help="status letter and path per file")
    shape.add_argument("--numstat", action="store_true", help="added and deleted lines per file")

    command("status", "what changed since the newest snapshot")

    restore = command("restore", "bring back a snapshot (all of it, or PATHs)")
    restore.add_argument("ref", help="snapshot id, id prefix or label")
    restore.add_argument("paths", nargs="*", help="restore only these paths")
    restore.add_argument("--dry-run", action="store_true", help="show the plan, change nothing")
    restore.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")

    command("undo", "go back to the last checkpoint")
    command("redo", "return to what the last undo replaced")
    turn = command("turn", "agent turns: begin, end, or revert N")
    turn.add_argument("action", choices=["begin", "end", "revert"])
    turn.add_argument("n", nargs="?", type=int, default=1, help="with revert: the n-th last turn (default 1)")
    for name, text in (("pin", "keep a snapshot whatever retention says"), ("unpin", "release a pinned snapshot")):
        command(name, text).add_argument("ref")
    prune = command("prune", "drop snapshots the retention policy says must go, then compact")
    prune.add_argument("--dry-run", action="store_true", help="only list what would go")
    command("gc", "compact the store now")
    command("stats", "size and contents of the store")
    verify = command("verify", "check every snapshot can be read back")
    verify.add_argument("--full", action="store_true", help="re-hash every object too")
    cleanup = command("cleanup", "delete this folder's store and all its snapshots")
    cleanup.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    command("config", "effective settings and where each came from")
    command("mcp", "serve this folder's snapshots to an MCP client over stdio")
    return parser


def _confirm(question: str, args: argparse.Namespace) -> None:
    """Ask a person at a terminal; scripts, pipes, --json and --yes are not asked."""
    if getattr(args, "yes", False) or args.json or not sys.stdin.isatty():
        return
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise _Failed("cancelled; nothing was changed")


def _open(args: argparse.Namespace) -> Snapshotter:
    workspace = os.path.abspath(args.workspace)
    settings = config.resolve(workspace, {"home": args.home})
    snap = Snapshotter(workspace, **config.snapshotter_options(settings))
    if not args.json and sys.stderr.isatty():
        snap.progress = cliformat.ProgressLine()
    return snap


def _print(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def _printer(lines: Sequence[str]) -> Callable[[], None]:
    def show() -> None:
        for line in lines:
            _print(line)

    return show


def _run(args: argparse.Namespace) -> tuple[str, Any, Callable[[], None]]:
    """Run the command; returns (command name, JSON result, text printer)."""
    name = {"track": "snapshot"}.get(args.command, args.command)
    if name == "config":
        settings = config.resolve(os.path.abspath(args.workspace), {"home": args.home})
        result = {k: {"value": v, "source": s} for k, (v, s) in settings.items()}
        return name, result, _printer([f"{k} = {v['value']!r}  ({v['source']})" for k, v in result.items()])
    if name == "mcp":
        from .mcp_server import serve

        serve(os.path.abspath(args.workspace), {"home": args.home})
        return name, None, lambda: None
    snap = _open(args)
    try:
        return (name, *_dispatch(name, snap, args))
    finally:
        if isinstance(snap.progress, cliformat.ProgressLine):
            snap.progress.finish()
        snap.close()


def _dispatch(name: str, snap: Snapshotter, args: argparse.Namespace) -> tuple[Any, Callable[[], None]]:
    f = cliformat
    if name == "snapshot":
        info = snap.snapshot(args.message, label=args.label, metadata=dict(args.meta) or None)

        def show_snapshot() -> None:
            _print(f.snapshot_line(info))
            for skipped in info.skipped:
                sys.stderr.write(f"skipped ({skipped.reason.value}): {skipped.path}\n")

        return f.snapshot_json(info), show_snapshot
    if name == "log":
        infos = snap.list(limit=args.limit or None, label=args.label, metadata=dict(args.meta) or None)
        return [f.snapshot_json(i) for i in infos], _printer([f.snapshot_line(i) for i in infos])
    if name == "show":
        info = snap.get(args.ref)
        return f.snapshot_json(info), lambda: _print(json.dumps(f.snapshot_json(info), indent=2))
    if name == "diff":
        from_ref = args.from_ref or _newest(snap)
        diffs = snap.diff(from_ref, args.to_ref)
        return [f.diff_json(d, with_patch=True) for d in diffs], lambda: _print_diff(diffs, args)
    if name == "status":
        changes = snap.status()
        rows = [f"{f.STATUS_LETTER[c.status.value]} {c.path}" for c in changes]
        return [f.change_json(c) for c in changes], _printer(rows)
    if name == "restore":
        if not args.paths and not args.dry_run:
            plan = snap.restore(args.ref, dry_run=True)
            _confirm(f"restore {plan.target_id[:12]}: write {plan.written}, delete {plan.deleted} files?", args)
        result = snap.restore(args.ref, args.paths or None, dry_run=args.dry_run)
        return f.restore_json(result), lambda: _print_restore(result)
    if name in ("undo", "redo"):
        outcome = snap.undo() if name == "undo" else snap.redo()
        if not outcome.ok:
            raise _Failed(outcome.message, f.undo_json(outcome))
        return f.undo_json(outcome), lambda: _print(outcome.message)
    if name == "turn":
        if args.action == "revert":
            reverted = snap.revert_turn(args.n)
            return f.restore_json(reverted), lambda: _print_restore(reverted)
        info = snap.begin_turn() if args.action == "begin" else snap.end_turn()
        return f.snapshot_json(info), lambda: _print(f.snapshot_line(info))
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
        return stats, _printer([f"{k}: {v}" for k, v in stats.items()])
    if name == "verify":
        checked = snap.verify(full=args.full)
        if not checked.ok:
            raise _Failed(f"{len(checked.problems)} problems: " + "; ".join(checked.problems), f.verify_json(checked))
        return f.verify_json(checked), lambda: _print(
            f"ok: {checked.snapshots_checked} snapshots, {checked.objects_checked:,} objects checked"
        )
    if name == "cleanup":
        _confirm(f"delete every snapshot of {snap.workspace}?", args)
        store = snap.store_path
        snap.cleanup()
        return {"removed": store}, lambda: _print(f"removed {store}")
    raise InvalidInput(f"unknown command {name}")  # pragma: no cover - argparse stops it first


def _newest(snap: Snapshotter) -> str:
    newest = snap.list(limit=1)
    if not newest:
        raise SnapshotNotFound("no snapshots yet; run `snapshotter snapshot` first")
    return newest[0].id


def _print_diff(diffs: Sequence[Any], args: argparse.Namespace) -> None:
    if args.numstat:
        for item in diffs:
            counts = "-\t-" if item.binary else f"{item.additions}\t{item.deletions}"
            _print(f"{counts}\t{item.path}")
    elif args.name_status:
        for item in diffs:
            _print(f"{cliformat.STATUS_LETTER[item.status.value]}\t{item.path}")
    elif args.stat:
        for line in cliformat.stat_lines(list(diffs)):
            _print(line)
    else:
        patch = "".join(item.patch for item in diffs)
        sys.stdout.write(cliformat.colored_patch(patch) if cliformat.wants_color(sys.stdout) else patch)


def _print_restore(result: Any) -> None:
    for path in result.written_paths:
        _print(f"write  {path}")
    for path in result.deleted_paths:
        _print(f"delete {path}")
    done = ("would write", "would delete") if result.dry_run else ("wrote", "deleted")
    _print(f"{done[0]} {result.written}, {done[1]} {result.deleted}, unchanged {result.unchanged}")
    if result.safety_snapshot_id:
        _print(f"undo with: snapshotter restore {result.safety_snapshot_id[:12]}")


def _exit_code(error: BaseException) -> int:
    if isinstance(error, (SnapshotNotFound, InvalidRef)):
        return EXIT_NOT_FOUND
    if isinstance(error, StoreLocked):
        return EXIT_LOCKED
    if isinstance(error, (RestoreConflict, UnsafeTree)):
        return EXIT_REFUSED
    return EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    name = {"track": "snapshot"}.get(args.command, args.command)
    try:
        name, result, show = _run(args)
    except (SnapshotError, _Failed) as error:
        if args.debug:
            raise
        code = EXIT_ERROR if isinstance(error, _Failed) else _exit_code(error)
        sys.stderr.write(f"snapshotter: {error}\n")
        if args.json:
            document = {"type": type(error).__name__, "message": str(error), "exit_code": code}
            if isinstance(error, _Failed) and error.result is not None:
                document["result"] = error.result
            _print(json.dumps({"schema": cliformat.SCHEMA, "command": name, "error": document}))
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    if name == "mcp":
        return EXIT_OK
    if args.json:
        _print(json.dumps({"schema": cliformat.SCHEMA, "command": name, "result": result}))
    else:
        show()
    return EXIT_OK
