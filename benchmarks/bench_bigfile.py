"""Peak memory while snapshotting and restoring one big file (default 1 GiB).

    python benchmarks/bench_bigfile.py              # 1 GiB
    python benchmarks/bench_bigfile.py --mib 600    # any size; above 512 MiB checks big loose objects read back

Each step runs in a fresh child process that reports its peak RSS before and
after the step, so the figure is what the step itself added. The target is
under 64 MiB for the snapshot. The restored file is compared by SHA-256, and
where git is on PATH, ``git cat-file -s`` must read the object too.
This is a measurement, not a test: run it by hand (it needs about 2x the size on disk).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

STEP = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
from snapshotter import Snapshotter, Retention
snap = Snapshotter({ws!r}, home={home!r}, max_new_file_size=1 << 40, retention=Retention.unlimited(),
                   max_workspace_bytes=0)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
if {step!r} == "snapshot":
    info = snap.snapshot("big")
    out = {{"id": info.id, "tree": info.tree_id}}
else:
    result = snap.restore({ref!r})
    out = {{"written": result.written}}
out["seconds"] = time.perf_counter() - start
out["rss_before_mib"] = before / 1024
out["rss_after_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def run_step(ws: Path, home: Path, step: str, ref: str = "") -> dict[str, object]:
    code = STEP.format(root=str(ROOT), ws=str(ws), home=str(home), step=step, ref=ref)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=1024)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="snapbig-"))
    ws, home = scratch / "ws", scratch / "home"
    ws.mkdir()
    big = ws / "big.bin"
    print(f"writing {args.mib} MiB of random data ...", flush=True)
    with open(big, "wb") as handle:
        for _ in range(args.mib // 8):
            handle.write(os.urandom(8 << 20))
    expected = file_digest(big)
    time.sleep(1.1)
    snap = run_step(ws, home, "snapshot")
    big.write_bytes(b"overwritten")
    restore = run_step(ws, home, "restore", str(snap["id"]))
    assert file_digest(big) == expected, "restored content differs"
    git_ok = "-"
    if shutil.which("git"):
        store = next((home / "snapshots").iterdir())
        blob = subprocess.run(
            ["git", "--git-dir", str(store), "rev-parse", f"{snap['tree']}:big.bin"], capture_output=True, text=True
        ).stdout.strip()
        size = subprocess.run(["git", "--git-dir", str(store), "cat-file", "-s", blob], capture_output=True, text=True)
        git_ok = "yes" if size.stdout.strip() == str(args.mib << 20) else f"no ({size.stderr.strip()})"
    print(f"\n{args.mib} MiB file, {time.strftime('%Y-%m-%d')}")
    for name, row in (("snapshot", snap), ("restore", restore)):
        added = float(row["rss_after_mib"]) - float(row["rss_before_mib"])  # type: ignore[arg-type]
        print(
            f"{name:9} {float(row['seconds']):7.1f} s   peak RSS +{added:6.1f} MiB "  # type: ignore[arg-type]
            f"(from {float(row['rss_before_mib']):.0f} to {float(row['rss_after_mib']):.0f} MiB)"
        )  # type: ignore[arg-type]
    print(f"restored content identical: yes; git reads the object: {git_ok}")
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
