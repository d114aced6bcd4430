"""Who last changed each line of a file: blame over the folder's snapshots.

The snapshots of a store are one line of history, every session's in the
order they were taken. A line of the file as it is now is followed back
through them as ``git blame`` follows it through commits: at each snapshot
where the file changed, git's diff from the version before (the one that
counts lines, slid by git's indent heuristic) says which lines that change
made; those are blamed on it, the others go back a step. A line the newest
snapshot does not hold yet is the workspace's (``not snapshotted``). Whose each
change was comes from the sessions' brackets and turns (``owners``).

The walk reads at most ``limit`` snapshots (each where the file changed costs
a diff of its versions). Lines still unblamed at the oldest snapshot read are
blamed on it with ``boundary`` set: they are at least that old, as ``git
blame`` marks a root or boundary commit.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import islice

from snapshotter.engine.gitstore.objects import MODE_EXEC, MODE_FILE, MODE_TREE, STREAM_THRESHOLD, is_binary, parse_tree
from snapshotter.engine.session.engine import Engine
from snapshotter.errors import InvalidInput, PathNotFound, StoreError
from snapshotter.model import BlameResult, BlameRun, LineOrigin, SnapshotInfo

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:  # the rest loads where a blame runs: the facade imports this module for DEFAULT_LIMIT
    from snapshotter.history.owners import Owners

DEFAULT_LIMIT = 1000
"""Snapshots a blame reads at most, by default."""
WORKSPACE, BOUNDARY = "workspace", "boundary"
_FILES = (MODE_FILE, MODE_EXEC)


Run = tuple[int, int, int]
"""Lines not blamed yet: (first line in the file now, its line in the version walked, how many)."""
Blamed = tuple[int, int, int, LineOrigin]
"""Lines blamed: (first line in the file now, its line in the origin's version, how many, origin)."""


def blame(engine: Engine, path: str, limit: int = DEFAULT_LIMIT, session: str | None = None) -> BlameResult:
    """Each line of ``path`` as the workspace holds it now, with its origin
    (``session``: only the lines that session's changes made)."""
    from snapshotter.engine.compare.linediff import split_lines
    from snapshotter.engine.session.selection import normalize_selection
    from snapshotter.history.attribution import openers
    from snapshotter.history.owners import SESSION, Owners

    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise InvalidInput("blame's limit takes a whole number of snapshots, at least 1")
    if session is not None and not isinstance(session, str):
        raise InvalidInput("blame's session takes a session's name")
    (rel,) = normalize_selection(engine.workspace, [path])
    current = _current(engine, rel)
    lines = split_lines(current)
    if session is not None and (not session or session not in engine.catalog.index.current().sessions):
        raise InvalidInput(f"no session named {session!r} has snapshots here ('snapshotter sessions' lists them)")
    walk = engine.catalog.newest_first()  # lazily: only the snapshots read, never the whole history
    trees = _Trees(engine)
    window: list[SnapshotInfo] = []
    steps: list[tuple[SnapshotInfo | None, SnapshotInfo]] = []  # the changes lines are blamed on, by number
    found: list[tuple[int, int, int, int]] = []
    pending: list[Run] = [(0, 0, len(lines))] if lines else []
    newer_content, newer_info, newer_blob = current, None, None
    for info in islice(walk, limit):
        window.append(info)
        blob = trees.blob_at(bytes.fromhex(info.tree_id), rel)
        if newer_info is not None and blob == newer_blob:
            newer_info = info  # the same version: its change is older still
            continue
        older = engine.catalog.read_blob(blob, STREAM_THRESHOLD) if blob is not None else None
        steps.append((newer_info, info))
        pending = _pass_back(pending, newer_content, older, len(steps) - 1, found)
        if not pending or older is None:
            break
        newer_content, newer_info, newer_blob = older, info, blob
    limited = bool(pending) and next(walk, None) is not None
    owners = Owners([*openers(engine, window), *window])  # whose each change is: told once the window is known
    origins = [_origin(newer, older_info, owners) for newer, older_info in steps]
    blamed: list[Blamed] = [(now, at, count, origins[k]) for now, at, count, k in found]
    oldest = _boundary(newer_info) if newer_info else _NOT_SNAPSHOTTED  # as old as the oldest snapshot read
    blamed.extend((now, at, count, oldest) for now, at, count in pending)
    read = len(window)
    text = tuple(line.decode("utf-8", "replace").rstrip("\n") for line in lines)
    runs = _runs(blamed)
    if session is not None:
        runs = tuple(run for run in runs if run.origin.who == SESSION and run.origin.session == session)
    return BlameResult(rel, text, runs, read, limit, limited, session)


_NOT_SNAPSHOTTED = LineOrigin(WORKSPACE)


def _origin(newer: SnapshotInfo | None, older: SnapshotInfo, owners: Owners) -> LineOrigin:
    """The origin of the lines the step ``older`` -> ``newer`` made (``newer``
    None: the workspace now, not snapshotted yet)."""
    from snapshotter.history.owners import SESSION

    if newer is None:
        return _NOT_SNAPSHOTTED
    owner = owners.of(older, newer)
    agent = owners.agents.get(owner.session) if owner.who == SESSION else None
    return LineOrigin(owner.who, newer.id, owner.session, agent, owner.turn, owner.tool_call, newer.created_at)


def _boundary(info: SnapshotInfo) -> LineOrigin:
    """Lines at least as old as ``info``: who made them is not in the history read."""
    return LineOrigin(BOUNDARY, info.id, None, None, None, None, info.created_at, boundary=True)


def _pass_back(
    pending: list[Run], newer: bytes, older: bytes | None, origin: int, blamed: list[tuple[int, int, int, int]]
) -> list[Run]:
    """Blame on ``origin`` (a change's number) the pending lines the change ``older`` -> ``newer``
    made; return the others, placed in ``older``."""
    from snapshotter.engine.compare.linediff import change_script

    if older is None:
        blamed.extend((now, at, count, origin) for now, at, count in pending)
        return []
    _, count2, changes = change_script(older, newer)
    pieces: list[tuple[int, int, int | None]] = []  # (start, end) in newer, its start in older (None: made)
    position1 = position2 = 0
    for i1, i2, c1, c2 in changes:
        if i2 > position2:
            pieces.append((position2, i2, position1))
        if c2:
            pieces.append((i2, i2 + c2, None))
        position1, position2 = i1 + c1, i2 + c2
    if count2 > position2:
        pieces.append((position2, count2, position1))
    starts = [piece[0] for piece in pieces]
    moved: list[Run] = []
    for now, at, count in pending:
        k = max(bisect_right(starts, at) - 1, 0)
        end = at + count
        while k < len(pieces) and pieces[k][0] < end:
            start, stop, was = pieces[k]
            low, high = max(start, at), min(stop, end)
            if low < high:
                if was is None:
                    blamed.append((now + low - at, low, high - low, origin))
                else:
                    moved.append((now + low - at, was + low - start, high - low))
            k += 1
    return moved


def _runs(blamed: list[Blamed]) -> tuple[BlameRun, ...]:
    """The blamed lines in file order, lines of one origin whose source lines
    follow on merged into one run."""
    runs: list[BlameRun] = []
    for now, at, count, origin in sorted(blamed, key=lambda item: item[0]):
        last = runs[-1] if runs else None
        if last is not None and last.origin == origin and last.source_start + last.count == at + 1:
            runs[-1] = BlameRun(last.start, last.count + count, last.source_start, origin)
        else:
            runs.append(BlameRun(now + 1, count, at + 1, origin))
    return tuple(runs)


def _current(engine: Engine, rel: str) -> bytes:
    """The file at ``rel`` as the workspace holds it now (a tracked text file)."""
    from snapshotter.engine.worktree.fsops import Workspace

    entry = engine.scan(write=False).entry(rel)
    if entry is None:
        raise PathNotFound(f"{rel} is not a file the workspace tracks now (missing, ignored or a folder)")
    if entry[0] not in _FILES:
        raise InvalidInput(f"{rel} is not a regular file: it has no lines to blame")
    workspace = Workspace(engine.workspace, engine.host)
    try:
        content = workspace.read(rel, False, STREAM_THRESHOLD)
    except OSError as exc:
        raise InvalidInput(f"{rel} cannot be read: {exc.strerror}") from None
    finally:
        workspace.close()
    if content is None:
        raise InvalidInput(f"{rel} is larger than {STREAM_THRESHOLD >> 20} MiB: too large to blame")
    if is_binary(content):
        raise InvalidInput(f"{rel} is a binary file: it has no lines to blame")
    return content


class _Trees:
    """A path's blob id in snapshot trees, each folder tree parsed once."""

    def __init__(self, engine: Engine) -> None:
        self.store = engine.store
        self.parsed: dict[bytes, dict[bytes, tuple[int, bytes]]] = {}

    def blob_at(self, tree: bytes, path: str) -> bytes | None:
        parts = path.encode("utf-8", "surrogateescape").split(b"/")
        for depth, name in enumerate(parts):
            found = self._entries(tree).get(name)
            if found is None:
                return None
            mode, sha = found
            if depth == len(parts) - 1:
                return sha if mode in _FILES else None
            if mode != MODE_TREE:
                return None
            tree = sha
        return None

    def _entries(self, tree: bytes) -> dict[bytes, tuple[int, bytes]]:
        known = self.parsed.get(tree)
        if known is None:
            from snapshotter.engine.gitstore.store import DAMAGED_OBJECT  # here: main loads this module lazily

            try:
                kind, content = self.store.read_raw(tree)
            except KeyError:
                raise StoreError(f"tree {tree.hex()} is missing from the store") from None
            except DAMAGED_OBJECT as exc:
                raise StoreError(f"tree {tree.hex()} is damaged ({exc}); run verify()") from None
            if kind != 2:
                raise StoreError(f"object {tree.hex()} should be a tree; the store is damaged")
            try:
                known = {name: (mode, sha) for name, mode, sha in parse_tree(content)}
            except ValueError:  # a tree forged straight into the store (non-negotiable 7: typed)
                raise StoreError(f"tree {tree.hex()} is malformed; the store is damaged") from None
            self.parsed[tree] = known
        return known
