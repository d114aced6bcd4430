"""Where a search of ``packed-refs`` probes between two numbered refs of one
folder (``refs/snapshots/0000000042``): by their numbers, not halfway.

Numbered refs have names of one width, so their lines have one length, and
their numbers few gaps (retention drops runs of old ones): the line for a
number lies about as far between two known lines as its number lies between
theirs. ``packedrefs.View`` follows an interpolated probe that does not halve
its range with a halving one, so a skewed folder costs at most twice a
binary search.
"""

from __future__ import annotations

_NUMBER_WIDTH = 10
"""Digits of a numbered ref's name (``refstore.WIDTH``)."""


def _numbered(name: bytes) -> tuple[bytes, int] | None:
    """(folder, number) of a numbered ref's name, or None."""
    digits = name[-_NUMBER_WIDTH:]
    if len(name) <= _NUMBER_WIDTH or name[-_NUMBER_WIDTH - 1 : -_NUMBER_WIDTH] != b"/" or not digits.isdigit():
        return None
    return name[:-_NUMBER_WIDTH], int(digits)


def interpolated(name: bytes, below: bytes, above: bytes, low: int, high: int, middle: int) -> int:
    """Where to probe for ``name`` between the refs ``below`` (ending at ``low``)
    and ``above`` (starting at ``high``): by the numbers, where ``name`` and
    ``below`` are numbered refs of one folder (and ``above`` too, or past it);
    else ``middle``."""
    wanted, lower, upper = _numbered(name), _numbered(below), _numbered(above)
    if wanted is None or lower is None or wanted[0] != lower[0]:
        return middle
    if upper is None or upper[0] != wanted[0]:  # past the folder's last ref: as if no number were missing
        at = low + (wanted[1] - lower[1] - 1) * (len(below) + 42)  # a line: <40 hex> <name>\n
    elif upper[1] <= lower[1] + 1:
        return middle
    else:
        at = low + int((wanted[1] - lower[1] - 1) / (upper[1] - lower[1] - 1) * (high - low))
    return min(high - 1, max(low, at))
