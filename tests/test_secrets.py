"""Secrets never reach a remote: no file in the workspace can lift the default
excludes or the caller's ``exclude=``, and the defaults hold the usual secret
files. Checked through ``push()`` to a local bare repository, searching every
object there for each secret's bytes (decompressed, so a packed copy counts).
Needs no git: dulwich reads the remote's objects.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import plain_ids, tree_modes, write
from dulwich.repo import Repo

from snapshotter import DEFAULT_EXCLUDES, PushRefused, Snapshotter
from snapshotter.engine.gitstore.objects import serialize_tree
from snapshotter.engine.gitstore.trailers import build_commit
from snapshotter.engine.worktree.defaults import SECRET_EXCLUDES
from snapshotter.engine.worktree.ignore import IgnoreSource

SECRETS = {
    ".env": "ENV_ROOT_SECRET=1\n",
    "sub/.env": "ENV_SUB_SECRET=1\n",
    ".env.local": "ENV_LOCAL_SECRET=1\n",
    "deep/a/b/.env.production": "ENV_PRODUCTION_SECRET=1\n",
    "cfg/.env/inner": "ENV_FOLDER_SECRET=1\n",
}
KEYS = {
    "id_rsa": "-----BEGIN OPENSSH PRIVATE KEY----- ID_RSA_SECRET\n",
    ".ssh/id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY----- ID_ED25519_SECRET\n",
    "deploy/server.pem": "-----BEGIN PRIVATE KEY----- SERVER_PEM_SECRET\n",
    "tls/tls.key": "-----BEGIN PRIVATE KEY----- TLS_KEY_SECRET\n",
    ".git-credentials": "https://bot:GIT_CREDENTIALS_SECRET@example.com\n",
    ".netrc": "machine example.com login bot password NETRC_SECRET\n",
    ".aws/credentials": "[default]\naws_secret_access_key = AWS_CREDENTIALS_SECRET\n",
    ".npmrc": "//registry.npmjs.org/:_authToken=NPMRC_SECRET\n",
    "web/.yarnrc.yml": "npmAuthToken: YARNRC_SECRET\n",
    "infra/terraform.tfstate": '{"password": "TFSTATE_SECRET"}\n',
    "credentials.json": '{"installed": {"client_secret": "OAUTH_SECRET"}}\n',
}
KEPT = {"src/app.py": "print('hello')\n", "id_rsa.pub": "ssh-rsa AAAA public\n", "README.md": "readme\n"}


def remote_bytes(server: Path) -> bytes:
    """Every object the remote holds, decompressed, end to end."""
    repo = Repo(str(server))
    try:
        return b"\0".join(repo.object_store[sha].as_raw_string() for sha in repo.object_store)
    finally:
        repo.close()


def secrets_sent(server: Path, files: dict[str, str]) -> list[str]:
    held = remote_bytes(server)
    return [path for path, text in files.items() if text.strip().split()[-1].encode() in held]


def push_all(snap: Snapshotter, server: Path) -> None:
    snap.snapshot("all of it")
    result = snap.push(str(server))
    assert result.snapshots_sent >= 1


def test_the_defaults_hold_the_usual_secret_files() -> None:
    for pattern in (".env", ".env.*", "id_rsa", "id_ed25519", "*.pem", "*.key", ".netrc", ".git-credentials", ".aws/"):
        assert pattern in DEFAULT_EXCLUDES


@pytest.mark.parametrize(
    "where",
    WHERE := [".gitignore", "sub/.gitignore", "deep/a/.gitignore", "cfg/.gitignore", ".git/info/exclude"],
    ids=plain_ids(WHERE, str),
)
def test_a_negation_in_the_workspace_never_lifts_a_default_exclude(where: str, tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    lifting = "!.env\n!.env.*\n!.env/\n!*.pem\n!*.key\n!id_rsa\n!.ssh/\n!.aws/\n!.netrc\n!.git-credentials\n"
    lifting += "!.npmrc\n!.yarnrc.yml\n!*.tfstate\n!credentials.json\n"
    write(ws, {**SECRETS, **KEYS, **KEPT, where: lifting})
    server = tmp_path / "remote.git"
    snap = make()
    push_all(snap, server)
    assert secrets_sent(server, {**SECRETS, **KEYS}) == []
    assert secrets_sent(server, {"src/app.py": "print('hello')\n"}) == ["src/app.py"]  # the search finds content
    recorded = _paths(snap)
    assert not recorded & set(SECRETS) and not recorded & set(KEYS)
    assert {"src/app.py", "id_rsa.pub", "README.md"} <= recorded


def test_a_workspace_negation_never_lifts_the_callers_excludes(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    caller = {"app.key.txt": "CALLER_KEY_SECRET\n", "pw": "CALLER_PW_SECRET\n", "nested/pw": "CALLER_NESTED_SECRET\n"}
    write(ws, {**caller, **KEPT, ".gitignore": "!app.key.txt\n!pw\n", "nested/.gitignore": "!pw\n!/pw\n"})
    server = tmp_path / "remote.git"
    snap = make(exclude=["app.key.txt", "pw"])
    push_all(snap, server)
    assert secrets_sent(server, caller) == []
    assert "src/app.py" in _paths(snap)


def test_the_callers_own_negation_lifts_a_default(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """The caller may weaken safety (their exclude= is the policy): ``!*.pem`` takes certificates back."""
    write(ws, {"certs/ca.pem": "-----BEGIN CERTIFICATE-----\n", ".env": "S=1\n", **KEPT})
    snap = make(exclude=["!*.pem"])
    snap.snapshot()
    assert "certs/ca.pem" in _paths(snap) and ".env" not in _paths(snap)


def test_the_users_index_does_not_rescue_a_policy_exclude(ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """A file the enclosing repository tracks is recorded whatever .gitignore says, but
    not when a default or the caller excludes it."""
    pytest.importorskip("dulwich.index")
    from dulwich import porcelain

    write(ws, {".env": "TRACKED_ENV_SECRET=1\n", "ignored.txt": "tracked but ignored\n", ".gitignore": "ignored.txt\n"})
    repo = porcelain.init(str(ws))
    repo.get_worktree().stage([".env", "ignored.txt", ".gitignore"]) if hasattr(repo, "get_worktree") else repo.stage(
        [".env", "ignored.txt", ".gitignore"]
    )
    repo.close()
    snap = make()
    snap.snapshot()
    recorded = _paths(snap)
    assert "ignored.txt" in recorded  # tracked beats the workspace's own ignore rules
    assert ".env" not in recorded  # but never the policy


def _old_snapshot_with_a_key(snap: Snapshotter, secret: bytes = b"OLD_RELEASE_KEY_SECRET\n") -> str:
    """A snapshot holding ``deploy/server.pem``, as a release before ``*.pem`` was
    a default exclude would have recorded it; pinned, so a state ref names it too."""
    from datetime import datetime, timezone

    store = snap._engine_ok().store
    key = store.writer.write(b"blob", secret)
    app = store.writer.write(b"blob", b"x = 1\n")
    deploy = store.writer.write(b"tree", serialize_tree([(b"server.pem", 0o100644, key)]))
    src = store.writer.write(b"tree", serialize_tree([(b"app.py", 0o100644, app)]))
    tree = store.writer.write(b"tree", serialize_tree([(b"deploy", 0o40000, deploy), (b"src", 0o40000, src)]))
    when = datetime.now(timezone.utc)
    commit = build_commit(tree, "old", seq=900, label=None, metadata={}, stats=(0, 0, 0), skipped=[], when=when)
    sha = store.write_commit(commit)
    assert store.add_snapshot_ref(900, sha)
    snap.pin(sha.hex())
    return sha.hex()


def test_a_push_refuses_a_snapshot_recorded_before_the_defaults_grew(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    """A snapshot that holds a path the defaults now exclude (written by an older
    release, or by hand) refuses the push: a typed error, and nothing is sent."""
    write(ws, {"src/app.py": "x = 1\n"})
    snap = make()
    snap.snapshot("clean")
    old = _old_snapshot_with_a_key(snap)
    server = tmp_path / "remote.git"
    with pytest.raises(PushRefused) as refused:
        snap.push(str(server))
    message = str(refused.value)
    assert "deploy/server.pem" in message and old[:12] in message and "skip_refused" in message
    assert "\n" not in message
    assert not server.exists()  # not even the empty repository was made


def test_skip_refused_sends_the_other_snapshots_and_no_ref_to_the_refused_one(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    write(ws, {"src/app.py": "x = 1\n"})
    snap = make()
    clean = snap.snapshot("clean")
    old = _old_snapshot_with_a_key(snap)
    server = tmp_path / "remote.git"
    result = snap.push(str(server), skip_refused=True)
    assert result.snapshots_sent == 1
    assert [(s.id, s.path, s.reason) for s in result.skipped] == [(old, "deploy/server.pem", "excluded")]
    assert secrets_sent(server, {"deploy/server.pem": "OLD_RELEASE_KEY_SECRET"}) == []
    repo = Repo(str(server))
    try:
        values = {value.decode() for value in repo.get_refs().values()}
    finally:
        repo.close()
    assert clean.id in values and old not in values  # its pin's state ref stayed here too
    again = snap.push(str(server), skip_refused=True)
    assert again.snapshots_sent == 0 and [s.id for s in again.skipped] == [old]


def _paths(snap: Snapshotter) -> set[str]:
    """Every file path the newest snapshot holds."""
    return set(tree_modes(snap, snap.list(limit=1)[0].tree_id))


def test_the_command_line_refuses_then_skips_with_skip_refused(tmp_path: Path, ws: Path, make) -> None:  # type: ignore[no-untyped-def]
    from conftest import run_command

    write(ws, {"src/app.py": "x = 1\n"})
    snap = make()
    snap.snapshot("clean")
    old = _old_snapshot_with_a_key(snap)
    snap.close()
    server = tmp_path / "remote.git"
    env = {"SNAPSHOTTER_HOME": str(tmp_path / "home")}
    refused = run_command("-C", str(ws), "push", str(server), env=env)
    assert refused.returncode == 1 and "deploy/server.pem" in refused.stderr and "--skip-refused" in refused.stderr
    assert not server.exists()
    sent = run_command("-C", str(ws), "--json", "push", str(server), "--skip-refused", env=env)
    assert sent.returncode == 0, sent.stderr
    import json

    body = json.loads(sent.stdout)["result"]
    assert body["snapshots_sent"] == 1 and body["skipped"] == [
        {"id": old, "path": "deploy/server.pem", "reason": "excluded"}
    ]


# -- every promised secret pattern, one by one -------------------------------------------------

EXAMPLES: dict[str, str] = {
    ".env": ".env",
    ".env.*": ".env.production",
    ".envrc": ".envrc",
    "id_rsa": "id_rsa",
    "id_dsa": "id_dsa",
    "id_ecdsa": "id_ecdsa",
    "id_ecdsa_sk": "id_ecdsa_sk",
    "id_ed25519": "id_ed25519",
    "id_ed25519_sk": "id_ed25519_sk",
    "*.ppk": "putty.ppk",
    "*.pem": "server.pem",
    "*.key": "tls.key",
    "*.p8": "AuthKey_ABC123.p8",
    "*.p12": "signing.p12",
    "*.pfx": "cert.pfx",
    "*.jks": "release.jks",
    "*.keystore": "debug.keystore",
    ".git-credentials": ".git-credentials",
    ".netrc": ".netrc",
    "_netrc": "_netrc",
    ".pgpass": ".pgpass",
    ".my.cnf": ".my.cnf",
    ".mylogin.cnf": ".mylogin.cnf",
    ".pypirc": ".pypirc",
    ".vault-token": ".vault-token",
    "*.kdbx": "passwords.kdbx",
    ".htpasswd": ".htpasswd",
    ".npmrc": ".npmrc",
    ".yarnrc.yml": ".yarnrc.yml",
    "**/pypoetry/auth.toml": ".config/pypoetry/auth.toml",
    "**/.cargo/credentials": ".cargo/credentials",
    "**/.cargo/credentials.toml": ".cargo/credentials.toml",
    "**/.gem/credentials": ".gem/credentials",
    "auth.json": "auth.json",
    "**/.gradle/gradle.properties": ".gradle/gradle.properties",
    "**/.m2/settings.xml": ".m2/settings.xml",
    "settings-security.xml": "settings-security.xml",
    "key.properties": "key.properties",
    "keystore.properties": "keystore.properties",
    "*.tfstate": "terraform.tfstate",
    "*.tfstate.*": "terraform.tfstate.backup",
    ".terraformrc": ".terraformrc",
    "terraform.rc": "terraform.rc",
    "credentials.tfrc.json": "credentials.tfrc.json",
    "credentials.json": "credentials.json",
    "client_secret*.json": "client_secret_1234.apps.googleusercontent.com.json",
    ".s3cfg": ".s3cfg",
    ".boto": ".boto",
    "**/.streamlit/secrets.toml": ".streamlit/secrets.toml",
    ".ssh/": ".ssh/config",
    ".gnupg/": ".gnupg/pubring.kbx",
    ".aws/": ".aws/credentials",
    ".azure/": ".azure/msal_token_cache.json",
    "**/.config/gcloud/": ".config/gcloud/application_default_credentials.json",
    "**/.kube/config": ".kube/config",
    "**/.docker/config.json": ".docker/config.json",
    ".dockercfg": ".dockercfg",
    "**/.config/gh/hosts.yml": ".config/gh/hosts.yml",
}
"""Each secret pattern the defaults promise, and a file only that pattern keeps out
(so deleting the pattern from the defaults lets exactly this file in)."""

NOT_SECRETS = {
    "gradle.properties": "org.gradle.jvmargs=-Xmx2g\n",  # a project's own: the user's ~/.gradle one is the secret
    "pom.xml": "<project/>\n",
    "settings.xml": "<settings/>\n",  # a project's own: the user's ~/.m2 one holds the passwords
    "prod.tfvars": 'region = "eu"\n',
    ".yarnrc": 'registry "https://registry.yarnpkg.com"\n',
    "credentials.py": "def load(): ...\n",
    "id_rsa.pub": "ssh-rsa AAAA public\n",
    ".cargo/config.toml": "[build]\njobs = 2\n",
    ".config/gh/config.yml": "editor: vim\n",
}
"""Ordinary project files next to the secret ones, which stay in."""


def _secret_section() -> list[str]:
    """The patterns SECURITY.md's list of secret files names, in its order."""
    text = (Path(__file__).resolve().parents[1] / "SECURITY.md").read_text(encoding="utf-8")
    start = text.index("### The secret files excluded by default")
    section = text[start : text.index("\n## ", start)]
    items = re.findall(r"^- .*(?:\n  .*)*", section, flags=re.MULTILINE)  # the list, not the prose around it
    return [name for item in items for name in re.findall(r"`([^`]+)`", item)]


