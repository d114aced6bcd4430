"""The ``snapshotter`` command: snapshot, log, diff, restore and status of a folder.

Errors are one line on stderr with exit code 1 (3 when a snapshot is not
found, 2 for usage errors); ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from . import __version__
from .errors import InvalidRef, SnapshotError, SnapshotNotFound
from .model import FileDiff, SnapshotInfo
from .snapshotter import Snapshotter

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3

_STATUS_LETTER = {"added": "A", "modified": "M", "deleted": "D", "type_changed": "T"}


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-C", "--workspace", default=".", help="the workspace folder (default: current folder)")
    common.add_argument(
        "--home", default=None, help="where stores live (default: $SNAPSHOTTER_HOME or the user data folder)"
    )
    common.add_argument("--debug", action="store_true", help="show tracebacks")

    parser = argparse.ArgumentParser(
        prog="snapshotter",
        description="Snapshots of a folder in a hidden git store: take, list, diff and restore them.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"snapshotter {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    snap = commands.add_parser("snapshot", aliases=["track"], parents=[common], help="record the folder now")
    snap.add_argument("-m", "--message", default="", help="a message for the snapshot")
    snap.add_argument("--label", default=None, help="a label that can be used as a ref")

    log = commands.add_parser("log", parents=[common], help="list snapshots, newest first")
    log.add_argument("-n", "--limit", type=int, default=50, help="how many to show (default 50)")

    diff = commands.add_parser("diff", parents=[common], help="show what changed")
    diff.add_argument("from_ref", nargs="?", default=None, help="snapshot to compare from (default: newest)")
    diff.add_argument("to_ref", nargs="?", default=None, help="snapshot to compare to (default: the folder now)")
    diff.add_argument("--numstat", action="store_true", help="added and deleted line counts per file")

    restore = commands.add_parser("restore", parents=[common], help="bring back a snapshot")
    restore.add_argument("ref", help="snapshot id, id prefix or label")
    restore.add_argument("paths", nargs="*", help="restore only these paths")
    restore.add_argument("--dry-run", action="store_true", help="show what would change, change nothing")

    commands.add_parser("status", parents=[common], help="what changed since the newest snapshot")
    return parser


def _line(info: SnapshotInfo) -> str:
    label = f" [{info.label}]" if info.label else ""
    when = info.created_at.strftime("%Y-%m-%d %H:%M:%S")
    first = info.message.splitlines()[0] if info.message else ""
    stats = f"{info.files_changed} files +{info.additions} -{info.deletions}"
    return f"{info.id[:12]}  {when}  {stats}{label}  {first}".rstrip()


def _print_diff(diffs: Sequence[FileDiff], numstat: bool) -> None:
    for item in diffs:
        if numstat:
            counts = "-\t-" if item.binary else f"{item.additions}\t{item.deletions}"
            print(f"{counts}\t{item.path}")
        else:
            sys.stdout.write(item.patch)


def _run(args: argparse.Namespace) -> int:
    snap = Snapshotter(args.workspace, home=args.home)
    if args.command in ("snapshot", "track"):
        info = snap.snapshot(args.message, label=args.label)
        print(_line(info))
        for skipped in info.skipped:
            print(f"skipped ({skipped.reason.value}): {skipped.path}", file=sys.stderr)
    elif args.command == "log":
        for info in snap.list(limit=args.limit):
            print(_line(info))
    elif args.command == "diff":
        from_ref = args.from_ref
        if from_ref is None:
            newest = snap.list(limit=1)
            if not newest:
                raise SnapshotNotFound("no snapshots yet; run `snapshotter snapshot` first")
            from_ref = newest[0].id
        _print_diff(snap.diff(from_ref, args.to_ref), args.numstat)
    elif args.command == "restore":
        result = snap.restore(args.ref, args.paths or None, dry_run=args.dry_run)
        for path in result.written_paths:
            print(f"write  {path}")
        for path in result.deleted_paths:
            print(f"delete {path}")
        done = ("would write", "would delete") if result.dry_run else ("wrote", "deleted")
        print(f"{done[0]} {result.written}, {done[1]} {result.deleted}, unchanged {result.unchanged}")
        if result.safety_snapshot_id:
            print(f"undo with: snapshotter restore {result.safety_snapshot_id[:12]}")
    elif args.command == "status":
        for change in snap.status():
            print(f"{_STATUS_LETTER[change.status.value]} {change.path}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except SnapshotError as exc:
        if args.debug:
            raise
        print(f"snapshotter: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND if isinstance(exc, (SnapshotNotFound, InvalidRef)) else EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
