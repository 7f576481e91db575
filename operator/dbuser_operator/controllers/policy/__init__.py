"""The servers' namespace policies: the pure checks, the gate the reconcilers call, and namespace labels."""
