"""Command line of the operator: flags and environment (see :mod:`dbuser_operator.settings`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pydantic import ValidationError
from pydantic_settings import CliApp

from dbuser_operator import __version__
from dbuser_operator.runtime import lean_imports, tls_buffers
from dbuser_operator.settings import Settings


def main(argv: Sequence[str] | None = None) -> int:
    """Parse flags and environment, then run the operator; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--version" in args:
        print(f"dbuser-operator {__version__}")
        return 0
    try:
        settings = CliApp.run(Settings, cli_args=args)  # prints --help and exits
    except ValidationError as error:
        for problem in error.errors(include_input=False):
            setting = "-".join(str(part) for part in problem["loc"]).replace("_", "-")
            where = f"--{setting}: " if setting else ""  # a problem of several flags names them itself
            print(f"dbuser-operator: {where}{problem['msg']}", file=sys.stderr)
        return 2
    missing = settings.missing_files()
    for missing_file in missing:
        print(f"dbuser-operator: {missing_file}", file=sys.stderr)
    if missing:
        return 2
    lean_imports.install()  # before kubernetes-asyncio is imported: without its generated models
    tls_buffers.install()  # before any connection: 32 KiB read buffers, not 256 KiB each
    from dbuser_operator.app import main as run_operator  # noqa: PLC0415 - keeps --help fast

    return run_operator(settings)
