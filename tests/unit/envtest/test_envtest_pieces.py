"""Pure pieces of the test environment: certificates, URLs, binary lookup, CRD files."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from dbuser_operator.envtest import Binaries, MySQLServer
from dbuser_operator.envtest.binaries import BinaryNotFoundError
from dbuser_operator.envtest.crds import read_crds
from dbuser_operator.envtest.flavours import (
    FLAVOUR_VARIABLE,
    FLAVOURS,
    Flavour,
    FlavourUnavailableError,
    locate,
    selected_flavour,
)
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.envtest.ports import LOOPBACK, free_port
from dbuser_operator.envtest.process import ManagedProcess, ProcessFailedError
from tests.conftest import REPO
from tests.integration.operator.support.wait import eventually


def test_client_certificates_carry_user_and_groups_and_chain_to_the_ca() -> None:
    authority = CertificateAuthority()
    pair = authority.issue_client("alice", ["system:masters", "team-a"])
    cert = x509.load_pem_x509_certificate(pair.cert_pem)
    ca = x509.load_pem_x509_certificate(authority.cert_pem)
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "alice"
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == [
        "system:masters",
        "team-a",
    ]
    cert.verify_directly_issued_by(ca)


def test_serving_certificates_name_the_loopback_address() -> None:
    pair = CertificateAuthority().issue_server(["localhost"], ["127.0.0.1"])
    sans = x509.load_pem_x509_certificate(pair.cert_pem).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert sans.value.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in sans.value.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]


def test_free_ports_lie_below_the_ephemeral_range_and_are_never_handed_out_twice() -> None:
    """A port from the kernel's ephemeral range can be taken by any outgoing connection before the server
    binds it (a cold CI run lost a restarted operator that way)."""
    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
    assert all(port < ephemeral_low for port in ports)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind((LOOPBACK, ports[0]))  # nothing listened there
        listener.listen()


def test_mysql_url_is_parsed_and_the_password_never_shows() -> None:
    server = MySQLServer.from_url("mysql://root:s%40cret@db.example:3307/")
    assert (server.host, server.port, server.user, server.password) == ("db.example", 3307, "root", "s@cret")
    assert "s@cret" not in repr(server)
    assert "cret" not in repr(server)
    assert MySQLServer.from_url(server.url) == server
    with pytest.raises(ValueError, match="mysql://"):
        MySQLServer.from_url("postgres://x@y/")


def test_binaries_prefer_kubebuilder_assets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assets, built = tmp_path / "assets", tmp_path / "built"
    for directory in (assets, built):
        directory.mkdir()
        (directory / "etcd").write_text("#!/bin/sh\n")
        (directory / "etcd").chmod(0o755)
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(assets))
    assert Binaries.from_environment(built).path("etcd") == assets / "etcd"
    monkeypatch.delenv("KUBEBUILDER_ASSETS")
    assert Binaries.from_environment(built).path("etcd") == built / "etcd"
    with pytest.raises(BinaryNotFoundError, match=r"hack/testbin\.sh"):
        Binaries.from_environment(built).path("kube-apiserver")


def test_read_crds_takes_files_and_folders(tmp_path: Path) -> None:
    (tmp_path / "other.yaml").write_text("kind: ConfigMap\napiVersion: v1\n---\n")
    crd = REPO / "tests" / "data" / "widget-crd.yaml"
    (tmp_path / "crd.yaml").write_text(crd.read_text())
    assert [c["metadata"]["name"] for c in read_crds([tmp_path])] == ["widgets.envtest.dbuser-operator.dev"]
    assert len(read_crds([crd])) == 1


def test_the_flavour_comes_from_one_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FLAVOUR_VARIABLE, raising=False)
    assert selected_flavour() == "mysql-9.7"
    for name in FLAVOURS:
        monkeypatch.setenv(FLAVOUR_VARIABLE, name)
        assert selected_flavour() == name
    monkeypatch.setenv(FLAVOUR_VARIABLE, "mysql-5.7")
    with pytest.raises(ValueError, match=r"mysql-9\.7, mariadb-11\.8, mariadb-10\.11"):
        selected_flavour()


def test_a_missing_root_names_the_step_that_builds_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DBUSER_OPERATOR_CACHE", str(tmp_path))
    with pytest.raises(FlavourUnavailableError, match=r"run `hack/mysqlroots\.sh mariadb-11\.8` as root"):
        locate("mariadb-11.8")
    half_built = tmp_path / "roots" / ".tmp-mysql-9.7-123"  # an interrupted build is never used
    half_built.mkdir(parents=True)
    with pytest.raises(FlavourUnavailableError, match=r"mysql-9\.7: its server root is not built"):
        locate("mysql-9.7")


def test_a_root_flavour_runs_chrooted_with_the_workdir_bind_mounted(tmp_path: Path) -> None:
    root, workdir = tmp_path / "root", tmp_path / "session"
    flavour = Flavour("mysql-9.7", "mysqld", root)
    assert (flavour.product, flavour.version_line) == ("mysql", "9.7")
    assert flavour.inner(workdir / "data", workdir) == Path("/srv/envtest/data")
    command = flavour.command(["mysqld", "--datadir=/srv/envtest/data"], workdir)
    assert command[:3] == ["unshare", "--mount", "--propagation=private"]
    assert command[-5:] == [
        str(workdir),
        str(root / "srv/envtest"),
        str(root),
        "mysqld",
        "--datadir=/srv/envtest/data",
    ]
    assert (root / "srv" / "envtest").is_dir()  # the mount point
    on_the_machine = Flavour("mariadb-10.11", "/usr/sbin/mariadbd", None)
    assert on_the_machine.command(["mariadbd"], workdir) == ["mariadbd"]
    assert on_the_machine.inner(workdir / "data", workdir) == workdir / "data"


def test_a_process_that_is_not_ready_in_time_is_stopped(tmp_path: Path) -> None:
    process = ManagedProcess("sleeper", ["sleep", "60"], tmp_path / "sleeper.log")
    with pytest.raises(ProcessFailedError, match="not ready"):
        process.start_ready(lambda: False, timeout=0.3)
    assert not process.running


def test_no_server_outlives_the_process_that_started_it(tmp_path: Path) -> None:
    """A server still running when the test process exits (a fixture that never tore down) is stopped at
    exit; so is one when the process is told to stop (SIGTERM) and handles it as an interrupt, as the test
    suite does."""
    pid_file = tmp_path / "pid"
    script = (
        "import sys, pathlib\n"
        "from dbuser_operator.envtest.process import ManagedProcess\n"
        "p = ManagedProcess('sleeper', ['sleep', '60'], pathlib.Path(sys.argv[1]) / 'sleeper.log')\n"
        "p.start()\n"
        "pathlib.Path(sys.argv[1], 'pid').write_text(str(p.pid))\n"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, timeout=30, cwd=REPO)
    pid = int(pid_file.read_text())
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not reaped by init yet, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_test_process_stopped_by_sigterm_stops_its_servers(tmp_path: Path) -> None:
    """SIGTERM (a CI timeout) would end the test process at once, leaving its servers to init: with
    :func:`stop_servers_on_sigterm` (the suite's conftest installs it) it is an interrupt, and the
    servers are stopped on the way out."""
    script = (
        "import sys, pathlib, time\n"
        "from dbuser_operator.envtest.process import ManagedProcess, stop_servers_on_sigterm\n"
        "stop_servers_on_sigterm()\n"
        "p = ManagedProcess('sleeper', ['sleep', '60'], pathlib.Path(sys.argv[1]) / 'sleeper.log')\n"
        "p.start()\n"
        "pathlib.Path(sys.argv[1], 'pid').write_text(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    runner = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], cwd=REPO, stderr=subprocess.PIPE)
    pid_file = tmp_path / "pid"

    def started() -> str:
        if runner.poll() is not None:
            raise RuntimeError(f"the test process ended first (exit {runner.returncode})")
        return pid_file.read_text() if pid_file.exists() else ""

    asyncio.run(eventually(started, message="the test process never started its server"))
    runner.terminate()
    runner.wait(30)
    assert not _alive(int(pid_file.read_text()))
