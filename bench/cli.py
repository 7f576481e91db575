"""``python -m bench``: set up the environment, run the scenarios, print the table, write JSON and PNG.

The environment is the test suite's: a real kube-apiserver + etcd (or the cluster ``KUBECONFIG`` names)
and a MySQL server (``MYSQL_URL``, a container, or the machine's MariaDB), on loopback ports.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import fleet_report, report
from bench.common import MySQLAddress, admin_sql
from bench.databases import DatabaseBench
from bench.fleet_run import RESTART_USER, FleetBench
from bench.scenarios import Bench, Options
from bench.servers import provide_servers
from dbuser_operator.envtest import (
    Binaries,
    KubeCluster,
    LocalMySQLServer,
    connect_cluster,
    install_crds,
    provide_mysql,
)
from dbuser_operator.envtest.kube import ADMIN_GROUPS
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.settings import Settings

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = ("convergence", "floor", "peer", "backlog", "rotation", "idle", "coldstart")
POD_CERTIFICATES = "pod-certificates"  # on its own: bench.pod_certificates (not in the default "all")
FLEET_SCENARIOS = ("fleet", "restart")  # bench.fleet_run: only when named
OPERATOR_DEFAULT_CONCURRENCY: int = Settings.model_fields["max_concurrent_reconciles"].default


def _sizes(text: str) -> list[int]:
    sizes = sorted({int(part) for part in text.split(",") if part.strip()})
    if not sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("sizes are positive integers, comma-separated")
    return sizes


def _scenarios(text: str) -> set[str]:
    chosen = {part.strip() for part in text.split(",") if part.strip()}
    unknown = chosen - {*SCENARIOS, *FLEET_SCENARIOS, POD_CERTIFICATES}
    if unknown:
        known = (*SCENARIOS, *FLEET_SCENARIOS, POD_CERTIFICATES)
        raise argparse.ArgumentTypeError(f"unknown scenarios {sorted(unknown)}; choose from {known}")
    if "restart" in chosen:
        chosen.add("fleet")  # the restart is the fleet's
    return chosen


def parser() -> argparse.ArgumentParser:
    arguments = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmarks of dbuser-operator against a real local API server and MySQL server; "
        "prints a table with pass/fail against the targets and writes results.json, results.md and "
        "results.png to --out.",
    )
    arguments.add_argument(
        "--n", type=_sizes, default=[100, 1000, 5000], help="sizes (default 100,1000,5000)"
    )
    arguments.add_argument(
        "--scenarios",
        type=_scenarios,
        default=set(SCENARIOS),
        help=f"comma-separated, from {','.join(SCENARIOS)} (default: all of these), and "
        f"{','.join(FLEET_SCENARIOS)} (only when named: N users over the --servers, bench.fleet_run); or "
        f"{POD_CERTIFICATES} alone (bench.pod_certificates: the pod certificate signer at the largest N)",
    )
    arguments.add_argument(
        "--restart-general-log",
        action="store_true",
        help="the servers' general logs on while the operator restarts: its write statements listed "
        "(restart; taxes every statement)",
    )
    arguments.add_argument(
        "--settled-after-pass",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="fleet: read the settled RSS only after a whole periodic drift check that started once every "
        "user was Ready (default: on; bench.periodic_pass)",
    )
    arguments.add_argument(
        "--clean-last-fleet",
        action="store_true",
        help="remove the largest fleet too when the run ends (by default it stays for inspection; a "
        "shared API server, as the test suite's, wants it gone)",
    )
    arguments.add_argument(
        "--restart-gate",
        type=Path,
        help="restart: wait with the fleet converged until this file exists (e.g. until the machine is "
        "quiet, or the operator's code to restart is in place)",
    )
    arguments.add_argument(
        "--restart-window",
        type=float,
        default=10.0,
        help="seconds the restarted operator is watched for writes after its first pass (restart; 10)",
    )
    arguments.add_argument(
        "--kind",
        choices=["DatabaseUser", "Database"],
        default="DatabaseUser",
        help="the kind created and timed to Ready (default DatabaseUser; Database: bench.databases)",
    )
    arguments.add_argument("--idle-seconds", type=float, default=300.0, help="idle scenario length (300)")
    arguments.add_argument(
        "--peer", action=argparse.BooleanOptionalAction, default=True, help="run the kopf peer (default: on)"
    )
    arguments.add_argument("--peer-max-n", type=int, default=5000, help="largest N the kopf peer runs at")
    arguments.add_argument(
        "--steady-n", type=int, help="N for rotation and idle (default: 1000, else the largest)"
    )
    arguments.add_argument("--coldstart-n", type=int, help="N for the cold start (default: the largest)")
    arguments.add_argument("--rotation-samples", type=int, default=100, help="Secrets rotated (100)")
    arguments.add_argument(
        "--concurrency",
        type=int,
        default=OPERATOR_DEFAULT_CONCURRENCY,
        help="reconciles at once: the operator's --max-concurrent-reconciles (default: the operator's own, "
        f"{OPERATOR_DEFAULT_CONCURRENCY}), the floor's workers and the peer's MySQL pool",
    )
    arguments.add_argument("--create-concurrency", type=int, default=32, help="parallel creates (32)")
    arguments.add_argument(
        "--resync-period", type=float, default=60.0, help="the operator's --resync-period (60; default 300)"
    )
    arguments.add_argument(
        "--finalizer-policy",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the operator's runs with the chart's finalizer policy (a MutatingAdmissionPolicy: the API "
        "server adds the finalizer at creation) in their namespace, as `helm install` sets it up on "
        "Kubernetes 1.36+ (default: on; --no-finalizer-policy: the operator adds it with a patch)",
    )
    arguments.add_argument(
        "--floor-finalizer-policy",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="the floor's runs with the same policy, for the floor's own finalizer: its finalizer patch is "
        "skipped as the operator's is (default: off, the floor as it always was)",
    )
    arguments.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="run the operator with leader election, so every write is fenced (default: off, one replica)",
    )
    arguments.add_argument(
        "--servers",
        type=int,
        default=1,
        help="local servers to spread the users over, by spec.serverRef to a MySQLServer each (default 1: "
        "one server, no server resources); K > 1 starts MySQL 9.7, MariaDB 11.8, MariaDB 10.11 (cycling) "
        "and turns the kopf peer off",
    )
    arguments.add_argument("--smoke", action="store_true", help="tiny and quick: N=10, idle 10 s (for CI)")
    arguments.add_argument("--out", type=Path, default=REPO / "bench" / "results", help="where results go")
    arguments.add_argument(
        "--workdir", type=Path, help="servers' state and logs (default: a temporary folder)"
    )
    arguments.add_argument(
        "--time-limit",
        type=float,
        default=300.0,
        help="seconds an implementation gets to make all N objects Ready before it is given up on (300)",
    )
    arguments.add_argument(
        "--profile",
        action="store_true",
        help="sample every implementation with py-spy (collapsed stacks in OUT/profiles/; costs some CPU)",
    )
    arguments.add_argument(
        "--pairs",
        type=int,
        default=1,
        help="live runs of the floor and the operator at each N, in alternating order (floor first, then "
        "operator first, ...); operator ÷ floor is the median of the pairs' ratios (default 1: floor first)",
    )
    arguments.add_argument(
        "--floor-events",
        action="store_true",
        help="the floor also posts the one Event per new user the operator promises (default: no Events)",
    )
    arguments.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    return arguments


def options_from(arguments: argparse.Namespace) -> Options:
    if arguments.smoke:
        arguments.n = [10]
        arguments.idle_seconds = min(arguments.idle_seconds, 10.0)
        arguments.rotation_samples = min(arguments.rotation_samples, 5)
        arguments.resync_period = 5.0
        arguments.peer_max_n = 10
    if arguments.servers < 1:
        raise SystemExit("--servers: at least 1")
    if arguments.servers > 1:
        arguments.peer = False  # the kopf peer knows one server
    if arguments.pairs < 1:
        raise SystemExit("--pairs: at least 1")
    sizes: list[int] = arguments.n
    steady = arguments.steady_n or (1000 if 1000 in sizes else sizes[-1])
    return Options(
        sizes=sizes,
        scenarios=arguments.scenarios,
        idle_seconds=arguments.idle_seconds,
        peer=arguments.peer,
        peer_max_n=arguments.peer_max_n,
        steady_n=steady,
        coldstart_n=arguments.coldstart_n or sizes[-1],
        rotation_samples=arguments.rotation_samples,
        concurrency=arguments.concurrency,
        create_concurrency=arguments.create_concurrency,
        resync_period=arguments.resync_period,
        leader_elect=arguments.leader_elect,
        finalizer_policy=arguments.finalizer_policy,
        floor_finalizer_policy=arguments.floor_finalizer_policy,
        time_limit=arguments.time_limit,
        profile_dir=arguments.out / "profiles" if arguments.profile else None,
        pairs=arguments.pairs,
        floor_events=arguments.floor_events,
        restart_window=arguments.restart_window,
        restart_general_log=arguments.restart_general_log,
        restart_gate=arguments.restart_gate,
        settled_after_pass=arguments.settled_after_pass,
        clean_last_fleet=arguments.clean_last_fleet,
    )


def bench_cluster(binaries: Binaries, workdir: Path, options: Options) -> KubeCluster:
    """The API server, with no audit log and no general log: test instrumentation that would tax every
    write measured. The restarted operator alone is audited, under an identity of its own
    (:data:`bench.fleet_run.RESTART_USER`; ``options`` gets its kubeconfig and the log's path)."""
    audited = (RESTART_USER,) if "restart" in options.scenarios else ()
    cluster = connect_cluster(binaries, workdir, audit=False, audit_users=audited)
    if audited and cluster.control_plane is not None:
        options.restart_kubeconfig = cluster.control_plane.issue_kubeconfig(
            RESTART_USER, ADMIN_GROUPS, workdir / "restart.kubeconfig"
        )
        options.restart_audit_log = cluster.control_plane.audit_log
    return cluster


def say(message: str) -> None:
    print(f"[bench {datetime.now().strftime('%H:%M:%S')}] {message}", flush=True)


def machine() -> dict[str, Any]:
    model = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    memory = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            memory = int(line.split()[1]) // 1024
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "memory_mib": memory,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "loadavg_at_start": list(os.getloadavg()),
        "kopf": importlib.metadata.version("kopf"),
    }


