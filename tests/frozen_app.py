"""The app test_frozen.py freezes with PyInstaller: snapshotter's library and its CLI.

    python tests/frozen_app.py api WORKSPACE SCRATCH
    python tests/frozen_app.py cli ARGS...

``api`` fills the empty folder WORKSPACE, then snapshots, edits, runs status and
diff, restores and verifies through the library, storing under SCRATCH. It
exits non-zero at the first result that is not the expected one, and prints a
JSON report of what it ran with: the compressor, the modules loaded from
snapshotter's dependencies (a module PyInstaller missed is absent there, even
when its package falls back without a word), watch mode. ``cli`` is the
``snapshotter`` command, through the console script's entry.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

BIG = 9 << 20
"""Above ``objects.STREAM_THRESHOLD``: stored through the streaming compressor."""
PACKAGES = ("snapshotter", "dulwich", "isal", "platformdirs", "watchdog")


def check(what: str, got: object, expected: object) -> None:
    if got != expected:
        raise SystemExit(f"frozen_app: {what}: expected {expected!r}, got {got!r}")


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def fill(ws: Path) -> None:
    for i in range(70):  # a first snapshot hashing 64 files or more writes one pack
        (ws / f"pkg{i % 7}").mkdir(exist_ok=True)
        (ws / f"pkg{i % 7}" / f"m{i}.py").write_text(f"x = {i}\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("one\ntwo\nthree\n")
    (ws / "notes.txt").write_text("keep me\n")
    (ws / "big.bin").write_bytes(random.Random(1).randbytes(1 << 20) * (BIG >> 20))


def api(ws: Path, scratch: Path) -> dict[str, object]:
    from snapshotter import Snapshotter, watch_available
    from snapshotter.engine.gitstore import deflate

    fill(ws)
    original = files(ws)
    with Snapshotter(ws, home=scratch / "home") as snap:
        before = snap.snapshot("before")
        (ws / "src" / "app.py").write_text("one\nTWO\nthree\nfour\n")
        (ws / "notes.txt").unlink()
        (ws / "new.txt").write_text("new\n")
        status = {c.path: c.status.value for c in snap.status()}
        check("status", status, {"src/app.py": "modified", "notes.txt": "deleted", "new.txt": "added"})
        diffs = snap.diff(before.id)
        counts = {d.path: (d.status.value, d.additions, d.deletions) for d in diffs}
        expected = {"src/app.py": ("modified", 2, 1), "notes.txt": ("deleted", 0, 1), "new.txt": ("added", 1, 0)}
        check("diff", counts, expected)
        patch = next(d.patch for d in diffs if d.path == "src/app.py")
        check("patch", ("-two\n" in patch, "+TWO\n" in patch, "+four\n" in patch), (True, True, True))
        restored = snap.restore(before.id)
        check("restore", (restored.written, restored.deleted), (2, 1))
        check("workspace after restore", files(ws) == original, True)
        verified = snap.verify(full=True)
        check("verify", (verified.ok, verified.problems), (True, ()))
    watch = watch_available()
    if watch:
        with Snapshotter(ws, home=scratch / "home", watch=True) as snap:
            check("watching", snap.watching, True)
            snap.snapshot("the first walks everything")
            (ws / "src" / "app.py").write_text("watched\n")
            info = snap.snapshot("watched")
            check("watched snapshot", (info.files_changed, snap.last_scan.incremental), (1, True))
    # No home= and no $SNAPSHOTTER_HOME: platformdirs picks the user data folder.
    os.environ.pop("SNAPSHOTTER_HOME", None)
    os.environ["HOME"] = str(scratch)
    os.environ["XDG_DATA_HOME"] = str(scratch / "xdg")
    with Snapshotter(ws) as snap:
        check("store under the user data folder", snap.store_path.startswith(str(scratch)), True)
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in PACKAGES)
    return {"compressor": deflate.backend(), "watch": watch, "tree": before.tree_id, "modules": loaded}


def main() -> int:
    if sys.argv[1:2] == ["cli"]:
        from snapshotter.frontends.entry import main as command

        sys.argv[1:] = sys.argv[2:]  # as the console script sees its words
        return command()
    if len(sys.argv) != 4 or sys.argv[1] != "api":
        raise SystemExit(__doc__)
    report = api(Path(sys.argv[2]).resolve(), Path(sys.argv[3]).resolve())
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
