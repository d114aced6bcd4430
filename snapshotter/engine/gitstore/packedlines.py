"""The lines of ``packed-refs``, parsed and checked: ``<40 hex> <name>`` a ref,
and a peeled line ``^<40 hex>`` after a tag's, which belongs to the ref above.

A line that is neither is damage: a :class:`StoreError` naming the file, never
a ref skipped (a gc would then drop what it names).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from snapshotter.errors import StoreError

_HEX40 = re.compile(rb"[0-9a-f]{40}")


def records(path: str, data: bytes, offset: int) -> Iterator[tuple[bytes, bytes, int]]:
    """(name, id, offset) of each ref line in ``data``, whole lines of the file
    ``path`` from byte ``offset`` on; peeled lines are passed over."""
    if not data.endswith(b"\n"):
        raise StoreError(f"{path} is damaged (its last line is cut short); run verify")
    for line in data[:-1].split(b"\n"):
        if not line.startswith(b"^"):
            if line[40:41] != b" " or len(line) < 42 or not _HEX40.fullmatch(line, 0, 40):
                raise StoreError(f"{path} is damaged (a line at byte {offset} is no ref); run verify")
            yield line[41:], line[:40], offset
        offset += len(line) + 1


def sorted_records(path: str, body: bytes) -> bytes:
    """The records of a file that does not say it is sorted, sorted by name
    (peeled lines kept with theirs; comment lines dropped)."""
    found: list[tuple[bytes, bytes]] = []
    for line in body.split(b"\n"):
        if not line or line.startswith(b"#"):
            continue
        if line.startswith(b"^"):
            if not found:
                raise StoreError(f"{path} is damaged (a peeled line comes first); run verify")
            name, text = found[-1]
            found[-1] = (name, text + line + b"\n")
            continue
        if line[40:41] != b" " or not _HEX40.fullmatch(line[:40]) or len(line) < 42:
            raise StoreError(f"{path} is damaged (a line is no ref); run verify")
        found.append((line[41:], line + b"\n"))
    found.sort(key=lambda record: record[0])
    return b"".join(text for _, text in found)
