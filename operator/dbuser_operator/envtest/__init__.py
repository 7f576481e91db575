"""A real local test environment: kube-apiserver + etcd and a MySQL-compatible server.

The counterpart of controller-runtime's ``pkg/envtest``, used by the test suite, the benchmarks and the
local end-to-end run. Nothing here is mocked: every component is the real server, started on free loopback
ports in a temporary directory, or an existing one that the caller names (``KUBECONFIG``, ``MYSQL_URL``).
"""

from dbuser_operator.envtest.binaries import Binaries
from dbuser_operator.envtest.crds import install_crds
from dbuser_operator.envtest.flavours import FLAVOUR_VARIABLE, FLAVOURS, Flavour, locate, selected_flavour
from dbuser_operator.envtest.kube import KubeCluster, LocalControlPlane, connect_cluster
from dbuser_operator.envtest.mysql import LocalMySQLServer, MySQLServer, describe_mysql, provide_mysql

__all__ = [
    "FLAVOURS",
    "FLAVOUR_VARIABLE",
    "Binaries",
    "Flavour",
    "KubeCluster",
    "LocalControlPlane",
    "LocalMySQLServer",
    "MySQLServer",
    "connect_cluster",
    "describe_mysql",
    "install_crds",
    "locate",
    "provide_mysql",
    "selected_flavour",
]
