"""The agent history: undo/redo/turn stacks, sessions, whose change is whose, blame, forks.
Knows the session engine and below; must not know the facade, the remote side or the front ends."""
