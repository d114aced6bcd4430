"""Whether git would take a name for a ref (``git check-ref-format``).

The store's readers list ref folders and pass over what git would not take,
as dulwich does; its ``check_ref_format`` is the one thing they used from
``dulwich.refs``, whose import (with ``dulwich.objects``) a command that only
reads the history need not pay (issue #51). ``tests/test_refnames.py`` holds
the two to the same answers.
"""

from __future__ import annotations

_BAD_BYTES = frozenset(b" ~^:?*[\x7f")


def valid_ref_name(name: bytes) -> bool:
    """git's rules: at least one ``/``; not ``@``; no ``..``, ``@{`` or ``\\``; no
    control character, space or any of ``~^:?*[`` and DEL; no component that is
    empty, starts with ``.`` or ends with ``.lock``; not ending in ``/`` or ``.``."""
    if name == b"@" or b"/" not in name or b".." in name or b"@{" in name or b"\\" in name:
        return False
    if any(byte < 0o40 or byte in _BAD_BYTES for byte in name):
        return False
    if name[-1:] in (b"/", b"."):
        return False
    return all(part and not part.startswith(b".") and not part.endswith(b".lock") for part in name.split(b"/"))
