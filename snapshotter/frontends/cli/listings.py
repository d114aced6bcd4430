"""How ``diff`` and ``status`` print their paths: quoted as git quotes them
(``rendering.quoted``), or raw and NUL-ended with ``-z`` where git has ``-z``
(``status -z``; ``diff --numstat -z``, ``diff --name-status -z``)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

from snapshotter.frontends.shared import rendering


def raw(out: TextIO, fields: Iterable[str]) -> None:
    """Each field as it is, ended by a NUL: a name that is not UTF-8 as its own
    bytes, straight to the stream's bytes where it has them."""
    binary = getattr(out, "buffer", None)
    if binary is not None:
        out.flush()
    for field in fields:
        if binary is None:
            out.write(field + "\0")
        else:
            binary.write(os.fsencode(field) + b"\0")
    if binary is not None:
        binary.flush()


def status(out: TextIO, changes: Sequence[Any], nul: bool) -> None:
    """``status``: a letter and a path a line (``-z``: a field each, raw)."""
    letters = [rendering.STATUS_LETTER[change.status.value] for change in changes]
    if nul:
        raw(out, (f"{letter} {change.path}" for letter, change in zip(letters, changes)))
        return
    _lines(out, [f"{letter} {rendering.quoted(change.path)}" for letter, change in zip(letters, changes)])


def diff(diffs: Sequence[Any], args: argparse.Namespace, out: TextIO, err: TextIO, environ: Mapping[str, str]) -> None:
    """``diff`` in the shape its flags ask for: ``--numstat``, ``--name-status``, ``--stat`` or the patch."""
    if args.numstat:
        rows = [
            ("-\t-" if item.binary or item.status.value == "unreadable" else f"{item.additions}\t{item.deletions}")
            + f"\t{item.path if args.nul else rendering.quoted(item.path)}"
            for item in diffs
        ]
    elif args.name_status:
        letters = [rendering.STATUS_LETTER[item.status.value] for item in diffs]
        if args.nul:  # git's -z: the letter and the path each a field
            raw(out, (part for letter, item in zip(letters, diffs) for part in (letter, item.path)))
            return
        rows = [f"{letter}\t{rendering.quoted(item.path)}" for letter, item in zip(letters, diffs)]
    elif args.stat:
        rows = rendering.stat_lines(list(diffs))
    else:
        patch = "".join(item.patch for item in diffs)
        out.write(rendering.colored_patch(patch) if rendering.wants_color(out, environ) else patch)
        for item in diffs:
            if item.status.value == "unreadable":
                err.write(f"unreadable (kept as last recorded): {rendering.quoted(item.path)}\n")
        return
    if args.nul:
        raw(out, rows)
    else:
        _lines(out, rows)


def _lines(out: TextIO, rows: Sequence[str]) -> None:
    """A line at a time, as every command prints: a reader that goes away early
    (``| head -1``) is then seen at the next write (exit 141, as git)."""
    for row in rows:
        out.write(row + "\n")
