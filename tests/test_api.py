"""The public API: store placement, refs, listing, labels, metadata and typed errors."""

from __future__ import annotations

import os
import stat
from datetime import timezone
from pathlib import Path

import pytest
from conftest import write

import snapshotter
from snapshotter import (
    DEFAULT_EXCLUDES,
    InvalidInput,
    InvalidRef,
    SnapshotError,
    SnapshotNotFound,
    Snapshotter,
    StoreError,
    WorkspaceError,
)


def test_store_lives_under_home_with_owner_only_mode(ws: Path, home: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    store = Path(snap.store_path)
    assert store.parent == (home / "snapshots").resolve()
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    assert (store / "workspace").read_text().strip() == str(ws.resolve())
    assert (store / "HEAD").exists() and (store / "objects").is_dir()
    assert make().store_path == snap.store_path  # stable for the same workspace


def test_home_defaults_to_environment_variable(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SNAPSHOTTER_HOME", str(tmp_path / "env-home"))
    with Snapshotter(ws) as snap:
        assert snap.store_path.startswith(str((tmp_path / "env-home").resolve()))


def test_default_excludes_cover_git_secrets_caches_and_environments() -> None:
    for pattern in (".git", ".env", ".env.*", "node_modules/", "__pycache__/", ".venv/"):
        assert pattern in DEFAULT_EXCLUDES


def test_exclude_and_disabling_defaults(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "a", "b.tmp": "b", ".env": "s"})
    snap = make(exclude=["*.tmp"])
    snap.snapshot()
    assert snap.list()[0].files_changed == 1  # only a.txt
    assert [d.path for d in snap.diff(snap.list()[0].id, None)] == []
    bare = make(home=Path(snap.store_path).parent.parent.parent / "other-home", use_default_excludes=False)
    info = bare.snapshot()
    assert info.files_changed == 3  # a.txt, b.tmp and .env: nothing excluded


def test_snapshot_info_fields(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "1\n2\n"})
    snap = make()
    info = snap.snapshot("first line\nmore", label="start", metadata={"session": "s-1", "turn": "3"})
    assert len(info.id) == 40 and len(info.tree_id) == 40
    assert info.message == "first line\nmore"
    assert info.label == "start"
    assert info.created_at.tzinfo == timezone.utc
    assert (info.files_changed, info.additions, info.deletions) == (1, 2, 0)
    assert dict(info.metadata) == {"session": "s-1", "turn": "3"}
    assert snap.track is not None and snap.get(info.id) == info
    with pytest.raises(AttributeError):
        info.label = "x"  # type: ignore[misc]


