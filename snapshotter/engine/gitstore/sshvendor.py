"""git over SSH through paramiko, a pure-Python SSH client: never the ``ssh`` program.

dulwich's default SSH vendor runs ``ssh``; the package must never start a
program, so SSH remotes go through this vendor instead, and only when the
optional ``ssh`` extra (paramiko) is installed. Host keys are checked against
the known-hosts file (the caller's, else ``~/.ssh/known_hosts``), read as ssh
reads it (``knownhosts``: negated and wildcard patterns, hashed names,
``@revoked``): an unknown, changed or revoked host key refuses the
connection, as ``ssh`` does with ``StrictHostKeyChecking``. Authentication: a key file the caller names, the
keys in the SSH agent and in ``~/.ssh``, or a password.
"""

from __future__ import annotations

import os
from typing import Any

from dulwich.client import SSHVendor

from snapshotter.engine.fsutil import read_side_file
from snapshotter.engine.gitstore import knownhosts
from snapshotter.errors import InvalidInput, RemoteAuthError, RemoteError

SSH_EXTRA_HINT = 'SSH remotes need the ssh extra (paramiko): in a checkout of this project, pip install ".[ssh]"'


def ssh_available() -> bool:
    """Whether SSH remotes can be used (paramiko is installed)."""
    try:
        import paramiko  # noqa: F401
    except ImportError:
        return False
    return True


STDERR_CAP = 64 << 10
"""Bytes of a server's error stream read for a message (dulwich reads it all)."""


class ParamikoChannel:
    """What dulwich reads and writes a git command's stream through (as its
    ``SubprocessWrapper``): one SSH channel running the command. ``read1`` and
    ``settimeout`` let the transport meter it a wait at a time."""

    def __init__(self, client: Any, channel: Any) -> None:
        self._client, self._channel = client, channel
        self._stderr = _CappedStderr(channel)

    def read1(self, n: int) -> bytes:
        """At most ``n`` bytes, after at most one wait (``b""`` at the end)."""
        return bytes(self._channel.recv(n))

    def settimeout(self, seconds: float) -> None:
        self._channel.settimeout(seconds)

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            pieces: list[bytes] = []
            while True:
                piece = self._channel.recv(1 << 16)
                if not piece:
                    return b"".join(pieces)
                pieces.append(piece)
        data = b""
        while len(data) < n:  # dulwich reads exact lengths (pkt-lines)
            piece = self._channel.recv(n - len(data))
            if not piece:
                break
            data += piece
        return data

    def write(self, data: bytes) -> int:
        self._channel.sendall(data)
        return len(data)

    def can_read(self) -> bool:
        return bool(self._channel.recv_ready())

    @property
    def stderr(self) -> Any:
        return self._stderr

    def close(self, timeout: int | None = 60) -> None:
        try:
            self._channel.close()
        finally:
            self._client.close()


class _CappedStderr:
    """The command's error stream as dulwich reads it when the server hangs up
    (``readlines``): its first ``STDERR_CAP`` bytes, never an endless stream."""

    def __init__(self, channel: Any) -> None:
        self._channel = channel

    def readlines(self) -> list[bytes]:
        data = b""
        try:
            while len(data) < STDERR_CAP:
                piece = self._channel.recv_stderr(STDERR_CAP - len(data))
                if not piece:
                    break
                data += piece
        except OSError:  # a timeout included: what came is what is said
            pass
        return data.splitlines(keepends=True)


