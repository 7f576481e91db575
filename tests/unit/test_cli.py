"""The command line answers --help and --version, as a console script and as ``python -m``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic_settings import CliApp

from dbuser_operator import __version__
from dbuser_operator.app import connection_settings
from dbuser_operator.cli import main
from dbuser_operator.controllers.servers.resolver import NO_DEFAULT_SERVER
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.settings import Settings


def test_help_describes_the_operator(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    assert "DatabaseUser" in capsys.readouterr().out


@pytest.mark.parametrize(
    "command",
    [[sys.executable, "-m", "dbuser_operator"], [str(Path(sys.executable).with_name("dbuser-operator"))]],
    ids=["python -m", "console script"],
)
def test_entry_points_print_help_and_version(command: list[str]) -> None:
    helped = subprocess.run([*command, "--help"], capture_output=True, text=True, check=True)
    assert helped.stdout.startswith("usage: dbuser-operator")
    versioned = subprocess.run([*command, "--version"], capture_output=True, text=True, check=True)
    assert versioned.stdout.strip() == f"dbuser-operator {__version__}"


@pytest.mark.parametrize(
    ("flag", "words"),
    [
        ("--target=-edge-", "--target: String should match pattern"),
        (f"--target={'t' * 56}", "--target: String should have at most 55 characters"),
        ("--target-label=not a label", "--target-label: String should match pattern"),
        ("--mysql-port=0", "--mysql-port: Input should be greater than or equal to 1"),
        ("--mysql-ssl-mode=VERIFY", "--mysql-ssl-mode: Input should be 'DISABLED', 'PREFERRED', 'REQUIRED'"),
        ("--mysql-ssl-mode=verify_ca", "--mysql-ssl-mode=VERIFY_CA needs --mysql-tls-ca"),
        (
            ("--mysql-ssl-mode=DISABLED", f"--mysql-tls-ca={__file__}"),
            "--mysql-ssl-mode=DISABLED uses no TLS, but --mysql-tls-ca",
        ),
        (f"--mysql-tls-cert={__file__}", "--mysql-tls-cert and --mysql-tls-key go together"),
        ("--mysql-tls-ca=/", "--mysql-tls-ca: not a file: /"),
        (
            (f"--mysql-tls-cert={__file__}", "--mysql-tls-key=/nowhere/key.pem"),
            "--mysql-tls-key: no such file: /nowhere/key.pem",
        ),
        (
            ("--mysql-ssl-mode=PREFERRED", "--mysql-tls-required"),
            "--mysql-ssl-mode=PREFERRED accepts a server without",
        ),
        (
            ("--mysql-ssl-mode=REQUIRED", "--mysql-tls-server-name=db"),
            "--mysql-tls-server-name is checked only with",
        ),
    ],
)
def test_invalid_settings_are_named_without_a_traceback(
    flag: str | tuple[str, ...], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([flag] if isinstance(flag, str) else list(flag)) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"dbuser-operator: {words}")
    assert error.count("\n") == 1  # one line
    assert "Traceback" not in error


def test_the_ssl_mode_comes_from_the_environment_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DBUSER_OPERATOR_MYSQL_SSL_MODE", "VERIFY_CA")
    assert main([]) == 2
    assert capsys.readouterr().err.startswith(
        "dbuser-operator: --mysql-ssl-mode=VERIFY_CA needs --mysql-tls-ca"
    )


def test_the_older_tls_flags_still_work_and_say_what_to_use_instead() -> None:
    settings = CliApp.run(Settings, cli_args=["--mysql-tls-required"])
    assert settings.mysql_tls_options().effective_mode == "VERIFY_IDENTITY"
    assert settings.mysql_tls_hints() == [
        "--mysql-tls-required is deprecated: set --mysql-ssl-mode (REQUIRED, VERIFY_CA or VERIFY_IDENTITY)"
    ]
    assert CliApp.run(Settings, cli_args=["--mysql-ssl-mode=required"]).mysql_tls_hints() == []


def test_the_tls_flags_reach_the_mysql_connection(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(CertificateAuthority().cert_pem)
    flags = ["--mysql-ssl-mode=verify_identity", f"--mysql-tls-ca={ca}", "--mysql-tls-server-name=db.example"]
    connection = connection_settings(CliApp.run(Settings, cli_args=flags))
    assert (connection.mode, connection.ca_file, connection.server_name) == (
        "VERIFY_IDENTITY",
        ca,
        "db.example",
    )
    context = connection.ssl_context()
    assert context is not None
    assert context.check_hostname


def _boolean_flags() -> list[str]:
    """The kebab-case names of the settings that are booleans (``--default-server``, ``--leader-elect``…)."""
    return [
        name.replace("_", "-") for name, field in Settings.model_fields.items() if field.annotation is bool
    ]


def _written_boolean_flags() -> list[tuple[str, str]]:
    """Every spelling of a boolean flag the docs, the chart and the operator's own messages write, with
    where: ``--default-server=false`` or ``--no-default-server``, as a reader would copy it."""
    root = Path(__file__).resolve().parents[2]
    texts = {
        str(path.relative_to(root)): path.read_text()
        for pattern in ("README.md", "docs/*.md", "charts/dbuser-operator/**/*", "config/**/*.yaml")
        for path in sorted(root.glob(pattern))
        if path.is_file()
    }
    texts["ServerNotFound message"] = NO_DEFAULT_SERVER
    names = "|".join(re.escape(name) for name in _boolean_flags())
    spelling = re.compile(rf"--(?:no-)?(?:{names})(?:=[A-Za-z0-9]+)?(?![A-Za-z0-9-])")
    return [(where, found) for where, text in texts.items() for found in spelling.findall(text)]


def test_every_written_boolean_flag_parses_as_written() -> None:
    """A boolean flag is ``--default-server`` / ``--no-default-server``: the CLI refuses ``=false``, so
    the docs, the chart and ServerNotFound's message write what the real parser takes."""
    written = _written_boolean_flags()
    assert ("ServerNotFound message", "--no-default-server") in written
    for where, flag in written:
        try:
            settings = CliApp.run(Settings, cli_args=[flag])
        except SystemExit:
            pytest.fail(f"{where} writes {flag}, which the command line refuses")
        name = flag.removeprefix("--").removeprefix("no-").partition("=")[0].replace("-", "_")
        assert getattr(settings, name) is not flag.startswith("--no-"), (where, flag)
