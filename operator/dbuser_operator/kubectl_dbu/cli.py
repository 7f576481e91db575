"""``kubectl dbu``: the command line (argparse) and the dispatch to each command's module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dbuser_operator.kubectl_dbu.errors import ApiFailure, CommandError, Forbidden, NotFound, Unavailable
from dbuser_operator.kubectl_dbu.output import FORMATS
from dbuser_operator.kubectl_dbu.table import printable

if TYPE_CHECKING:
    from dbuser_operator.kubectl_dbu.kube import KubeContext

PROG = "kubectl dbu"
DESCRIPTION = (
    "DatabaseUsers (dbuser-operator) as their owners see them, with your kubeconfig and RBAC: "
    "status, rotate, consumers, connect, why, certificates, access."
)


def common_flags(parser: argparse.ArgumentParser, *, all_namespaces: bool = False) -> None:
    """kubectl's flags: -n/--namespace, --context, --kubeconfig (and -A where a command lists)."""
    parser.add_argument("-n", "--namespace", help="the namespace (default: the context's, else default)")
    parser.add_argument("--context", help="the kubeconfig context to use (default: its current context)")
    parser.add_argument("--kubeconfig", help="the kubeconfig file (default: KUBECONFIG, else ~/.kube/config)")
    if all_namespaces:
        parser.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")


def _named(commands: Any, command: str, help_: str, description: str) -> argparse.ArgumentParser:
    """A command about one DatabaseUser: its NAME argument and kubectl's flags."""
    parser_: argparse.ArgumentParser = commands.add_parser(command, help=help_, description=description)
    parser_.add_argument("name", metavar="NAME")
    common_flags(parser_)
    return parser_


def parser() -> argparse.ArgumentParser:
    """The plugin's parser and its commands."""
    top = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION)
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    status = commands.add_parser(
        "status",
        help="one table per namespace: ready, server, account, password age, rotation, old-password pods",
        description="One table per namespace (or one for --server): Ready and its reason, the server, "
        "user@host, the password's age, the rotation phase, and how many pods still use a retained "
        "old password.",
    )
    common_flags(status, all_namespaces=True)
    status.add_argument(
        "--server",
        metavar="NAME",
        help="only the users of this server resource, across "
        "the namespaces listed; (default) for the operator's own server",
    )
    status.add_argument(
        "-o", "--output", choices=FORMATS, help="json or yaml (every field), wide (more columns)"
    )
    status.add_argument(
        "-w", "--watch", action="store_true", help="after the status, a line for each change, until Ctrl-C"
    )
    rotate = _named(
        commands,
        "rotate",
        "rotate a generated password now",
        "Rotate the generated password of DatabaseUser NAME now: sets the annotation "
        "mysql.dbuser-operator.dev/rotate to the current time.",
    )
    rotate.add_argument(
        "--wait",
        action="store_true",
        help="wait for the new credential version in the connection Secret and Ready",
    )
    rotate.add_argument("--timeout", type=float, default=120.0, help="seconds --wait waits (default 120)")
    _named(
        commands,
        "consumers",
        "what still holds a retained old password",
        "The pods that use the Secrets of DatabaseUser NAME and started before its old "
        "password was retained, and where the operator reports the account's older sessions.",
    )
    connect_ = _named(
        commands,
        "connect",
        "a mysql shell with the credentials of the connection Secret",
        "Run the mysql (or mariadb) client as the account of DatabaseUser NAME, with the "
        "credentials of its connection Secret; the password goes through a temporary 0600 option file. "
        "Arguments after NAME that are not the plugin's (e.g. -e 'SELECT 1') or after -- go to the client.",
    )
    connect_.add_argument("--client", help="the client program (default: mysql, else mariadb, on PATH)")
    _named(
        commands,
        "why",
        "conditions, last Events and the operator's view in one screen",
        "The conditions of DatabaseUser NAME, its last 10 Events, and the operator's view: "
        "account, hosts, workload identity, rotation, credential version, the certificates issued.",
    )
    issued = _named(
        commands,
        "certificates",
        "the certificates issued for a user: its ServiceAccount's pod certificates, or cert-manager's",
        "The certificates issued for DatabaseUser NAME: for one bound to a ServiceAccount, "
        "the operator's PodCertificateRequests of that ServiceAccount, newest first (pod, node, state, "
        "validity); with spec.tls.certificate, its cert-manager Certificate (Ready, expiry, renewal).",
    )
    issued.add_argument("-o", "--output", choices=("json", "yaml"), help="json or yaml (every field)")
    completion = commands.add_parser(
        "completion",
        help="a shell completion script (bash, zsh) for kubectl-dbu typed on its own",
        description="Print a completion script for kubectl-dbu: source <(kubectl dbu completion bash). "
        "kubectl 1.26+ completes `kubectl dbu` itself through kubectl_complete-dbu on PATH, installed "
        "with the plugin.",
    )
    completion.add_argument("shell", choices=("bash", "zsh"))
    access = commands.add_parser(
        "access",
        help="who can reach what on a server: every account, its owner or unmanaged, drift",
        description="The access report of server SERVER (a MySQLServer NAME of the namespace, or "
        "clustermysqlserver/NAME): every account and role, owner or Unmanaged, plugin, password age, TLS, "
        "global privileges, databases, roles and drift, from the server resource's status.",
    )
    access.add_argument("server", metavar="SERVER")
    common_flags(access)
    return top


