"""How a command line ends: its exit codes, and a command that ran but did not succeed.

Exit codes: 0 ok, 1 error (or nothing to undo/redo, a failed verify, a
declined confirmation, conflict markers written), 2 usage, 3 snapshot, ref or path not found, 4 store
locked, 5 refused (a restore's conflict or unsafe snapshot, a revert or merge
that conflicts and wrote nothing), 130 interrupted (Ctrl-C), 141 output pipe closed (as git).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not ``typing``'s: loaded by every command line, handed to a watcher or not
if TYPE_CHECKING:
    from typing import Any

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_LOCKED, EXIT_REFUSED = 0, 1, 2, 3, 4, 5
EXIT_PIPE = 141
"""The output pipe closed early (``snapshotter log | head -1``): what git's exit by SIGPIPE looks like."""
EXIT_INTERRUPTED = 130
"""Ctrl-C stopped the command: 128 + SIGINT, as shells report it."""
INTERRUPTED = "snapshotter: interrupted"
"""The one line a command stopped by Ctrl-C prints on stderr."""


class CommandFailed(Exception):
    """A command that ran but did not succeed; ``kind`` is its public name in JSON."""

    def __init__(self, kind: str, message: str, result: Any = None, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.kind = kind
        self.result = result
        self.code = code
