"""The remote side: namespaces on a remote, pushes and fetches, what a push may not send, background replication.
Knows the session engine and below; must not know the facade, the agent history or the front ends."""