def test_list_is_newest_first_and_limited(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    ids = []
    for i in range(5):
        write(ws, {"f.txt": str(i)})
        ids.append(snap.snapshot(f"s{i}").id)
    assert [s.id for s in snap.list()] == ids[::-1]
    assert [s.id for s in snap.list(limit=2)] == ids[:-3:-1]
    assert [s.message for s in make().list(limit=None)] == [f"s{i}" for i in range(4, -1, -1)]


def test_get_by_id_prefix_and_label(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    write(ws, {"f": "1"})
    one = snap.snapshot(label="v1")
    write(ws, {"f": "2"})
    two = snap.snapshot(label="v1")
    assert snap.get(one.id) == one
    assert snap.get(one.id[:7]) == one
    assert snap.get(one.id.upper()) == one
    assert snap.get("v1") == two  # the newest with that label
    assert snap.get(two) == two


def test_bad_refs_give_typed_one_line_errors(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"f": "1"})
    snap = make()
    info = snap.snapshot()
    cases: list[tuple[object, type[SnapshotError]]] = [
        ("nope", SnapshotNotFound),
        ("0" * 40, SnapshotNotFound),
        ("abcdef0", SnapshotNotFound),
        ("", InvalidRef),
        ("a\nb", InvalidRef),
        ("x" * 300, InvalidRef),
        (123, InvalidRef),
        (info.tree_id, InvalidRef),  # exists, but is a tree: not a snapshot
    ]
    for ref, error in cases:
        with pytest.raises(error) as caught:
            snap.get(ref)  # type: ignore[arg-type]
        assert "\n" not in str(caught.value)
        with pytest.raises(error):
            snap.restore(ref)  # type: ignore[arg-type]
        with pytest.raises(error):
            snap.diff(ref)  # type: ignore[arg-type]


def test_ambiguous_prefix_is_an_invalid_ref(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    info = snap.snapshot()
    ninth = "1" if info.id[8] == "0" else "0"  # differs from the real id's 9th digit, so 9 digits decide
    twin = bytes.fromhex(info.id[:8] + ninth + "0" * 31)  # shares exactly 8 hex digits with the real one
    store = snap._engine_ok().store  # a second snapshot whose id shares the prefix, as the object store would list it
    real_ids, real_seq = store.ids_starting_with, store.seq_of
    monkeypatch.setattr(
        store,
        "ids_starting_with",
        lambda prefix: real_ids(prefix) | ({twin} if twin.hex().startswith(prefix) else set()),
    )
    monkeypatch.setattr(store, "seq_of", lambda sha: 2 if sha == twin else real_seq(sha))
    with pytest.raises(InvalidRef, match="ambiguous"):
        snap.get(info.id[:8])
    assert snap.get(info.id[:9]).id == info.id


def test_bad_workspace_and_overlapping_store_are_refused(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError):
        Snapshotter(tmp_path / "missing", home=tmp_path / "h")
    (tmp_path / "file").write_text("x")
    with pytest.raises(WorkspaceError):
        Snapshotter(tmp_path / "file", home=tmp_path / "h")
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(WorkspaceError):
        Snapshotter(ws, home=ws / ".snapshots")  # store inside the workspace
    home = tmp_path / "home"
    inside = home / "snapshots" / "x"
    inside.mkdir(parents=True)
    with pytest.raises(WorkspaceError):
        Snapshotter(inside, home=home)  # workspace inside the store
    with pytest.raises(WorkspaceError):
        Snapshotter(tmp_path, home=home)  # home is inside the workspace


def test_bad_arguments_are_invalid_input(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    for kwargs in (
        {"label": ""},
        {"label": "two\nlines"},
        {"label": "deadbeef"},
        {"metadata": {"k": 1}},
        {"metadata": ["k"]},
    ):
        with pytest.raises(InvalidInput):
            snap.snapshot(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        snap.snapshot(123)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        make(exclude="*.log")
    with pytest.raises(InvalidInput):
        make(max_new_file_size=-1)
    info = snap.snapshot()
    with pytest.raises(InvalidInput):
        snap.restore(info.id, files=["../outside"])
    with pytest.raises(InvalidInput):
        snap.restore(info.id, files="a.txt")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        snap.list(limit=-1)


def test_store_of_another_workspace_is_refused(ws: Path, home: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    (Path(snap.store_path) / "workspace").write_text("/somewhere/else\n")
    with pytest.raises(StoreError):
        make()


def test_cleanup_removes_the_store(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    write(ws, {"a": "a"})
    snap.snapshot()
    path = snap.store_path
    snap.cleanup()
    assert not os.path.exists(path)
    assert (ws / "a").read_text() == "a"
    with pytest.raises(StoreError):
        snap.snapshot()


def test_status_lists_changes_since_the_newest_snapshot(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a": "a", "b": "b", "c": "c"})
    snap = make()
    assert {c.path for c in snap.status()} == {"a", "b", "c"}  # no snapshot yet: all added
    snap.snapshot()
    assert snap.status() == []
    write(ws, {"a": "A", "d": "d"})
    (ws / "b").unlink()
    (ws / "c").unlink()
    os.symlink("a", ws / "c")
    got = {(c.path, c.status.value) for c in snap.status()}
    assert got == {("a", "modified"), ("b", "deleted"), ("c", "type_changed"), ("d", "added")}


def test_diff_to_workspace_and_between_snapshots(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"a.txt": "one\ntwo\n", "bin": b"\0\1"})
    snap = make()
    first = snap.snapshot()
    write(ws, {"a.txt": "one\n2\nthree\n", "bin": b"\0\2", "new.txt": "n\n"})
    live = {d.path: d for d in snap.diff(first.id)}
    assert (live["a.txt"].additions, live["a.txt"].deletions) == (2, 1)
    assert live["bin"].binary and live["bin"].additions == 0 and "Binary files" in live["bin"].patch
    assert live["new.txt"].status.value == "added" and "new file mode 100644" in live["new.txt"].patch
    second = snap.snapshot()
    stored = {d.path: (d.additions, d.deletions, d.binary) for d in snap.diff(first.id, second.id)}
    assert stored == {p: (d.additions, d.deletions, d.binary) for p, d in live.items()}
    assert snap.diff(second.id) == []


def test_unicode_and_space_names_round_trip(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"ünï cödé/文件 name.txt": "x", "a b/c d": "y"})
    snap = make()
    first = snap.snapshot()
    for p in ("ünï cödé/文件 name.txt", "a b/c d"):
        (ws / p).unlink()
    snap.restore(first.id)
    assert (ws / "ünï cödé/文件 name.txt").read_text() == "x"


def test_package_is_typed() -> None:
    assert (Path(snapshotter.__file__).parent / "py.typed").exists()


def test_two_instances_snapshotting_at_once_lose_nothing(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    import threading

    write(ws, {f"f{i}.txt": str(i) for i in range(100)})
    first, second = make(), make()
    errors: list[BaseException] = []

    def work(snap: Snapshotter, tag: str) -> None:
        try:
            for i in range(6):
                snap.snapshot(f"{tag}{i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s, t)) for s, t in ((first, "a"), (second, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    listed = make().list(limit=None)
    assert sorted(s.message for s in listed) == sorted([f"a{i}" for i in range(6)] + [f"b{i}" for i in range(6)])
    assert len({s.sequence for s in listed}) == 12


def test_an_unclosed_snapshotter_exits_without_dulwich_tracebacks(tmp_path: Path) -> None:
    """dulwich's __del__ on an open object store printed a traceback during interpreter shutdown."""
    import subprocess
    import sys

    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(80):  # enough new files for a pack, whose objects dulwich keeps open
        (ws / f"f{i}.txt").write_text(f"{i}\n")
    script = (
        "import sys; from snapshotter import Snapshotter; "
        "s = Snapshotter(sys.argv[1], home=sys.argv[2]); s.snapshot(); s.list(); print('ok')"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(ws), str(tmp_path / "home")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok"
    assert done.stderr == ""


def test_watch_mode_needs_a_recent_watchdog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Older watchdogs (the newest for Python 3.10 is 6.0) report no lost events: never trust them."""
    import importlib.metadata
    import importlib.util

    from snapshotter.engine.worktree import watch

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "watchdog" else None)
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "6.0.0")
    assert not watch.watch_available()
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "7.1.0")
    assert watch.watch_available()
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "6.0.0")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    with Snapshotter(ws, home=tmp_path / "h", watch=True) as snap:
        assert not snap.watching
        snap.snapshot()
        snap.snapshot()
        assert not snap.last_scan.incremental


def test_os_failures_get_the_advice_they_deserve() -> None:
    import errno

    from snapshotter.errors import what_to_check

    assert "disk space" in what_to_check(OSError(errno.ENOSPC, "No space left on device"))
    assert "disk space" in what_to_check(OSError(errno.EDQUOT, "Disk quota exceeded"))
    for denied in (errno.EACCES, errno.EPERM, errno.EROFS):
        advice = what_to_check(OSError(denied, "denied"))
        assert "permissions" in advice and "disk space" not in advice
    assert "disk space" not in what_to_check(OSError(errno.EIO, "Input/output error"))


def test_errors_word_their_remedy_for_each_front_end(ws: Path, make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HOME", str(ws))
    with pytest.raises(snapshotter.UnsafeWorkspace) as refused:
        make()
    assert str(refused.value).endswith("pass allow_unsafe_root=True")
    assert refused.value.for_cli().endswith("pass --allow-unsafe-root")
    assert refused.value.remedy is not None and "allow_unsafe_root" not in refused.value.for_cli()
    monkeypatch.undo()
    snap = make()
    with pytest.raises(SnapshotNotFound) as missing:
        snap.get("nope")
    assert "call list() to see them" in str(missing.value)
    assert "call list_snapshots to see them" in missing.value.for_mcp()
    import pickle

    again = pickle.loads(pickle.dumps(missing.value))
    assert type(again) is SnapshotNotFound and str(again) == str(missing.value)


def test_the_base_is_what_the_workspace_was_last_made_equal_to(ws: Path, home: Path, make) -> None:  # type: ignore[no-untyped-def]
    snap = make()
    assert snap.base() is None and snap.status() == []
    with pytest.raises(SnapshotNotFound, match="no snapshots yet"):
        snap.diff()
    write(ws, {"a.txt": "1\n"})
    first = snap.snapshot()
    write(ws, {"a.txt": "2\n"})
    second = snap.snapshot()
    assert snap.base() == second and snap.get("@") == second and snap.get("@~1") == first
    result = snap.restore(first.id)
    assert result.safety_snapshot_id == second.id  # the workspace was at the newest snapshot: no new one
    assert snap.base() == first and snap.status() == [] and snap.diff() == []
    other = Snapshotter(ws, home=home)  # every process sees the same base: it is a ref in the store
    try:
        assert other.base() == first
    finally:
        other.close()
    snap.restore(second.id, files=["a.txt"])  # a selective restore does not move the base
    assert snap.base() == first and [c.path for c in snap.status()] == ["a.txt"]
    write(ws, {"b.txt": "b\n"})
    assert [d.path for d in snap.diff(files=["b.txt"])] == ["b.txt"]
    assert [c.path for c in snap.status(files=["a.txt"])] == ["a.txt"]
    with pytest.raises(InvalidInput, match="starts with '@'"):
        snap.snapshot(label="@home")


def test_every_public_name_is_the_object_its_module_defines() -> None:
    # The package loads its names on first use; ``guard`` must be the function,
    # not the ``snapshotter.facade.guard`` module that importing it also binds.
    import sys

    import snapshotter
    from snapshotter import errors, model
    from snapshotter.facade import api

    assert all(getattr(snapshotter, name, None) is not None for name in snapshotter.__all__)
    assert snapshotter.guard is api.guard and callable(snapshotter.guard)
    assert snapshotter.Guard is sys.modules["snapshotter.facade.guard"].Guard
    assert snapshotter.SnapshotError is errors.SnapshotError
    assert snapshotter.SnapshotInfo is model.SnapshotInfo


def test_every_public_name_imports_from_the_package_in_a_fresh_interpreter() -> None:
    """``from snapshotter import X`` for every name of ``__all__``, each from the module the
    ``TYPE_CHECKING`` block names for type checkers (so both stay true after a module moves)."""
    import ast
    import subprocess
    import sys

    import snapshotter

    tree = ast.parse(Path(snapshotter.__file__).read_text(encoding="utf-8"))
    declared = {
        alias.asname or alias.name: node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.col_offset == 4 and node.module != "typing"
        for alias in node.names
    }
    assert set(snapshotter.__all__) <= set(declared)
    probe = "\n".join(
        [
            f"from snapshotter import {', '.join(snapshotter.__all__)}",
            "import importlib, snapshotter",
            f"for name, module in {declared!r}.items():",
            "    if name in snapshotter.__all__:",
            "        assert getattr(snapshotter, name) is getattr(importlib.import_module(module), name), name",
        ]
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
