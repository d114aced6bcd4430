"""The numbers and settings the store keeps in its side files, as an agent (it
runs as the user, and the store lives in the user's home) or a crash may leave
them: every one is read bounded, a bad one is a warning or a typed line, and
the store still opens and snapshots where it can."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from conftest import run_command, write

from snapshotter import Retention, Snapshotter
from snapshotter.engine.worktree import statcache

HUGE = "99999999999999999999999"


def test_a_generation_too_large_for_the_stat_cache_is_replaced_and_never_fatal(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n"})
    snap = make()
    first = snap.snapshot()
    meta = Path(snap.store_path) / "snapshotter"
    (meta / "generation").write_text(HUGE + "\n")
    (ws / "a.txt").write_text("b\n")
    second = make().snapshot()  # raised "argument out of range" saving the stat cache
    make().restore(first.id)
    assert (ws / "a.txt").read_text() == "a\n"
    fresh = int((meta / "generation").read_text())
    assert 0 <= fresh < 2**63  # what the stat cache can carry
    assert statcache.load(str(meta / "statcache")).generation == fresh  # the cache is stamped with the new one
    assert second.tree_id != first.tree_id


@pytest.mark.parametrize("garbage", [HUGE, "-3", "seven", "", "1" * 5000])
def test_garbage_in_the_generation_never_lets_an_older_cache_be_trusted(ws: Path, make, garbage: str) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n", "b.txt": "b\n"})
    snap = make()
    snap.snapshot()
    meta = Path(snap.store_path) / "snapshotter"
    (meta / "generation").write_text(garbage)
    fresh = make()
    fresh.snapshot()
    assert fresh.last_scan.files_hashed == 2  # nothing trusted from a cache of another generation
    assert int((meta / "generation").read_text()) > 0


@pytest.mark.parametrize("version", ["99", "abc", "1 2", "-1"])
def test_a_store_config_git_cannot_read_warns_and_the_store_still_opens(
    ws: Path,
    home: Path,
    make,  # type: ignore[no-untyped-def]
    caplog: pytest.LogCaptureFixture,
    version: str,
) -> None:
    write(ws, {"a.txt": "a\n"})
    first = make().snapshot()
    config = Path(make().store_path) / "config"
    config.write_text(config.read_text().replace("repositoryformatversion = 0", f"repositoryformatversion = {version}"))
    (ws / "a.txt").write_text("b\n")
    with caplog.at_level(logging.WARNING, logger="snapshotter"), Snapshotter(ws, home=home) as snap:
        snap.snapshot()  # exited 99 (dulwich's UnsupportedVersion) or refused the store
        snap.restore(first.id)
    assert (ws / "a.txt").read_text() == "a\n"
    assert any("config" in r.getMessage() and "repositoryformatversion" in r.getMessage() for r in caplog.records)
    done = run_command("-C", str(ws), "log", env={"SNAPSHOTTER_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert "repositoryformatversion" in done.stderr and "Traceback" not in done.stderr


def test_a_ref_named_by_thousands_of_digits_is_a_damaged_ref_not_a_crash(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n"})
    snap = make()
    first = snap.snapshot()
    store = Path(snap.store_path)
    (store / "packed-refs").write_text(f"{first.id} refs/snapshots/{'9' * 5000}\n")  # int() refuses past 4,300 digits
    fresh = make()
    assert [info.id for info in fresh.list()] == [first.id]
    (ws / "a.txt").write_text("b\n")
    assert fresh.snapshot().sequence == first.sequence + 1
    assert any("9" * 30 in problem for problem in fresh.verify().problems)


def test_a_huge_size_in_the_over_limit_note_is_ignored(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a\n"})
    snap = make(retention=Retention(max_store_bytes=1))
    snap.snapshot()
    (Path(snap.store_path) / "snapshotter" / "over-limit").write_text("9" * 400)  # a float overflow before
    (ws / "a.txt").write_text("b\n")
    make(retention=Retention(max_store_bytes=1)).snapshot()


@pytest.mark.parametrize("state", [{"next": 1e308 * 10}, {"next": "x", "open": 5}, {"open": [[1, 2, 3]]}, [1]])
def test_a_damaged_hook_pairs_file_is_counted_afresh(tmp_path: Path, state: object) -> None:
    from snapshotter.frontends.hooks.hookpairs import Pairs

    pairs = Pairs(str(tmp_path), "session")
    Path(pairs.folder).mkdir(parents=True)
    Path(pairs.path).write_text(json.dumps(state))
    call = pairs.opened("key")
    assert call.startswith("c") and pairs.closed("key") == call
