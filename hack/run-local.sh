#!/usr/bin/env bash
# Run the operator end to end on a local environment: a real kube-apiserver + etcd and a MySQL server
# (MariaDB) on free loopback ports (KUBECONFIG / MYSQL_URL, when set, are used instead), the CRDs installed,
# the operator running, the sample of config/samples applied and shown Ready with kubectl get/describe.
# Runs until Ctrl-C, printing commands that reach both servers from another shell meanwhile; --check stops
# after the sample is shown (and prints none: its folder goes as it exits). Arguments go to
# `python -m dbuser_operator.local`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

hack/setup.sh
DBUSER_OPERATOR_TESTBIN=$(hack/testbin.sh --dir)
export DBUSER_OPERATOR_TESTBIN
exec .venv/bin/python -m dbuser_operator.local "$@"
