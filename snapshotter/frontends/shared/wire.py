"""The watcher's wire: length-prefixed JSON messages over a local socket, opened
by a handshake in which each side proves it holds the watcher's key.

On Unix a plain ``AF_UNIX`` stream socket (the path is in the store's private
folder, bound and reached through a short name for that folder wherever the
path is longer than a socket's address may be: ``reach``); on Windows a named
pipe through ``multiprocessing.connection``, used only as a byte pipe. Not
``multiprocessing.connection`` everywhere: its import (``multiprocessing``,
``pickle``, ``tempfile``, ``shutil``, ``random``...) costs a fresh command
line ~10-15 ms, a sixth of its whole budget when a watcher answers. Nothing
here unpickles or evaluates what it receives.

Handshake (mutual, so a listener squatting on the address learns no command):
the listener sends a random nonce; the caller answers with its own nonce and
HMAC-SHA256(key, "caller" + both nonces); the listener checks it and answers
HMAC-SHA256(key, "watcher" + both nonces), which the caller checks.
"""

from __future__ import annotations

import hmac
import os
import struct
import sys

TYPE_CHECKING = False  # not ``typing``'s: every handed-over command pays for this module's imports
if TYPE_CHECKING:
    import socket  # imported where a socket is made or met: a command with no watcher to reach loads none
    from collections.abc import Callable
    from typing import Any

NONCE = 32
_LENGTH = struct.Struct(">I")
META, SOCKET_NAME, KEY_NAME = "snapshotter", "watch.sock", "watch.key"
"""The watcher's socket and key, in the store's own private folder (not counted in its size)."""
ADDRESS_ROOM = 100
"""Bytes a socket's path may take as it is on every Unix (``sun_path`` holds 108
on Linux, 104 on macOS and the BSDs, its NUL included); a longer one is
reached through a short name for its folder (``reach``)."""
_FOLDER_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


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
    """The key the watcher of ``store`` wrote (None: no watcher has, or it cannot be
    read). Never waited on: a FIFO, a device or a link planted there is no key."""
    from snapshotter.engine.fsutil import read_side_file

    try:
        key = read_side_file(key_path(store), cap=4096, follow=False)
    except OSError:
        return None
    return key if len(key) >= 32 else None


def reach(address: str, act: Callable[[str], object], through_proc: bool | None = None) -> None:
    """Run ``act`` (a Unix socket's ``bind`` or ``connect``) on the socket file at
    ``address``, whatever the length of its path.

    A path within ``ADDRESS_ROOM`` is used as it is. A longer one (a home
    folder with a long path: the store's socket is about 60 bytes below it) is
    reached through a short name for its folder: ``/proc/self/fd/N/watch.sock``
    on Linux, with ``N`` the folder opened for the call (``through_proc``:
    None decides by whether ``/proc`` is there); elsewhere (macOS) from inside
    the folder, by its relative name, the working folder given back at once.
    The working folder is the process's: that way is taken only where no other
    thread needs it then (``watchserver`` binds before it starts serving, and
    changes folders for a command only under the lock it binds under)."""
    if sys.platform == "win32" or len(os.fsencode(address)) <= ADDRESS_ROOM:
        act(address)
        return
    folder, name = os.path.split(address)
    if through_proc is None:
        through_proc = os.path.isdir("/proc/self/fd")
    fd = os.open(folder, _FOLDER_FLAGS if through_proc else os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        if through_proc:
            act(f"/proc/self/fd/{fd}/{name}")
            return
        back = os.open(".", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            os.fchdir(fd)
            try:
                act(name)
            finally:
                os.fchdir(back)
        finally:
            os.close(back)
    finally:
        os.close(fd)


def probe(address: str, timeout: float) -> bool:
    """Whether something listens at ``address`` (a live watcher, not the stale
    socket of a killed one), found within ``timeout`` seconds."""
    if sys.platform == "win32":
        from multiprocessing.connection import Client

        try:
            Client(address, family="AF_PIPE").close()
            return True
        except OSError:
            return False
    import socket

    end = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    end.settimeout(timeout)
    try:
        reach(address, end.connect)
        return True
    except OSError:
        return False
    finally:
        end.close()


class Refused(Exception):
    """The other side did not prove it holds the key, or broke the protocol."""


class Channel:
    """One connection: whole messages of bytes, in order; a timeout per receive."""

    def __init__(self, end: Any) -> None:
        self.end = end  # a socket, or (Windows) a multiprocessing Connection

    def send(self, data: bytes) -> None:
        import socket

        if isinstance(self.end, socket.socket):
            self.end.sendall(_LENGTH.pack(len(data)) + data)
        else:
            self.end.send_bytes(data)

    def recv(self, timeout: float | None = None, limit: int = 1 << 31) -> bytes:
        """The next message; raises ``TimeoutError``, ``EOFError`` or ``Refused`` (too big)."""
        import socket

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
        import socket

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
        import socket

        end = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        end.settimeout(timeout)
        try:
            reach(address, end.connect)
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
            import socket

            self.end = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                reach(address, self.end.bind)
                self.end.listen(16)
                self.end.settimeout(0.5)  # so a thread waiting here sees, twice a second, that it should stop
            except BaseException:
                self.end.close()
                raise

    def accept(self) -> Channel:
        import socket

        if isinstance(self.end, socket.socket):
            end, _ = self.end.accept()
            end.settimeout(None)
            return Channel(end)
        return Channel(self.end.accept())

    def close(self) -> None:
        self.end.close()
