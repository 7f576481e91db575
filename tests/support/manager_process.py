"""A manager in its own process, for leader-election tests that pause (SIGSTOP) a whole replica.

    python -m tests.support.manager_process KUBECONFIG NAMESPACE IDENTITY

Reconciles ConfigMaps in NAMESPACE and prints ``reconciled <name>`` for each; exits 3 on LeadershipLost.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from kubernetes_asyncio import client, config

from dbuser_operator.runtime.client import KubeClient, api_client
from dbuser_operator.runtime.controller import Controller, Result
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.leaderelection import LeaderElectionConfig
from dbuser_operator.runtime.logging import configure_logging
from dbuser_operator.runtime.manager import LeadershipLost, Manager
from dbuser_operator.runtime.resources import ObjectKey, Resource

CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")
LEASE = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.5}


async def main(kubeconfig: Path, namespace: str, identity: str) -> int:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    async with api_client(configuration) as api:
        kube = KubeClient(api)

        async def reconcile(key: ObjectKey) -> Result:
            print(f"reconciled {key.name}", flush=True)
            return Result()

        election = LeaderElectionConfig(
            lease_name="test-manager", lease_namespace=namespace, identity=identity, **LEASE
        )
        manager = Manager(
            kube, leader_election=election, probe_address="127.0.0.1:0", metrics_address="127.0.0.1:0"
        )
        controller = Controller("configmaps", reconcile)
        controller.watch(Informer(kube, CONFIG_MAPS, namespaces=[namespace]))
        manager.add_controller(controller)
        try:
            await manager.run()
        except LeadershipLost:
            print("leadership lost", flush=True)
            return 3
    return 0


if __name__ == "__main__":
    configure_logging("console", "info")
    raise SystemExit(asyncio.run(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3])))
