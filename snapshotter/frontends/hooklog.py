"""The hooks' log: one line per hook call, what it did or why it failed.

A hook never fails its agent's tool (``hookclient``), so this is where a failure
is seen: ``snapshotter hooks status`` reports the last one. It lives in the
workspace's store (``snapshotter/hooks.log``); where the store cannot be
written (a broken home, a full disk), in the user's state folder, each line
naming its store so that one workspace's status shows only its own (and
those of calls that failed before any store was known). Bounded: past 1 MiB
its older half goes.
"""

from __future__ import annotations

import os
import time

NAME = "hooks.log"
MAX_BYTES = 1 << 20
FAILED = " FAILED "


def store_log(store: str) -> str:
    return os.path.join(store, "snapshotter", NAME)


def fallback_log() -> str:
    """The log used where no store can be written: in the user's state folder."""
    named = os.environ.get("SNAPSHOTTER_HOOKS_LOG")
    if named:
        return named
    import platformdirs

    return os.path.join(platformdirs.user_state_dir("snapshotter", appauthor=False), NAME)


def record(store: str | None, agent: str, event: str, outcome: str, failed: bool = False) -> None:
    """Append one line (never raises: a hook whose log cannot be written still fails open)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    line = f"{stamp} {agent} {event}{FAILED if failed else ' ok '}{' '.join(outcome.split())}"
    if store:
        try:
            _append(store_log(store), line + "\n")
            return
        except OSError:
            pass
    try:
        _append(fallback_log(), f"{line}{_whose(store)}\n")
    except OSError:
        pass


def _whose(store: str | None) -> str:
    """How a fallback line names its store."""
    return f" (store {store})" if store else " (store unknown)"


def _append(path: str, line: str) -> None:
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, line.encode("utf-8", "replace"))
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if size > MAX_BYTES:
        _halve(path)


def _halve(path: str) -> None:
    with open(path, "rb") as handle:
        data = handle.read()
    kept = data[len(data) // 2 :]
    kept = kept[kept.find(b"\n") + 1 :]
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "wb") as handle:
        handle.write(kept)
    os.replace(temporary, path)


def last_lines(store: str | None, count: int = 200) -> list[str]:
    """The newest lines of the store's log and the fallback one (those of this
    store, or of none known), oldest first."""
    from snapshotter.fsutil import read_side_file  # here: a hook call, which only appends, pays for no more

    lines: list[str] = []
    for path, mine in ((store_log(store) if store else None, None), (fallback_log(), (_whose(store), _whose(None)))):
        if path is None:
            continue
        try:  # a regular file up to its bound (and the line that passed it): never a pipe or a device
            found = read_side_file(path, cap=2 * MAX_BYTES).decode("utf-8", "replace").splitlines()
        except OSError:
            continue
        lines.extend([line for line in found if mine is None or line.endswith(mine)][-count:])
    return sorted(lines, key=lambda line: line.partition(" ")[0])[-count:]  # by time; stable


def last_failure(store: str | None) -> str | None:
    return next((line for line in reversed(last_lines(store)) if FAILED in line), None)
