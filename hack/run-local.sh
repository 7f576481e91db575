#!/usr/bin/env bash
# Run the local environment end to end: a real kube-apiserver + etcd and a MySQL server (MariaDB) on free
# loopback ports, with the project's CRDs installed. KUBECONFIG / MYSQL_URL, when set, are used instead.
# Prints how to reach them and runs until Ctrl-C. Arguments go to `python -m dbuser_operator.envtest`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

hack/setup.sh
DBUSER_OPERATOR_TESTBIN=$(hack/testbin.sh --dir)
export DBUSER_OPERATOR_TESTBIN
exec .venv/bin/python -m dbuser_operator.envtest --crds crds "$@"
