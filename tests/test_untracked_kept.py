"""A restore never overwrites or deletes a file the current scan does not track
(issue: 'Restore destroys files it does not track'): ignored now, default-excluded,
too large, unreadable. A whole restore keeps them and says so; restoring one by
name is refused unless the caller overrides, and then its content is saved first."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import deny_reading, write

from snapshotter import RestoreConflict, SkipReason


def kept(result: object) -> dict[str, str]:
    return {item.path: item.reason.value for item in result.kept}  # type: ignore[attr-defined]


def test_a_file_ignored_since_the_snapshot_keeps_its_edit(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"settings.local": "old\n", "app.py": "v1\n"})
    snap = make()
    old = snap.snapshot()
    write(ws, {".gitignore": "settings.local\n", "settings.local": "my edit\n", "app.py": "v2\n"})
    result = snap.restore(old.id)
    assert (ws / "settings.local").read_text() == "my edit\n"
    assert (ws / "app.py").read_text() == "v1\n" and not (ws / ".gitignore").exists()
    assert kept(result) == {"settings.local": "ignored"}
    assert "settings.local" not in result.written_paths


def test_an_env_file_recorded_by_another_instance_is_never_replaced(ws: Path, home: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {".env": "SECRET=old\n", "a.txt": "a\n"})
    everything = make(use_default_excludes=False)
    with_secret = everything.snapshot()
    everything.close()
    write(ws, {".env": "SECRET=current\n"})
    default = make()
    result = default.restore(with_secret.id)
    assert (ws / ".env").read_text() == "SECRET=current\n"
    assert kept(result) == {".env": "ignored"}
    with pytest.raises(RestoreConflict, match=r"\.env \(ignored\)") as refused:
        default.restore(with_secret.id, files=[".env"])
    assert "overwrite_untracked=True" in str(refused.value) and "--overwrite-untracked" in refused.value.for_cli()
    assert (ws / ".env").read_text() == "SECRET=current\n"


def test_a_new_file_over_the_size_cap_is_never_replaced_by_an_old_small_one(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"data.bin": b"\1" * 10, "a.txt": "a\n"})
    snap = make(max_new_file_size=1000)
    small = snap.snapshot()
    (ws / "data.bin").unlink()
    snap.snapshot()
    write(ws, {"data.bin": b"\2" * 5000})  # new again, and too large to record
    result = snap.restore(small.id)
    assert (ws / "data.bin").read_bytes() == b"\2" * 5000
    assert kept(result) == {"data.bin": "too-large"}


def test_an_unreadable_file_is_never_overwritten(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"locked.txt": "v1\n"})
    snap = make()
    first = snap.snapshot()
    (ws / "locked.txt").unlink()
    snap.snapshot()
    write(ws, {"locked.txt": "new and private\n"})
    deny_reading(monkeypatch, "locked.txt")
    result = snap.restore(first.id)
    assert (ws / "locked.txt").read_text() == "new and private\n"
    assert kept(result) == {"locked.txt": "unreadable"}
    with pytest.raises(RestoreConflict, match="unreadable"):
        snap.restore(first.id, files=["locked.txt"], overwrite_untracked=True)  # its content cannot be saved
    assert (ws / "locked.txt").read_text() == "new and private\n"


def test_overwriting_untracked_files_saves_them_first(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"settings.local": "old\n", "node_modules/x/index.js": "old js\n", "a.txt": "a\n"})
    everything = make(use_default_excludes=False)
    first = everything.snapshot()
    everything.close()
    write(ws, {".gitignore": "settings.local\n", "settings.local": "my edit\n", "node_modules/x/index.js": "new js\n"})
    snap = make()
    with pytest.raises(RestoreConflict, match="settings.local"):
        snap.restore(first.id, files=["settings.local"])
    plan = snap.restore(first.id, files=["settings.local", "node_modules"], dry_run=True, overwrite_untracked=True)
    assert set(plan.written_paths) == {"settings.local", "node_modules/x/index.js"}
    assert (ws / "settings.local").read_text() == "my edit\n"  # a dry run writes nothing
    done = snap.restore(first.id, files=["settings.local", "node_modules"], overwrite_untracked=True)
    assert (ws / "settings.local").read_text() == "old\n"
    assert (ws / "node_modules/x/index.js").read_text() == "old js\n"
    assert done.safety_snapshot_id is not None
    back = snap.restore(done.safety_snapshot_id, files=["settings.local", "node_modules"], overwrite_untracked=True)
    assert (ws / "settings.local").read_text() == "my edit\n"  # the safety snapshot held the replaced content
    assert (ws / "node_modules/x/index.js").read_text() == "new js\n"
    assert back.kept == ()
    assert kept(snap.restore(first.id)) == {"settings.local": "ignored", "node_modules/x/index.js": "ignored"}


def test_what_is_in_the_way_inside_an_ignored_folder_is_kept_but_missing_files_are_written(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"build/a.o": "a1", "build/b.o": "b1", "src.c": "c"})
    snap = make()
    first = snap.snapshot()  # build/ is tracked: no rule yet
    write(ws, {".gitignore": "build/\n", "build/a.o": "a2"})
    (ws / "build/b.o").unlink()
    result = snap.restore(first.id)
    assert (ws / "build/a.o").read_text() == "a2"  # in the way, ignored: kept
    assert (ws / "build/b.o").read_text() == "b1"  # nothing there to lose: written
    assert kept(result) == {"build/a.o": "ignored"}
    assert SkipReason("ignored") is SkipReason.IGNORED
