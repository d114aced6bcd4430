"""verify(): can every snapshot still be restored?

Reads every snapshot's commit and trees (inflating and parsing each object)
and checks that every blob exists; with ``full``, blobs are re-hashed too, so
a corrupted object is caught even if it still inflates. Problems are reported
per snapshot; the others remain restorable.
"""

from __future__ import annotations

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
                if full:
                    _read(store, sha, full, checked)
                elif store.has_object(sha):
                    checked.add(sha)
                else:
                    raise KeyError(sha.hex())
