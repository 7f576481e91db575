"""The DatabaseUser kind: its reconciler, context, steps, periodic checks and setup."""
