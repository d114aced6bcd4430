"""Which files are big (kept in chain packs, as deltas of their last version) and which packs are chain packs.

Apart from ``bigstore`` and ``chainpack`` so that a walk asks ``fits`` of each
file it hashes, and the upkeep pass tells chain packs from others, without
loading the chain packs' code, the delta matcher or OpenSSL's hashing state:
those load where a big file is written or read (a hook call writing small
files pays for none of them, issue #51).
"""

from __future__ import annotations

import os

THRESHOLD = 8 << 20
"""Files above this many bytes are kept in chain packs (the streaming threshold:
nothing above it is held whole, and below it gc's deltas serve)."""
MAX_SIZE = (4 << 30) - (64 << 20)
"""Files from here on stay loose objects: a delta addresses 32-bit offsets."""


def fits(size: int) -> bool:
    """Whether a file of ``size`` bytes is kept in a chain pack."""
    return THRESHOLD < size < MAX_SIZE


PREFIX = "pack-chain-"
"""The name of every chain pack starts so (``pack-chain-<checksum>.pack``, see ``chainpack``)."""


def is_chain(base: str) -> bool:
    """Whether the pack at ``base`` (its path less ``.pack``) is a chain pack."""
    return os.path.basename(base).startswith(PREFIX)
