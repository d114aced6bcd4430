"""Real git servers on the loopback interface, for the remote tests.

- ``git daemon`` with receive-pack enabled (``git://``);
- ``git http-backend`` behind a small threaded HTTP server with basic auth
  (smart HTTP), which can also cut a push off part-way;
- an SSH server written with paramiko (a real SSH protocol peer: host key,
  public-key authentication, ``exec`` of ``git-upload-pack`` and
  ``git-receive-pack``), since an unprivileged ``sshd`` is seldom at hand.

The servers run the git binary (the tests may; the package never does),
through the ``Popen`` saved when this module was imported, so a test may
patch every process API to fail for the code under test while the servers
still work. Each is a context manager yielding what a client needs to reach it.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shlex
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

GIT = shutil.which("git")
_POPEN = subprocess.Popen
"""The real one, kept for the servers (tests may patch ``subprocess``'s)."""


def has_git_program(name: str) -> bool:
    """Whether git's own ``git-<name>`` (daemon, http-backend) is installed with it."""
    if GIT is None:
        return False
    exec_path = subprocess.run([GIT, "--exec-path"], capture_output=True, text=True, check=False).stdout.strip()
    return os.path.exists(os.path.join(exec_path, f"git-{name}"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def bare_repository(path: Path) -> Path:
    assert GIT is not None
    subprocess.run([GIT, "init", "-q", "--bare", str(path)], check=True)
    return path


@contextlib.contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """``git daemon`` serving every repository below ``base``; yields ``git://127.0.0.1:PORT``."""
    assert GIT is not None
    port = free_port()
    process = subprocess.Popen(
        [GIT, "daemon", "--reuseaddr", f"--base-path={base}", "--export-all", "--enable=receive-pack",
         "--listen=127.0.0.1", f"--port={port}", "--informative-errors", str(base)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for_port(port)
        yield f"git://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


@dataclass
class HttpControl:
    """What a test may change in the running HTTP server."""

    cut_push_after: int | None = None
    """Close the connection after this many bytes of a push's body (None: never)."""
    pushes_cut: int = 0


@contextlib.contextmanager
def http_backend(base: Path, user: str, password: str, host: str = "127.0.0.1") -> Iterator[tuple[str, HttpControl]]:
    """``git http-backend`` for the repositories below ``base``, behind basic auth;
    yields ``http://HOST:PORT`` (no credentials in it; an IPv6 ``host`` such as
    ``::1`` in brackets) and its control."""
    assert GIT is not None
    control = HttpControl()
    expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:
            self._cgi(b"")

        def do_POST(self) -> None:
            pushing = self.path.endswith("git-receive-pack")
            if self.headers.get("Authorization") != expected:
                self._unauthorized()
                return
            body = self._body(pushing)
            if body is None:
                return
            self._cgi(body)

        def _unauthorized(self) -> None:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _body(self, pushing: bool) -> bytes | None:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                pieces = []
                while True:
                    size = int(self.rfile.readline().strip().split(b";")[0], 16)
                    if size == 0:
                        self.rfile.readline()
                        break
                    pieces.append(self.rfile.read(size))
                    self.rfile.readline()
                    if (
                        pushing
                        and control.cut_push_after is not None
                        and sum(map(len, pieces)) > control.cut_push_after
                    ):
                        control.pushes_cut += 1
                        self.connection.shutdown(socket.SHUT_RDWR)  # the network goes away mid-push
                        self.close_connection = True
                        return None
                return b"".join(pieces)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if pushing and control.cut_push_after is not None and len(body) > control.cut_push_after:
                control.pushes_cut += 1
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return None
            return body

        def _cgi(self, body: bytes) -> None:
            if self.headers.get("Authorization") != expected:
                self._unauthorized()
                return
            path, _, query = self.path.partition("?")
            env = {
                "PATH": os.environ.get("PATH", ""),
                "GIT_PROJECT_ROOT": str(base),
                "GIT_HTTP_EXPORT_ALL": "1",
                "REMOTE_USER": user,
                "REMOTE_ADDR": "127.0.0.1",
                "REQUEST_METHOD": self.command,
                "PATH_INFO": path,
                "QUERY_STRING": query,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)),
                "GIT_CONFIG_NOSYSTEM": "1",
                "HOME": str(base),
            }
            if self.headers.get("Content-Encoding"):
                env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
            process = _POPEN(
                [GIT, "http-backend"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
            )
            stdout, _ = process.communicate(body)
            head, _, payload = stdout.partition(b"\r\n\r\n")
            status = 200
            headers = []
            for line in head.split(b"\r\n"):
                name, _, value = line.decode("latin-1").partition(":")
                if name.lower() == "status":
                    status = int(value.split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    class Server(ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    server = Server((host, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    shown = f"[{host}]" if ":" in host else host
    try:
        yield f"http://{shown}:{server.server_address[1]}", control
    finally:
        server.shutdown()
        server.server_close()


@dataclass(frozen=True)
class SshEndpoint:
    """How to reach the test SSH server: host, port, user, the client's key file and
    a known-hosts file holding the server's host key."""

    host: str
    port: int
    user: str
    key_file: str
    known_hosts: str


@contextlib.contextmanager
def ssh_server(base: Path, keys: Path, port: int = 0) -> Iterator[SshEndpoint]:
    """A paramiko SSH server on loopback (``port``: 0 for any free one) running
    git's pack commands on the repositories below ``base`` for one user with one
    (generated) key."""
    import paramiko

    assert GIT is not None
    keys.mkdir(parents=True, exist_ok=True)
    host_key = paramiko.RSAKey.generate(2048)
    client_key = paramiko.RSAKey.generate(2048)
    key_file = keys / "id_rsa"
    client_key.write_private_key_file(str(key_file))
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(5)
    port = listener.getsockname()[1]
    known = keys / "known_hosts"
    name = "127.0.0.1" if port == 22 else f"[127.0.0.1]:{port}"  # as ssh looks a host up
    known.write_text(f"{name} {host_key.get_name()} {host_key.get_base64()}\n")
    stop = threading.Event()

    class Server(paramiko.ServerInterface):
        def __init__(self) -> None:
            self.command: bytes | None = None
            self.ready = threading.Event()

        def check_channel_request(self, kind: str, chanid: int) -> int:
            return paramiko.OPEN_SUCCEEDED if kind == "session" else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

        def check_auth_publickey(self, username: str, key: object) -> int:
            ok = username == "git" and key == client_key
            return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

        def get_allowed_auths(self, username: str) -> str:
            return "publickey"

        def check_channel_env_request(self, channel: object, name: bytes, value: bytes) -> bool:
            return False  # protocol 0, as many servers

        def check_channel_exec_request(self, channel: object, command: bytes) -> bool:
            self.command = command
            self.ready.set()
            return True

    def serve(connection: socket.socket) -> None:
        transport = paramiko.Transport(connection)
        transport.add_server_key(host_key)
        handler = Server()
        try:
            transport.start_server(server=handler)
            channel = transport.accept(10)
            if channel is None or not handler.ready.wait(10) or handler.command is None:
                return
            words = shlex.split(handler.command.decode())
            program, where = words[0], words[1]
            if program not in ("git-upload-pack", "git-receive-pack"):
                channel.send_exit_status(1)
                return
            process = _POPEN(
                [GIT, program.removeprefix("git-"), str(base / where.lstrip("/"))],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
            assert process.stdin is not None and process.stdout is not None

            def pump_in() -> None:
                assert process.stdin is not None
                with contextlib.suppress(OSError):  # the command may end before the client's last bytes
                    while True:
                        data = channel.recv(65536)
                        if not data:
                            break
                        process.stdin.write(data)
                        process.stdin.flush()
                    process.stdin.close()

            feeder = threading.Thread(target=pump_in, daemon=True)
            feeder.start()
            while True:
                data = os.read(process.stdout.fileno(), 65536)
                if not data:
                    break
                channel.sendall(data)
            channel.send_exit_status(process.wait())
            feeder.join(10)  # until the client closes its side, as sshd waits
            channel.close()
        except (OSError, EOFError, paramiko.SSHException):
            pass
        finally:
            transport.close()

    def accept_loop() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

    thread = threading.Thread(target=accept_loop, daemon=True)
    thread.start()
    try:
        yield SshEndpoint("127.0.0.1", port, "git", str(key_file), str(known))
    finally:
        stop.set()
        thread.join(5)
        listener.close()
