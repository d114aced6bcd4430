"""Tool calls paired for agents that name none (Gemini CLI, Copilot CLI), and
the events of a session already recorded (every agent's: ``hookevents``).

Their before- and after-tool hooks carry the tool's name and arguments, no id,
and parallel calls end in the order they finish. So each before-hook gives its
call an id of our own (``c<n>``, counted per session) and notes it open with a
digest of the tool and its arguments; an after-hook closes the open call with
the same digest (the oldest such), else the oldest open call. The notes live
in the store (``snapshotter/hooks/<session>.json``), written under a lock of
their own, so hooks running in separate processes at once pair alike.

Under the same lock, the fingerprints of the session's newest events (one a
line in ``<session>.seen``, appended to, not rewritten: every agent's events
pass here) tell a copy of an event, run at once from a second hooks file, from
the event: exactly one of them is recorded. A torn line (a crash mid-write) is
one fingerprint forgotten, nothing worse.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import Any

from snapshotter.engine.fsutil import read_side_file
from snapshotter.engine.gitstore.locking import StoreLock

LOCK_WAIT = 5.0
MAX_OPEN = 256
"""Open calls kept per session: a before-hook whose after-hook never came is forgotten past this."""
MAX_SEEN = 128
"""Fingerprints of a session's newest events kept (a copy comes within a second of its event)."""
STATE_CAP = 1 << 20
"""The notes of one session are ``MAX_OPEN`` calls of some 30 bytes (and ``2 * MAX_SEEN``
fingerprints of 33): past 1 MiB they are no notes of ours, and are begun afresh."""


def digest(tool: object, arguments: object) -> str:
    """What identifies a call's tool and arguments (the same JSON gives the same digest)."""
    text = json.dumps([tool, arguments], sort_keys=True, default=str)
    return hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


class Pairs:
    """The open calls of one session (see the module's docstring)."""

    def __init__(self, store_path: str, session: str) -> None:
        folder = os.path.join(store_path, "snapshotter", "hooks")
        self.folder = folder
        self.path = os.path.join(folder, f"{session}.json")
        self.lock_path = os.path.join(folder, f"{session}.lock")
        self.seen_path = os.path.join(folder, f"{session}.seen")

    def opened(self, key: str) -> str:
        """A new call with tool-and-arguments digest ``key``: its id, noted open."""
        with self._locked() as state:
            state["next"] += 1
            call = f"c{state['next']}"
            state["open"] = [*state.get("open", []), [call, key]][-MAX_OPEN:]
            return call

    def closed(self, key: str) -> str | None:
        """The open call an after-hook with digest ``key`` closes (None: none is open)."""
        with self._locked() as state:
            calls: list[list[str]] = state.get("open", [])
            match = next((entry for entry in calls if entry[1] == key), calls[0] if calls else None)
            if match is None:
                return None
            calls.remove(match)
            return match[0]

    def first(self, fingerprint: str) -> bool:
        """Whether the event with ``fingerprint`` is new here (then noted seen): False for a copy."""
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        with StoreLock(self.lock_path, LOCK_WAIT):
            try:
                seen = read_side_file(self.seen_path, STATE_CAP, follow=False).decode("ascii", "replace").split()
            except FileNotFoundError:
                seen = []
            except OSError:  # not a file of ours: it goes, and is begun again
                os.unlink(self.seen_path)
                seen = []
            if fingerprint in seen:
                return False
            if len(seen) >= 2 * MAX_SEEN:  # now and then, the oldest go
                _replace(self.seen_path, "".join(f"{item}\n" for item in seen[-MAX_SEEN:]))
            fd = os.open(self.seen_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NOFOLLOW, 0o600)
            try:
                os.write(fd, f"{fingerprint}\n".encode("ascii", "replace"))
            finally:
                os.close(fd)
            return True

    def _locked(self) -> _Locked:
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        return _Locked(self)


def _checked(found: object) -> dict[str, Any]:
    """The state as read, with what a damaged or planted file put there dropped:
    the count is a plain number below 2**53, the open calls pairs of strings."""
    if not isinstance(found, dict):
        found = {}
    number = found.get("next", 0)
    calls = found.get("open", [])
    return {
        "next": number if isinstance(number, int) and 0 <= number < 2**53 else 0,
        "open": [list(e) for e in calls if isinstance(e, list) and len(e) == 2 and all(isinstance(p, str) for p in e)][
            -MAX_OPEN:
        ]
        if isinstance(calls, list)
        else [],
    }


class _Locked:
    """The state, read under the lock and written back on leaving."""

    def __init__(self, pairs: Pairs) -> None:
        self.pairs = pairs
        self.lock = StoreLock(pairs.lock_path, LOCK_WAIT)
        self.state: dict[str, Any] = {}

    def __enter__(self) -> dict[str, Any]:
        self.lock.__enter__()
        try:
            found = json.loads(read_side_file(self.pairs.path, STATE_CAP, follow=False))
        except (OSError, ValueError, RecursionError):
            found = {}  # none yet, torn, or not a file: calls are counted afresh
        self.state = _checked(found)
        return self.state

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        try:
            if kind is None:
                _replace(self.pairs.path, json.dumps(self.state))
        finally:
            self.lock.__exit__(kind, error, trace)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _replace(path: str, text: str) -> None:
    """``path`` holds ``text`` (a temporary file renamed over it: never torn)."""
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".pairs-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
