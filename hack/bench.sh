#!/usr/bin/env bash
# Run the benchmarks (bench/README.md) against a real local kube-apiserver + etcd and MySQL server (MariaDB),
# set up as hack/run-local.sh does (KUBECONFIG / MYSQL_URL, when set, are used instead).
# Arguments go to `python -m bench`: hack/bench.sh --n 100,1000 --no-peer;  hack/bench.sh --smoke
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

hack/setup.sh
DBUSER_OPERATOR_TESTBIN=$(hack/testbin.sh --dir)
export DBUSER_OPERATOR_TESTBIN
exec .venv/bin/python -m bench "$@"
