"""Known-hosts files read as OpenSSH reads them, to decide whether a server's key is the one expected.

paramiko's own reader compares host names literally: it knows neither the
negated patterns (``!host``: the line does not apply to that host, whatever
else on it matches), nor the wildcards (``*``, ``?``), nor the markers
(``@revoked``, ``@cert-authority``). A line ``host,!host KEY`` then vouched
for a key that ssh refuses. This module reads the lines itself and decides as
``ssh`` does with ``StrictHostKeyChecking=yes``:

- a line applies to a host if one of its patterns matches the host and none of
  its negated ones does (hashed ``|1|salt|hash`` names match by HMAC-SHA1);
- a key on an ``@revoked`` line is refused, whatever else vouches for it;
- the host's key is known if an applicable line holds it; another key where
  applicable lines hold one is a changed key; no applicable line, an unknown host.

``@cert-authority`` lines vouch for host certificates, which paramiko does not
check: they vouch for nothing here (the connection is refused, never weakened).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from dataclasses import dataclass
from enum import Enum


class Verdict(Enum):
    KNOWN = "known"
    REVOKED = "revoked"
    CHANGED = "changed"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class HostLine:
    """One usable line of a known-hosts file."""

    marker: str
    """``""``, ``"@revoked"`` or ``"@cert-authority"``."""
    names: str
    """The host patterns, comma-separated, or one hashed name."""
    key: bytes
    """The key blob (the base64 field, decoded), which names its own type."""


def parse(text: str) -> list[HostLine]:
    """The lines of a known-hosts file that can be used; comments, blank and
    malformed lines are passed over, as ssh passes over them."""
    found = []
    for raw in text.splitlines():
        fields = raw.split()
        if not fields or fields[0].startswith("#"):
            continue
        marker = fields.pop(0) if fields[0].startswith("@") else ""
        if len(fields) < 3 or marker not in ("", "@revoked", "@cert-authority"):
            continue
        try:
            key = base64.b64decode(fields[2], validate=True)
        except (binascii.Error, ValueError):
            continue
        found.append(HostLine(marker, fields[0], key))
    return found


def lookup_name(host: str, port: int) -> str:
    """The name a host is looked up by: ``host``, or ``[host]:port`` off port 22."""
    return host if port == 22 else f"[{host}]:{port}"


def applies(names: str, host: str) -> bool:
    """Whether a line with host field ``names`` applies to ``host`` (see the module's docstring)."""
    if names.startswith("|1|"):
        return _hashed_match(names, host)
    matched = False
    for pattern in names.split(","):
        negated = pattern.startswith("!")
        if _wildcard(pattern[1:] if negated else pattern).fullmatch(host.lower()):
            if negated:
                return False
            matched = True
    return matched


def verdict(lines: list[HostLine], host: str, key: bytes) -> Verdict:
    """What ``lines`` say of server ``host`` (its lookup name) presenting ``key`` (its blob)."""
    if any(line.marker == "@revoked" and line.key == key for line in lines):
        return Verdict.REVOKED
    vouching = [line for line in lines if not line.marker and applies(line.names, host)]
    if any(line.key == key for line in vouching):
        return Verdict.KNOWN
    same_type = _key_type(key)
    if any(_key_type(line.key) == same_type for line in vouching):
        return Verdict.CHANGED
    return Verdict.UNKNOWN


def _wildcard(pattern: str) -> re.Pattern[str]:
    """ssh's pattern: ``*`` any run of characters, ``?`` any one, the rest literal, case-insensitive."""
    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern.lower())
    return re.compile("".join(parts), re.DOTALL)


def _hashed_match(names: str, host: str) -> bool:
    parts = names.split("|")
    if len(parts) != 4:
        return False
    try:
        salt, wanted = base64.b64decode(parts[2], validate=True), base64.b64decode(parts[3], validate=True)
    except (binascii.Error, ValueError):
        return False
    return hmac.compare_digest(hmac.new(salt, host.encode(), hashlib.sha1).digest(), wanted)


def _key_type(blob: bytes) -> bytes:
    """The type a key blob names first (an SSH string: 4-byte length, then the name)."""
    size = int.from_bytes(blob[:4], "big")
    return blob[4 : 4 + size]
