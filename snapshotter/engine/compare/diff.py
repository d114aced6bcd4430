"""File diffs between two states: numstat counts now, the unified patch on demand."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from snapshotter import model
from snapshotter.engine.compare.treediff import Change
from snapshotter.engine.gitstore.objects import MODE_LINK, is_binary

if TYPE_CHECKING:  # the values are made through ``model``: a snapshot counts its lines without loading them
    from snapshotter.model import ChangeStatus, FileDiff

Marks = Callable[[str], "bool | None"]
"""path -> what ``.gitattributes`` say of diffing it (see :func:`file_diff`)."""


def no_marks(path: str) -> bool | None:
    """No attributes: the content decides."""
    return None


ContentLoader = Callable[[str, bytes, int], bytes | None]
"""(path, object id, git mode) -> content, for one side of a comparison;
None for content too large to diff line by line (reported like a binary file)."""


def status_of(change: Change) -> ChangeStatus:
    status = model.ChangeStatus
    if change.old is None:
        return status.ADDED
    if change.new is None:
        return status.DELETED
    if (change.old[0] == MODE_LINK) != (change.new[0] == MODE_LINK):
        return status.TYPE_CHANGED
    return status.MODIFIED


def file_diff(change: Change, load_old: ContentLoader, load_new: ContentLoader, marked: bool | None = None) -> FileDiff:
    """The FileDiff of one change, reading both sides' content once for the counts.
    ``marked``: what ``.gitattributes`` say (``DiffAttributes.binary``): True
    binary, False text whatever its bytes, None up to the content."""
    old, new, binary, additions, deletions = _compared(change, load_old, load_new, marked)

    def make_patch() -> str:
        return render_patch(change, old, new, binary)

    return model.FileDiff(
        path=change.path,
        status=status_of(change),
        additions=additions,
        deletions=deletions,
        binary=binary,
        old_mode=change.old[0] if change.old else None,
        new_mode=change.new[0] if change.new else None,
        old_id=change.old[1].hex() if change.old else None,
        new_id=change.new[1].hex() if change.new else None,
        _patch_fn=make_patch,
    )


def file_numstat(
    change: Change, load_old: ContentLoader, load_new: ContentLoader, marked: bool | None = None
) -> tuple[int, int]:
    """(lines added, lines deleted) of one change: :func:`file_diff`'s counts,
    without its value (recording a snapshot counts lines and makes no diff)."""
    _, _, _, additions, deletions = _compared(change, load_old, load_new, marked)
    return additions, deletions


def _compared(
    change: Change, load_old: ContentLoader, load_new: ContentLoader, marked: bool | None
) -> tuple[bytes, bytes, bool, int, int]:
    """Both sides' content (b"" for none, or too large to read), whether it is
    compared as binary, and the lines added and deleted (0 for binary)."""
    loaded_old = load_old(change.path, change.old[1], change.old[0]) if change.old else b""
    loaded_new = load_new(change.path, change.new[1], change.new[0]) if change.new else b""
    too_large = loaded_old is None or loaded_new is None
    old, new = loaded_old or b"", loaded_new or b""
    binary = too_large or (marked if marked is not None else is_binary(old) or is_binary(new))
    same_content = change.old is not None and change.new is not None and change.old[1] == change.new[1]
    if binary or same_content:
        return old, new, binary, 0, 0
    from snapshotter.engine.compare import linediff  # here: a snapshot or status that counts no line loads no differ

    additions, deletions = linediff.numstat(old, new)
    return old, new, binary, additions, deletions


def unreadable_diff(path: str, recorded: tuple[int, bytes] | None) -> FileDiff:
    """A workspace path that exists but cannot be read: no line counts, no patch;
    ``recorded`` is what the other side holds at that path, if anything."""
    return model.FileDiff(
        path=path,
        status=model.ChangeStatus.UNREADABLE,
        additions=0,
        deletions=0,
        binary=False,
        old_mode=recorded[0] if recorded else None,
        new_mode=None,
        old_id=recorded[1].hex() if recorded else None,
    )


_ESCAPES = {7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 34: '\\"', 92: "\\\\"}


def quoted(prefix: str, path: str) -> str:
    """``prefix + path`` as git writes a name in a patch (``quote_c_style``, with
    its default ``core.quotePath``): as it is, or, if it holds a control
    character, a double quote, a backslash or a byte above 0x7f, in double
    quotes with C escapes and octal bytes (``"a/t\\tb"``, ``"b/\\303\\274"``)."""
    name = (prefix + path).encode("utf-8", "surrogateescape")
    if not any(byte < 0x20 or byte in (0x22, 0x5C) or byte >= 0x7F for byte in name):
        return prefix + path
    body = "".join(_ESCAPES.get(byte) or (chr(byte) if 0x20 <= byte < 0x7F else f"\\{byte:03o}") for byte in name)
    return f'"{body}"'


def render_patch(change: Change, old: bytes, new: bytes, binary: bool) -> str:
    """A ``git diff``-style patch for one path (its names quoted as git quotes them)."""
    path = change.path
    lines = [f"diff --git {quoted('a/', path)} {quoted('b/', path)}\n"]
    old_mode = f"{change.old[0]:06o}" if change.old else None
    new_mode = f"{change.new[0]:06o}" if change.new else None
    old_short = change.old[1].hex()[:7] if change.old else "0000000"
    new_short = change.new[1].hex()[:7] if change.new else "0000000"
    if change.old is None:
        lines.append(f"new file mode {new_mode}\n")
        lines.append(f"index {old_short}..{new_short}\n")
    elif change.new is None:
        lines.append(f"deleted file mode {old_mode}\n")
        lines.append(f"index {old_short}..{new_short}\n")
    elif old_mode != new_mode:
        lines.append(f"old mode {old_mode}\nnew mode {new_mode}\n")
        if old_short != new_short:
            lines.append(f"index {old_short}..{new_short}\n")
    else:
        lines.append(f"index {old_short}..{new_short} {old_mode}\n")
    if change.old is not None and change.new is not None and change.old[1] == change.new[1]:
        return "".join(lines)
    a_name = quoted("a/", path) if change.old else "/dev/null"
    b_name = quoted("b/", path) if change.new else "/dev/null"
    if binary:
        lines.append(f"Binary files {a_name} and {b_name} differ\n")
        return "".join(lines)
    tab = "\t" if " " in path else ""  # git's mark that a name with a space ends here
    lines.append(f"--- {a_name}{tab if change.old else ''}\n+++ {b_name}{tab if change.new else ''}\n")
    from snapshotter.engine.compare import linediff

    lines.append(linediff.unified_hunks(old, new))
    return "".join(lines)
