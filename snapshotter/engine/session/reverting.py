"""Bringing a change into the workspace as it is now, keeping everything else.

A restore is a reset: the workspace becomes the snapshot. A revert or a merge
brings in one change only, ``base`` -> ``theirs`` between two stored trees, and
keeps whatever else happened meanwhile: reverting the change ``before`` ->
``after`` is bringing in ``after`` -> ``before``; merging a fork is bringing in
its fork point -> its state now. Several changes may be brought in one after
another (a session's tool calls, newest first), each over what the previous
one left, and written once.

Per path the change touched, with the workspace's version as ``ours``:

- ours is still ``base``'s: it becomes ``theirs``' (written, deleted or recreated);
- ours is already ``theirs``': nothing to do;
- ours moved on: text files are merged three ways (``compare.merge``); a clean
  merge is written; a clash of lines, a binary or symlink that moved, an exec
  bit changed both ways, a file deleted on one side and changed on the other,
  or a file where the other side has a folder, is a conflict.

Conflicts are settled by the caller's choice: ``abort`` writes nothing at all,
``ours`` keeps the workspace's version of each conflicting path and brings in
the rest, ``markers`` also writes git-style conflict markers into the text
files that clashed. What the scan does not track (ignored, too large,
unreadable) is never written or deleted: a change reaching one is a conflict.
The trees are read with their names checked, as a restore reads them, and the
writes go through the same confined, put-back-on-failure path; a safety
snapshot of the workspace comes first, so the whole thing can be undone.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from snapshotter.engine.collector import collector_paused
from snapshotter.engine.compare.merge import merge_text, mergeable
from snapshotter.engine.compare.treediff import Change, Entry, StoredTree, TreeSide, changes
from snapshotter.engine.gitstore.inflate import ObjectTooLarge
from snapshotter.engine.gitstore.objects import MODE_EXEC, MODE_FILE, MODE_LINK, STREAM_THRESHOLD, object_id
from snapshotter.engine.session.checkout import Plan
from snapshotter.engine.session.engine import Engine
from snapshotter.engine.session.restoring import apply_or_put_back
from snapshotter.engine.session.selection import normalize_selection, selection_filter
from snapshotter.engine.worktree.fsops import Workspace
from snapshotter.errors import InvalidInput, StoreError
from snapshotter.model import Conflict, ConflictMode, ConflictReason, RevertResult, SkippedPath, SkipReason

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:  # annotations only: reading the store (``log``, ``show``) does not load the walker
    from snapshotter.engine.worktree.walker import Scan

CONFLICT_MODES: tuple[str, ...] = ("abort", "markers", "ours")
SINCE = "since"
"""A closing snapshot's metadata key: the safety snapshot its change started from."""
_FILES = (MODE_FILE, MODE_EXEC)
_REVERTED, _MERGED, _UNCHANGED = "reverted", "merged", "unchanged"


@dataclass(frozen=True)
class Step:
    """One change to bring in: from ``base`` to ``theirs`` (stored trees, read with
    their names checked; ``base`` may be the scan of the workspace itself)."""

    base: TreeSide
    theirs: TreeSide
    blobs: Mapping[bytes, bytes] = field(default_factory=dict)
    """Contents of blobs ``theirs`` names that the store may lack (hunks taken back)."""


def check_conflict_mode(conflicts: object) -> ConflictMode:
    if conflicts not in CONFLICT_MODES:
        raise InvalidInput(f'conflicts= takes "abort", "markers" or "ours", not {conflicts!r}')
    return conflicts  # type: ignore[return-value]


