"""verify(): can every snapshot still be restored?

Reads every snapshot's commit and trees (inflating and parsing each object)
and inflates every blob once (a truncated or garbled object fails here); with
``full``, every object is re-hashed too, so damage that still inflates is
caught. Refs in snapshotter's namespaces that hold no commit id are reported.
Problems are reported per snapshot; the others remain restorable.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .objects import MODE_TREE, TYPE_NAMES, commit_tree, object_id, parse_tree
from .store import Store


@dataclass(frozen=True)
class VerifyResult:
    """What ``verify()`` found; ``ok`` when nothing."""

    ok: bool
    snapshots_checked: int
    objects_checked: int
    problems: tuple[str, ...]


def verify(store: Store, full: bool = False) -> VerifyResult:
    problems: list[str] = []
    checked: set[bytes] = set()
    snapshots = 0
    for seq, commit in store.iter_snapshot_ids():
        snapshots += 1
        try:
            _check_snapshot(store, commit, full, checked)
        except (KeyError, ValueError, OSError, Exception) as exc:  # report, never raise: that is the point
            problems.append(f"snapshot {seq} ({commit.hex()[:12]}): {_describe(exc)}")
    problems.extend(f"ref {name} holds no commit id" for name in store.damaged_refs())
    for name in ("undo", "redo", "turns", "pins"):
        for sha in store.stack(name) if name != "pins" else store.pinned():
            if not store.has_object(sha):
                problems.append(f"{name} entry {sha.hex()[:12]} points at a missing commit")
    return VerifyResult(not problems, snapshots, len(checked), tuple(problems))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing object {exc.args[0] if exc.args else ''}".strip()
    return f"{type(exc).__name__}: {exc}"


def _read(store: Store, sha: bytes, full: bool, checked: set[bytes]) -> tuple[int, bytes]:
    try:
        kind, content = store.read_raw(sha)
    except KeyError:
        raise KeyError(sha.hex()) from None
    if full and object_id(TYPE_NAMES.get(kind, b"blob"), content) != sha:
        raise ValueError(f"object {sha.hex()} does not match its id")
    checked.add(sha)
    return kind, content


def _check_snapshot(store: Store, commit: bytes, full: bool, checked: set[bytes]) -> None:
    kind, content = _read(store, commit, full, checked)
    root = commit_tree(content)
    if kind != 1 or root is None:
        raise ValueError(f"{commit.hex()} is not a commit")
    trees = [root]
    while trees:
        tree = trees.pop()
        if tree in checked:
            continue
        kind, content = _read(store, tree, full, checked)
        if kind != 2:
            raise ValueError(f"{tree.hex()} is not a tree")
        for _, mode, sha in parse_tree(content):
            if mode == MODE_TREE:
                trees.append(sha)
            elif sha not in checked:
                _check_blob(store, sha, full)
                checked.add(sha)


def _check_blob(store: Store, sha: bytes, full: bool) -> None:
    """Inflate a blob piece by piece (big ones are never held whole); with ``full``, re-hash it."""
    if not store.has_object(sha):
        raise KeyError(sha.hex())
    digest = hashlib.sha1(b"blob %d\0" % store.blob_size(sha)) if full else None
    for piece in store.blob_chunks(sha):
        if digest is not None:
            digest.update(piece)
    if digest is not None and digest.digest() != sha:
        raise ValueError(f"blob {sha.hex()} does not match its id")
