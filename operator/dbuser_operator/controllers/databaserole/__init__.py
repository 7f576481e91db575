"""The DatabaseRole kind: its reconciler and its setup."""
