"""Which of hack/test.sh's runs runs a test (``tests/support/passes.py``; docs/testing.md, "Which run runs a
test"): the rules, and the suite collected as hack/test.sh's MariaDB runs collect it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support import passes

MARIADB_FOLDERS = ("tests/integration/mysql", "tests/integration/operator")  # as hack/test.sh runs them


def runs_on(
    flavour: str, path: str, fixtures: set[str], markers: frozenset[str] = frozenset(), **how: bool
) -> bool:
    return passes.runs_on(
        flavour,
        default_pass=how.get("default_pass", False),
        shared=how.get("shared", True),
        path=path,
        fixturenames=fixtures,
        markers=markers,
    )


def test_the_default_flavour_runs_everything() -> None:
    assert runs_on(
        "mysql-9.7", "tests/integration/api/test_x.py", {"kube"}, frozenset({"fleet"}), default_pass=True
    )


def test_elsewhere_a_test_runs_only_when_its_result_can_depend_on_the_server() -> None:
    server, operator = {"kube", passes.SERVER_FIXTURE}, "tests/integration/operator"
    assert not runs_on("mariadb-11.8", "tests/integration/api/test_x.py", {"kube", "crds"})
    assert not runs_on("mariadb-10.11", f"{operator}/gitops/test_x.py", server, frozenset({"one_flavour"}))
    assert not runs_on("mariadb-10.11", f"{operator}/fleet/test_x.py", server, frozenset({"fleet"}))
    assert runs_on("mysql-9.7", f"{operator}/servers/test_x.py", server, shared=False)  # with MYSQL_URL


def test_the_mariadb_versions_share_the_work_out() -> None:
    server = {passes.SERVER_FIXTURE}
    layer = "tests/integration/mysql/test_x.py"
    assert runs_on("mariadb-11.8", layer, server)
    assert runs_on("mariadb-10.11", layer, server)
    user = "tests/integration/operator/databaseuser/test_x.py"
    assert [runs_on(flavour, user, server) for flavour in passes.MARIADB_FLAVOURS] == [False, True]
    marked = frozenset({"mariadb_versions"})
    assert all(runs_on(flavour, user, server, marked) for flavour in passes.MARIADB_FLAVOURS)
    role = "tests/integration/operator/databaserole/test_x.py"
    assert [runs_on(flavour, role, server) for flavour in passes.MARIADB_FLAVOURS] == [True, False]
    # Asked for one flavour by hand (no sharing): everything that depends on the server.
    assert runs_on("mariadb-11.8", user, server, shared=False)


def test_every_home_is_a_mariadb_version_and_a_folder_that_exists() -> None:
    assert passes.MARIADB_DEFAULT_HOME in passes.MARIADB_FLAVOURS
    for folder, flavour in passes.MARIADB_HOMES.items():
        assert flavour in passes.MARIADB_FLAVOURS
        assert (REPO / folder).is_dir(), folder


@cache
def collected(flavour: str) -> dict[str, dict[str, list[str]]]:
    """The tests of the MariaDB runs' folders that hack/test.sh's run on ``flavour`` selects."""
    name = f"dbuser-operator-collected-{os.getpid()}-{flavour}.json"
    target = Path(os.environ.get("TMPDIR", "/tmp")) / name
    env = {
        **os.environ,
        "DBUSER_OPERATOR_MYSQL_FLAVOUR": flavour,
        passes.SHARE_VARIABLE: "1",
        "DBUSER_OPERATOR_COLLECTED": str(target),
    }
    env.pop("MYSQL_URL", None)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.support.collected"]
    command += ["--collect-only", "-q", "-m", "testbin", *MARIADB_FOLDERS]
    result = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    try:
        return dict(json.loads(target.read_text()))
    finally:
        target.unlink(missing_ok=True)


@pytest.mark.parametrize("flavour", passes.MARIADB_FLAVOURS)
def test_a_test_in_a_mariadb_run_touches_the_server(flavour: str) -> None:
    tests = collected(flavour)
    assert tests, f"the {flavour} run selects nothing"
    aloof = [test for test, what in tests.items() if passes.SERVER_FIXTURE not in what["fixtures"]]
    assert aloof == [], f"in the {flavour} run without touching the server (mark them one_flavour?)"


def test_every_test_that_depends_on_the_server_runs_on_a_mariadb_version() -> None:
    everything = collected("mysql-9.7")
    on_mariadb = set(collected("mariadb-11.8")) | set(collected("mariadb-10.11"))
    wanted = {
        test
        for test, what in everything.items()
        if passes.SERVER_FIXTURE in what["fixtures"]
        and not passes.FLAVOUR_FREE_MARKERS & set(what["markers"])
    }
    assert sorted(wanted - on_mariadb) == []
    layer = {test for test in wanted if test.startswith("tests/integration/mysql/")}
    assert layer
    assert layer <= set(collected("mariadb-11.8")) & set(collected("mariadb-10.11"))