def bring_in(
    engine: Engine,
    steps: Sequence[Step],
    *,
    files: Sequence[str | os.PathLike[str]] | None = None,
    dry_run: bool = False,
    conflicts: ConflictMode = "abort",
    safety_label: str = "pre-revert",
    message: str = "before reverting",
    labels: tuple[str, str] = ("workspace", "reverted"),
    current: Scan | None = None,
    closing_label: str | None = None,
) -> RevertResult:
    """Bring each of ``steps`` into the workspace in turn (see the module's
    docstring); ``labels`` name the two sides in conflict markers. ``current``:
    the scan of the workspace, if the caller made one (stored unless ``dry_run``).

    With ``closing_label``, what was written is closed by a snapshot under that
    label whose metadata names the safety snapshot (``since``): the change is
    then bracketed, as a tool call is, so another session's revert of a stretch
    holding it can keep it (see ``attribution``)."""
    mode = check_conflict_mode(conflicts)
    within = selection_filter(normalize_selection(engine.workspace, files)) if files is not None else None
    with collector_paused():
        if current is None:
            current = engine.scan(write=not dry_run)
        workspace = Workspace(engine.workspace, engine.host)
        try:
            merging = _Merging(engine, current, workspace, mode, labels)
            for step in steps:
                merging.bring(step, within)
            plan = merging.plan()
            aborted = bool(merging.conflicts) and mode == "abort"
            if dry_run or aborted or not (plan.writes or plan.chmods or plan.deletes):
                return merging.result(None, dry_run, applied=not dry_run and not aborted)
            safety = engine.save_state(current, message, safety_label, save_cache=False).info
            merging.store_merged()
            workspace.close()  # writing starts from fresh checks of every folder
            apply_or_put_back(engine, plan, workspace, safety, current)
            if closing_label is not None:
                closing = f"after: {message.removeprefix('before ')}"
                engine.snapshot(closing, closing_label, {SINCE: safety.id}, moves_base=False)
            return merging.result(safety.id, dry_run, applied=True)
        finally:
            workspace.close()


