"""Threads, processes and the store lock: no errors, no lost snapshots, dead owners recovered."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import write

from snapshotter import Snapshotter, StoreLocked

WORKER = """
import sys
from snapshotter import Snapshotter
ws, home, tag, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
snap = Snapshotter(ws, home=home, lock_timeout=120)
for i in range(count):
    with open(f"{ws}/{tag}.txt", "w") as handle:
        handle.write(str(i))
    snap.snapshot(f"{tag}-{i}", metadata={"writer": tag})
"""


def test_eight_threads_share_one_snapshotter(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {f"d/f{i}.txt": str(i) for i in range(50)})
    snap = make()
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(4):
                (ws / f"t{n}.txt").write_text(str(i))
                snap.snapshot(f"t{n}-{i}")
                snap.status()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    listed = snap.list(limit=None)
    assert len(listed) == 32 and len({s.sequence for s in listed}) == 32
    assert sorted(s.message for s in listed) == sorted(f"t{n}-{i}" for n in range(8) for i in range(4))


def test_four_processes_snapshot_at_once(ws: Path, home: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {f"f{i}.txt": str(i) for i in range(100)})
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(ws), str(home), f"p{n}", "5"], stderr=subprocess.PIPE)
        for n in range(4)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
    listed = make().list(limit=None)
    assert len(listed) == 20
    for n in range(4):
        assert sorted(s.message for s in listed if s.metadata.get("writer") == f"p{n}") == [
            f"p{n}-{i}" for i in range(5)
        ]


HOLDER = """
import sys, time
from snapshotter import Snapshotter
snap = Snapshotter(sys.argv[1], home=sys.argv[2])
snap._engine_ok().lock.acquire()
print("locked", flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_lock_of_a_killed_process_is_recovered_and_a_live_one_times_out(ws: Path, home: Path, make) -> None:  # type: ignore[no-untyped-def]
    make().snapshot()  # create the store
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(ws), str(home)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
        waiting = make(lock_timeout=0.3)
        started = time.monotonic()
        with pytest.raises(StoreLocked) as caught:
            waiting.snapshot()
        assert time.monotonic() - started >= 0.3
        assert f"pid {holder.pid}" in str(caught.value)
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        assert make(lock_timeout=5).snapshot("after the holder died").message == "after the holder died"
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_lock_is_reentrant_within_one_instance(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap: Snapshotter = make(lock_timeout=0.5)
    lock = snap._engine_ok().lock
    with lock, lock:
        snap.snapshot("inside the held lock")  # same instance: no self-deadlock
    assert snap.list(limit=1)[0].message == "inside the held lock"


def test_refs_read_once_are_read_again_when_another_writer_changes_them(  # type: ignore[no-untyped-def]
    ws: Path, make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What one Snapshotter has read of the refs never hides another's change:
    a snapshot or a prune by another Snapshotter on the same store shows at once
    (what a listing reads is bounded by the history's length: ``test_ref_reading``)."""
    write(ws, {"a.txt": "a\n"})
    mine, theirs = make(), make()
    first = mine.snapshot()
    time.sleep(0.15)  # the ref folder settles: what is read now can be kept
    assert [i.id for i in mine.list()] == [first.id]
    assert [i.id for i in mine.list()] == [first.id]
    write(ws, {"a.txt": "b\n"})
    second = theirs.snapshot()  # right away: within the same clock tick if it can
    assert [i.id for i in mine.list()] == [second.id, first.id]
    assert theirs._engine_ok().store.remove_snapshot_ref(first.sequence, bytes.fromhex(first.id))  # as prune does
    assert [i.id for i in mine.list()] == [second.id]
