"""How the command line reads the words it is given: refs, ranges and paths, as git reads them.

- ``A..B`` is the change from A to B (``A..``: from A to the folder now), in
  ``diff`` and ``revert``, unless a snapshot is labelled so.
- ``diff`` and ``status`` take paths without ``--``: a word that names no
  snapshot but a path there is a path, and every word after it must be one.
  A word that is neither is refused, as git refuses an ambiguous argument (a
  path that is gone goes after ``--``).
- A path means what it means where the command was started (``-C DIR``: in
  DIR), even when the workspace found is a folder above it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from snapshotter.errors import InvalidInput, InvalidRef, SnapshotNotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.facade.api import Snapshotter


def paths(start: str, given: Sequence[str]) -> list[str]:
    """``given`` as absolute paths, read from the folder the command started in."""
    return [os.path.join(start, path) for path in given]


def is_ref(snap: Snapshotter, word: str) -> bool:
    try:
        snap.get(word)
    except (SnapshotNotFound, InvalidRef):
        return False
    return True


def split_range(snap: Snapshotter, word: str | None) -> tuple[str | None, str | None] | None:
    """``A..B`` as (A, B), ``A..`` as (A, None); None if ``word`` is no range."""
    if word is None or ".." not in word or is_ref(snap, word):
        return None
    before, _, after = word.partition("..")
    if not before:
        raise InvalidInput(f"{word!r}: a range needs its start (A..B, or A.. for A to the folder now)")
    return before, after or None


def refs_and_paths(
    snap: Snapshotter, words: Sequence[str], start: str, at_most: int = 2
) -> tuple[list[str | None], list[str]]:
    """The leading ``words`` that name snapshots (at most ``at_most``, a range
    counting for two), then the paths: see the module's docstring."""
    refs: list[str | None] = []
    found: list[str] = []
    for word in words:
        if not found and len(refs) < at_most:
            ranged = split_range(snap, word) if not refs else None
            if ranged is not None:
                refs.extend(ranged)
                continue
            if is_ref(snap, word):
                refs.append(word)
                continue
        if not os.path.lexists(os.path.join(start, word)):
            raise InvalidInput(f"{word!r} is neither a snapshot nor a path here; name a path that is gone after --")
        found.append(word)
    return refs, found
