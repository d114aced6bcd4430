"""What every snapshot leaves out unless the caller says otherwise: secrets,
version control metadata, dependency and build folders, virtual environments.

The policy (``ignore.policy_stack``) judges these before any rule of the
workspace's own, which the guarded agent can write: a ``!.env`` line in a
``.gitignore`` re-includes nothing. Only the caller lifts them
(``use_default_excludes=False``, or a negation in its own ``exclude=``).
"""

from __future__ import annotations

SECRET_EXCLUDES: tuple[str, ...] = (
    # Environment files (direnv's included).
    ".env",
    ".env.*",
    ".envrc",
    # Private keys: SSH (OpenSSH's default names, PuTTY's format), TLS, code signing, Apple's .p8 keys.
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ecdsa_sk",
    "id_ed25519",
    "id_ed25519_sk",
    "*.ppk",
    "*.pem",
    "*.key",
    "*.p8",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    # Credential stores: git's, curl's and ftp's, PostgreSQL's, MySQL's, PyPI's, Vault's, password managers',
    # web servers' password files.
    ".git-credentials",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".my.cnf",
    ".mylogin.cnf",
    ".pypirc",
    ".vault-token",
    "*.kdbx",
    ".htpasswd",
    # Package registries' tokens: npm, pnpm and Yarn (npm's auth token lives in .npmrc; Yarn 2+'s
    # npmAuthToken in .yarnrc.yml), Poetry, Cargo, RubyGems, PHP's Composer, the user's Gradle and
    # Maven settings (a project's own gradle.properties and pom.xml stay in).
    ".npmrc",
    ".yarnrc.yml",
    "**/pypoetry/auth.toml",
    "**/.cargo/credentials",
    "**/.cargo/credentials.toml",
    "**/.gem/credentials",
    "auth.json",
    "**/.gradle/gradle.properties",
    "**/.m2/settings.xml",
    "settings-security.xml",
    # Signing passwords of Android and Flutter builds.
    "key.properties",
    "keystore.properties",
    # Cloud and infrastructure: Terraform's state (it holds resource passwords) and CLI tokens, OAuth
    # client secrets (Google's downloads), s3cmd's and gsutil's keys, Streamlit's secrets.
    "*.tfstate",
    "*.tfstate.*",
    ".terraformrc",
    "terraform.rc",
    "credentials.tfrc.json",
    "credentials.json",
    "client_secret*.json",
    ".s3cfg",
    ".boto",
    "**/.streamlit/secrets.toml",
    # Folders and files of keys and cloud credentials: SSH, GnuPG, AWS, Azure, Google Cloud, Kubernetes,
    # Docker (and its old .dockercfg), GitHub's CLI.
    ".ssh/",
    ".gnupg/",
    ".aws/",
    ".azure/",
    "**/.config/gcloud/",
    "**/.kube/config",
    "**/.docker/config.json",
    ".dockercfg",
    "**/.config/gh/hosts.yml",
)
"""The secret files of the default excludes: never stored in a snapshot, so never
pushed, and never touched by a restore. Each is a file whose purpose is to hold
credentials (the list SECURITY.md promises, and the test that checks each one
reads it from here). Project configuration that may hold a secret but that
people edit and need restored stays in: ``*.tfvars``, a project's own
``gradle.properties``, ``.yarnrc``, ``pip.conf``, ``.bundle/config``,
``NuGet.Config`` (a token pasted there is stored like one pasted in
``config.py``: exclude it with ``exclude=``)."""

DEFAULT_EXCLUDES: tuple[str, ...] = (
    # Version control metadata: never entered anywhere, also enforced by the walker.
    ".git",
    # Secrets: never stored in a snapshot, so never pushed, and never touched by a restore.
    *SECRET_EXCLUDES,
    # Virtual environments and dependency folders.
    ".venv/",
    "venv/",  # and any folder holding a pyvenv.cfg (VENV_MARKER), whatever its name: env/, envs/py311/
    "node_modules/",
    # Caches and build byproducts that tools regenerate.
    "__pycache__/",
    "*.py[cod]",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".tox/",
    ".nox/",
    ".cache/",
    ".DS_Store",
    "Thumbs.db",
)
"""Built-in gitignore-style patterns. With the caller's ``exclude=`` above them,
they are the policy: applied over every rule in the workspace, so no file
there can re-include what they exclude (see the module's docstring). The
secret files are those secret scanners flag by name (private keys, credential
stores, cloud credential folders); certificates and public keys are not
secrets and stay in. A caller who wants one back passes ``exclude=["!*.key"]``
(or ``use_default_excludes=False``)."""

VENV_MARKER = "pyvenv.cfg"
"""The file at the top of every Python virtual environment (PEP 405): a folder
holding one is excluded by default like ``.venv/``, since environments are
named anything (``env/``, ``.tox/py311/``) and hold thousands of files that
a reinstall brings back."""