def test_security_md_lists_exactly_the_secret_files_the_defaults_exclude() -> None:
    listed = _secret_section()
    assert sorted(listed) == sorted(SECRET_EXCLUDES), "SECURITY.md and SECRET_EXCLUDES differ"
    assert len(listed) == len(set(listed))
    assert set(SECRET_EXCLUDES) <= set(DEFAULT_EXCLUDES)


def test_each_secret_pattern_has_an_example_only_it_keeps_out() -> None:
    """The table below is the whole promise: a pattern added without an example, or
    an example another pattern would keep out too, makes this fail."""
    assert set(EXAMPLES) == set(SECRET_EXCLUDES)
    for pattern, example in EXAMPLES.items():
        matched = [p for p in SECRET_EXCLUDES if _keeps_out(p, example)]
        assert matched == [pattern], (example, matched)
    for example in NOT_SECRETS:
        assert not [p for p in SECRET_EXCLUDES if _keeps_out(p, example)], example


def _keeps_out(pattern: str, path: str) -> bool:
    """Whether ``pattern``, as a default exclude, keeps ``path`` (or a folder above it) out."""
    rule = IgnoreSource.from_lines([pattern], policy=True)
    parts = path.split("/")
    folders = ["/".join(parts[: i + 1]) for i in range(len(parts) - 1)]
    return any(rule.judge(folder, True) for folder in folders) or bool(rule.judge(path, False))


