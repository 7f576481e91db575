#!/usr/bin/env bash
# Prepare this machine for the tests and the local run; idempotent, quick when nothing is missing.
#   1. system packages: MariaDB server and client, zsh, debootstrap for the MySQL 9.7 and MariaDB 11.8 roots
#      (unless MYSQL_URL names a server), a JDK and Maven (the Java example's test), via apt-get as root or sudo
#   2. the Python environment: .venv with the project and its dev extras, refreshed when pyproject.toml changes
#   3. the test binaries and server roots: hack/testbin.sh (a cold build takes about 10 minutes, the roots
#      about a minute each; cached outside the repo); not with --no-testbin
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf '[setup %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# --- 1. system packages --------------------------------------------------------------------------------
found() { # any of the named programs, searching the sbin folders too
  local name
  for name in "$@"; do PATH="$PATH:/usr/sbin:/usr/local/sbin" command -v "$name" >/dev/null && return 0; done
  return 1
}
packages=()
[[ -n "${MYSQL_URL:-}" ]] || found mariadbd mysqld || packages+=(mariadb-server)
found mariadb mysql || packages+=(mariadb-client)
found zsh || packages+=(zsh)  # the plugin's zsh completion runs in the real zsh
# The Java example of docs/workload-identity.md is compiled and run by a test (javac, java) against the driver
# hack/testbin.sh fetches with mvn.
found javac || packages+=(openjdk-17-jdk-headless)
found mvn || packages+=(maven)
[[ -n "${MYSQL_URL:-}" || "${DBUSER_OPERATOR_MYSQL_FLAVOUR:-}" == mariadb-10.11 ]] || found debootstrap \
  || packages+=(debootstrap)
if ((${#packages[@]})); then
  as_root=()
  if [[ $(id -u) != 0 ]]; then
    command -v sudo >/dev/null || { log "please install: ${packages[*]}"; exit 1; }
    as_root=(sudo)
  fi
  log "installing ${packages[*]}"
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi

# --- 2. Python environment ---------------------------------------------------------------------------------
PYTHON=${PYTHON:-python3}
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [[ ! -f "$stamp" ]]; then
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { log "Python >= 3.11 is required (set PYTHON=...)"; exit 1; }
  log "creating the Python environment in .venv"
  [[ -x .venv/bin/python ]] || "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi

# --- 3. test binaries (not with --no-testbin: hack/test.sh builds them while the unit tests run) ------------
[[ "${1:-}" == --no-testbin ]] || hack/testbin.sh >/dev/null
