"""Which of hack/test.sh's pytest runs runs a test (docs/testing.md, "Which run runs a test").

hack/test.sh runs the suite in parts, each on MySQL 9.7 (the default flavour), MariaDB 11.8 and MariaDB
10.11: while the Go test binaries build, the tests that need none of them (``-m "testbin and not gobin"``:
the MySQL layer, the local servers); once they are built, the rest (``-m gobin``). In each run a test is
selected where its result can differ:

- on the default flavour (without ``MYSQL_URL``): every test;
- on any other server: a test that touches the session's server (``mysql_provider`` among its fixtures) and
  is neither ``fleet`` (servers of its own, of every flavour) nor ``one_flavour`` (it checks nothing that
  depends on the server);
- and of those, when hack/test.sh shares the MariaDB work out (``DBUSER_OPERATOR_MARIADB_SHARE=1``): a test
  whose behaviour differs between MariaDB versions (``mariadb_versions``: every test of the MySQL layer,
  ``tests/integration/mysql``, where the SQL of each version is, and any test so marked) on both MariaDB
  versions, any other on the one its folder is given in :data:`MARIADB_HOMES` (else on
  :data:`MARIADB_DEFAULT_HOME`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import PurePosixPath

SERVER_FIXTURE = "mysql_provider"
GO_BINARIES_FIXTURE = "binaries"
SHARE_VARIABLE = "DBUSER_OPERATOR_MARIADB_SHARE"
MARIADB_FLAVOURS = ("mariadb-11.8", "mariadb-10.11")
VERSIONED_FOLDERS = ("tests/integration/mysql",)  # the MySQL layer: each version's SQL
# Folders whose tests run on one MariaDB version only (they branch on the flavour, never on MariaDB's
# version), chosen so that the two MariaDB runs, side by side, take about as long as each other.
MARIADB_HOMES: dict[str, str] = {
    "tests/integration/operator/databaseuser": "mariadb-10.11",
}
MARIADB_DEFAULT_HOME = "mariadb-11.8"
FLAVOUR_FREE_MARKERS = frozenset({"fleet", "one_flavour"})


def touches_the_server(fixturenames: Iterable[str]) -> bool:
    """Whether a test with these fixtures (its whole closure) uses the session's MySQL server."""
    return SERVER_FIXTURE in set(fixturenames)


def needs_go_binaries(fixturenames: Iterable[str], markers: Iterable[str]) -> bool:
    """Whether a test needs what hack/testbin.sh builds with Go (etcd, kube-apiserver, kubectl, helm):
    the ``binaries`` fixture in its closure, or the ``gobin`` marker (a test that runs them another way)."""
    return GO_BINARIES_FIXTURE in set(fixturenames) or "gobin" in set(markers)


def varies_between_mariadb_versions(path: str, markers: Iterable[str]) -> bool:
    return "mariadb_versions" in set(markers) or any(_under(path, folder) for folder in VERSIONED_FOLDERS)


def mariadb_home(path: str) -> str:
    """The MariaDB version that runs a test whose result is the same on both."""
    homes = [(folder, flavour) for folder, flavour in MARIADB_HOMES.items() if _under(path, folder)]
    return max(homes, key=lambda home: len(home[0]))[1] if homes else MARIADB_DEFAULT_HOME


def runs_on(
    flavour: str,
    *,
    default_pass: bool,
    shared: bool,
    path: str,
    fixturenames: Iterable[str],
    markers: Iterable[str],
) -> bool:
    """Whether the run on ``flavour`` selects the test at ``path`` (relative to the repository)."""
    if default_pass:
        return True
    names, marks = set(fixturenames), set(markers)
    if marks & FLAVOUR_FREE_MARKERS or not touches_the_server(names):
        return False
    if not shared or flavour not in MARIADB_FLAVOURS:
        return True
    return varies_between_mariadb_versions(path, marks) or mariadb_home(path) == flavour


def shared_out() -> bool:
    """Whether this run is one of hack/test.sh's MariaDB runs that share the work out."""
    return os.environ.get(SHARE_VARIABLE, "") not in ("", "0")


def _under(path: str, folder: str) -> bool:
    return PurePosixPath(path).is_relative_to(folder)
