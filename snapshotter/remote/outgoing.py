"""What a push may not send, found before a byte goes.

Two checks, each on the snapshots a push would send:

- **the policy**: no path the caller's ``exclude=`` or the default excludes
  keep out of snapshots. A snapshot taken now never holds one, but one taken
  before the defaults grew (an older release), or written into the store by
  hand, may: a key or credential file must not reach a server because it was
  recorded before we knew to leave it out;
- **the size limit**: no file over ``max_push_file_size`` (hosted servers
  refuse them, after the whole pack was sent).

Either refuses the push (``PushRefused``), naming the snapshot and the path,
or, asked to, leaves that snapshot out and sends the others
(:class:`~snapshotter.model.SkippedSnapshot`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from snapshotter.engine.gitstore.objects import MODE_TREE, parse_tree
from snapshotter.engine.gitstore.outentries import read_checked
from snapshotter.engine.gitstore.store import Store
from snapshotter.engine.worktree.ignore import IgnoreStack
from snapshotter.errors import PushRefused, Remedy
from snapshotter.model import SkippedSnapshot

SKIP_REFUSED = Remedy(
    "exclude it, or pass skip_refused=True to send the other snapshots without that one",
    "exclude it, or pass --skip-refused to send the other snapshots without that one",
)
_GITLINK = 0o160000


def policy_refusals(store: Store, commits: Iterable[bytes], policy: IgnoreStack) -> list[SkippedSnapshot]:
    """The ``commits`` (raw ids) whose trees hold a path ``policy`` excludes, each
    with the first such path. Each distinct folder is judged once per path it
    stands at, so the snapshots of one workspace, which share most folders,
    cost little more than one."""
    judged: dict[tuple[str, bytes], str | None] = {}
    found = []
    for commit in commits:
        content = read_checked(store, commit)[1]
        tree = bytes.fromhex(content[5:45].decode("ascii"))  # "tree <hex>\n" starts every commit
        path = _excluded_below(store, "", tree, policy, judged)
        if path is not None:
            found.append(SkippedSnapshot(commit.hex(), path, "excluded"))
    return found


def _excluded_below(
    store: Store, prefix: str, tree: bytes, policy: IgnoreStack, judged: dict[tuple[str, bytes], str | None]
) -> str | None:
    """The first path below folder ``prefix`` (tree ``tree``) that ``policy`` excludes.
    Walked with a stack of its own, not recursion: a stored tree may be deep."""
    pending: list[tuple[str, bytes, list[tuple[str, bytes]]]] = []
    answer: str | None = None
    todo = [(prefix, tree)]
    while todo:
        where, sha = todo.pop()
        if (where, sha) in judged:
            answer = judged[(where, sha)]
            if answer is not None:
                break
            continue
        children: list[tuple[str, bytes]] = []
        for name, mode, child in parse_tree(read_checked(store, sha)[1]):
            path = where + os.fsdecode(name)
            is_dir = mode == MODE_TREE
            if policy.by_policy(path, is_dir):
                answer = path + "/" if is_dir else path
                break
            if is_dir:
                children.append((path + "/", child))
        if answer is not None:
            judged[(where, sha)] = answer
            break
        pending.append((where, sha, children))
        todo.extend(children)
    if answer is None:  # everything walked was clean
        for where, sha, _ in pending:
            judged[(where, sha)] = None
    return answer


def size_refusals(store: Store, blobs: dict[bytes, int], commits: Iterable[bytes]) -> list[SkippedSnapshot]:
    """The ``commits`` that reach one of ``blobs`` (raw id -> size), each with
    the path it stands at there."""
    found = []
    for commit in commits:
        content = read_checked(store, commit)[1]
        stack = [("", bytes.fromhex(content[5:45].decode("ascii")))]
        seen: set[bytes] = set()
        hit: str | None = None
        while stack and hit is None:
            prefix, tree = stack.pop()
            if tree in seen:
                continue
            seen.add(tree)
            for name, mode, sha in parse_tree(read_checked(store, tree)[1]):
                path = prefix + os.fsdecode(name)
                if mode == MODE_TREE:
                    stack.append((path + "/", sha))
                elif mode != _GITLINK and sha in blobs:
                    hit = f"{path} ({blobs[sha]:,} bytes)"
                    break
        if hit is not None:
            found.append(SkippedSnapshot(commit.hex(), hit, "too large"))
    return found


def oversized(store: Store, objects: list[tuple[int, bytes]], limit: int) -> dict[bytes, int]:
    """The blobs among ``objects`` (type, raw id) over ``limit`` bytes (0: none), with their sizes."""
    if not limit:
        return {}
    found = {}
    for kind, sha in objects:
        if kind == 3:
            size = store.object_header(sha)[1]
            if size > limit:
                found[sha] = size
    return found


def refuse(skipped: SkippedSnapshot, limit: int) -> PushRefused:
    """The error for a push that would send ``skipped``: nothing was sent."""
    if skipped.reason == "too large":
        why = f"{skipped.path} is over the push limit of {limit:,} bytes (most servers refuse such files)"
        remedy = Remedy(
            "exclude it, raise max_push_file_size, or pass skip_refused=True to send the others without it",
            "exclude it, raise --max-push-file-size, or pass --skip-refused to send the others without it",
        )
        return PushRefused(f"snapshot {skipped.id[:12]}: {why}; nothing was sent", remedy)
    why = f"holds {skipped.path}, which the excludes keep out of snapshots now (it was recorded before they did)"
    return PushRefused(f"snapshot {skipped.id[:12]} {why}; nothing was sent", SKIP_REFUSED)
