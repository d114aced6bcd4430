"""verify(): can every snapshot still be restored?

First every pack index is checked against its own checksum and its pack's (a
hash of each index and a 20-byte read of each pack: cheap); a missing or
damaged index is rebuilt from its pack and reported. Then every snapshot's
commit and trees are read and parsed, and every blob inflated once, a piece at
a time; every object read is checked against its id, as every read is (see
``objectstore.py``), so damage that still inflates is caught too. ``full`` adds a
hash of every pack whole against its checksum (objects no snapshot reaches
included). Refs in snapshotter's namespaces that hold no commit id are
reported. Problems are reported per snapshot; the others remain restorable.
"""

from __future__ import annotations

from snapshotter.engine.gitstore.objects import MODE_TREE, commit_tree, parse_tree
from snapshotter.engine.gitstore.store import STACK_NAMES, Store
from snapshotter.model import VerifyResult


def verify(store: Store, full: bool = False) -> VerifyResult:
    problems = store.packs.check(full, store.has_object)
    checked: set[bytes] = set()
    snapshots = 0
    for seq, commit in store.iter_snapshot_ids():
        snapshots += 1
        try:
            _check_snapshot(store, commit, checked)
        except (KeyError, ValueError, OSError, Exception) as exc:  # report, never raise: that is the point
            problems.append(f"snapshot {seq} ({commit.hex()[:12]}): {_describe(exc)}")
    problems.extend(f"ref {name} holds no commit id" for name in store.damaged_refs())
    stacks = [*STACK_NAMES, *(f"sessions/{session}/{name}" for session in store.sessions() for name in STACK_NAMES)]
    for name in [*stacks, "pins"]:
        for sha in store.stack(name) if name != "pins" else store.pinned():
            if not store.has_object(sha):
                problems.append(f"{name} entry {sha.hex()[:12]} points at a missing commit")
    return VerifyResult(not problems, snapshots, len(checked), tuple(problems))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing object {exc.args[0] if exc.args else ''}".strip()
    return f"{type(exc).__name__}: {exc}"


def _read(store: Store, sha: bytes, checked: set[bytes]) -> tuple[int, bytes]:
    try:
        kind, content = store.read_raw(sha)  # checked against its id
    except KeyError:
        raise KeyError(sha.hex()) from None
    checked.add(sha)
    return kind, content


def _check_snapshot(store: Store, commit: bytes, checked: set[bytes]) -> None:
    kind, content = _read(store, commit, checked)
    root = commit_tree(content)
    if kind != 1 or root is None:
        raise ValueError(f"{commit.hex()} is not a commit")
    trees = [root]
    while trees:
        tree = trees.pop()
        if tree in checked:
            continue
        kind, content = _read(store, tree, checked)
        if kind != 2:
            raise ValueError(f"{tree.hex()} is not a tree")
        for _, mode, sha in parse_tree(content):
            if mode == MODE_TREE:
                trees.append(sha)
            elif sha not in checked:
                _check_blob(store, sha)
                checked.add(sha)


def _check_blob(store: Store, sha: bytes) -> None:
    """Inflate a blob piece by piece (big ones are never held whole), checked against its id."""
    if not store.has_object(sha):
        raise KeyError(sha.hex())
    for _ in store.blob_chunks(sha):
        pass
