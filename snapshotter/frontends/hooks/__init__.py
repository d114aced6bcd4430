"""The agent hooks: each agent CLI's conventions, installing their settings, ``snapshotter hook``, its events -> turns.
A hook call loads as little as it can and fails open; it must not know how a snapshot is recorded (public API only)."""
