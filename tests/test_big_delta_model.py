"""Random edits to a big file against a model: every version is read back byte for byte.

The file is edited by insertions, deletions, appends, truncations and
overwrites (random and repeated bytes, content moved from elsewhere in the
file), snapshotted after each edit and now and then compacted; every version
recorded must then restore exactly, and read through git (``cat-file``, and
``fsck --strict``) where git is installed. The big-file threshold and the
block size are lowered for the test (to 0 and 256 bytes), so files of a few
kilobytes take the same path as a database of a gigabyte: the matcher's
shifts, rolls and budgets, chains growing, bounded and started again.

The default run is small and deterministic (``derandomize``); ``--long`` runs
hundreds of sequences.
"""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest
from conftest import GIT, git_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapshotter import Retention, Snapshotter
from snapshotter.engine.gitstore import bigfacts, signature

Edit = tuple[str, float, int, int]

edits = st.lists(
    st.tuples(
        st.sampled_from(["insert", "delete", "append", "truncate", "overwrite", "move", "repeat", "gc"]),
        st.floats(min_value=0, max_value=1),
        st.integers(min_value=0, max_value=5000),
        st.integers(min_value=0, max_value=2**32),
    ),
    min_size=1,
    max_size=12,
)


def _apply(data: bytearray, edit: Edit) -> None:
    kind, where, length, seed = edit
    rng = random.Random(seed)
    at = int(where * len(data))
    if kind == "insert":
        data[at:at] = rng.randbytes(length)
    elif kind == "delete":
        del data[at : at + length]
    elif kind == "append":
        data.extend(rng.randbytes(length))
    elif kind == "truncate":
        del data[max(0, len(data) - length) :]
    elif kind == "overwrite":
        data[at : at + length] = rng.randbytes(min(length, len(data) - at))
    elif kind == "move":  # a stretch of the file copied elsewhere in it
        source = rng.randrange(0, max(1, len(data)))
        data[at:at] = data[source : source + length]
    elif kind == "repeat":  # low-entropy bytes: many blocks alike
        data[at : at + length] = bytes([seed % 3]) * min(length, len(data) - at)


def _settings(long: bool) -> settings:
    return settings(
        max_examples=300 if long else 12,
        derandomize=not long,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


def test_random_edits_to_a_big_file_round_trip(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    long = bool(request.config.getoption("--long"))
    counter = [0]

    @_settings(long)
    @given(
        seed=st.integers(min_value=0, max_value=2**32),
        initial=st.integers(min_value=0, max_value=40_000),
        steps=edits,
    )
    def run(seed: int, initial: int, steps: list[Edit]) -> None:
        counter[0] += 1
        root = tmp_path / f"case{counter[0]}"
        _check_sequence(root, seed, initial, steps)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bigfacts, "THRESHOLD", 0)
        patch.setattr(signature, "BLOCK", 256)
        run()


def _check_sequence(root: Path, seed: int, initial: int, steps: list[Edit]) -> None:
    ws = root / "ws"
    ws.mkdir(parents=True)
    data = bytearray(random.Random(seed).randbytes(initial))
    target = ws / "big.bin"
    versions: list[tuple[str, str, bytes]] = []
    with Snapshotter(ws, home=root / "home", retention=Retention.unlimited(), second_core=False) as snap:
        target.write_bytes(data)
        info = snap.snapshot("v0")
        versions.append((info.id, info.tree_id, bytes(data)))
        for number, step in enumerate(steps, 1):
            if step[0] == "gc":
                snap.gc()
                continue
            _apply(data, step)
            target.write_bytes(data)
            info = snap.snapshot(f"v{number}")
            versions.append((info.id, info.tree_id, bytes(data)))
        store = snap._engine_ok().store
        for snapshot_id, _, content in versions:
            snap.restore(snapshot_id)
            assert target.read_bytes() == content
        assert snap.verify(full=True).ok
        if GIT is not None:
            env = git_env(root)
            for _, tree, content in versions:
                shown = subprocess.run(
                    [GIT, "--git-dir", store.path, "cat-file", "-p", f"{tree}:big.bin"], capture_output=True, env=env
                )
                assert shown.returncode == 0, shown.stderr
                assert shown.stdout == content
            fsck = subprocess.run(
                [GIT, "--git-dir", store.path, "fsck", "--strict", "--no-dangling", "--no-progress"],
                capture_output=True,
                text=True,
                env=env,
            )
            assert fsck.returncode == 0, fsck.stderr
    os.sync()
