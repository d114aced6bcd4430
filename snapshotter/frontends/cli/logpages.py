"""The snapshots ``log`` lists, read a page at a time: the newest ``-n`` after
``--skip``, older than ``--before``, never the whole history unless ``-n 0``
asks for it.

``log --session`` prints its page under a heading per turn, so it also reads
back from the oldest snapshot listed to the turn's start (its ``pre-turn:``)
or the end of the turn before (a ``post-turn:``): a few snapshots in an agent's
turn, and at most ``LOOK_BACK_MOST`` in any case.
"""

from __future__ import annotations

from dataclasses import dataclass

from snapshotter.model import SnapshotInfo

TYPE_CHECKING = False  # not ``typing``'s
if TYPE_CHECKING:
    from snapshotter.facade.api import Snapshotter

LOOK_BACK_FIRST = 16
"""Snapshots read first looking back for the oldest listed one's turn (an agent's
turn is a few; twice as many at each step after)."""
LOOK_BACK_MOST = 500
"""Snapshots read at most looking back: a turn of more than 250 tool calls is headed as begun earlier."""


@dataclass(frozen=True)
class Page:
    """What one ``log`` lists (``shown``, newest first) and, for ``log --session``,
    the snapshots before them read to head the oldest with its turn (``context``);
    ``cut``: the look-back stopped at ``LOOK_BACK_MOST`` without finding where
    that turn began."""

    shown: list[SnapshotInfo]
    context: list[SnapshotInfo]
    cut: bool


def read(
    snap: Snapshotter,
    limit: int,
    skip: int,
    before: str | None,
    label: str | None,
    metadata: dict[str, str] | None,
    grouped: bool,
) -> Page:
    """The page ``log -n LIMIT --skip SKIP --before BEFORE`` lists (``limit`` 0: all);
    ``grouped``: with the look-back ``log --session`` needs for its headings."""
    wanted = skip + limit if limit else None
    shown = snap.list(limit=wanted, label=label, metadata=metadata, session=snap.session, before=before)[skip:]
    if not grouped or not shown or wanted is None:
        return Page(shown, [], False)
    return _looked_back(snap, shown)


def _looked_back(snap: Snapshotter, shown: list[SnapshotInfo]) -> Page:
    from snapshotter.history.owners import POST_TURN, PRE_TURN  # here: the owners load the engine

    if (shown[-1].label or "").startswith(PRE_TURN):
        return Page(shown, [], False)
    context: list[SnapshotInfo] = []
    step = LOOK_BACK_FIRST
    while len(context) < LOOK_BACK_MOST:
        step = min(step, LOOK_BACK_MOST - len(context))
        older = snap.list(limit=step, session=snap.session, before=(context or shown)[-1])
        for info in older:
            context.append(info)
            if (info.label or "").startswith((PRE_TURN, POST_TURN)):
                return Page(shown, context, False)
        if len(older) < step:
            return Page(shown, context, False)  # the session's first snapshot: nothing older to head it
        step *= 2
    return Page(shown, context, True)