class ParamikoVendor(SSHVendor):
    """dulwich's ``SSHVendor`` interface, on paramiko."""

    def __init__(self, key_file: str | None = None, known_hosts: str | None = None, timeout: float = 30.0) -> None:
        self.key_file = os.path.expanduser(key_file) if key_file else None
        self.known_hosts = os.path.expanduser(known_hosts) if known_hosts else None
        self.timeout = timeout

    def run_command(
        self,
        host: str,
        command: bytes,
        username: str | None = None,
        port: int | None = None,
        password: str | None = None,
        key_filename: str | None = None,
        ssh_command: str | None = None,
        protocol_version: int | None = None,
    ) -> Any:  # dulwich's SubprocessWrapper's reading and writing, over a channel
        try:
            import paramiko
        except ImportError:
            raise InvalidInput(SSH_EXTRA_HINT) from None
        client = paramiko.SSHClient()
        known = self.known_hosts or os.path.expanduser(os.path.join("~", ".ssh", "known_hosts"))
        client.set_missing_host_key_policy(_KnownHostsPolicy(paramiko, known))  # every key is judged there
        key = os.path.expanduser(key_filename) if key_filename else self.key_file
        try:
            client.connect(
                host,
                port=port or 22,
                username=username,
                password=password,
                pkey=_load_key(paramiko, key, password) if key else None,
                timeout=self.timeout,
                banner_timeout=self.timeout,
                auth_timeout=self.timeout,
                allow_agent=key is None and password is None,
                look_for_keys=key is None and password is None,
            )
            channel = client.get_transport().open_session(timeout=self.timeout)
            if protocol_version is not None and protocol_version > 0:
                try:  # a server that refuses environment variables speaks protocol 0: dulwich copes
                    channel.set_environment_variable("GIT_PROTOCOL", f"version={protocol_version}")
                except paramiko.SSHException:
                    pass
            channel.exec_command(command)
        except RemoteError:  # the host key, refused by the policy
            client.close()
            raise
        except paramiko.AuthenticationException:
            client.close()
            raise RemoteAuthError(f"ssh://{host}: authentication failed; check the user, key or password") from None
        except paramiko.SSHException as exc:
            client.close()
            raise RemoteError(f"ssh://{host}: {exc}") from None
        except OSError as exc:  # TimeoutError included
            client.close()
            raise RemoteError(f"ssh://{host}: cannot connect ({exc})") from None
        return ParamikoChannel(client, channel)


def _KnownHostsPolicy(paramiko: Any, known: str) -> Any:  # noqa: N802 (a class, made once paramiko is imported)
    """paramiko's host-key policy, deciding by the known-hosts file as ssh does
    (``knownhosts``). No key is loaded into the client, so every server key
    comes here: a key paramiko's own literal reading would accept is judged too."""

    class Policy(paramiko.MissingHostKeyPolicy):  # type: ignore[misc]
        def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
            try:  # guarded (``fsutil.read_side_file``): a few hundred bytes a host, so 16 MiB is plenty
                lines = knownhosts.parse(read_side_file(known, 16 << 20).decode("utf-8", "replace"))
            except OSError:
                lines = []
            found = knownhosts.verdict(lines, hostname, key.asbytes())
            if found is knownhosts.Verdict.KNOWN:
                return
            if found is knownhosts.Verdict.REVOKED:
                raise RemoteError(f"ssh://{hostname}: its host key is marked @revoked in {known}; refused")
            if found is knownhosts.Verdict.CHANGED:
                raise RemoteError(
                    f"ssh://{hostname}: its host key does not match the one in {known} (it changed, or someone "
                    "stands in between); check it, then replace the line"
                )
            raise RemoteError(
                f"ssh://{hostname}: its host key is not in {known}; add it there (as ssh would ask you to)"
            )

    return Policy()


def _load_key(paramiko: Any, path: str, passphrase: str | None) -> Any:
    """The key in ``path``, read here: handed the file, paramiko tries every key
    type on it and a key the server refuses surfaces as the last type's parse
    error ("encountered RSA key, expected OPENSSH key"), not as refused."""
    try:
        if hasattr(paramiko.PKey, "from_path"):  # paramiko 3.2 and later: the type is read from the file
            return paramiko.PKey.from_path(path, passphrase.encode() if passphrase else None)
        for kind in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
            try:
                return kind.from_private_key_file(path, passphrase)
            except paramiko.SSHException:
                continue
        raise paramiko.SSHException("not a key paramiko reads")
    except (paramiko.PasswordRequiredException, TypeError):  # TypeError: from_path's "not given but encrypted"
        raise RemoteAuthError(f"the SSH key {path} needs its passphrase (pass it as the password)") from None
    except (OSError, ValueError, paramiko.SSHException, paramiko.UnknownKeyType) as exc:
        raise InvalidInput(f"cannot read the SSH key {path}: {str(exc).splitlines()[0] if str(exc) else exc}") from None
