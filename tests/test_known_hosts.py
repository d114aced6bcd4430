"""Known-hosts files read as ssh reads them: negated and wildcard patterns,
hashed names, ``@revoked``. The decisions are checked on their own, then
against a paramiko SSH server on 127.0.0.1 through a real push."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import pytest
from conftest import GIT, needs_git, write

from snapshotter import Credentials, RemoteError
from snapshotter.engine.gitstore import knownhosts
from snapshotter.engine.gitstore.knownhosts import Verdict

KEY = b"\x00\x00\x00\x0bssh-ed25519" + b"K" * 32
OTHER = b"\x00\x00\x00\x0bssh-ed25519" + b"O" * 32
RSA = b"\x00\x00\x00\x07ssh-rsa" + b"R" * 64


def line(names: str, key: bytes = KEY, marker: str = "") -> str:
    return f"{marker} {names} ssh-ed25519 {base64.b64encode(key).decode()}".strip()


def judge(text: str, host: str = "[127.0.0.1]:2222", key: bytes = KEY) -> Verdict:
    return knownhosts.verdict(knownhosts.parse(text), host, key)


def hashed(host: str) -> str:
    salt = b"s" * 20
    digest = hmac.new(salt, host.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (line("[127.0.0.1]:2222"), Verdict.KNOWN),
        (line("[127.0.0.1]:2222,![127.0.0.1]:2222"), Verdict.UNKNOWN),  # the report: ssh refuses this
        (line("![127.0.0.1]:2222,[127.0.0.1]:2222"), Verdict.UNKNOWN),
        (line("*,![127.0.0.1]:*"), Verdict.UNKNOWN),
        (line("*"), Verdict.KNOWN),
        (line("[127.0.0.?]:2222"), Verdict.KNOWN),
        (line("[127.0.0.1]:22222"), Verdict.UNKNOWN),
        (line("127.0.0.1"), Verdict.UNKNOWN),  # port 22's name, not this one's
        (line(hashed("[127.0.0.1]:2222")), Verdict.KNOWN),
        (line(hashed("[127.0.0.2]:2222")), Verdict.UNKNOWN),
        (line("[127.0.0.1]:2222", OTHER), Verdict.CHANGED),
        (line("[127.0.0.1]:2222", RSA), Verdict.UNKNOWN),  # another key type: not a changed key
        (line("[127.0.0.1]:2222") + "\n" + line("other", marker="@revoked"), Verdict.REVOKED),
        (line("[127.0.0.1]:2222", marker="@cert-authority"), Verdict.UNKNOWN),
        ("# a comment\n\n" + line("[127.0.0.1]:2222").replace("ssh-ed25519 ", "ssh-ed25519 !!"), Verdict.UNKNOWN),
    ],
    ids=repr,
)
def test_a_line_applies_as_ssh_decides(text: str, expected: Verdict) -> None:
    assert judge(text) is expected


def test_host_names_are_matched_without_case() -> None:
    assert judge(line("Example.COM"), host="example.com") is Verdict.KNOWN
    assert knownhosts.lookup_name("h", 22) == "h" and knownhosts.lookup_name("h", 2222) == "[h]:2222"


@needs_git
@pytest.mark.parametrize(
    ("shape", "accepted"),
    [("plain", True), ("negated", False), ("wildcard negated", False), ("hashed", True), ("revoked", False)],
)
def test_a_push_over_ssh_takes_the_host_key_only_as_ssh_would(
    shape: str, accepted: bool, tmp_path: Path, ws: Path, make
) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("paramiko")
    from remote_servers import bare_repository, ssh_server

    write(ws, {"f.txt": "hello\n"})
    bare_repository(tmp_path / "srv" / "snaps.git")
    with ssh_server(tmp_path / "srv", tmp_path / "keys") as end:
        genuine = Path(end.known_hosts).read_text().split()
        name, kind, key = genuine[0], genuine[1], genuine[2]
        shapes = {
            "plain": f"{name} {kind} {key}\n",
            "negated": f"{name},!{name} {kind} {key}\n",
            "wildcard negated": f"*,!{name} {kind} {key}\n",
            "hashed": f"{hashed(name)} {kind} {key}\n",
            "revoked": f"{name} {kind} {key}\n@revoked * {kind} {key}\n",
        }
        Path(end.known_hosts).write_text(shapes[shape])
        snap = make()
        snap.snapshot()
        creds = Credentials(end.user, key_file=end.key_file, known_hosts=end.known_hosts)
        url = f"ssh://{end.user}@{end.host}:{end.port}/snaps.git"
        if accepted:
            assert snap.push(url, credentials=creds).snapshots_sent == 1
        else:
            with pytest.raises(RemoteError, match="host key") as refused:
                snap.push(url, credentials=creds)
            assert "\n" not in str(refused.value)
    assert GIT is not None
    import subprocess

    refs = subprocess.run([GIT, "--git-dir", str(tmp_path / "srv" / "snaps.git"), "for-each-ref"], capture_output=True)
    assert bool(refs.stdout) is accepted
