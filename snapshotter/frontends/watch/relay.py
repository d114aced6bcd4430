"""Handing a command line to a watcher (``snapshotter watch``) that serves the
workspace, instead of opening the store in this process.

A fresh process pays for the interpreter, the engine's imports and a walk of
the workspace; a watcher already holds an open ``Snapshotter`` in watch mode,
so it answers in milliseconds. This module is the client side, which ``cli``
tries first: it imports only the grammar, the settings and the store's
location, never the engine. Whatever goes wrong before the watcher accepted
the command (no watcher, a stale socket, a key that does not match, a watcher
that is busy or stuck, or one that declines because its settings or version
differ) makes the caller run the command itself, silently. Once accepted, the
command runs exactly once, there: if the watcher dies before answering, that
is reported as an error, never retried.

Transport (``wire``): a Unix socket in the store's private folder (mode 0600;
a named pipe on Windows), both sides proving they hold the key the watcher
wrote beside it (mode 0600), and only JSON on the wire (never pickle).
``SNAPSHOTTER_NO_WATCHER=1`` turns relaying off.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Sequence

from snapshotter import __version__
from snapshotter.engine.gitstore.location import canonical_workspace, find_workspace, store_path_for
from snapshotter.frontends.shared import arguments, wire
from snapshotter.frontends.shared.userfiles import user_config_path
from snapshotter.frontends.shared.wire import address_of, read_key, relevant_env

TYPE_CHECKING = False  # not ``typing``'s: this module's imports are the price of every handed-over command
if TYPE_CHECKING:
    from typing import Any

    from snapshotter.frontends.shared import config

DISABLE_ENV = "SNAPSHOTTER_NO_WATCHER"
"""Set (to anything but empty or 0) to run every command in its own process."""
NOT_RELAYED = frozenset({"watch", "mcp", "ui", "config", "where", "cleanup", "hooks", "hook"})
"""Commands always run in the calling process (cleanup removes the watcher's store)."""
HANDSHAKE_TIMEOUT = 0.2
"""Seconds to connect and prove the key, both ways; past it the caller runs the command itself."""
DECISION_TIMEOUT = 1.0
"""Seconds for the watcher to accept or decline a command it was handed."""
MAX_MESSAGE = 1 << 20
"""A request is small; anything bigger is not ours."""


def _home(args: Any, workspace: str) -> str | None:
    """The ``home`` setting as ``config.resolve`` finds it (a flag, then
    ``SNAPSHOTTER_HOME``, then the user's config file; a workspace file may not
    set it), reading the config file only where there is one."""
    if args.home is not None:
        return str(args.home)
    if "SNAPSHOTTER_HOME" in os.environ:
        return os.environ["SNAPSHOTTER_HOME"]
    if not os.path.exists(user_config_path()):
        return None
    from snapshotter.frontends.shared import config

    home: str | None = config.resolve(workspace, arguments.flags(args)).value("home")
    return home


def settings_document(settings: config.Resolved) -> dict[str, Any]:
    """Resolved settings as JSON, to compare a request's with a watcher's."""
    return {name: value for name, (value, _source) in settings.values.items()}


def connect(address: str, key: bytes, timeout: float = HANDSHAKE_TIMEOUT) -> wire.Channel | None:
    """A channel to the watcher at ``address`` that proved it holds ``key`` (as we
    proved it to the watcher), within about ``timeout`` seconds; None if not."""
    try:
        return wire.connect(address, key, timeout)
    except (OSError, EOFError, wire.Refused) as exc:  # none there, stale, stuck, another key
        _debug(f"no watcher at {address}: {exc!r}")
        return None


def _debug(message: str) -> None:
    """A debug line, where logging is loaded at all (else nobody could have asked to see it)."""
    if "logging" in sys.modules:
        sys.modules["logging"].getLogger("snapshotter").debug("%s", message)


def quiet_parse(argv: Sequence[str]) -> Any:
    """The parse, or None where the direct run will print the usage error (or help) itself."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            return arguments.parse(argv)
        except (SystemExit, arguments.UsageError):
            return None


def relayable(args: Any, interactive: bool) -> bool:
    if args is None or args.command in NOT_RELAYED or args.debug:
        return False
    asks = args.command == "restore" and not (args.paths or args.dry_run or args.yes)
    asks = asks or bool(getattr(args, "patch", False))  # revert -p asks hunk by hunk
    return not (asks and interactive)  # a person will be asked: here, not in the watcher


def hand_over(argv: Sequence[str]) -> int | None:
    """Run ``argv`` in the watcher serving its workspace and print what it printed;
    returns the exit code, or None when the caller must run the command itself."""
    if os.environ.get(DISABLE_ENV, "") not in ("", "0"):
        return None
    interactive = sys.stdin.isatty() and sys.stderr.isatty()
    args = quiet_parse(argv)
    if not relayable(args, interactive):
        return None
    try:
        begun = canonical_workspace(os.path.abspath(args.workspace))
        home = _home(args, begun)
        store = store_path_for(find_workspace(begun, home), home)
    except Exception:  # a SnapshotError, or a bad setting: the direct run reports it
        return None
    address = address_of(store)
    if sys.platform != "win32" and not os.path.exists(address):
        return None
    key = read_key(store)
    conn = connect(address, key) if key is not None else None
    if conn is None:
        return None
    request = {
        "version": __version__,
        "argv": list(argv),
        "cwd": os.getcwd(),
        "env": relevant_env(os.environ),
        "interactive": interactive,
        "stdout_tty": sys.stdout.isatty(),
        "stderr_tty": sys.stderr.isatty(),
        "store": store,
    }
    with conn:
        try:
            conn.send(json.dumps(request).encode())
            decision = json.loads(conn.recv(DECISION_TIMEOUT, limit=MAX_MESSAGE))
            if not decision.get("accept"):
                _debug(f"the watcher declined: {decision.get('why')}")
                return None
            conn.send(b'"go"')  # from here the command is the watcher's: never run it twice
        except (OSError, EOFError, ValueError, wire.Refused, AttributeError) as exc:
            _debug(f"the watcher did not take the command: {exc!r}")
            return None
        try:
            answer = json.loads(conn.recv())
            code, out, err = int(answer["code"]), str(answer["out"]), str(answer["err"])
        except (OSError, EOFError, ValueError, KeyError, TypeError, wire.Refused) as exc:
            return _lost(args, exc)
    sys.stdout.write(out)
    sys.stderr.write(err)
    return code


def _lost(args: Any, exc: BaseException) -> int:
    message = (
        f"the watcher serving this workspace stopped before answering ({type(exc).__name__}); "
        "the command may have run: see `snapshotter log` and `snapshotter status`"
    )
    sys.stderr.write(f"snapshotter: {message}\n")
    if args.json:
        from snapshotter.frontends.shared import rendering

        error = {"type": "WatcherLost", "message": message, "exit_code": 1}
        document = {"schema": rendering.SCHEMA, "command": args.command, "error": error}
        sys.stdout.write(json.dumps(document) + "\n")
    return 1
