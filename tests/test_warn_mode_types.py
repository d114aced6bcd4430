"""``forgiving()``: a Snapshotter in ``on_error="warn"`` mode whose types say that
None can come back. Checked here: it covers every public call, and behaves as
warn mode does. That mypy reads its results as ``X | None`` is checked by
``.ci/run`` running ``mypy --strict`` on ``tests/typecheck/warn_mode.py``."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from snapshotter import ForgivingSnapshotter, Snapshotter, forgiving


def _public_calls() -> set[str]:
    names = set()
    for name, member in inspect.getmembers(Snapshotter):
        if name.startswith("_"):
            continue
        if callable(member) or isinstance(member, property):
            names.add(name)
    return names - {"clone", "remote_workspaces", "track", "remote"}  # classmethods and an alias: no instance


def test_it_describes_every_public_call() -> None:
    described = {name for name in vars(ForgivingSnapshotter) if not name.startswith("_")}
    described |= set(ForgivingSnapshotter.__annotations__)
    assert _public_calls() - described == set()
    assert described - _public_calls() == set()


def test_it_is_a_snapshotter_that_warns_and_returns_none(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    broken = forgiving(tmp_path / "missing", home=tmp_path / "home")
    assert isinstance(broken, Snapshotter)
    assert broken.snapshot("x") is None and broken.status() is None and broken.can_undo() is False
    assert "cannot open" in caplog.text
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "f.txt").write_text("f\n")
    with forgiving(tmp_path / "ws", home=tmp_path / "home") as snap:
        info = snap.snapshot("taken")
        assert info is not None and info.message == "taken"
        assert snap.get("no-such-label") is None