def test_every_promised_secret_stays_out_at_the_root_and_deep_whatever_a_gitignore_beside_it_says(
    ws: Path,
    make: Callable[..., Snapshotter],
) -> None:
    """Each example at the root and three folders down, each with a ``.gitignore``
    beside it (and beside every folder on its way) re-including it by name: none
    is recorded, while the ordinary files next to them are."""
    files: dict[str, str | bytes] = {}
    lifting: dict[str, set[str]] = {}
    for where in ("", "deep/er/still/"):
        for pattern, example in EXAMPLES.items():
            path = where + example
            files[path] = f"SECRET of {pattern} at {path}\n"
            parts = path.split("/")
            for depth in range(len(parts)):
                folder, name = "/".join(parts[:depth]), parts[depth]
                last = depth == len(parts) - 1
                lifting.setdefault(folder, set()).update({f"!{name}", f"!/{name}"} if last else {f"!{name}/"})
        files.update({where + rel: text for rel, text in NOT_SECRETS.items()})
    for folder, lines in lifting.items():
        files[f"{folder}/.gitignore".lstrip("/")] = "\n".join(sorted(lines)) + "\n"
    write(ws, files)
    snap = make()
    snap.snapshot("every secret")
    recorded = _paths(snap)
    leaked = sorted(path for path in files if path in recorded and str(files[path]).startswith("SECRET"))
    assert leaked == []
    assert {where + rel for where in ("", "deep/er/still/") for rel in NOT_SECRETS} <= recorded
    assert ".gitignore" in recorded and "deep/er/still/.gitignore" in recorded  # the re-includes were read
