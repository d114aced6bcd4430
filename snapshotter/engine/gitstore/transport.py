"""Reaching a git remote with dulwich's clients, in pure Python.

A remote is a plain path or ``file://`` URL (``LocalGitClient``), ``git://``
(``TCPGitClient``), ``http://`` or ``https://`` (smart HTTP, ``urllib3``), or
``ssh://`` / ``user@host:path`` (through paramiko, see ``sshvendor``). The
clients are built here, from the location alone: never through the user's git
configuration (no ``insteadOf``, no credential helpers, which run programs),
and never with dulwich's default SSH vendor (which runs ``ssh``).

Credentials, most specific first: what the caller passes, then the URL's own
``user:password@``, then the environment (``SNAPSHOTTER_REMOTE_USERNAME``,
``SNAPSHOTTER_REMOTE_PASSWORD`` or ``SNAPSHOTTER_REMOTE_TOKEN``,
``SNAPSHOTTER_SSH_KEY``, ``SNAPSHOTTER_SSH_KNOWN_HOSTS``). They are held in
memory only, never written to the store, and :func:`shown` gives the location
without them for every message.

Every read from a server is metered (``wirebudget``): a ref advertisement,
a pack and an exchange's duration all have a limit, so a server that never
stops sending, or never sends, ends the exchange with one line. Packs are
asked for whole (no ``thin-pack``), and an HTTP server that is not a smart
one is refused rather than walked object by object.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from dulwich.client import GitClient, LocalGitClient, SSHGitClient, TCPGitClient, Urllib3HttpGitClient
from dulwich.errors import GitProtocolError

from snapshotter.engine.gitstore.redact import host_and_port as _host_and_port
from snapshotter.engine.gitstore.redact import shown
from snapshotter.engine.gitstore.sshvendor import ParamikoVendor
from snapshotter.engine.gitstore.wirebudget import Budget, Meter
from snapshotter.errors import InvalidInput

TIMEOUT = 60.0
"""Seconds a connection may stay silent before it is given up."""
_SCP_LIKE = re.compile(r"(?:(?P<user>[^@/\[]+)@)?(?P<host>\[[^\]/]+\]|[^@/:\[\]]+):(?P<path>.+)", re.DOTALL)
"""git's scp-like syntax, ``[user@]host:path``, the path relative to the user's
folder or absolute (``git@host:/srv/x.git``), an IPv6 host in brackets. git
reads a location as one whenever a ``:`` comes before the first ``/``, save a
Windows drive (``C:\\...``, ``C:/...``): it is then SSH, never a local path."""


@dataclass(frozen=True)
class Credentials:
    """Who to be on a remote: a user and password or token, or (SSH) a key file;
    ``known_hosts`` names the file SSH host keys are checked against."""

    username: str | None = None
    password: str | None = field(default=None, repr=False)
    """A password or an access token (smart HTTP takes a token as the password)."""
    key_file: str | None = None
    known_hosts: str | None = None

    def __repr__(self) -> str:
        secret = ", password=<hidden>" if self.password else ""
        return f"Credentials(username={self.username!r}{secret}, key_file={self.key_file!r})"

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Credentials:
        env = os.environ if environ is None else environ
        return cls(
            username=env.get("SNAPSHOTTER_REMOTE_USERNAME") or None,
            password=env.get("SNAPSHOTTER_REMOTE_PASSWORD") or env.get("SNAPSHOTTER_REMOTE_TOKEN") or None,
            key_file=env.get("SNAPSHOTTER_SSH_KEY") or None,
            known_hosts=env.get("SNAPSHOTTER_SSH_KNOWN_HOSTS") or None,
        )

    def over(self, fallback: Credentials) -> Credentials:
        """These credentials, each missing part taken from ``fallback``."""
        return Credentials(
            self.username or fallback.username,
            self.password or fallback.password,
            self.key_file or fallback.key_file,
            self.known_hosts or fallback.known_hosts,
        )


@dataclass(frozen=True)
class Remote:
    """An opened remote: its client and the repository's path on it."""

    shown: str
    """The location without credentials: what messages say."""
    client: GitClient
    path: str
    meter: Meter
    """What every read from the server goes through (none for a local folder)."""
    responses: list[Any] = field(default_factory=list)
    """The HTTP responses the client was given (see ``_tracking``), closed by ``release``."""

    @property
    def is_local(self) -> bool:
        """Whether the remote is a folder on this machine (a path or ``file://``)."""
        return isinstance(self.client, LocalGitClient)

    def release(self) -> None:
        """Close the connections the client keeps for reuse. The HTTP client
        keeps its last one open in a pool until it is garbage-collected, and
        dulwich's ``close`` leaves it there; a push or fetch is over when its
        function returns, so nothing is left open behind it."""
        close = getattr(self.client, "close", None)  # dulwich before 0.26 has none
        if close is not None:
            close()
        while self.responses:
            self.responses.pop().close()
        pool = getattr(self.client, "pool_manager", None)
        if pool is not None:
            pool.clear()


