"""The servers' namespace policies: the pure checks, the gate the reconcilers call, namespace labels, and the
guard (the grants the operator refuses before it touches MySQL)."""
