"""The store lock on its own (``engine/gitstore/locking.py``), in one process.

``flock`` locks an open file description, so two ``StoreLock`` objects on one
path exclude each other inside one process just as two processes do: these
tests need no child process and no long timeout (``test_concurrency.py`` and
``test_crash.py`` cover real processes killed while holding it). What each
checks: who waits and for how long, the holder record (written on taking,
erased on release, kept by an interrupted holder so the next one recovers),
re-entry, and a lock file an agent replaced with something else.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
import threading
from pathlib import Path

import pytest

from snapshotter.engine.gitstore.locking import StoreLock
from snapshotter.errors import StoreError, StoreLocked

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock semantics; msvcrt is tested on Windows CI")

SHORT = 0.05


def record(path: Path) -> dict[str, object]:
    return dict(json.loads(path.read_bytes()))


def test_a_second_lock_on_the_path_times_out_naming_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    with StoreLock(str(path), SHORT):
        held = record(path)
        assert held["pid"] == os.getpid() and held["host"] == socket.gethostname()
        assert str(held["started"]).endswith("+00:00") and len(str(held["started"])) == 25
        with pytest.raises(StoreLocked) as caught:
            StoreLock(str(path), SHORT).acquire()
        message = str(caught.value)
        assert message == (
            f"store is locked by pid {os.getpid()} on {socket.gethostname()} (since {held['started']})"
            f" for over {SHORT:g} s; wait for it to finish or stop it"
        )
    assert path.read_bytes() == b""  # released: the record is erased
    with StoreLock(str(path), SHORT):  # and the lock is free again
        assert record(path)["pid"] == os.getpid()


def test_a_holder_record_that_is_not_json_is_another_process(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    holder = StoreLock(str(path), SHORT)
    holder.acquire()
    try:
        for garbage in (b"not json\n", b'{"pid": 1}\n', b"[1, 2]\n"):
            path.write_bytes(garbage)
            with pytest.raises(StoreLocked, match=r"^store is locked by another process for over 0\.05 s; "):
                StoreLock(str(path), SHORT).acquire()
        path.write_bytes(b"")
        with pytest.raises(StoreLocked, match=r"^store is locked by another process "):
            StoreLock(str(path), 0).acquire()
    finally:
        holder.release()


def test_a_waiter_gets_the_lock_once_its_holder_releases_it(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with StoreLock(str(path), SHORT):
            taken.set()
            release.wait(timeout=30)

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait(timeout=30)
    threading.Timer(0.2, release.set).start()
    waiter = StoreLock(str(path), 30)
    try:
        waiter.acquire()  # waits, retrying, until the holder lets go
        assert release.is_set() and record(path)["pid"] == os.getpid()
        waiter.release()
    finally:
        release.set()
        holder.join()
    assert path.read_bytes() == b""


def test_the_lock_is_reentrant_and_released_by_the_last_release_only(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    lock, other = StoreLock(str(path), SHORT), StoreLock(str(path), SHORT)
    lock.acquire()
    lock.acquire()  # the owning thread takes it again without waiting
    lock.release()
    assert path.read_bytes() != b""
    with pytest.raises(StoreLocked):
        other.acquire()
    lock.release()
    assert path.read_bytes() == b""
    other.acquire()
    other.release()


def test_another_thread_waits_for_the_owning_thread_then_times_out(tmp_path: Path) -> None:
    lock = StoreLock(str(tmp_path / "lock"), SHORT)
    errors: list[BaseException] = []

    def other_thread() -> None:
        try:
            lock.acquire()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)
        else:
            lock.release()

    with lock:
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert len(errors) == 1 and isinstance(errors[0], StoreLocked)
    assert str(errors[0]) == "store is busy in another thread of this process for over 0.05 s; retry"
    thread = threading.Thread(target=other_thread)
    thread.start()  # free now: the other thread takes it
    thread.join()
    assert len(errors) == 1


def test_a_failed_acquire_leaves_the_lock_usable_by_its_thread(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    lock, holder = StoreLock(str(path), SHORT), StoreLock(str(path), SHORT)
    holder.acquire()
    with pytest.raises(StoreLocked):
        lock.acquire()
    holder.release()
    done: list[bool] = []

    def take() -> None:
        with lock:
            done.append(True)

    thread = threading.Thread(target=take)
    thread.start()  # the failed acquire gave back its thread lock: another thread is not stuck
    thread.join(timeout=10)
    assert done == [True]


def test_a_record_left_behind_means_its_holder_died_and_recovery_runs_under_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    path.write_bytes(b'{"pid": 1, "host": "gone", "started": "then"}\n')
    seen: list[bytes] = []

    def recover() -> None:
        seen.append(path.read_bytes())
        with pytest.raises(StoreLocked):  # held while recovering
            StoreLock(str(path), 0).acquire()

    with StoreLock(str(path), SHORT, on_recover=recover):
        assert len(seen) == 1 and json.loads(seen[0])["pid"] == os.getpid()  # our record, already written
    assert path.read_bytes() == b""
    with StoreLock(str(path), SHORT, on_recover=recover):  # released cleanly: nothing to recover
        pass
    assert len(seen) == 1
    path.write_bytes(b"left\n")
    with StoreLock(str(path), SHORT):  # no recovery given: taken all the same
        pass


def test_an_interrupted_holder_leaves_its_record_and_an_exception_does_not(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    recovered: list[int] = []
    lock = StoreLock(str(path), SHORT, on_recover=lambda: recovered.append(1))
    with pytest.raises(ValueError), lock:
        raise ValueError("an error is not an interruption")
    assert path.read_bytes() == b""
    with pytest.raises(KeyboardInterrupt), lock:
        raise KeyboardInterrupt
    assert record(path)["pid"] == os.getpid()  # kept: the next holder recovers
    with StoreLock(str(path), 0):  # ... and the lock itself is free
        pass
    assert recovered == []  # that one had no recovery
    path.write_bytes(b"x")
    with lock:
        pass
    assert recovered == [1]
    assert path.read_bytes() == b""  # the flag was reset: this release erased the record
    with pytest.raises(SystemExit), lock:
        raise SystemExit(3)
    assert path.read_bytes() != b""


def test_the_lock_file_is_private_and_opened_once_per_holder(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    lock = StoreLock(str(path), SHORT)
    with lock:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        fd = lock._fd
        assert fd is not None and os.fstat(fd).st_ino == path.stat().st_ino
    assert lock._fd is None
    with pytest.raises(OSError):
        os.fstat(fd)  # closed on release


def test_a_symlink_planted_as_the_lock_file_is_refused_and_never_written_through(tmp_path: Path) -> None:
    target = tmp_path / "precious"
    target.write_bytes(b"keep me")
    path = tmp_path / "lock"
    path.symlink_to(target)
    with pytest.raises(StoreError, match=f"^the lock file {path} is a symbolic link; remove it$"):
        StoreLock(str(path), SHORT).acquire()
    assert target.read_bytes() == b"keep me"


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_lock_file_that_is_not_a_regular_file_is_refused_without_hanging(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "lock"
    if kind == "folder":
        path.mkdir()
        with pytest.raises(IsADirectoryError):  # O_RDWR on a folder: the system refuses
            StoreLock(str(path), SHORT).acquire()
        return
    os.mkfifo(path)  # opened without blocking, then refused
    with pytest.raises(StoreError, match=f"^the lock file {path} is not a regular file; remove it$"):
        StoreLock(str(path), SHORT).acquire()


def test_a_missing_folder_is_the_systems_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        StoreLock(str(tmp_path / "gone" / "lock"), SHORT).acquire()
