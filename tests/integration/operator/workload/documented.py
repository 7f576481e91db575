"""The connection examples of docs/workload-identity.md, run as a pod runs them: the page's code (marked
``<!-- example: python|go|java -->``) with the connection Secret's values as its environment, one new
connection per credential bundle (each put where ``sslCert`` points, as the kubelet refreshes it), and who
each logged in as (``CURRENT_USER()``, ``DATABASE()``).

Go and Java compile here, against the drivers hack/testbin.sh fetched once per machine into the test
binaries' cache (``clients/``: the Go module, compiled into Go's build cache, and Connector/J's jar): the
page's code, the harness beside this module (``harness/``), nothing else. A missing tool or driver is a
failure that says what to install or run, never a skip."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from dbuser_operator.envtest.flavours import cache_directory
from tests.conftest import read_pins, testbin_directory
from tests.integration.operator.support.workload import documented_example

HARNESS = Path(__file__).resolve().parent / "harness"
Login = tuple[str, str]  # CURRENT_USER(), DATABASE() ('' for none)


def tool(name: str) -> str:
    """The path of a tool the examples need; a failure naming it when it is missing."""
    found = shutil.which(name)
    if found is None:
        pytest.fail(
            f"{name} is not installed: the page's examples cannot be built (hack/setup.sh installs it)"
        )
    return found


def drivers() -> tuple[Path, Path]:
    """hack/testbin.sh's Go module of the pinned driver and Connector/J's jar; a failure when missing."""
    directory, pins = testbin_directory() / "clients", read_pins()
    module, jar = directory / "go", directory / f"mysql-connector-j-{pins['MYSQL_CONNECTOR_J_VERSION']}.jar"
    driver = f"github.com/go-sql-driver/mysql {pins['GO_MYSQL_DRIVER_VERSION']}"
    gomod = module / "go.mod"
    if not (gomod.is_file() and driver in gomod.read_text() and jar.is_file()):
        pytest.fail(f"the examples' drivers are not in {directory}: run hack/testbin.sh")
    return module, jar


def run(command: Sequence[str], where: Path, env: Mapping[str, str] | None = None) -> str:
    """``command``'s standard output; a failure with its output when it fails."""
    done = subprocess.run(command, cwd=where, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, (
        f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
    )
    return done.stdout


def logins(output: str) -> list[Login]:
    """The harness's lines: ``CURRENT_USER()<TAB>DATABASE()``."""
    found = []
    for line in output.splitlines():
        user, _, database = line.partition("\t")
        found.append((user, database))
    return found


def python_logins(server_ca: Path, environment: Mapping[str, str], bundles: Sequence[Path]) -> list[Login]:
    """The Python example's ``connect()``, in this process, with ``environment`` as its environment."""
    example: dict[str, Any] = {}
    exec(documented_example("python", server_ca), example)  # the documentation's own code
    found = []
    with pytest.MonkeyPatch.context() as env:
        for key, value in environment.items():
            env.setenv(key, value)
        for bundle in bundles:
            refresh(Path(environment["sslCert"]), bundle)
            with example["connect"]() as connection, connection.cursor() as cursor:
                cursor.execute("SELECT CURRENT_USER(), COALESCE(DATABASE(), '')")
                user, database = cursor.fetchone()
                found.append((str(user), str(database)))
    return found


def refresh(live: Path, bundle: Path) -> None:
    """Put ``bundle`` where ``live`` is with one rename, as the kubelet writes a refreshed bundle."""
    following = live.with_name(live.name + ".next")
    following.write_bytes(bundle.read_bytes())
    following.replace(live)


def go_environment() -> dict[str, str]:
    """Go's settings of hack/testbin.sh (need_go): its module and build caches, so that the driver's
    packages it compiled are reused; no module proxy (testbin.sh downloaded the modules)."""
    cache = cache_directory()
    return {
        "GOPATH": os.environ.get("GOPATH") or str(cache / "go"),
        "GOCACHE": os.environ.get("GOCACHE") or str(cache / "go-build"),
        "CGO_ENABLED": "0",
        "GOFLAGS": "-buildvcs=false -mod=mod",
        "GOPROXY": "off",
    }


def go_logins(
    server_ca: Path, environment: Mapping[str, str], bundles: Sequence[Path], workdir: Path
) -> list[Login]:
    """The Go example's ``open()`` (the page's imports and function, in package main) built with the
    harness, then run."""
    go, (module, _) = tool("go"), drivers()
    build = workdir / "go"
    build.mkdir()
    for name in ("go.mod", "go.sum"):
        shutil.copy(module / name, build / name)
    (build / "example.go").write_text("package main\n\n" + documented_example("go", server_ca))
    shutil.copy(HARNESS / "main.go", build / "main.go")
    env = os.environ | go_environment()
    flags = ["-trimpath", "-gcflags=all=-dwarf=false", "-ldflags=-s -w"]  # testbin.sh's: its cached packages
    run([go, "build", *flags, "-o", "example", "."], build, env)
    return logins(run([str(build / "example"), *map(str, bundles)], build, os.environ | environment))


def java_logins(
    server_ca: Path, environment: Mapping[str, str], bundles: Sequence[Path], workdir: Path
) -> list[Login]:
    """The Java example (the page's class, whole) compiled with the harness against Connector/J, then run."""
    javac, java, (_, jar) = tool("javac"), tool("java"), drivers()
    code = documented_example("java", server_ca)
    declared = re.search(r"^public final class (\w+)", code, re.MULTILINE)
    assert declared is not None, "the Java example is a public class"
    build = workdir / "java"
    build.mkdir()
    (build / f"{declared.group(1)}.java").write_text(code)
    shutil.copy(HARNESS / "Main.java", build / "Main.java")
    classpath = f"{jar}{os.pathsep}{build}"
    quick = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto"]  # short runs: start fast
    run(
        [
            javac,
            *(f"-J{flag}" for flag in quick),
            "-nowarn",
            "-cp",
            classpath,
            "-d",
            str(build),
            *map(str, build.glob("*.java")),
        ],
        build,
    )
    command = [java, *quick, "-cp", classpath, "Main", *map(str, bundles)]
    return logins(run(command, build, os.environ | environment))
