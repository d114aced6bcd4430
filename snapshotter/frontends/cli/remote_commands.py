"""The command line's remote commands: ``push``, ``fetch``, ``remote list`` and
``clone`` (the grammar is in ``arguments``; ``cli`` runs the rest).

Credentials come from the remote's URL, the environment
(``SNAPSHOTTER_REMOTE_USERNAME``, ``SNAPSHOTTER_REMOTE_PASSWORD`` or
``SNAPSHOTTER_REMOTE_TOKEN``, ``SNAPSHOTTER_SSH_KEY``,
``SNAPSHOTTER_SSH_KNOWN_HOSTS``) or the ``[credentials]`` table of the user's
own config file, and are never printed.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping

from snapshotter.frontends.shared import config, rendering

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from snapshotter.facade.api import Snapshotter

NAMES = frozenset({"push", "fetch", "remote"})
"""Commands run on an open Snapshotter (``clone`` makes its own: see :func:`clone`); ``cli`` holds the
same set, to dispatch without importing this module."""
Printer = Callable[[str], None]


def dispatch(
    name: str, snap: Snapshotter, args: argparse.Namespace, say: Printer, environ: Mapping[str, str]
) -> tuple[Any, Callable[[], None]]:
    creds = config.credentials(environ)
    if name == "push":
        pushed = snap.push(
            args.remote, name=args.name, prune=args.prune, credentials=creds, skip_refused=args.skip_refused
        )
        rows = [f"left out {s.id[:12]}: {s.path} ({s.reason})" for s in pushed.skipped]
        rows.append(
            f"pushed {pushed.snapshots_sent} snapshots ({pushed.objects_sent:,} objects) to {pushed.remote} "
            f"as {pushed.name}" + (f"; pruned {pushed.pruned}" if pushed.pruned else "")
        )
        return rendering.plain_json(pushed), lambda: _lines(say, rows)
    if name == "fetch":
        fetched = snap.fetch(args.remote, name=args.name, credentials=creds)
        rows = [rendering.snapshot_line(info) for info in fetched.snapshots]
        rows.append(f"fetched {len(fetched.snapshots)} snapshots of {fetched.name} from {fetched.remote}")
        snapshots = [rendering.snapshot_json(info) for info in fetched.snapshots]
        body = {"remote": fetched.remote, "name": fetched.name, "snapshots": snapshots}
        return body, lambda: _lines(say, rows)
    if name == "remote":
        return list_remote(args.remote or snap.remote, creds, say)
    raise AssertionError(f"not a remote command: {name}")


def list_remote(location: str | None, creds: Any, say: Printer) -> tuple[Any, Callable[[], None]]:
    from snapshotter.errors import InvalidInput
    from snapshotter.facade.api import Snapshotter

    if location is None:
        raise InvalidInput("no remote: pass one, or set remote (SNAPSHOTTER_REMOTE, the user config file)")
    found = Snapshotter.remote_workspaces(location, credentials=creds)
    rows = [f"{w.name}  {w.snapshots} snapshots from {w.hosts} {'store' if w.hosts == 1 else 'stores'}" for w in found]
    return [rendering.plain_json(w) for w in found], lambda: _lines(say, rows)


def clone(
    args: argparse.Namespace, options: dict[str, Any], environ: Mapping[str, str], say: Printer
) -> tuple[Any, Callable[[], None]]:
    """``clone REMOTE NAME [REF] DIR``: a new folder filled from a remote snapshot."""
    from snapshotter.facade.api import Snapshotter

    options = {key: value for key, value in options.items() if key != "credentials"}  # passed on its own
    creds = config.credentials(environ)
    made = Snapshotter.clone(args.remote, args.name, args.ref, args.dest, credentials=creds, **options)
    try:
        newest = made.base() or made.list(limit=1)[0]
        body = {"path": made.workspace, "store": made.store_path, "snapshot": rendering.snapshot_json(newest)}
    finally:
        made.close()
    return body, lambda: say(f"cloned {newest.id[:12]} of {args.name} into {body['path']}")


def _lines(say: Printer, lines: list[str]) -> None:
    for line in lines:
        say(line)