def shown_scp(location: str) -> str:
    """An scp-like location without its user part, as ``shown`` leaves URLs."""
    found = _SCP_LIKE.fullmatch(location)
    return location if found is None or found["user"] is None else location[len(found["user"]) + 1 :]


def open_remote(
    location: str, credentials: Credentials | None = None, timeout: float = TIMEOUT, budget: Budget | None = None
) -> Remote:
    """A client for ``location`` (see the module's docstring for the kinds and
    where credentials come from), its reads within ``budget`` and silences no
    longer than ``timeout``; InvalidInput for anything else."""
    if not isinstance(location, str) or not location or "\0" in location:
        raise InvalidInput("a remote is a path or a file://, git://, http(s):// or ssh:// URL")
    given = credentials or Credentials()
    try:
        parts = urlsplit(location)
        parts.port  # noqa: B018 (read for its check: a port that is no number, or out of range)
    except ValueError as exc:
        raise InvalidInput(f"remote {shown(location)} is not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    given_budget = budget or Budget()
    if given_budget.seconds:
        timeout = min(timeout, given_budget.seconds)

    def metered(where: str) -> Meter:
        return Meter(where, given_budget, timeout)

    if scheme in ("http", "https", "git", "ssh", "file"):
        from_url = Credentials(
            unquote(parts.username) if parts.username else None, unquote(parts.password) if parts.password else None
        )
        creds = given.over(from_url).over(Credentials.from_environment())
        if scheme == "file":
            return Remote(location, LocalGitClient(), unquote(parts.path), metered(location))
        if not parts.hostname:
            raise InvalidInput(f"remote {shown(location)} names no host")
        meter = metered(shown(location))
        if scheme == "git":
            return Remote(meter.where, MeteredTCPClient(meter, parts.hostname, parts.port), parts.path, meter)
        if scheme == "ssh":
            return _ssh(meter, parts.hostname, parts.port, creds, parts.path, timeout)
        base = urlunsplit(parts._replace(netloc=_host_and_port(parts.netloc)))
        client = MeteredHttpClient(meter, base, creds.username, creds.password, timeout)
        return Remote(meter.where, client, "", meter, _tracking(client))
    if scheme and location[len(scheme) : len(scheme) + 3] == "://":
        raise InvalidInput(f"remote {shown(location)}: {scheme}:// is not a kind of remote snapshotter speaks")
    scp = _SCP_LIKE.fullmatch(location)
    if scp is not None and not re.fullmatch(r"[A-Za-z]", scp["host"]):
        creds = given.over(Credentials(scp["user"])).over(Credentials.from_environment())
        return _ssh(metered(shown_scp(location)), scp["host"].strip("[]"), None, creds, scp["path"], timeout)
    return Remote(location, LocalGitClient(), os.path.abspath(location), metered(location))


def _tracking(client: Urllib3HttpGitClient) -> list[Any]:
    """A list that gets every response the client's pool manager gives out. dulwich
    raises on a refusal (401, 404) without closing the response, which keeps its
    connection, and a pool's ``clear`` closes only the connections back in the pool:
    the socket stayed open until the garbage collector found it."""
    given: list[Any] = []
    pool = getattr(client, "pool_manager", None)
    if pool is None:
        return given
    request = pool.request

    def tracked(*args: Any, **kwargs: Any) -> Any:
        response = request(*args, **kwargs)
        given.append(response)
        return response

    setattr(pool, "request", tracked)  # noqa: B010 (an instance's method, replaced for this client)
    return given


def _ssh(meter: Meter, host: str, port: int | None, creds: Credentials, path: str, timeout: float) -> Remote:
    vendor = ParamikoVendor(creds.key_file, creds.known_hosts, timeout)
    client = MeteredSSHClient(
        meter,
        host,
        port,
        username=creds.username,
        vendor=vendor,
        password=creds.password,
        key_filename=creds.key_file,
        thin_packs=False,
    )
    return Remote(meter.where, client, path, meter)


def _metered_protocol(meter: Meter, found: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
    """dulwich's ``_connect`` result, its protocol reading through ``meter``: a
    socket's buffered reader (``git://``) or our SSH channel, read a wait at a
    time (``read1``), each wait cut by the socket's or channel's timeout."""
    proto, can_read, stderr = found
    owner = getattr(proto.read, "__self__", None)
    read_some = getattr(owner, "read1", None)
    if read_some is None:  # not a reader we know: metered between its reads only
        proto.read = meter.reader(proto.read, None)
        return proto, can_read, stderr
    sock = getattr(getattr(owner, "raw", None), "_sock", None)  # a socket's makefile(): its socket
    proto.read = meter.reader(read_some, getattr(sock if sock is not None else owner, "settimeout", None))
    if sock is not None:
        # dulwich writes through an unbuffered makefile(), one send() a call, its count
        # unread: with the timeout the reads set the socket is non-blocking underneath and
        # a send() past the socket's buffer sends part of a pack (a push of a file of some
        # MiB then hung until the idle timeout). sendall() sends it all, each wait still cut.
        proto.write = sock.sendall
    return proto, can_read, stderr


class MeteredTCPClient(TCPGitClient):
    """dulwich's ``git://`` client, its reads metered, asking for whole packs."""

    def __init__(self, meter: Meter, host: str, port: int | None) -> None:
        super().__init__(host, port, thin_packs=False)
        self.meter = meter

    def _connect(self, cmd: bytes, path: str | bytes, protocol_version: int | None = None) -> Any:
        return _metered_protocol(self.meter, super()._connect(cmd, path, protocol_version))


class MeteredSSHClient(SSHGitClient):
    """dulwich's SSH client (on our paramiko vendor), its reads metered."""

    def __init__(self, meter: Meter, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.meter = meter

    def _connect(self, cmd: bytes, path: str | bytes, protocol_version: int | None = None) -> Any:
        return _metered_protocol(self.meter, super()._connect(cmd, path, protocol_version))


class MeteredHttpClient(Urllib3HttpGitClient):
    """dulwich's smart HTTP client, each response read through the meter, a wait
    at a time; a server answering as a plain file server ("dumb" HTTP, which
    dulwich would walk object by object) is refused."""

    def __init__(self, meter: Meter, base: str, username: str | None, password: str | None, timeout: float) -> None:
        super().__init__(base, username=username, password=password, timeout=timeout, config=None, thin_packs=False)
        self.meter = meter

    def _http_request(self, url: str, headers: Any = None, data: Any = None, raise_for_status: bool = True) -> Any:
        resp, read = super()._http_request(url, headers, data, raise_for_status)
        read_some = getattr(resp, "read1", None)
        return resp, self.meter.reader(_http_errors(read_some) if read_some is not None else read, None)

    def _discover_references(self, *args: Any, **kwargs: Any) -> Any:
        found = super()._discover_references(*args, **kwargs)
        if self.dumb:
            raise GitProtocolError("it is not a smart git HTTP server (snapshotter speaks only smart HTTP)")
        return found


def _http_errors(read_some: Any) -> Any:
    """urllib3's reading errors as dulwich reports them (``GitProtocolError``)."""
    import urllib3.exceptions

    def read(size: int) -> bytes:
        try:
            return bytes(read_some(size))
        except urllib3.exceptions.ReadTimeoutError:
            raise TimeoutError("read timed out") from None
        except urllib3.exceptions.HTTPError as exc:
            raise GitProtocolError(str(exc)) from None

    return read


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on rather than show
    (escape sequences, bell, backspace, bidi overrides: anything not printable)
    written as its escape, for messages made of what a server sent."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def without_secrets(text: str, credentials: Credentials | None) -> str:
    """``text`` with any password the credentials hold blanked out (for messages
    made from a library's own error text)."""
    for secret in (credentials.password,) if credentials is not None else ():
        if secret:
            text = text.replace(secret, "<hidden>")
    return re.sub(r"(\w+://)[^/@\s]+@", r"\1", text)
