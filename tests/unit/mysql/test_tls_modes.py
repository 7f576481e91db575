"""TLS modes as MySQL clients know them: the context each mode makes, and the settings each refuses."""

from __future__ import annotations

import ssl
from pathlib import Path

import pydantic
import pytest

from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.mysql.session.connection import ConnectionSettings
from dbuser_operator.mysql.session.tls import SSLMode, TLSOptions

# (verify_mode, check_hostname, TLS required) per mode
EXPECTED: dict[SSLMode, tuple[ssl.VerifyMode, bool, bool]] = {
    SSLMode.PREFERRED: (ssl.CERT_NONE, False, False),
    SSLMode.REQUIRED: (ssl.CERT_NONE, False, True),
    SSLMode.VERIFY_CA: (ssl.CERT_REQUIRED, False, True),
    SSLMode.VERIFY_IDENTITY: (ssl.CERT_REQUIRED, True, True),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("tls")
    ca = CertificateAuthority("modes-ca")
    client = ca.issue_client("operator")
    paths = {"ca": directory / "ca.crt", "cert": directory / "tls.crt", "key": directory / "tls.key"}
    paths["ca"].write_bytes(ca.cert_pem)
    paths["cert"].write_bytes(client.cert_pem)
    paths["key"].write_bytes(client.key_pem)
    return paths


def settings(**overrides: object) -> ConnectionSettings:
    values: dict[str, object] = {"host": "127.0.0.1", "user": "operator", "password": "pw", **overrides}
    return ConnectionSettings.model_validate(values)


@pytest.mark.parametrize("mode", list(EXPECTED))
def test_each_mode_makes_its_context(mode: SSLMode, files: dict[str, Path]) -> None:
    ca = files["ca"] if mode.verifies else None
    s = settings(ssl_mode=mode, ca_file=ca, cert_file=files["cert"], key_file=files["key"])
    context = s.ssl_context()
    assert context is not None
    assert (context.verify_mode, context.check_hostname, context.required) == EXPECTED[mode]  # type: ignore[attr-defined]
    assert mode.requires_tls is EXPECTED[mode][2]
    if mode.verifies:  # the CA file, and only it, is trusted
        assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "modes-ca"),),)]


def test_disabled_makes_no_context() -> None:
    s = settings(ssl_mode="DISABLED")
    assert (s.ssl_context(), s.tls, s.mode.requires_tls) == (None, False, False)


def test_verify_identity_without_a_ca_trusts_the_system_cas() -> None:
    context = settings(ssl_mode="VERIFY_IDENTITY").ssl_context()
    assert context is not None
    assert context.check_hostname
    assert context.verify_mode == ssl.CERT_REQUIRED


def test_server_name_replaces_the_host_in_the_check() -> None:
    context = settings(ssl_mode="VERIFY_IDENTITY", server_name="mysql.db.svc").ssl_context()
    assert context is not None
    tls = context.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname="127.0.0.1")
    assert tls.server_hostname == "mysql.db.svc"
    context = settings(ssl_mode="VERIFY_IDENTITY").ssl_context()
    assert context is not None
    tls = context.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname="db.example")
    assert tls.server_hostname == "db.example"


@pytest.mark.parametrize(
    ("given", "mode"),
    [
        ({}, SSLMode.PREFERRED),
        ({"required": True}, SSLMode.VERIFY_IDENTITY),
        ({"ca": "ca"}, SSLMode.VERIFY_IDENTITY),
        ({"cert": "cert", "key": "key"}, SSLMode.VERIFY_IDENTITY),
        ({"ca": "ca", "mode": SSLMode.VERIFY_CA}, SSLMode.VERIFY_CA),
        ({"required": True, "mode": SSLMode.REQUIRED}, SSLMode.REQUIRED),
    ],
)
def test_the_mode_in_force_and_the_older_settings_meaning_without_one(
    given: dict[str, object], mode: SSLMode, files: dict[str, Path]
) -> None:
    values = {k: files[str(v)] if k in {"ca", "cert", "key"} else v for k, v in given.items()}
    options = TLSOptions(**{"mode": None, **values})  # type: ignore[arg-type]
    assert options.effective_mode is mode


NAMES = {n: n.upper() for n in ("mode", "ca", "cert", "key", "required", "server_name")}


@pytest.mark.parametrize(
    ("mode", "given", "problem"),
    [
        (SSLMode.VERIFY_CA, {}, "MODE=VERIFY_CA needs CA"),
        (SSLMode.DISABLED, {"ca": "ca"}, "MODE=DISABLED uses no TLS, but CA given"),
        (SSLMode.DISABLED, {"cert": "cert", "key": "key"}, "MODE=DISABLED uses no TLS, but CERT, KEY given"),
        (SSLMode.DISABLED, {"required": True}, "MODE=DISABLED uses no TLS, but REQUIRED given"),
        (SSLMode.PREFERRED, {"required": True}, "MODE=PREFERRED accepts a server without TLS: REQUIRED"),
        (SSLMode.REQUIRED, {"cert": "cert"}, "CERT and KEY go together"),
        (None, {"key": "key"}, "CERT and KEY go together"),
        (SSLMode.VERIFY_CA, {"ca": "ca", "server_name": "db"}, "SERVER_NAME is checked only with"),
        (SSLMode.REQUIRED, {"server_name": "db"}, "SERVER_NAME is checked only with"),
    ],
)
def test_contradictions_are_refused(
    mode: SSLMode | None, given: dict[str, object], problem: str, files: dict[str, Path]
) -> None:
    values = {k: files[str(v)] if k in {"ca", "cert", "key"} else v for k, v in given.items()}
    options = TLSOptions(mode, **values)  # type: ignore[arg-type]
    [found] = options.problems(NAMES)
    assert found.startswith(problem)
    with pytest.raises(pydantic.ValidationError):
        settings(
            ssl_mode=mode,
            ca_file=options.ca,
            cert_file=options.cert,
            key_file=options.key,
            tls_required=options.required,
            server_name=options.server_name,
        )


@pytest.mark.parametrize("mode", list(SSLMode))
def test_every_mode_alone_is_consistent_but_verify_ca(mode: SSLMode) -> None:
    assert bool(TLSOptions(mode).problems(NAMES)) is (mode is SSLMode.VERIFY_CA)


def test_hints_for_settings_that_work(files: dict[str, Path]) -> None:
    assert TLSOptions(None).hints(NAMES) == []
    assert TLSOptions(SSLMode.VERIFY_CA, ca=files["ca"]).hints(NAMES) == []
    assert TLSOptions(None, required=True).hints(NAMES) == [
        "REQUIRED is deprecated: set MODE (REQUIRED, VERIFY_CA or VERIFY_IDENTITY)"
    ]
    assert TLSOptions(None, ca=files["ca"]).hints(NAMES) == [
        "no MODE: VERIFY_IDENTITY, as the TLS files imply; set it explicitly"
    ]
    assert TLSOptions(SSLMode.REQUIRED, ca=files["ca"]).hints(NAMES) == [
        "CA is not used with MODE=REQUIRED: VERIFY_CA or VERIFY_IDENTITY verify the server with it"
    ]


def test_a_refusal_shows_no_password() -> None:
    with pytest.raises(pydantic.ValidationError) as raised:
        settings(ssl_mode="VERIFY_CA", password="Sup3r-s3cret")
    assert "ssl_mode=VERIFY_CA needs ca_file" in str(raised.value)
    assert "Sup3r-s3cret" not in str(raised.value)
    assert "Sup3r-s3cret" not in repr(raised.value)