@dataclass
class _Merging:
    """The workspace as the steps leave it, held in memory over the scan until it is written."""

    engine: Engine
    scan: Scan
    workspace: Workspace
    mode: ConflictMode
    labels: tuple[str, str]
    state: dict[str, Entry | None] = field(default_factory=dict)
    """Path -> its entry after the steps so far (None: deleted); paths not here are as scanned."""
    outcome: dict[str, str] = field(default_factory=dict)
    conflicts: dict[str, Conflict] = field(default_factory=dict)
    marked: set[str] = field(default_factory=set)
    made: dict[bytes, bytes] = field(default_factory=dict)
    """Blob id -> content of each merged file, stored only if the result is written."""
    skipped: dict[str, str] = field(default_factory=dict)
    filled: set[str] = field(default_factory=set)
    """Folders some path of the state was put in (a file written below them)."""

    def __post_init__(self) -> None:
        self.untracked = {item.path for item in self.scan.kept_as_is()}
        self.lstats: dict[str, bool] = {}
        """Path the scan does not track -> whether a file or symlink stands there."""

    # -- what the workspace holds, as the steps leave it -------------------------------------

    def entry(self, path: str) -> Entry | None:
        return self.state[path] if path in self.state else self.scan.entry(path)

    def _content(self, path: str, entry: Entry) -> bytes | None:
        """An entry's content (None: too large to merge). A dry run's scan stored
        nothing: the workspace's own version of a path is then read from it."""
        sha = entry[1]
        made = self.made.get(sha)
        if made is not None:
            return made
        try:
            return self.engine.catalog.read_blob(sha, STREAM_THRESHOLD)
        except ObjectTooLarge:
            return None
        except StoreError:
            scanned = self.scan.entry(path)
            if self.scan.written or scanned is None or scanned[1] != sha:
                raise
        found = self.workspace.read(path, entry[0] == MODE_LINK, STREAM_THRESHOLD)
        if found is not None and object_id(b"blob", found) != sha:
            raise StoreError(f"{path} changed while it was being merged; retry")
        return found

    # -- one step --------------------------------------------------------------------------------

    def bring(self, step: Step, within: Callable[[str, bool], bool] | None) -> None:
        self.made.update(step.blobs)
        found = changes(step.base, step.theirs, within)
        for side in (step.base, step.theirs):
            for path, why in (side.left_out if isinstance(side, StoredTree) else {}).items():
                self.skipped.setdefault(path, why)
        # Deletions first: a file the change puts where it deletes a folder's
        # files ("p" for "p/x.py") then finds the folder already emptied.
        for change in sorted(found, key=lambda change: change.new is not None):
            if change.path in self.skipped or any(p in self.skipped for p in _parents(change.path)):
                continue
            self._one(change)

    def _one(self, change: Change) -> None:
        path, base, theirs = change.path, change.old, change.new
        if path in self.conflicts:  # an earlier step left it as ours: later ones leave it too
            return
        if self._untracked_at(path):
            self._conflict(path, ConflictReason.UNTRACKED, "the workspace holds an untracked file or folder there")
            return
        ours = self.entry(path)
        if ours == base:
            if ours is None and not self._room_for(path):
                return
            self._set(path, theirs, _REVERTED)
        elif ours == theirs:
            self.outcome.setdefault(path, _UNCHANGED)
        else:
            self._merge(path, base, ours, theirs)

    def _room_for(self, path: str) -> bool:
        """Whether a new file may go at ``path``: no file on the way, no folder there."""
        for parent in _parents(path):
            if self.entry(parent) is not None:
                self._conflict(path, ConflictReason.TYPE, f"{parent} is a file in the workspace")
                return False
        if self._folder_at(path):
            self._conflict(path, ConflictReason.TYPE, "the workspace has a folder there")
            return False
        return True

    def _folder_at(self, path: str) -> bool:
        """A folder stands at ``path``: one holding tracked files the steps keep, or
        one the scan does not track at all (it may hold ignored files)."""
        prefix = path + "/"
        if path in self.filled and any(e is not None for p, e in self.state.items() if p.startswith(prefix)):
            return True
        node = self.scan.nodes.get(path)
        if node is None:
            st = self.workspace.lstat(path)
            return st is not None and stat.S_ISDIR(st.st_mode)
        below = [node]
        while below:
            folder = below.pop()
            folder_prefix = folder.rel + "/"
            if any(self.state.get(folder_prefix + name, True) is not None for name in folder.records):
                return True
            below.extend(folder.subdirs)
        return False

    def _untracked_at(self, path: str) -> bool:
        """Something the scan does not track stands at ``path`` or on the way to it:
        a file or symlink (ignored, say) where the path needs a folder would be
        replaced or written through."""
        if self.untracked and (path in self.untracked or any(p in self.untracked for p in _parents(path))):
            return True
        if path in self.state or self.scan.entry(path) is not None:
            return False
        for parent in reversed(_parents(path)):  # from the top down
            if parent in self.state or self.scan.entry(parent) is not None:
                return False  # a tracked file on the way: no room, as _room_for says
            if parent not in self.scan.nodes and self._untracked_file(parent):
                return True
        return self._untracked_file(path)

    def _untracked_file(self, path: str) -> bool:
        """Something not a real folder is at ``path`` (the scan does not track it)."""
        if path not in self.lstats:
            st = self.workspace.lstat(path)
            self.lstats[path] = st is not None and not stat.S_ISDIR(st.st_mode)
        return self.lstats[path]

    def _merge(self, path: str, base: Entry | None, ours: Entry | None, theirs: Entry | None) -> None:
        """Ours moved on from ``base``: combine it with ``theirs``, or say why not."""
        if theirs is None:
            self._conflict(path, ConflictReason.DELETED, "the change deletes it; the workspace changed it since")
            return
        if ours is None:
            on_the_way = next((p for p in _parents(path) if self.entry(p) is not None), None)
            if on_the_way is not None:
                self._conflict(path, ConflictReason.TYPE, f"{on_the_way} is a file in the workspace")
            elif self._folder_at(path):
                self._conflict(path, ConflictReason.TYPE, "the workspace has a folder there")
            else:
                self._conflict(path, ConflictReason.DELETED, "the workspace deleted it; the change modifies it")
            return
        if MODE_LINK in (ours[0], theirs[0]) or (base is not None and base[0] == MODE_LINK):
            self._conflict(path, ConflictReason.SYMLINK, "a symlink changed on both sides")
            return
        if ours[0] not in _FILES or theirs[0] not in _FILES:
            self._conflict(path, ConflictReason.TYPE, "not a regular file on both sides")
            return
        mode = _merged_mode(base[0] if base is not None else None, ours[0], theirs[0])
        if mode is None:
            self._conflict(path, ConflictReason.MODE, "the exec bit changed both ways")
            return
        content_id: bytes | None = ours[1]
        if ours[1] != theirs[1] and (base is None or theirs[1] != base[1]):
            same_as_base = base is not None and ours[1] == base[1]
            content_id = theirs[1] if same_as_base else self._merged_content(path, base, ours, theirs)
        if content_id is not None:
            self._set(path, (mode, content_id), _MERGED)

    def _merged_content(self, path: str, base: Entry | None, ours: Entry, theirs: Entry) -> bytes | None:
        """The id of the three-way merge of the contents (kept in ``made``), or
        None with the conflict noted (and, in ``markers`` mode, the marked file set)."""
        was = self._content(path, base) if base is not None else b""
        mine = self._content(path, ours)
        yours = self._content(path, theirs)
        if was is None or mine is None or yours is None:
            self._conflict(path, ConflictReason.TOO_LARGE, f"larger than {STREAM_THRESHOLD >> 20} MiB: not merged")
            return None
        if not mergeable(was, mine, yours):
            self._conflict(path, ConflictReason.BINARY, "a binary file changed on both sides")
            return None
        merged = merge_text(was, mine, yours, *self.labels)
        sha = object_id(b"blob", merged.content)
        self.made[sha] = merged.content
        if merged.clean:
            return sha
        regions = "region" if merged.conflicts == 1 else "regions"
        self._conflict(path, ConflictReason.CONTENT, f"{merged.conflicts} conflicting {regions}")
        if self.mode == "markers":
            self.state[path] = (ours[0], sha)  # ours is a file: its folders exist already
            self.marked.add(path)
        return None

    def _set(self, path: str, entry: Entry | None, how: str) -> None:
        self.state[path] = entry
        if entry is not None:
            self.filled.update(_parents(path))
        if self.outcome.get(path) != _MERGED:
            self.outcome[path] = how

    def _conflict(self, path: str, reason: ConflictReason, detail: str) -> None:
        self.conflicts.setdefault(path, Conflict(path, reason, detail))
        self.outcome.pop(path, None)

    # -- the result --------------------------------------------------------------------------------

    def plan(self) -> Plan:
        """What to write, chmod and delete to leave the workspace as the state says."""
        writes: list[tuple[str, Entry]] = []
        chmods: list[tuple[str, Entry]] = []
        deletes: list[str] = []
        for path in sorted(self.state):
            new, old = self.state[path], self.scan.entry(path)
            if path in self.conflicts and path not in self.marked:
                continue
            if new == old:
                continue
            if new is None:
                deletes.append(path)
            elif old is not None and old[1] == new[1] and MODE_LINK not in (old[0], new[0]):
                chmods.append((path, new))
            else:
                writes.append((path, new))
        skipped = tuple(SkippedPath(p, SkipReason.NAME, why) for p, why in sorted(self.skipped.items()))
        return Plan(tuple(writes), tuple(chmods), tuple(deletes), 0, {}, (), skipped)

    def store_merged(self) -> None:
        """The merged files' blobs, into the store before anything is written (objects first)."""
        writer = self.engine.store.writer
        for content in self.made.values():
            writer.write(b"blob", content)

    def result(self, safety_id: str | None, dry_run: bool, applied: bool) -> RevertResult:
        def paths(how: str) -> tuple[str, ...]:
            return tuple(sorted(p for p, h in self.outcome.items() if h == how))

        changed = {p for p in self.state if self.state[p] != self.scan.entry(p)}
        moved = [p for p in paths(_REVERTED) + paths(_MERGED) if p not in changed]  # a later step undid it
        return RevertResult(
            reverted=tuple(p for p in paths(_REVERTED) if p in changed),
            merged=tuple(p for p in paths(_MERGED) if p in changed),
            conflicts=tuple(self.conflicts[p] for p in sorted(self.conflicts)),
            unchanged=tuple(sorted(set(paths(_UNCHANGED)).union(moved))),
            safety_snapshot_id=safety_id,
            dry_run=dry_run,
            applied=applied,
            marked=tuple(sorted(self.marked)) if applied or dry_run else (),
            skipped=tuple(SkippedPath(p, SkipReason.NAME, why) for p, why in sorted(self.skipped.items())),
        )


def _merged_mode(base: int | None, ours: int, theirs: int) -> int | None:
    """The exec bit both sides' changes lead to; None if they changed it both
    ways (or, for a file both added, chose it differently)."""
    if ours == theirs or theirs == base:
        return ours
    if ours == base:
        return theirs
    return None


def _parents(path: str) -> list[str]:
    out = []
    while "/" in path:
        path = path.rpartition("/")[0]
        out.append(path)
    return out