def git_state() -> dict[str, Any]:
    """The commit measured, and whether the operator's code differed from it."""
    git = shutil.which("git")
    if git is None:
        return {}
    try:
        commit = subprocess.run(  # noqa: S603 - fixed arguments
            [git, "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(  # noqa: S603 - fixed arguments
            [git, "status", "--porcelain", "--", "operator", "crds"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return {}
    return {"commit": commit, "operator_modified": bool(changed)}


class Runner:
    """Runs the chosen scenarios in order, saving the results after each one."""

    def __init__(self, bench: Bench, options: Options, results: dict[str, Any], out: Path) -> None:
        self.bench = bench
        self.options = options
        self.results = results
        self.out = out

    def save(self) -> None:
        self.results["targets"] = report.evaluate(self.results)
        report.write_json(self.results, self.out / "results.json")

    async def attempt(self, what: str, coroutine: Any) -> Any:
        try:
            return await coroutine
        except Exception as error:
            say(f"{what} failed: {error!r}")
            self.results.setdefault("errors", []).append(
                {"scenario": what, "error": repr(error), "traceback": traceback.format_exc()}
            )
            return None
        finally:
            self.save()

    async def run(self) -> None:
        options, bench, scenarios = self.options, self.bench, self.options.scenarios
        for position, n in enumerate(options.sizes):
            say(f"N={n}")
            if "fleet" in scenarios:
                await self._fleet(n, position)
            if "floor" in scenarios:
                await self._convergence_only("floor", n)
            if "peer" in scenarios and options.peer and n <= options.peer_max_n:
                await self._convergence_only("kopf", n)
            steady = n == options.steady_n and bool({"rotation", "idle"} & scenarios)
            cold = n == options.coldstart_n and "coldstart" in scenarios
            if "convergence" in scenarios or steady or cold:
                await self._operator(n, steady=steady, cold=cold)
            if {"floor", "convergence"} <= scenarios:
                await self._more_pairs(n)
            if "backlog" in scenarios:
                peer = "peer" in scenarios and options.peer and n <= options.peer_max_n
                for kind in ("floor", *(["kopf"] if peer else []), "operator"):
                    row = await self.attempt(f"{kind} backlog N={n}", bench.backlog(kind, n))
                    if row is not None:
                        self.results["backlog"].append(row)

    async def _fleet(self, n: int, position: int) -> None:
        """The fleet (and its restart) at ``n``; removed afterwards when a larger one follows (or always:
        ``--clean-last-fleet``)."""
        fleet = FleetBench(self.bench)
        row = await self.attempt(
            f"fleet N={n}",
            fleet.run(
                n,
                f"f{self.bench.run_id}{position}",
                restart="restart" in self.options.scenarios,
                clean=self.options.clean_last_fleet or position < len(self.options.sizes) - 1,
                window=self.options.restart_window,
                general_log=self.options.restart_general_log,
            ),
        )
        if row is not None:
            self.results.setdefault("fleet", []).append(row)
            self.save()

    async def _operator(self, n: int, *, steady: bool, cold: bool) -> None:
        bench, scenarios = self.bench, self.options.scenarios
        started = await self.attempt(f"operator N={n}", bench.convergence("operator", n))
        if started is None:
            return
        result, run = started
        try:
            if "convergence" in scenarios:
                self.results["convergence"].append(result | {"pair": 0})
            if steady and "rotation" in scenarios:
                self.results["rotation"] = await self.attempt("rotation", bench.rotation(run))
            if steady and "idle" in scenarios:
                self.results["idle"] = await self.attempt("idle", bench.idle(run))
            if cold:
                self.results["coldstart"] = await self.attempt("coldstart", bench.cold_start(run))
        finally:
            await run.close(bench)
        self.save()

    async def _convergence_only(self, kind: str, n: int, pair: int = 0) -> None:
        started = await self.attempt(f"{kind} N={n}", self.bench.convergence(kind, n, pair))
        if started is not None:
            result, run = started
            self.results["convergence"].append(result | {"pair": pair})
            await run.close(self.bench)
            self.save()

    async def _more_pairs(self, n: int) -> None:
        """Pairs 2..K of --pairs: live runs of the floor and the operator, the operator first in every
        other pair (pair 1, floor first, is the usual run), so that neither always meets the API server
        and etcd fresher."""
        for pair in range(1, self.options.pairs):
            say(f"N={n}: pair {pair + 1} of {self.options.pairs}")
            order = ("operator", "floor") if pair % 2 else ("floor", "operator")
            for kind in order:
                await self._convergence_only(kind, n, pair)


async def amain(
    *,
    kubeconfig: Path,
    mysql: MySQLAddress,
    fleet: list[MySQLAddress] | None = None,
    mysql_pids: list[int] | None = None,
    workdir: Path,
    options: Options,
    results: dict[str, Any],
    out: Path,
    kind: str = "DatabaseUser",
) -> None:
    from bench.common import api_client  # noqa: PLC0415

    async with await api_client(kubeconfig) as api:
        await install_crds(api, REPO / "crds")
        version = await KubeClient(api).request("GET", "/version")
        results["machine"]["kube_version"] = version.get("gitVersion")
        results["machine"]["mysql_version"] = (await admin_sql(mysql, "SELECT VERSION()"))[0][0]
        if fleet:
            results["machine"]["servers"] = [
                {
                    "name": s.name,
                    "flavour": s.flavour,
                    "version": (await admin_sql(s, "SELECT VERSION()"))[0][0],
                }
                for s in fleet
            ]
        bench = (DatabaseBench if kind == "Database" else Bench)(
            api=api,
            kubeconfig=kubeconfig,
            mysql=mysql,
            workdir=workdir,
            options=options,
            say=say,
            fleet=fleet,
            mysql_pids=mysql_pids,
        )
        await bench.prepare()
        try:
            await Runner(bench, options, results, out).run()
        finally:
            bench.close()


@contextmanager
def measured_servers(
    workdir: Path, count: int
) -> Iterator[tuple[MySQLAddress, list[MySQLAddress] | None, list[int] | None]]:
    """The server (``MYSQL_URL``, a container or a local one), or ``count`` > 1 local servers of several
    flavours (:mod:`bench.servers`): the first server, all of them and their pids (None with one)."""
    if count > 1:
        with provide_servers(workdir, count) as (fleet, pids):
            say(f"{count} servers: {', '.join(f'{s.name} {s.flavour} :{s.port}' for s in fleet)}")
            yield fleet[0], fleet, pids
        return
    with provide_mysql(workdir, general_log=False) as provided:
        server = provided.admin if isinstance(provided, LocalMySQLServer) else provided
        yield MySQLAddress(server.host, server.port, server.user, server.password), None, None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    if POD_CERTIFICATES in arguments.scenarios:
        if arguments.scenarios != {POD_CERTIFICATES}:
            raise SystemExit(f"--scenarios: {POD_CERTIFICATES} runs alone")
        from bench import pod_certificates  # noqa: PLC0415

        return pod_certificates.run_scenario(arguments.n[-1], arguments.create_concurrency, arguments.out)
    options = options_from(arguments)
    out: Path = arguments.out
    out.mkdir(parents=True, exist_ok=True)
    temporary = arguments.workdir is None
    workdir: Path = arguments.workdir or Path(tempfile.mkdtemp(prefix="dbuser-operator-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    command = "python -m bench " + shlex.join(list(sys.argv[1:] if argv is None else argv))
    results: dict[str, Any] = {
        "command": command.strip(),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "smoke": arguments.smoke,
        "machine": machine(),
        "options": {
            "sizes": options.sizes,
            "scenarios": sorted(options.scenarios),
            "idle_seconds": options.idle_seconds,
            "peer": options.peer,
            "peer_max_n": options.peer_max_n,
            "steady_n": options.steady_n,
            "coldstart_n": options.coldstart_n,
            "rotation_samples": options.rotation_samples,
            "concurrency": options.concurrency,
            "create_concurrency": options.create_concurrency,
            "resync_period": options.resync_period,
            "settled_after_pass": options.settled_after_pass,
            "time_limit": options.time_limit,
            "servers": arguments.servers,
            "floor_events": options.floor_events,
            "kind": arguments.kind,
        },
        "git": git_state(),
        "convergence": [],
        "backlog": [],
    }
    say(f"state and logs in {workdir}")
    testbin = os.environ.get("DBUSER_OPERATOR_TESTBIN")
    binaries = Binaries.from_environment(*([Path(testbin)] if testbin else []))
    started = time.monotonic()
    cluster = bench_cluster(binaries, workdir / "kube", options)
    failed = True
    try:
        with measured_servers(workdir / "mysql", arguments.servers) as (mysql, fleet, pids):
            asyncio.run(
                amain(
                    kubeconfig=cluster.kubeconfig,
                    mysql=mysql,
                    fleet=fleet,
                    mysql_pids=pids,
                    workdir=workdir,
                    options=options,
                    results=results,
                    out=out,
                    kind=arguments.kind,
                )
            )
        failed = bool(results.get("errors"))
    finally:
        if cluster.control_plane is not None:
            cluster.control_plane.stop()
        results["wall_seconds"] = round(time.monotonic() - started, 1)
        results["targets"] = report.evaluate(results)
        report.write_json(results, out / "results.json")
        if temporary and not failed:
            shutil.rmtree(workdir, ignore_errors=True)
        elif failed:
            say(f"kept the logs in {workdir}")
    table = report.render_table(results)
    if results.get("fleet"):
        table += "\n" + fleet_report.table(results)
        fleet_report.plot(results, out / "fleet.png")
    (out / "results.md").write_text(table)
    if results["convergence"] or results["backlog"]:
        report.plot(results, out / "results.png")
    print()
    print(table, flush=True)
    say(f"wrote results.json, results.md and the plots to {out} in {results['wall_seconds']} s")
    missed = [t for t in results["targets"] if t["pass"] is False]
    if results.get("errors"):
        say(f"{len(results['errors'])} scenario(s) failed: see 'errors' in results.json")
        return 1
    return 1 if arguments.strict and missed else 0
