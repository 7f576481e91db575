"""Credentials applications use: generated passwords, connection URLs, sandboxed templates (no Kubernetes)."""
