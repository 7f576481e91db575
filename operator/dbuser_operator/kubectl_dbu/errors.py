"""The plugin's own failures: a message for the user and a non-zero exit, no traceback."""


class CommandError(Exception):
    """A command cannot do what was asked; ``str()`` says why."""
