"""`kubectl dbu connect`: the password reaches the client through a private option file only, which the
real client reads back exactly; the console script is declared."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dbuser_operator.kubectl_dbu.connect import (
    client_argv,
    credentials,
    private_option_file,
    run_client,
    tls_options,
)
from dbuser_operator.kubectl_dbu.errors import CommandError
from tests.conftest import REPO

AWKWARD = "p\"w\\ #x;y'z \t end\nline "
DATA = {"host": "db.example", "port": "3306", "username": "app", "password": AWKWARD, "database": "shop"}


@pytest.mark.skipif(not shutil.which("mysql") and not shutil.which("mariadb"), reason="no client installed")
@pytest.mark.parametrize("password", [AWKWARD, "plain", "ends-with-backslash\\", "  spaces  ", "#hash"])
def test_the_real_client_reads_the_password_back_exactly(password: str) -> None:
    client = shutil.which("mysql") or shutil.which("mariadb")
    with private_option_file(password) as path:
        printed = subprocess.run(
            [str(client), f"--defaults-file={path}", "--print-defaults"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    # the client prints the options it read, each followed by a space, then a newline
    assert printed.split("--password=", 1)[1] == f"{password} \n"


def test_the_option_file_is_private_and_removed() -> None:
    with private_option_file("secret-value") as path:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not path.exists()
    assert not path.parent.exists()


def test_the_command_line_carries_no_password() -> None:
    argv = client_argv(Path("/tmp/x.cnf"), DATA, "mysql", False, ["-e", "SELECT 1"])
    assert argv[:2] == ["mysql", "--defaults-file=/tmp/x.cnf"]  # an option file must come first
    assert "--user=app" in argv
    assert "--database=shop" in argv
    assert argv[-2:] == ["-e", "SELECT 1"]
    assert not any(AWKWARD in arg or "password" in arg for arg in argv)


def test_tls_modes_per_client() -> None:
    assert tls_options(None, mariadb=False) == []
    assert tls_options("VERIFY_IDENTITY", mariadb=False) == ["--ssl-mode=VERIFY_IDENTITY"]
    assert tls_options("DISABLED", mariadb=True) == ["--skip-ssl"]
    assert tls_options("VERIFY_CA", mariadb=True) == ["--ssl", "--ssl-verify-server-cert"]
    assert tls_options("REQUIRED", mariadb=True) == ["--ssl", "--skip-ssl-verify-server-cert"]


def test_a_client_sees_the_password_only_in_its_option_file(tmp_path: Path) -> None:
    """A stand-in client (a real program) records its arguments, environment and option file."""
    record = tmp_path / "record"
    fake = tmp_path / "fake-client"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys, stat\n"
        "if sys.argv[1:] == ['--version']: print('fake  Ver 1.0'); sys.exit(0)\n"
        "path = sys.argv[1].split('=', 1)[1]\n"
        f"with open({str(record)!r}, 'w') as out:\n"
        "    out.write(json.dumps([sys.argv, dict(os.environ), oct(stat.S_IMODE(os.stat(path).st_mode)),"
        " open(path).read()]))\n"
        "sys.exit(7)\n"
    )
    fake.chmod(0o700)
    assert run_client(DATA, str(fake), ["-e", "SELECT 1"]) == 7
    argv, environment, mode, content = json.loads(record.read_text())
    assert mode == "0o600"
    assert "password=" in content
    assert not any(AWKWARD in arg for arg in argv)
    assert not any(AWKWARD in value for value in environment.values())
    assert "MYSQL_PWD" not in environment
    assert not Path(argv[1].split("=", 1)[1]).exists()  # removed once the client exited


def test_the_console_script_is_declared() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl-dbu"] == "dbuser_operator.kubectl_dbu.cli:main"
    assert scripts["kubectl_complete-dbu"] == "dbuser_operator.kubectl_dbu.complete:main"


async def test_connect_refuses_a_workload_user_naming_its_serviceaccount() -> None:
    bound = {
        "metadata": {"name": "app"},
        "spec": {"authentication": {"workload": {"serviceAccountName": "web"}}},
    }

    class Api:
        async def get(self, resource: object, name: str, namespace: str | None = None) -> dict[str, object]:
            return bound

    with pytest.raises(CommandError, match=r"bound to ServiceAccount web: .* connect from a pod of that"):
        await credentials(Api(), "shop", "app")  # type: ignore[arg-type]
