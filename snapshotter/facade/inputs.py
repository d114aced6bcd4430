"""The checks every public call makes on its arguments before anything runs.

A bad argument is refused with ``InvalidInput`` (one line, naming it) before
the store is touched, so a refused call records and changes nothing. A good
one may still deserve a word: a label taken from an older snapshot is warned
about once the new snapshot holds it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from snapshotter.engine.gitstore import trailers
from snapshotter.engine.session.engine import Engine
from snapshotter.errors import InvalidInput
from snapshotter.options import check_session

log = logging.getLogger("snapshotter")

Paths = Sequence[str | os.PathLike[str]]
MAX_WRITES = 64


def paths(files: Paths | None) -> Paths | None:
    """A ``files=`` argument: a list of paths (their own checks come with the workspace), or None."""
    if isinstance(files, (str, os.PathLike)):
        raise InvalidInput("files= takes a list of paths, not a single path")
    return files


def hunk_ids(hunks: Sequence[str] | None) -> list[str] | None:
    """A ``hunks=`` argument: a list of hunk ids (``PATH:DIGEST``, from ``hunks()``), or None."""
    if hunks is None:
        return None
    if isinstance(hunks, (str, bytes)) or not all(isinstance(item, str) and ":" in item for item in hunks):
        raise InvalidInput("hunks= takes a list of hunk ids (PATH:DIGEST), as hunks() lists them")
    return list(hunks)


def snapshot_text(
    message: str, label: str | None, metadata: Mapping[str, str] | None
) -> tuple[str, str | None, dict[str, str]]:
    """A new snapshot's message, label and metadata, as its commit will hold them."""
    if not isinstance(message, str):
        raise InvalidInput("message must be a string")
    trailers.check_text("message", message)
    return message, trailers.validate_label(label), trailers.validate_metadata(metadata)


def limit(value: int | None) -> int | None:
    """How many snapshots ``list()`` returns at most (None: all)."""
    if value is not None and (not isinstance(value, int) or value < 0):
        raise InvalidInput("limit must be a non-negative integer or None")
    return value


def call_id(value: str) -> str:
    """A tool call's id, for its snapshots' ``tool:<id>`` and ``tool-done:<id>``
    labels: it must make a label (at most 200 characters in all, one line that
    reads as stored). The hooks cut and hash a longer id first (``hookevents.ident``)."""
    if not isinstance(value, str) or not value:
        raise InvalidInput("call_id must be a non-empty string")
    try:
        trailers.validate_label(f"tool-done:{value}")
    except InvalidInput as exc:
        raise InvalidInput(f"call_id cannot make a label: {exc}") from None
    return value


def written(engine: Engine, writes: Paths | None) -> dict[str, str]:
    """A ``writes=`` argument (the files a tool call says it writes) as the
    ``tool:`` snapshot's metadata: workspace paths, as a JSON list (``owners``)."""
    if writes is None:
        return {}
    from snapshotter.engine.session.selection import normalize_selection
    from snapshotter.history.owners import WRITES

    if len(paths(writes) or ()) > MAX_WRITES:
        raise InvalidInput(f"writes= names at most {MAX_WRITES} files (leave it out for a call that writes more)")
    return {WRITES: json.dumps(sorted(set(normalize_selection(engine.workspace, writes))), ensure_ascii=False)}


@contextmanager
def moving_label(engine: Engine, label: str | None) -> Iterator[None]:
    """Warn, once the new snapshot exists, that ``label`` now names it and no longer an older one."""
    previous = engine.catalog.labelled(label) if label is not None else None
    yield
    if previous is not None:
        log.warning(
            "label %r now names the new snapshot; it named %s before (still listed, by id)", label, previous.id[:12]
        )


def session_filter(session: object) -> str | None:
    """A ``session=`` filter: None (any), ``""`` (the anonymous session) or a session name."""
    if session is None or session == "":
        return session
    return check_session(session)
