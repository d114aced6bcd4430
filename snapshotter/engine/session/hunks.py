"""The hunks of a change, and the change's end with chosen hunks taken back.

A change runs from one side to another (stored snapshots, or the workspace's
scan). Per changed path it has hunks (``compare.hunkset``): the ``@@`` hunks
of a text file, a ``mode`` hunk for an exec bit that changed, or one ``file``
hunk for what has no lines to choose from (a binary file, a symlink, a type
change, a file too large to diff). Reverting chosen hunks brings in the
change from its end to its end with those hunks taken back (an ``Overlay``):
every other line, and every other path, stays as the change left it, and the
three-way rules, conflicts and safety snapshot are a whole revert's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from snapshotter.engine.compare import hunkset
from snapshotter.engine.compare.diff import ContentLoader, Marks
from snapshotter.engine.compare.hunks import Change as HunkChange
from snapshotter.engine.compare.hunkset import LineChange
from snapshotter.engine.compare.overlay import Overlay
from snapshotter.engine.compare.treediff import Change, Entry, TreeSide, changes
from snapshotter.engine.gitstore.objects import MODE_EXEC, MODE_FILE, MODE_LINK, STREAM_THRESHOLD, is_binary, object_id
from snapshotter.engine.session.engine import Engine
from snapshotter.engine.session.reverting import Step
from snapshotter.engine.worktree.fsops import Workspace
from snapshotter.errors import HunkNotFound, StoreError
from snapshotter.model import Hunk

Within = Callable[[str, bool], bool]
_TEXT_MODES = (MODE_FILE, MODE_EXEC)


@dataclass(frozen=True)
class FileHunks:
    """One changed path's hunks."""

    change: Change
    lines: LineChange | None
    """A text file's lines and hunks (None: it has no lines to choose from)."""
    mode_id: str | None
    """The id of the path's ``mode`` hunk, if its exec bit changed."""
    whole_id: str | None
    """The id of its one ``file`` hunk, where it has no lines to choose from."""

    @property
    def ids(self) -> dict[str, tuple[HunkChange, ...]]:
        """Every id a revert may name for this path (hunks, their parts, the mode
        or file hunk) -> the line changes it takes back."""
        found: dict[str, tuple[HunkChange, ...]] = {}
        if self.lines is not None:
            found.update({hunk.id: hunk.changes for hunk in self.lines.hunks + self.lines.parts})
        found.update({i: () for i in (self.mode_id, self.whole_id) if i is not None})
        return found

    def listed(self, split: bool = False) -> list[Hunk]:
        """The public values in file order (the mode or file hunk last); with
        ``split``, each hunk's parts instead of the hunk."""
        path, old, new = self.change.path, self.change.old, self.change.new
        out = []
        shown = () if self.lines is None else self.lines.parts if split else self.lines.hunks
        for hunk in shown:
            numbers = hunk.text.split("\n", 1)[0].split(" ")[1:3]  # "@@ -a,b +c,d @@"
            (s1, n1), (s2, n2) = (_range(word[1:]) for word in numbers)
            out.append(Hunk(hunk.id, path, "lines", s1, n1, s2, n2, hunk.additions, hunk.deletions, hunk.text))
        if self.mode_id is not None and old is not None and new is not None:
            words = f"old mode {old[0]:o}\nnew mode {new[0]:o}\n"
            out.append(Hunk(self.mode_id, path, "mode", 0, 0, 0, 0, 0, 0, words))
        if self.whole_id is not None:
            out.append(Hunk(self.whole_id, path, "file", 0, 0, 0, 0, 0, 0, _described(self.change)))
        return out

    def taken_back(self, chosen: set[str]) -> tuple[Entry | None, bytes | None] | None:
        """The path's entry with the ``chosen`` hunks taken back, and the new
        content that entry names (None: a stored one); None when none is chosen."""
        ids = self.ids
        mine = chosen.intersection(ids)
        if not mine:
            return None
        undone = {change for hunk_id in mine for change in ids[hunk_id]}
        every = self.lines is None or undone.issuperset(c for hunk in self.lines.hunks for c in hunk.changes)
        if self.whole_id in mine or (every and (self.mode_id is None or self.mode_id in mine)):
            return self.change.old, None  # every hunk: the change's start, exactly
        old, new = self.change.old, self.change.new
        assert old is not None and new is not None and self.lines is not None  # partial: both sides hold the file
        mode = old[0] if self.mode_id in mine else new[0]
        if not undone:
            return (mode, new[1]), None
        content = self.lines.take_back(undone)
        return (mode, object_id(b"blob", content)), content


def file_hunks(
    change: Change, load_old: ContentLoader, load_new: ContentLoader, marked: bool | None = None
) -> FileHunks:
    """The hunks of one change (see the module's docstring); ``marked``: what
    ``.gitattributes`` say (``-diff``: one hunk for the whole file, as binary)."""
    old_entry, new_entry, path = change.old, change.new, change.path
    old = load_old(path, old_entry[1], old_entry[0]) if old_entry is not None else b""
    new = load_new(path, new_entry[1], new_entry[0]) if new_entry is not None else b""
    texts = all(entry is None or entry[0] in _TEXT_MODES for entry in (old_entry, new_entry))
    if texts and old is not None and new is not None and not (marked or (marked is None and _binary(old, new))):
        lines = hunkset.line_change(path, old, new) if old != new else None
        mode_id = None
        if old_entry is not None and new_entry is not None and old_entry[0] != new_entry[0]:
            mode_id = _id(path, "mode", (old_entry[0], new_entry[0]))
        if lines is not None or mode_id is not None:
            return FileHunks(change, lines, mode_id, None)
    return FileHunks(change, None, None, _id(path, "file", (old_entry, new_entry)))


