"""`kubectl dbu` starts light: ``--help``, completion and the plain path of a read import neither
kubernetes-asyncio, aiohttp nor pydantic (counted in a fresh interpreter, not timed: bench/README.md has
the times), and the names the plugin spells itself are the API's."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dbuser_operator.api.v1alpha1 import GROUP, KIND, PLURAL, VERSION, mysqlserver
from dbuser_operator.api.v1alpha1.credentials import CREDENTIAL_VERSION_ANNOTATION, ROTATE_ANNOTATION
from dbuser_operator.controllers.databaseuser.cert_manager import CERTIFICATES
from dbuser_operator.kubectl_dbu import names
from dbuser_operator.runtime.client import PatchType
from dbuser_operator.workload.requests import POD_CERTIFICATE_REQUESTS

HEAVY = ("kubernetes_asyncio", "aiohttp", "pydantic", "prometheus_client", "structlog")
PLAIN_PATH = (
    "kube",
    "kubeconfig",
    "plain",
    "status",
    "watch",
    "output",
    "why",
    "certificates",
    "rotate",
    "consumers",
    "complete",
    "access",
)

PROBE = """
import contextlib, io, json, sys
from dbuser_operator.kubectl_dbu.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    main(sys.argv[1:])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in HEAVY or m == "asyncio")))
"""


def loaded(code: str, *args: str) -> list[str]:
    """The heavy modules (and asyncio) loaded after running ``code`` in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{code}", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    found: list[str] = json.loads(done.stdout.splitlines()[-1])
    return found


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("status", "--help"),
        ("why", "--help"),
        ("certificates", "--help"),
        ("completion", "bash"),
    ],
    ids=" ".join,
)
def test_help_and_completion_import_nothing_heavy(args: tuple[str, ...]) -> None:
    assert loaded(PROBE, *args) == []  # not even asyncio


def test_the_plain_path_of_every_command_imports_no_api_client() -> None:
    code = "".join(f"import dbuser_operator.kubectl_dbu.{module}\n" for module in PLAIN_PATH)
    code += "import json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in HEAVY)))"
    assert loaded(code) == []


def test_the_names_are_the_apis() -> None:
    assert (names.GROUP, names.VERSION) == (GROUP, VERSION)
    users = names.DATABASE_USERS
    assert (users.group, users.version, users.plural, users.kind) == (GROUP, VERSION, PLURAL, KIND)
    assert names.MYSQL_SERVER_KIND == mysqlserver.KIND
    assert names.ROTATE_ANNOTATION == ROTATE_ANNOTATION
    assert names.CREDENTIAL_VERSION_ANNOTATION == CREDENTIAL_VERSION_ANNOTATION
    assert PatchType.MERGE.value == names.MERGE_PATCH
    assert names.POD_CERTIFICATE_REQUESTS == POD_CERTIFICATE_REQUESTS
    assert names.CERTIFICATES == CERTIFICATES
