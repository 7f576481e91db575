#!/usr/bin/env bash
# Set up (hack/setup.sh), lint, type-check and run the test suite against real servers.
#
#   hack/test.sh                 everything, in three phases (docs/testing.md, "Which run runs a test"):
#                                1. lint, types and the tests that need no server and no test binary, while
#                                   the Go test binaries (hack/testbin.sh) and the server roots
#                                   (hack/mysqlroots.sh) build;
#                                2. once the roots are there, the tests that need a server but no Go binary
#                                   (the MySQL layer) on MySQL 9.7, MariaDB 11.8 and MariaDB 10.11, side by
#                                   side, while the Go build goes on;
#                                3. once it is done, the rest, side by side: on MySQL 9.7 in three runs (the
#                                   DatabaseUser tests, the operator's others with the tests marked fleet,
#                                   everything else), and the operator's tests on MariaDB, shared out
#                                   between 11.8 and 10.11
#   hack/test.sh -k mysql -x     one run, arguments to pytest, on DBUSER_OPERATOR_MYSQL_FLAVOUR (default
#                                mysql-9.7): also what runs when that variable or MYSQL_URL is set
#   hack/test.sh --stress …      the same, while a CPU hog of this script's own takes one core the whole
#                                time (DBUSER_OPERATOR_STRESS=1 too): the suite must stay green on a busy
#                                machine (docs/testing.md)
#
# Every pytest run prints its 30 slowest tests (--durations=30); runs side by side print their output whole,
# one after the other, once all of them are done.
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

testbin_log=$(mktemp) roots_log=$(mktemp) testbin= roots= hog= running=()
clean_up() { # however the script ends: no build, run or hog of its own left running
  local group pid
  for group in "$testbin" "$roots"; do  # each a process group: the Go builds, debootstrap too
    [[ -z "$group" ]] || kill -- "-$group" 2>/dev/null || true
  done
  for pid in "${running[@]}"; do  # runs side by side: their pytest stops its servers on SIGTERM
    pkill -TERM -P "$pid" 2>/dev/null || true
  done
  [[ -z "$hog" ]] || kill "$hog" 2>/dev/null || true
  rm -f "$testbin_log" "$roots_log"
}
trap clean_up EXIT
if [[ -n "$one_run" ]]; then
  hack/setup.sh
else
  # The whole suite: the test binaries and the server roots build (minutes, when nothing is cached) while
  # lint, types and the tests that need none of them run.
  hack/setup.sh --no-testbin
  setsid hack/testbin.sh --no-roots >"$testbin_log" 2>&1 &
  testbin=$!
  setsid hack/mysqlroots.sh >"$roots_log" 2>&1 &
  roots=$!
fi
roots_ready() {
  if [[ -n "$roots" ]]; then
    wait "$roots" || { cat "$roots_log" >&2; echo "hack/mysqlroots.sh failed" >&2; exit 1; }
    cat "$roots_log" >&2
    roots=
  fi
}
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
# cpu_now: the CPU seconds (user + system) of this shell's finished children so far, into $cpu (its /proc
# stat, read without a subshell of its own): each run's summary says how much of the machine it took, beside
# its wall time.
clock_ticks=$(getconf CLK_TCK)
cpu_now() {
  local stat
  read -ra stat <"/proc/$BASHPID/stat"
  cpu=$(((stat[15] + stat[16]) / clock_ticks))
}

run() {
  local flavour=$1 output line run_start=$SECONDS code=0 cpu cpu_start
  shift
  cpu_now
  cpu_start=$cpu
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
  cpu_now
  local took="$((SECONDS - run_start)) s, CPU $((cpu - cpu_start)) s"
  summaries+=("$server ${*:-(all)} ($took): ${line:-no summary (exit $code)}")
  ((code == 0)) || status=1
}

# Pytest runs side by side, each with servers of its own: every argument one run, "flavour pytest-arguments…"
# as words of the shell (quote an argument with spaces). Each run's output is printed whole once all are done.
side_by_side() {
  local spec i pids=() outputs=() output
  for spec in "$@"; do
    output=$(mktemp)
    outputs+=("$output")
    (
      summaries=() status=0
      eval "words=($spec)"
      run "${words[@]}"
      printf '%s\n' "${summaries[@]}" >"$output.summary"
      exit "$status"
    ) >"$output" 2>&1 &
    pids+=($!)
  done
  running=("${pids[@]}")
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || status=1
    cat "${outputs[$i]}"
    mapfile -t -O "${#summaries[@]}" summaries <"${outputs[$i]}.summary" || status=1
    rm -f "${outputs[$i]}" "${outputs[$i]}.summary"
  done
  running=()
}

if [[ -n "$one_run" ]]; then
  testbin_ready
  run "" "$@"
else
  # What needs no binary and no server, while they build (in a shell of its own, as every run: its CPU
  # seconds leave out the builds', which bash may reap meanwhile).
  side_by_side "none -m 'not testbin'"
  # The MariaDB runs share the tests whose result is the same on both versions out between them
  # (tests/support/passes.py); the admission tests (api/) and the others that never touch the server run on
  # MySQL 9.7 only, as do those marked fleet or one_flavour.
  export DBUSER_OPERATOR_MARIADB_SHARE=1
  mariadb_folders="tests/integration/mysql tests/integration/operator"
  roots_ready
  # What needs a server but no Go binary (the MySQL layer), on each flavour, while the Go build goes on.
  side_by_side "mysql-9.7 -m 'testbin and not gobin'" \
    "mariadb-11.8 -m 'testbin and not gobin' $mariadb_folders" \
    "mariadb-10.11 -m 'testbin and not gobin' $mariadb_folders"
  testbin_ready
  # The rest: MySQL 9.7 in three runs of about the same length (the DatabaseUser tests, the operator's
  # others, everything else), and the operator's tests shared out between the MariaDB versions.
  users=tests/integration/operator/databaseuser
  side_by_side "mysql-9.7 -m gobin $users" \
    "mysql-9.7 -m gobin tests/integration/operator --ignore=$users" \
    "mysql-9.7 -m gobin tests --ignore=tests/integration/operator" \
    "mariadb-11.8 -m gobin $mariadb_folders" \
    "mariadb-10.11 -m gobin $mariadb_folders"
fi

echo "--- test runs" >&2
printf '%s\n' "${summaries[@]}" >&2
echo "test suite wall time: $((SECONDS - start)) s" >&2
# All runs together, as one closing line: "total: N passed, N failed, N skipped".
count() { printf '%s\n' "${summaries[@]}" | grep -oE "[0-9]+ $1" | awk '{n += $1} END {print n + 0}'; }
echo "total: $(count passed) passed, $(($(count failed) + $(count error))) failed, $(count skipped) skipped"
exit "$status"
