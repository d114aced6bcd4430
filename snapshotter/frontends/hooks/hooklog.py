"""The hooks' log: one line per hook call, what it did or why it failed.

A hook never fails its agent's tool (``hookclient``), so this is where a failure
is seen: ``snapshotter hooks status`` reports the last one. It lives in the
workspace's store (``snapshotter/hooks.log``) once there is one; before that
(a first call that failed: the store is made only by a call that records
something, never by its log, so a failed call leaves no half store) and where
the store cannot be written (a broken home, a full disk), in the user's state
folder, each line naming its store so that one workspace's status shows only
its own (and those of calls that failed before any store was known). Bounded:
past 1 MiB its older half goes.

The agent can write where the log lives (the user's home): a FIFO, a device or
a symlink planted at its path is never written through nor read (opened
without following a last symlink, without blocking, checked to be a regular
file, read up to a cap).
"""

from __future__ import annotations

import errno
import os
import stat
import time

from snapshotter.engine.gitstore.location import store_exists

# ``fsutil`` is imported where it is used: a hook call a watcher serves never logs here itself.

NAME = "hooks.log"
MAX_BYTES = 1 << 20
READ_CAP = 2 * MAX_BYTES + (64 << 10)
"""A log is halved past ``MAX_BYTES``; anything much larger was not written by us."""
FAILED = " FAILED "
BY_WATCHER = "(by the watcher)"
"""How a line the watcher wrote ends: the others were recorded by the hook call itself, the slow way."""
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_APPEND_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NO_FOLLOW | getattr(os, "O_NONBLOCK", 0)


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
    if store and store_exists(store):
        try:
            _append(store_log(store), line + "\n")
            return
        except OSError:
            pass
    try:
        _append(fallback_log(), f"{line}{_whose(store)}\n", make_folder=True)
    except OSError:
        pass


def _whose(store: str | None) -> str:
    """How a fallback line names its store."""
    return f" (store {store})" if store else " (store unknown)"


def _append(path: str, line: str, make_folder: bool = False) -> None:
    """Append ``line`` to the log at ``path``; its folder is made (owner-only)
    only where ``make_folder`` says so: never the store's."""
    if make_folder:
        from snapshotter.engine.fsutil import make_private_folders

        make_private_folders(os.path.dirname(path))
    fd = os.open(path, _APPEND_FLAGS, 0o600)
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.write(fd, line.encode("utf-8", "replace"))
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if size > MAX_BYTES:
        _halve(path)


def _halve(path: str) -> None:
    from snapshotter.engine.fsutil import FileTooLarge, read_side_file

    try:
        data = read_side_file(path, cap=READ_CAP, follow=False)
    except FileTooLarge:  # not grown by us: start afresh
        data = b""
    kept = data[len(data) // 2 :]
    kept = kept[kept.find(b"\n") + 1 :]
    temporary = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NO_FOLLOW | getattr(os, "O_NONBLOCK", 0), 0o600)
    try:
        os.write(fd, kept)
    finally:
        os.close(fd)
    os.replace(temporary, path)


def last_lines(store: str | None, count: int = 200) -> list[str]:
    """The newest lines of the store's log and the fallback one (those of this
    store, or of none known), oldest first."""
    from snapshotter.engine.fsutil import read_side_file

    lines: list[str] = []
    for path, mine in ((store_log(store) if store else None, None), (fallback_log(), (_whose(store), _whose(None)))):
        if path is None:
            continue
        try:
            found = read_side_file(path, cap=READ_CAP, follow=False).decode("utf-8", "replace").splitlines()
        except OSError:  # none yet; or not a regular file, or too large: not ours to read
            continue
        lines.extend([line for line in found if mine is None or line.endswith(mine)][-count:])
    return sorted(lines, key=lambda line: line.partition(" ")[0])[-count:]  # by time; stable


def last_failure(store: str | None) -> str | None:
    return next((line for line in reversed(last_lines(store)) if FAILED in line), None)
