"""The watcher's wire: length-prefixed JSON messages over a local socket, opened
by a handshake in which each side proves it holds the watcher's key.

On Unix a plain ``AF_UNIX`` stream socket (the path is in the store's private
folder); on Windows a named pipe through ``multiprocessing.connection``, used
only as a byte pipe. Not ``multiprocessing.connection`` everywhere: its import
(``multiprocessing``, ``pickle``, ``tempfile``, ``shutil``, ``random``...) costs a
fresh command line ~10-15 ms, a sixth of its whole budget when a watcher
answers. Nothing here unpickles or evaluates what it receives.

Handshake (mutual, so a listener squatting on the address learns no command):
the listener sends a random nonce; the caller answers with its own nonce and
HMAC-SHA256(key, "caller" + both nonces); the listener checks it and answers
HMAC-SHA256(key, "watcher" + both nonces), which the caller checks.
"""

from __future__ import annotations

import hmac
import os
import socket
import struct
import sys

TYPE_CHECKING = False  # not ``typing``'s: every handed-over command pays for this module's imports
if TYPE_CHECKING:
    from typing import Any

NONCE = 32
_LENGTH = struct.Struct(">I")
META, SOCKET_NAME, KEY_NAME = "snapshotter", "watch.sock", "watch.key"
"""The watcher's socket and key, in the store's own private folder (not counted in its size)."""


RELEVANT_ENV = ("NO_COLOR", "TERM")
"""Besides ``SNAPSHOTTER_*``: the environment the command line reads."""
PLATFORM_ENV = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "APPDATA", "LOCALAPPDATA", "USERPROFILE")
"""Where the per-user folders are (the config file, the default home): a watcher
serves only callers that agree with it on these."""


def relevant_env(environ: Any) -> dict[str, str]:
    """The environment variables the command line reads (settings, colour, per-user folders)."""
    names = (*RELEVANT_ENV, *PLATFORM_ENV)
    return {k: v for k, v in environ.items() if k.startswith("SNAPSHOTTER_") or k in names}


def address_of(store: str) -> str:
    """Where the watcher of ``store`` listens: a socket in it, or (Windows) a pipe named after it."""
    if sys.platform == "win32":
        import hashlib

        return r"\\.\pipe\snapshotter-" + hashlib.sha256(os.fsencode(store)).hexdigest()[:32]
    return os.path.join(store, META, SOCKET_NAME)


def key_path(store: str) -> str:
    return os.path.join(store, META, KEY_NAME)


def read_key(store: str) -> bytes | None:
    """The key the watcher of ``store`` wrote (None: no watcher has, or it cannot be read)."""
    try:
        with open(key_path(store), "rb") as handle:
            key = handle.read(4096)
    except OSError:
        return None
    return key if len(key) >= 32 else None


class Refused(Exception):
    """The other side did not prove it holds the key, or broke the protocol."""


class Channel:
    """One connection: whole messages of bytes, in order; a timeout per receive."""

    def __init__(self, end: Any) -> None:
        self.end = end  # a socket, or (Windows) a multiprocessing Connection

    def send(self, data: bytes) -> None:
        if isinstance(self.end, socket.socket):
            self.end.sendall(_LENGTH.pack(len(data)) + data)
        else:
            self.end.send_bytes(data)

    def recv(self, timeout: float | None = None, limit: int = 1 << 31) -> bytes:
        """The next message; raises ``TimeoutError``, ``EOFError`` or ``Refused`` (too big)."""
        if not isinstance(self.end, socket.socket):
            if timeout is not None and not self.end.poll(timeout):
                raise TimeoutError("no message in time")
            return bytes(self.end.recv_bytes(limit))
        self.end.settimeout(timeout)
        (size,) = _LENGTH.unpack(self._exactly(_LENGTH.size))
        if size > limit:
            raise Refused(f"a message of {size} bytes")
        return self._exactly(size)

    def _exactly(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = self.end.recv(min(left, 1 << 20))
            if not chunk:
                raise EOFError("the other side closed the connection")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def peer_socket(self) -> socket.socket | None:
        return self.end if isinstance(self.end, socket.socket) else None

    def close(self) -> None:
        self.end.close()

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _mac(key: bytes, role: bytes, first: bytes, second: bytes) -> bytes:
    return hmac.new(key, role + first + second, "sha256").digest()


def connect(address: str, key: bytes, timeout: float) -> Channel:
    """A channel to the watcher at ``address`` after the handshake, all within about
    ``timeout`` seconds per step; raises ``OSError``, ``EOFError`` or ``Refused``."""
    if sys.platform == "win32":
        from multiprocessing.connection import Client

        channel = Channel(Client(address, family="AF_PIPE"))
    else:
        end = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        end.settimeout(timeout)
        try:
            end.connect(address)
        except BaseException:
            end.close()
            raise
        channel = Channel(end)
    try:
        theirs = channel.recv(timeout, limit=NONCE)
        mine = os.urandom(NONCE)
        channel.send(mine + _mac(key, b"caller", theirs, mine))
        if not hmac.compare_digest(channel.recv(timeout, limit=64), _mac(key, b"watcher", theirs, mine)):
            raise Refused("the watcher did not prove it holds the key")
    except BaseException:
        channel.close()
        raise
    return channel


def greet(channel: Channel, key: bytes, timeout: float) -> None:
    """The watcher's side of the handshake; raises ``Refused`` (and the rest) unless the caller holds the key."""
    mine = os.urandom(NONCE)
    channel.send(mine)
    answer = channel.recv(timeout, limit=NONCE + 32)
    theirs, proof = answer[:NONCE], answer[NONCE:]
    if len(theirs) != NONCE or not hmac.compare_digest(proof, _mac(key, b"caller", mine, theirs)):
        raise Refused("the caller did not prove it holds the key")
    channel.send(_mac(key, b"watcher", mine, theirs))


class Listener:
    """Where the watcher waits for callers: a Unix socket (made by the caller of
    ``bind``, so its mode can be set) or a named pipe."""

    def __init__(self, address: str) -> None:
        self.address = address
        if sys.platform == "win32":
            from multiprocessing.connection import Listener as PipeListener

            self.end: Any = PipeListener(address, family="AF_PIPE")
        else:
            self.end = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.end.bind(address)
                self.end.listen(16)
                self.end.settimeout(0.5)  # so a thread waiting here sees, twice a second, that it should stop
            except BaseException:
                self.end.close()
                raise

    def accept(self) -> Channel:
        if isinstance(self.end, socket.socket):
            end, _ = self.end.accept()
            end.settimeout(None)
            return Channel(end)
        return Channel(self.end.accept())

    def close(self) -> None:
        self.end.close()
