#!/usr/bin/env bash
# Set up (hack/setup.sh), lint, type-check and run the whole test suite against real servers.
# Arguments go to pytest: hack/test.sh -k mysql -x
# KUBECONFIG and MYSQL_URL, when set, point the suite at an existing cluster and MySQL server.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

hack/setup.sh
DBUSER_OPERATOR_TESTBIN=$(hack/testbin.sh --dir)
export DBUSER_OPERATOR_TESTBIN

start=$SECONDS
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
status=0
.venv/bin/pytest "$@" || status=$?
echo "test suite wall time: $((SECONDS - start)) s" >&2
exit "$status"