def _binary(old: bytes, new: bytes) -> bool:
    return is_binary(old) or is_binary(new)


def _id(path: str, kind: str, what: object) -> str:
    """The id of a path's ``mode`` or ``file`` hunk."""
    return f"{path}:{hunkset.digest(kind.encode(), path.encode('utf-8', 'surrogateescape'), repr(what).encode())}"


def content_loader(engine: Engine, workspace: Workspace) -> ContentLoader:
    """Reads a side's content: from the store, else (a scan that stored nothing,
    a dry run's) from the workspace, checked against the id the scan found."""
    symlinks = engine.host.symlinks

    def read(path: str, sha: bytes, mode: int) -> bytes | None:
        try:
            return engine.read_stored(path, sha, mode)
        except StoreError:
            pass
        found = workspace.read(path, mode == MODE_LINK and symlinks, STREAM_THRESHOLD)
        if found is not None and object_id(b"blob", found) != sha:
            raise StoreError(f"{path} changed while its hunks were read; retry")
        return found

    return read


def listed(engine: Engine, sides: Sequence[tuple[TreeSide, TreeSide]], within: Within | None) -> list[FileHunks]:
    """The hunks of each change ``(start, end)`` in ``sides``, in their order."""
    workspace = Workspace(engine.workspace, engine.host)
    try:
        read = content_loader(engine, workspace)
        marked = engine.diff_attributes()
        return [found for start, end in sides for found in change_hunks(start, end, within, read, marked)]
    finally:
        workspace.close()


def hunk_steps(
    engine: Engine, sides: Sequence[tuple[TreeSide, TreeSide]], wanted: Sequence[str], within: Within | None
) -> list[Step]:
    """For a revert of the ``wanted`` hunks only: each change ``(start, end)``
    brought from its end to its end with those hunks taken back."""
    per_change = []
    workspace = Workspace(engine.workspace, engine.host)
    try:
        read = content_loader(engine, workspace)
        marked = engine.diff_attributes()
        per_change = [(end, change_hunks(start, end, within, read, marked)) for start, end in sides]
    finally:
        workspace.close()
    chosen = check_known(wanted, [found for _, files in per_change for found in files])
    steps = []
    for end, files in per_change:
        overlay, blobs = taken_back(end, files, chosen)
        steps.append(Step(end, overlay, blobs))
    return steps


def change_hunks(
    start: TreeSide, end: TreeSide, within: Within | None, read: ContentLoader, marked: Marks
) -> list[FileHunks]:
    """Every changed path's hunks, ``start`` -> ``end``, in path order."""
    return [file_hunks(change, read, read, marked(change.path)) for change in changes(start, end, within)]


def taken_back(end: TreeSide, files: Sequence[FileHunks], chosen: set[str]) -> tuple[Overlay, dict[bytes, bytes]]:
    """``end`` with the ``chosen`` hunks of ``files`` taken back, and the content
    of each blob it names that the store may not hold yet."""
    replaced: dict[str, Entry | None] = {}
    blobs: dict[bytes, bytes] = {}
    for found in files:
        outcome = found.taken_back(chosen)
        if outcome is None:
            continue
        entry, content = outcome
        replaced[found.change.path] = entry
        if entry is not None and content is not None:
            blobs[entry[1]] = content
    return Overlay(end, replaced), blobs


def check_known(wanted: Sequence[str], listed: Sequence[FileHunks]) -> set[str]:
    """``wanted`` as a set, if every id names one of ``listed``'s hunks; else
    ``HunkNotFound`` naming the first that does not (nothing is written)."""
    known = {hunk_id for found in listed for hunk_id in found.ids}
    for hunk_id in wanted:
        if hunk_id not in known:
            path = hunkset.path_of(hunk_id)
            same_file = sorted(i for i in known if hunkset.path_of(i) == path)
            hint = f"; its hunks now: {', '.join(same_file[:5])}" if same_file else ""
            raise HunkNotFound(
                f"no hunk {hunk_id} in this change: it changed since the id was listed, or is of another{hint}; "
                "nothing was written"
            )
    return set(wanted)


def _range(text: str) -> tuple[int, int]:
    start, _, count = text.partition(",")
    return int(start), int(count) if count else 1


def _described(change: Change) -> str:
    old, new = change.old, change.new
    if old is None:
        return f"new file mode {new[0]:o}\n" if new is not None else ""
    if new is None:
        return f"deleted file mode {old[0]:o}\n"
    if old[0] != new[0]:
        return f"old mode {old[0]:o}\nnew mode {new[0]:o}\nBinary or special files differ\n"
    return "Binary or special files differ\n"
