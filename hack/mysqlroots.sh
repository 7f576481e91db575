#!/usr/bin/env bash
# Build the server roots that the test environment runs MySQL 9.7 and MariaDB 11.8 from.
#
#   hack/mysqlroots.sh [FLAVOUR...]       build the missing roots (default: all); print one "FLAVOUR DIR" a line
#   hack/mysqlroots.sh --dir FLAVOUR      print the root's directory only (builds nothing)
#
# Debian stable ships no MySQL and an older MariaDB, and the newer packages need a newer glibc than the
# host's, so each flavour is a debootstrap root (minbase) that the test environment chroots into. A root is
# built once into the cache outside the repo ($DBUSER_OPERATOR_CACHE, default ~/.cache/dbuser-operator),
# keyed by flavour and Debian suite; the package version installed is recorded in the root's VERSION file.
# A build goes to a temporary directory that is renamed when complete, so an interrupted build leaves no
# half root behind. Needs root and debootstrap (apt-get install debootstrap); about a minute per root.
set -euo pipefail

CACHE=${DBUSER_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dbuser-operator}
ROOTS="$CACHE/roots"

log() { printf '[mysqlroots %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# flavour -> "suite packages version-package"
spec() {
  case "$1" in
    mysql-9.7) echo "sid mysql-server-core,mysql-client-core mysql-server-core" ;;
    mariadb-11.8) echo "trixie mariadb-server,mariadb-client mariadb-server" ;;
    *) die "unknown flavour '$1' (known: mysql-9.7 mariadb-11.8; mariadb-10.11 is the host's package)" ;;
  esac
}

root_dir() { # flavour
  local suite
  spec "$1" >/dev/null
  read -r suite _ <<<"$(spec "$1")"
  echo "$ROOTS/$1-$suite"
}

# The Debian mirror to build from: DBUSER_OPERATOR_DEBIAN_MIRROR, else the one of apt's own sources in
# APT_DIR (default /etc/apt): the first URI of an enabled deb stanza of sources.list.d/*.sources, else the
# first deb line of sources.list and sources.list.d/*.list; neither a security archive nor a dated snapshot
# (a path ending in YYYYMMDDTHHMMSSZ, which has no sid). None there is an error: no mirror is written into
# this script.
mirror() { # [APT_DIR]
  local apt=${1:-/etc/apt} uri
  if [[ -n "${DBUSER_OPERATOR_DEBIAN_MIRROR:-}" ]]; then
    echo "$DBUSER_OPERATOR_DEBIAN_MIRROR"
    return
  fi
  uri=$(deb822_uris "$apt"/sources.list.d/*.sources | archive_uris | head -n1 || true)
  if [[ -z "$uri" ]]; then
    uri=$(grep -hsE '^[[:space:]]*deb[[:space:]]' "$apt"/sources.list "$apt"/sources.list.d/*.list \
      | grep -v -- '-security' \
      | awk '{for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; break}}' | archive_uris | head -n1 || true)
  fi
  [[ -n "$uri" ]] || die "no Debian mirror in apt's sources ($apt/sources.list.d/*.sources, $apt/sources.list," \
    "$apt/sources.list.d/*.list); set DBUSER_OPERATOR_DEBIAN_MIRROR to the URL of a Debian mirror"
  echo "$uri"
}

# The URIs of the deb822 files given, stanza by stanza (separated by blank lines): only those of stanzas
# whose Types include deb (not deb-src alone) and that are not switched off (Enabled: no).
deb822_uris() { # FILE...
  local file
  for file in "$@"; do [[ -r "$file" ]] && cat -- "$file" && echo; done | awk '
    function flush() { if (binary && enabled) for (i = 1; i <= n; i++) print uris[i]; n = 0; binary = 0; enabled = 1 }
    BEGIN { enabled = 1 }
    /^[[:space:]]*$/ { flush(); next }
    /^[[:space:]]*#/ { next }
    tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") binary = 1 }
    tolower($1) == "uris:" { for (i = 2; i <= NF; i++) uris[++n] = $i }
    tolower($1) == "enabled:" && tolower($2) == "no" { enabled = 0 }
    END { flush() }' || true
}

# The URIs read on stdin that are a Debian archive: not the security one, not a dated snapshot.
archive_uris() { grep -vE -- '-security/?$|/[0-9]{8}T[0-9]{6}Z/?$' || true; }

build() { # flavour
  local flavour=$1 suite packages vpkg dir tmp version start url
  read -r suite packages vpkg <<<"$(spec "$flavour")"
  dir=$(root_dir "$flavour")
  if [[ -f "$dir/VERSION" ]]; then
    echo "$flavour $dir"
    return
  fi
  [[ $(id -u) == 0 ]] || die "building the $flavour root needs root (debootstrap and chroot); run as root, or point MYSQL_URL at a server"
  command -v debootstrap >/dev/null || PATH="$PATH:/usr/sbin:/sbin" command -v debootstrap >/dev/null \
    || die "debootstrap is not installed: apt-get install debootstrap (hack/setup.sh does)"
  mkdir -p "$ROOTS"
  # One builder per root: a second caller waits for the first and then finds the root built.
  exec {lock}>"$ROOTS/.$flavour.lock"
  flock "$lock"
  if [[ -f "$dir/VERSION" ]]; then
    flock -u "$lock"
    echo "$flavour $dir"
    return
  fi
  rm -rf --one-file-system "$ROOTS/.tmp-$flavour-"*
  tmp="$ROOTS/.tmp-$flavour-$$"
  url=$(mirror) || exit 1
  start=$SECONDS
  log "building the $flavour root: debootstrap --variant=minbase $suite with $packages from $url (about a minute)"
  # Progress: debootstrap's phases (its full output goes to the log).
  local status
  set +e
  PATH="$PATH:/usr/sbin:/sbin" debootstrap --variant=minbase --include="$packages" \
    "$suite" "$tmp" "$url" 2>&1 | tee "$ROOTS/.$flavour.log" | {
    grep --line-buffered -E '^(I: (Retrieving Release |Resolving dependencies of base|Installing core|Unpacking the base|Configuring the base|Base system)|E:|W: Failure)' \
      | sed -u "s/^/[mysqlroots $flavour] /" >&2
    true
  }
  status=${PIPESTATUS[0]}
  set -e
  if ((status)); then
    tail -n 20 "$ROOTS/.$flavour.log" >&2
    rm -rf --one-file-system "$tmp"
    die "debootstrap of the $flavour root failed (full log: $ROOTS/.$flavour.log)"
  fi
  rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/*_Packages
  version=$(chroot "$tmp" dpkg-query -W -f='${Version}' "$vpkg")
  printf '%s %s %s\n' "$flavour" "$vpkg" "$version" >"$tmp/VERSION"
  mv "$tmp" "$dir"
  flock -u "$lock"
  log "$flavour root ready: $vpkg $version in $dir ($((SECONDS - start)) s)"
  echo "$flavour $dir"
}

# Sourced (the unit tests do), the script only defines its functions.
[[ "${BASH_SOURCE[0]}" == "$0" ]] || return 0

if [[ "${1:-}" == "--dir" ]]; then
  [[ -n "${2:-}" ]] || die "usage: $0 --dir FLAVOUR"
  root_dir "$2"
  exit 0
fi

flavours=("$@")
((${#flavours[@]})) || flavours=(mysql-9.7 mariadb-11.8)
# The roots are built side by side (mostly downloads); the exit status is the first failure's.
pids=()
for flavour in "${flavours[@]}"; do
  spec "$flavour" >/dev/null
  build "$flavour" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
exit "$status"
