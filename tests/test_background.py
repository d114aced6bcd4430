"""Background snapshots: the handle, ordering of later calls, failures."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from snapshotter import InvalidInput, SnapshotHandle, Snapshotter


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("a = 1\n")
    return ws


def test_handle_gives_the_snapshot(tmp_path: Path) -> None:
    with Snapshotter(_workspace(tmp_path), home=tmp_path / "h") as snap:
        handle = snap.snapshot_async("in the background", label="bg", metadata={"k": "v"})
        assert isinstance(handle, SnapshotHandle)
        info = handle.result(timeout=30)
        assert info is not None and handle.done()
        assert info.message == "in the background" and info.label == "bg" and info.metadata == {"k": "v"}
        assert snap.get("bg").id == info.id


def test_later_calls_wait_for_it_and_keep_their_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _workspace(tmp_path)
    with Snapshotter(ws, home=tmp_path / "h") as snap:
        gate = threading.Event()
        engine = snap._engine
        assert engine is not None
        real = engine.snapshot

        def slow(*args: object) -> object:
            assert gate.wait(30)
            return real(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(engine, "snapshot", slow)
        handle = snap.snapshot_async("first")
        assert not handle.done()
        threading.Timer(0.2, gate.set).start()
        listed = snap.list()  # must wait for the background snapshot, then see it
        assert handle.done()
        assert [s.message for s in listed] == ["first"]
        second = snap.snapshot("second")
        assert second.sequence == listed[0].sequence + 1


def test_restore_after_async_uses_its_result(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    with Snapshotter(ws, home=tmp_path / "h") as snap:
        handle = snap.snapshot_async("before")
        (ws / "src" / "a.py").write_text("a = 2\n")  # may race the walk; the restore below must not
        handle.result(30)
        before = snap.list(limit=1)[0]
        snap.restore(before.id)
        assert not snap.status()


def test_bad_arguments_are_refused_at_once(tmp_path: Path) -> None:
    with Snapshotter(_workspace(tmp_path), home=tmp_path / "h") as snap:
        with pytest.raises(InvalidInput):
            snap.snapshot_async(label="bad\nlabel")
        assert snap.list() == []


def test_warn_mode_failures_give_none(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with Snapshotter(_workspace(tmp_path), home=tmp_path / "h", on_error="warn") as snap:
        with caplog.at_level(logging.WARNING, logger="snapshotter"):
            assert snap.snapshot_async(label="bad\nlabel").result() is None
        assert any("refused" in r.getMessage() for r in caplog.records)


def test_failure_is_raised_by_result_and_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from snapshotter import StoreError

    with Snapshotter(_workspace(tmp_path), home=tmp_path / "h") as snap:
        engine = snap._engine
        assert engine is not None

        def broken(*args: object) -> object:
            raise StoreError("the store is full; free some space")

        monkeypatch.setattr(engine, "snapshot", broken)
        with caplog.at_level(logging.WARNING, logger="snapshotter"):
            handle = snap.snapshot_async()
            with pytest.raises(StoreError):
                handle.result(30)
            deadline = time.monotonic() + 10  # the log line comes from the worker, just after the result
            while not any("background snapshot failed" in r.getMessage() for r in caplog.records):
                assert time.monotonic() < deadline, "the failure was never logged"
                time.sleep(0.01)


def test_result_timeout_is_a_timeout_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Snapshotter(_workspace(tmp_path), home=tmp_path / "h") as snap:
        gate = threading.Event()
        engine = snap._engine
        assert engine is not None
        real = engine.snapshot

        def slow(*args: object) -> object:
            gate.wait(30)
            return real(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(engine, "snapshot", slow)
        handle = snap.snapshot_async()
        with pytest.raises(TimeoutError):
            handle.result(timeout=0.05)
        gate.set()
        assert handle.result(30) is not None


def test_close_finishes_pending_snapshots(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    snap = Snapshotter(ws, home=tmp_path / "h")
    handles = [snap.snapshot_async(f"s{i}") for i in range(3)]
    snap.close()
    assert all(h.done() for h in handles)
    with Snapshotter(ws, home=tmp_path / "h") as again:
        assert [s.message for s in again.list()] == ["s2", "s1", "s0"]
