"""A benchmark peer, not a product path: the operator's core job as a minimal kopf operator.

``python -m bench.kopf_peer --namespace … --mysql-host … --mysql-port … --mysql-user …`` with ``KUBECONFIG``
set and the admin password in ``DBUSER_OPERATOR_MYSQL_PASSWORD``.

What an experienced kopf user would write for the same job: Secrets held in a kopf index (its watch
cache); on creation of a DatabaseUser with the benchmark's target label, read the password from the index,
``CREATE USER IF NOT EXISTS … IDENTIFIED BY`` and ``GRANT`` through an aiomysql pool of ``--concurrency``
connections, and set the Ready condition through kopf's status patch; on deletion, ``DROP USER`` (which
is why kopf adds its finalizer). kopf's settings stay at their defaults (logging at INFO to its log file;
kopf posts no Events of its own by default) except that handler progress is kept in annotations, because
the CRD's status schema prunes unknown fields such as ``status.kopf``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
from collections.abc import Sequence
from typing import Any

import aiomysql
import kopf

from bench.common import ADMIN_PASSWORD_ENV, BENCH_DATABASE, TARGET, TARGET_LABEL, ready_status
from dbuser_operator.controllers.kit.resources import DATABASE_USERS

GROUP, VERSION, PLURAL = DATABASE_USERS.group, DATABASE_USERS.version, DATABASE_USERS.plural


def build_registry(arguments: argparse.Namespace) -> kopf.OperatorRegistry:
    """The peer's handlers, registered on their own registry."""
    registry = kopf.OperatorRegistry()
    target = {TARGET_LABEL: TARGET}

    @kopf.on.login(id="login", registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.startup(id="startup", registry=registry)
    async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage()
        memo["pool"] = await aiomysql.create_pool(
            host=arguments.mysql_host,
            port=arguments.mysql_port,
            user=arguments.mysql_user,
            password=os.environ.get(ADMIN_PASSWORD_ENV, ""),
            minsize=1,
            maxsize=arguments.concurrency,
            autocommit=True,
        )

    @kopf.on.cleanup(id="cleanup", registry=registry)
    async def cleanup(memo: kopf.Memo, **_: Any) -> None:
        pool = memo["pool"]
        pool.close()
        await pool.wait_closed()

    @kopf.index("", "v1", "secrets", id="passwords", registry=registry)
    def passwords(**kwargs: Any) -> dict[tuple[str, str], Any]:
        body: kopf.Body = kwargs["body"]
        return {(kwargs["namespace"], kwargs["name"]): dict(body.get("data") or {})}

    @kopf.on.create(GROUP, VERSION, PLURAL, id="create", labels=target, registry=registry)
    async def create(**kwargs: Any) -> None:
        spec: kopf.Spec = kwargs["spec"]
        namespace, name = kwargs["namespace"], kwargs["name"]
        passwords: kopf.Index[tuple[str, str], Any] = kwargs["passwords"]
        ref = spec["password"]
        if (namespace, ref["name"]) not in passwords:
            raise kopf.TemporaryError(f"Secret {ref['name']} not seen yet", delay=0.5)
        data = next(iter(passwords[namespace, ref["name"]]))
        password = base64.b64decode(data[ref["key"]]).decode()
        user, host = spec.get("user") or name, spec.get("host") or "%"
        async with kwargs["memo"]["pool"].acquire() as connection, connection.cursor() as cursor:
            await cursor.execute("CREATE USER IF NOT EXISTS %s@%s IDENTIFIED BY %s", (user, host, password))
            await cursor.execute(f"GRANT SELECT ON `{BENCH_DATABASE}`.* TO %s@%s", (user, host))
        status = ready_status(kwargs["meta"].get("generation"), f"account '{user}'@'{host}' is ready")
        kwargs["patch"].status.update(status)

    @kopf.on.delete(GROUP, VERSION, PLURAL, id="delete", labels=target, registry=registry)
    async def delete(**kwargs: Any) -> None:
        spec: kopf.Spec = kwargs["spec"]
        user, host = spec.get("user") or kwargs["name"], spec.get("host") or "%"
        async with kwargs["memo"]["pool"].acquire() as connection, connection.cursor() as cursor:
            await cursor.execute("DROP USER IF EXISTS %s@%s", (user, host))

    return registry


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.kopf_peer", description=__doc__)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--mysql-host", default="127.0.0.1")
    parser.add_argument("--mysql-port", type=int, default=3306)
    parser.add_argument("--mysql-user", default="root")
    parser.add_argument("--concurrency", type=int, default=4)
    arguments = parser.parse_args(argv)
    kopf.configure()  # as `kopf run` does: INFO; the harness sends the output to a file
    asyncio.run(
        kopf.operator(
            registry=build_registry(arguments),
            standalone=True,
            clusterwide=False,
            namespaces=[arguments.namespace],
            memo=kopf.Memo(),
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
