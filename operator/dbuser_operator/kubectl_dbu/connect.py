"""``kubectl dbu connect NAME``: a ``mysql`` (or ``mariadb``) shell as the account, with the credentials of
the DatabaseUser's connection Secret. The password goes to the client in a temporary option file (mode
0600, in a private directory, deleted when the client exits): never on its command line, in its
environment, or on the terminal."""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dbuser_operator.kubectl_dbu.errors import CommandError
from dbuser_operator.kubectl_dbu.facts import service_account
from dbuser_operator.kubectl_dbu.kube import Api
from dbuser_operator.kubectl_dbu.names import DATABASE_USERS, SECRETS

CLIENTS = ("mysql", "mariadb")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def option_value(value: str) -> str:
    """``value`` as an option file writes it: in double quotes, with ``\\``, ``"``, newline, CR and tab
    escaped (the escapes the MySQL and MariaDB option file readers undo)."""
    return '"' + "".join(_ESCAPES.get(char, char) for char in value) + '"'


def option_file(password: str) -> str:
    """The option file's text: the password for the ``[client]`` group, nothing else."""
    return f"[client]\npassword={option_value(password)}\n"


@contextmanager
def private_option_file(password: str) -> Iterator[Path]:
    """The option file in a fresh directory only the user can enter; both removed on exit."""
    with tempfile.TemporaryDirectory(prefix="kubectl-dbu-") as directory:  # mode 0700
        path = Path(directory) / "client.cnf"
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(option_file(password))
        yield path


def find_client(choice: str | None) -> str:
    """The client program: ``--client`` (a name on PATH or a path), else mysql, else mariadb."""
    for name in [choice] if choice else CLIENTS:
        found = shutil.which(name)
        if found:
            return found
    wanted = choice or " or ".join(CLIENTS)
    raise CommandError(f"no {wanted} client found on PATH (choose one with --client)")


def is_mariadb(program: str) -> bool:
    """Whether the client is MariaDB's (its options for TLS differ): its ``--version`` says so."""
    version = subprocess.run(  # noqa: S603 - the client the user chose, as for the session itself
        [program, "--version"], capture_output=True, text=True, check=False, timeout=10
    )
    return "mariadb" in (version.stdout + version.stderr).lower()


def tls_options(mode: str | None, mariadb: bool) -> list[str]:
    """The client's TLS options for the Secret's sslMode (``--ssl-mode`` as MySQL's client has it)."""
    if not mode:
        return []
    if not mariadb:
        return [f"--ssl-mode={mode}"]
    if mode == "DISABLED":
        return ["--skip-ssl"]
    if mode in {"VERIFY_CA", "VERIFY_IDENTITY"}:
        return ["--ssl", "--ssl-verify-server-cert"]
    return ["--ssl", "--skip-ssl-verify-server-cert"]  # PREFERRED, REQUIRED: encrypted, not verified


def client_argv(
    option_path: Path, data: Mapping[str, str], program: str, mariadb: bool, extra: Sequence[str]
) -> list[str]:
    """The client's command line: the option file first (the client requires it there), then the
    connection's non-secret parts, then the user's own arguments. ``--defaults-file``: no other option
    file is read, so a password in ~/.my.cnf cannot override the Secret's."""
    argv = [program, f"--defaults-file={option_path}"]
    argv += [f"--host={data['host']}", f"--port={data['port']}", f"--user={data['username']}"]
    argv += tls_options(data.get("sslMode"), mariadb)
    if data.get("database"):
        argv.append(f"--database={data['database']}")
    return [*argv, *extra]


def secret_data(secret: dict[str, Any]) -> dict[str, str]:
    """The Secret's data, decoded."""
    return {key: base64.b64decode(value).decode() for key, value in (secret.get("data") or {}).items()}


async def credentials(kube: Api, namespace: str, name: str) -> dict[str, str]:
    """The connection Secret's keys; a clear refusal when the DatabaseUser has no connection Secret."""
    obj = await kube.get(DATABASE_USERS, name, namespace)
    account = service_account(obj)
    if account is not None:
        raise CommandError(
            f"databaseuser/{name} is bound to ServiceAccount {account}: its account takes that workload's "
            "pod certificates only, and no password; connect from a pod of that ServiceAccount"
        )
    secret_name = ((obj.get("spec") or {}).get("connectionSecret") or {}).get("name")
    if not secret_name:
        raise CommandError(
            f"databaseuser/{name} has no connection Secret (spec.connectionSecret): connect uses the "
            "credentials the operator writes there; add one to the DatabaseUser to use connect"
        )
    data = secret_data(await kube.get(SECRETS, secret_name, namespace))
    missing = [key for key in ("host", "port", "username", "password") if not data.get(key)]
    if missing:
        raise CommandError(f"Secret {secret_name} has no {', '.join(missing)} yet (kubectl dbu why {name})")
    return data


def run_client(data: Mapping[str, str], choice: str | None, extra: Sequence[str]) -> int:
    """Run the client until it exits; its exit code. Ctrl-C goes to the client, not to the plugin."""
    program = find_client(choice)
    mariadb = is_mariadb(program)
    with private_option_file(data["password"]) as path:
        argv = client_argv(path, data, program, mariadb, extra)
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            return subprocess.run(argv, check=False).returncode  # noqa: S603 - the user's own client
        finally:
            signal.signal(signal.SIGINT, previous)
