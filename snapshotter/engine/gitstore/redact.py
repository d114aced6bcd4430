"""A remote's location as it may be printed: without the credentials a URL can carry.

Apart from ``transport`` (which re-exports ``shown``) so that ``snapshotter config`` shows a remote without loading
dulwich's client."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit


def shown(location: str) -> str:
    """``location`` without the whole ``user:password@`` of a URL: the user part
    alone may be a token (GitHub takes ``https://<token>@github.com/...``)."""
    try:
        parts = urlsplit(location)
    except ValueError:  # not a URL python reads (``http://[::1/x``): the user part goes all the same
        return re.sub(r"(\w+://)[^/@\s]*@", r"\1", location)
    if parts.scheme and parts.netloc and "@" in parts.netloc:
        return urlunsplit(parts._replace(netloc=host_and_port(parts.netloc)))
    return location


def host_and_port(netloc: str) -> str:
    """``netloc`` as written, without its user part: an IPv6 host keeps its brackets."""
    return netloc.rpartition("@")[2]
