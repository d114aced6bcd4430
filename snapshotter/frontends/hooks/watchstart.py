"""Whether a hook may start a watcher for a store now, and what became of the last start.

A hook that finds no watcher starts one (``hookclient``). It claims the start
first, with a note made exclusively, so that hooks called at once start one
watcher, not one each; the watcher writes its process id into the note, and
removes it once it listens (``started``) or records why it could not start
(``failed``). A failed start is not tried again at once: the next try waits
``backoff(failures)``, one minute doubling up to an hour, so a watcher that
cannot start (a folder over the size cap, a store it cannot open, a file that
hangs it) is not started again by every hook call; meanwhile each call records
its event itself, correct and only slower. A claim whose watcher died without
a word (killed while starting) or that is older than ``START_LIMIT`` (the
watcher gives up by itself then) counts as a failure too. A watcher that starts
(a hook's or ``snapshotter watch``) clears the failures. ``hooks status`` shows
what is known (``state``).

The notes live in the snapshot home (``<home>/watchers/<store key>.*``,
owner-only, like the stores beside them), outside any store: the store may not
exist yet, and a failed start must not leave a half one. They are read as side
files (never waited on, capped), and a note written by someone else can at
worst delay a watcher by ``MAX_BACKOFF``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

START_LIMIT = 300.0
"""Seconds a watcher may take to start listening (opening the store, starting
to watch) before it gives up and records why."""
FORK_LIMIT = 30.0
"""Seconds after which a claim that no watcher has written its id into is dead."""
FIRST_BACKOFF = 60.0
MAX_BACKOFF = 3600.0
_FOLDER = "watchers"
_NOTE_CAP = 64 << 10


@dataclass(frozen=True)
class StartState:
    """What is known of the starts of a store's watcher: one ``starting`` now
    (``pid``, ``since``), or the last ones ``failed`` (``failures`` in a row, the
    last at ``since`` for ``reason``; no new start before ``retry_at``)."""

    state: str
    since: float
    pid: int = 0
    failures: int = 0
    reason: str = ""
    retry_at: float = 0.0


def backoff(failures: int) -> float:
    """Seconds to wait before starting a watcher again after ``failures`` failed starts in a row."""
    return float(min(FIRST_BACKOFF * 2 ** max(failures - 1, 0), MAX_BACKOFF))


def _paths(store: str) -> tuple[str, str, str]:
    """(the notes' folder, the claim, the failures) of ``store`` (``<home>/snapshots/<key>``)."""
    home, key = os.path.dirname(os.path.dirname(store)), os.path.basename(store)
    folder = os.path.join(home, _FOLDER)
    return folder, os.path.join(folder, f"{key}.starting"), os.path.join(folder, f"{key}.failed")


def _read(path: str) -> dict[str, object] | None:
    """A note's fields; None where there is none; {} for one that is not ours to read."""
    from snapshotter.engine.fsutil import read_side_file

    try:
        found = json.loads(read_side_file(path, cap=_NOTE_CAP, follow=False))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _number(fields: dict[str, object], name: str) -> float:
    value = fields.get(name)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _write(path: str, fields: dict[str, object]) -> None:
    """Write a note whole (a temporary file renamed over it)."""
    temporary = f"{path}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(temporary, flags, 0o600)
    try:
        os.write(fd, json.dumps(fields).encode())
    finally:
        os.close(fd)
    os.replace(temporary, path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive, if not ours
        return True
    return True


def state(store: str) -> StartState | None:
    """What is known of the starts of ``store``'s watcher; None: nothing (none
    started yet, or the last one started)."""
    _, claim_path, failed_path = _paths(store)
    claim = _read(claim_path)
    if claim is not None:
        return StartState("starting", _number(claim, "since"), int(_number(claim, "pid")))
    failed = _read(failed_path)
    if failed is None:
        return None
    since = _number(failed, "since")
    failures = max(int(_number(failed, "failures")), 1)
    retry_at = min(_number(failed, "retry_at"), since + MAX_BACKOFF)
    reason = failed.get("reason")
    return StartState("failed", since, 0, failures, reason if isinstance(reason, str) else "", retry_at)


def claim(store: str, now: float | None = None) -> bool:
    """Whether this caller may start ``store``'s watcher now; if so, the start is
    claimed (no other caller may, until ``started``, ``failed`` or ``released``)."""
    now = time.time() if now is None else now
    folder, claim_path, _ = _paths(store)
    known = state(store)
    if known is not None and known.state == "failed" and now < known.retry_at:
        return False
    if known is not None and known.state == "starting":
        why = _dead(known, now)
        if why is None:
            return False  # another hook's watcher is starting right now
        stale = f"{claim_path}.{os.getpid()}.stale"
        try:
            os.rename(claim_path, stale)  # one caller of many takes the stale claim away
        except OSError:
            return False
        os.unlink(stale)
        failed(store, why, now, release=False)
        return False  # counted as a failure: the next try waits its turn
    from snapshotter.engine.fsutil import make_private_folders

    try:
        make_private_folders(folder)
        fd = os.open(claim_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        return False
    try:
        os.write(fd, json.dumps({"since": now, "pid": 0}).encode())
    finally:
        os.close(fd)
    return True


def _dead(known: StartState, now: float) -> str | None:
    """Why a ``starting`` claim is dead, or None where its watcher may still start."""
    age = now - known.since
    if known.pid == 0:
        return f"a watcher started {age:.0f} s ago never began" if age > FORK_LIMIT else None
    if not _alive(known.pid):
        return f"the watcher (process {known.pid}) ended before it listened, without a word"
    if age > START_LIMIT + FORK_LIMIT:
        return f"the watcher (process {known.pid}) did not listen within {START_LIMIT:.0f} s"
    return None


def starting(store: str, pid: int, now: float | None = None) -> None:
    """The watcher's own process id, written into its claim."""
    _, claim_path, _ = _paths(store)
    known = _read(claim_path)
    since = _number(known, "since") if known else 0.0
    try:
        _write(claim_path, {"since": since or (time.time() if now is None else now), "pid": pid})
    except OSError:
        pass


def started(store: str) -> None:
    """A watcher listens for ``store``: its claim and the failures before it are gone."""
    _, claim_path, failed_path = _paths(store)
    for path in (claim_path, failed_path):
        try:
            os.unlink(path)
        except OSError:
            pass


def released(store: str) -> None:
    """The claim is given up without a failure (another watcher serves already, or the fork failed)."""
    try:
        os.unlink(_paths(store)[1])
    except OSError:
        pass


def failed(store: str, reason: str, now: float | None = None, release: bool = True) -> StartState:
    """Record that a watcher for ``store`` could not start, and why; its claim goes
    (``release``). Returns the new state (when the next start may be tried)."""
    now = time.time() if now is None else now
    folder, claim_path, failed_path = _paths(store)
    before = _read(failed_path) or {}
    failures = int(_number(before, "failures")) + 1
    found = StartState("failed", now, 0, failures, " ".join(reason.split())[:500], now + backoff(failures))
    fields = {"since": now, "failures": failures, "reason": found.reason, "retry_at": found.retry_at}
    try:
        from snapshotter.engine.fsutil import make_private_folders

        make_private_folders(folder)
        _write(failed_path, fields)
    except OSError:
        pass
    if release:
        released(store)
    return found