def _show(text: str) -> None:
    print(printable(text, keep="\n"))


async def _run(args: argparse.Namespace, kube_context: KubeContext) -> int | dict[str, str]:  # noqa: PLR0911 - one a command
    """Run the command; its exit code, or for connect the connection Secret's keys (the client runs
    once the API connection is closed, in the main thread, where it can ignore Ctrl-C)."""
    from dbuser_operator.kubectl_dbu.kube import connect  # noqa: PLC0415 - each command imports its own

    async with connect(kube_context) as (kube, namespace):
        if args.command == "status" and args.watch:
            from dbuser_operator.kubectl_dbu import watch  # noqa: PLC0415

            return await watch.run(kube, namespace, args.server, args.output)
        if args.command == "status":
            from dbuser_operator.kubectl_dbu import output, status  # noqa: PLC0415

            records, _ = await status.records(kube, namespace, args.server)
            if args.output in {"json", "yaml"}:
                _show(output.document(records, args.output))
            else:
                _show(status.text(records, namespace, args.server, wide=args.output == "wide"))
            return 0
        assert namespace is not None  # only status takes -A
        if args.command == "rotate":
            from dbuser_operator.kubectl_dbu import rotate  # noqa: PLC0415

            _show(await rotate.run(kube, namespace, args.name, wait=args.wait, limit=args.timeout))
            return 0
        if args.command == "consumers":
            from dbuser_operator.kubectl_dbu import consumers  # noqa: PLC0415

            _show(await consumers.run(kube, namespace, args.name))
            return 0
        if args.command == "access":
            from dbuser_operator.kubectl_dbu import access  # noqa: PLC0415

            _show(await access.run(kube, namespace, args.server))
            return 0
        if args.command == "why":
            from dbuser_operator.kubectl_dbu import why  # noqa: PLC0415

            _show(await why.run(kube, namespace, args.name))
            return 0
        if args.command == "certificates":
            from dbuser_operator.kubectl_dbu import certificates  # noqa: PLC0415

            _show(await certificates.run(kube, namespace, args.name, args.output))
            return 0
        from dbuser_operator.kubectl_dbu import connect as connect_command  # noqa: PLC0415

        return await connect_command.credentials(kube, namespace, args.name)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, run one command; the exit code (1 with a message on stderr when it failed)."""
    top = parser()
    args, extra = top.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    if extra and args.command != "connect":
        top.error(f"unrecognized arguments: {' '.join(extra)}")
    extra = extra[1:] if extra[:1] == ["--"] else extra
    if args.command == "completion":
        from dbuser_operator.kubectl_dbu.completion import script  # noqa: PLC0415

        print(script(args.shell), end="")
        return 0
    try:
        import asyncio  # noqa: PLC0415 - not for --help

        from dbuser_operator.kubectl_dbu.kube import KubeContext, kubeconfig_path  # noqa: PLC0415

        kubeconfig = kubeconfig_path(args.kubeconfig)
        all_namespaces = getattr(args, "all_namespaces", False)
        outcome = asyncio.run(
            _run(args, KubeContext(kubeconfig, args.context, args.namespace, all_namespaces))
        )
        if isinstance(outcome, int):
            return outcome
        from dbuser_operator.kubectl_dbu.connect import run_client  # noqa: PLC0415

        sys.stdout.flush()
        return run_client(outcome, args.client, extra)
    except CommandError as error:
        print(f"error: {printable(str(error))}", file=sys.stderr)
    except NotFound as error:
        print(f"Error from server (NotFound): {printable(error.message or str(error))}", file=sys.stderr)
    except Forbidden as error:
        print(f"Error from server (Forbidden): {printable(error.message or str(error))}", file=sys.stderr)
    except Unavailable as error:
        print(f"Unable to connect to the server: {printable(str(error))}", file=sys.stderr)
    except ApiFailure as error:
        print(f"Error from server: {printable(str(error))}", file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    return 1
