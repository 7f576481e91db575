#!/usr/bin/env bash
# Set up (hack/setup.sh), lint, type-check and run the test suite against real servers.
#
#   hack/test.sh                 lint, types and the tests that need no server or test binary while those
#                                build (hack/testbin.sh), then the rest of the suite on MySQL 9.7 (with the
#                                tests marked fleet, which run a server of every flavour at once, and only in
#                                that pass), then the MySQL-layer and operator integration suites on MariaDB
#                                11.8 and on MariaDB 10.11, side by side
#   hack/test.sh -k mysql -x     one run, arguments to pytest, on DBUSER_OPERATOR_MYSQL_FLAVOUR (default
#                                mysql-9.7): also what runs when that variable or MYSQL_URL is set
#   hack/test.sh --stress …      the same, while a CPU hog of this script's own takes one core the whole
#                                time (DBUSER_OPERATOR_STRESS=1 too): the suite must stay green on a busy
#                                machine (docs/testing.md)
#
# Every pytest run prints its 30 slowest tests (--durations=30).
# KUBECONFIG and MYSQL_URL, when set, point the suite at an existing cluster and MySQL server.
# The exit status is non-zero when any run fails; each run's pytest summary line is repeated at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

stress=${DBUSER_OPERATOR_STRESS:-}
if [[ "${1:-}" == "--stress" ]]; then
  stress=1
  shift
fi

one_run=
if (($#)) || [[ -n "${DBUSER_OPERATOR_MYSQL_FLAVOUR:-}" || -n "${MYSQL_URL:-}" ]]; then
  one_run=1
fi

testbin_log=$(mktemp) testbin= hog=
clean_up() { # however the script ends: no build or hog of its own left running
  [[ -z "$testbin" ]] || kill -- "-$testbin" 2>/dev/null || true  # its process group: the Go builds too
  [[ -z "$hog" ]] || kill "$hog" 2>/dev/null || true
  rm -f "$testbin_log"
}
trap clean_up EXIT
if [[ -n "$one_run" ]]; then
  hack/setup.sh
else
  # The whole suite: the test binaries and server roots build (minutes, when nothing is cached) while lint,
  # types and the tests that need none of them run.
  hack/setup.sh --no-testbin
  setsid hack/testbin.sh >"$testbin_log" 2>&1 &
  testbin=$!
fi
testbin_ready() {
  if [[ -n "$testbin" ]]; then
    wait "$testbin" || { cat "$testbin_log" >&2; echo "hack/testbin.sh failed" >&2; exit 1; }
    cat "$testbin_log" >&2
    testbin=
  fi
  DBUSER_OPERATOR_TESTBIN=$(hack/testbin.sh --dir)
  export DBUSER_OPERATOR_TESTBIN
}

if [[ -n "$stress" && "$stress" != 0 ]]; then
  # One core busy for the whole run: a child of this script, ended with it however it ends.
  (trap 'exit 0' TERM; while :; do :; done) &
  hog=$!
  echo "=== stress: a CPU hog (pid $hog) takes one of the $(nproc) cores until the end" >&2
fi

start=$SECONDS
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy

# One pytest run: flavour (empty: as the environment says; "none": no server, no binaries), then pytest's
# arguments.
status=0
summaries=()
run() {
  local flavour=$1 output line run_start=$SECONDS code=0
  shift
  output=$(mktemp)
  echo "=== pytest ${flavour:+on $flavour }$*" >&2
  if [[ "$flavour" == none ]]; then
    .venv/bin/pytest --durations=30 "$@" 2>&1 | tee "$output" || code=$?
  elif [[ -n "$flavour" ]]; then
    DBUSER_OPERATOR_MYSQL_FLAVOUR=$flavour .venv/bin/pytest --durations=30 "$@" 2>&1 | tee "$output" || code=$?
  else
    .venv/bin/pytest --durations=30 "$@" 2>&1 | tee "$output" || code=$?
  fi
  line=$(grep -E '^=+ .*(passed|failed|error|skipped|no tests ran).* =+$' "$output" | tail -n 1 || true)
  rm -f "$output"
  local server=${flavour:-${DBUSER_OPERATOR_MYSQL_FLAVOUR:-mysql-9.7}}
  [[ -n "$flavour" || -z "${MYSQL_URL:-}" ]] || server=MYSQL_URL
  [[ "$flavour" != none ]] || server="no server"
  summaries+=("$server ($((SECONDS - run_start)) s): ${line:-no summary (exit $code)}")
  ((code == 0)) || status=1
}

if [[ -n "$one_run" ]]; then
  testbin_ready
  run "" "$@"
else
  run none -m "not testbin"  # what needs no binary and no server, while they build
  testbin_ready
  run mysql-9.7 -m testbin
  # The MariaDB passes wait on their servers far more than they compute: they run side by side, each with
  # servers of its own, and each pass's output is printed whole once both are done.
  pids=() outputs=()
  for flavour in mariadb-11.8 mariadb-10.11; do
    output=$(mktemp)
    outputs+=("$output")
    (
      summaries=() status=0
      run "$flavour" tests/integration/mysql tests/integration/operator  # admission (api/) is the same on any server
      printf '%s\n' "${summaries[@]}" >"$output.summary"
      exit "$status"
    ) >"$output" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || status=1
    cat "${outputs[$i]}"
    mapfile -t -O "${#summaries[@]}" summaries <"${outputs[$i]}.summary" || status=1
    rm -f "${outputs[$i]}" "${outputs[$i]}.summary"
  done
fi

echo "--- test runs" >&2
printf '%s\n' "${summaries[@]}" >&2
echo "test suite wall time: $((SECONDS - start)) s" >&2
# All runs together, as one closing line: "total: N passed, N failed, N skipped".
count() { printf '%s\n' "${summaries[@]}" | grep -oE "[0-9]+ $1" | awk '{n += $1} END {print n + 0}'; }
echo "total: $(count passed) passed, $(($(count failed) + $(count error))) failed, $(count skipped) skipped"
exit "$status"
