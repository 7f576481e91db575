"""Command line of the operator."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from dbuser_operator import __version__

DESCRIPTION = """\
Manage MySQL and MariaDB user accounts declaratively from Kubernetes.

The operator watches DatabaseUser resources (short name: dbu) that carry its target label, reads each
account's password from a Secret, creates or alters the account in its MySQL server, reports progress as
status conditions and events, and drops the account, behind a finalizer, when the resource is deleted.
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser; its help is the command's reference."""
    parser = argparse.ArgumentParser(
        prog="dbuser-operator",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run; returns the process exit code."""
    parser = build_parser()
    parser.parse_args(argv)
    parser.print_help()
    return 0
