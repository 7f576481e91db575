#!/usr/bin/env bash
# Obtain the test binaries at the versions pinned in hack/versions.env:
# etcd, kube-apiserver, kubectl, helm, actionlint and cert-manager's controller (with its CRDs); the drivers of
# the documented connection examples (Go module, Connector/J's jar); and the MySQL server roots (hack/mysqlroots.sh).
#
#   hack/testbin.sh             build what is missing; print the directory that holds the binaries
#   hack/testbin.sh --no-roots  the same, without the server roots (hack/test.sh builds those on its own)
#   hack/testbin.sh --dir       print that directory only (builds nothing)
#
# The server roots built are those the tests will run: none with MYSQL_URL, the one that
# DBUSER_OPERATOR_MYSQL_FLAVOUR names (none for mariadb-10.11, the machine's package), else all of them
# (also for mysql-9.7, the default: its pass runs the tests marked fleet, with a server of every flavour).
#
# Binaries that KUBEBUILDER_ASSETS already holds (etcd, kube-apiserver, kubectl) are not built: the test
# environment takes them from there first. Everything else is built from the Go module proxy into a cache
# outside the repo ($DBUSER_OPERATOR_CACHE, default ~/.cache/dbuser-operator). Idempotent: a binary that is
# already built is kept, so a warm run takes well under a second.
set -euo pipefail

# shellcheck source=versions.env
source "$(dirname "${BASH_SOURCE[0]}")/versions.env"

CACHE=${DBUSER_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dbuser-operator}
# RECIPE names how the binaries are built: a change of the build (flags, not versions) gets a new directory,
# so a cache built the old way is never taken for the new one (and is left for whoever still uses it).
# 2: helm with its Makefile's version settings (the Kubernetes version it assumes offline).
RECIPE=2
BIN="$CACHE/testbin/k8s-$KUBERNETES_VERSION-etcd-$ETCD_VERSION-helm-$HELM_VERSION-actionlint-$ACTIONLINT_VERSION-r$RECIPE"
SRC="$CACHE/testbin/src"
HACK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [[ "${1:-}" == "--dir" ]]; then
  echo "$BIN"
  exit 0
fi
roots=1
[[ "${1:-}" != "--no-roots" ]] || roots=

log() { printf '[testbin %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# cpu_of PID: the CPU seconds (user + system) of PID's finished children so far (cutime + cstime of its /proc
# stat). Each build logs its wall time and CPU seconds, so that a slow build on a busy machine can be told
# from a build that got bigger.
cpu_of() {
  local stat
  read -ra stat <"/proc/$1/stat"
  echo $(((stat[15] + stat[16]) / $(getconf CLK_TCK)))
}
built() { # what, wall start, this shell's ($BASHPID, read outside a command substitution) CPU start
  local me=$BASHPID
  log "$1 built in $((SECONDS - $2)) s (CPU $(($(cpu_of "$me") - $3)) s)"
}

# Present already, here or in KUBEBUILDER_ASSETS?
have() {
  [[ -x "$BIN/$1" ]] || [[ -n "${KUBEBUILDER_ASSETS:-}" && -x "$KUBEBUILDER_ASSETS/$1" ]]
}

need_go() {
  command -v go >/dev/null || { log "Go is required to build the test binaries (apt-get install golang-go)"; exit 1; }
  export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
  # -w drops the DWARF at link time; -dwarf=false saves the compiler making it (about 9% less CPU on a cold
  # helm build). The binaries are the same programs: RECIPE stays.
  build_flags=(-trimpath -gcflags=all=-dwarf=false)
  export GOPATH="${GOPATH:-$CACHE/go}" GOCACHE="${GOCACHE:-$CACHE/go-build}"
}

build_etcd() {
  have etcd && return
  need_go
  local dir="$SRC/etcd-$ETCD_VERSION" started=$SECONDS me cpu
  me=$BASHPID cpu=$(cpu_of "$me")
  mkdir -p "$dir"
  log "building etcd $ETCD_VERSION"
  cat >"$dir/main.go" <<'GO'
// Command etcd is the upstream etcd server entry point, built for tests.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  if [[ ! -f "$dir/go.sum" ]]; then
    (cd "$dir" && rm -f go.mod && go mod init dbuser-operator.local/testbin/etcd 2>/dev/null \
      && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" 2>&1 | grep -v '^go: \(downloading\|added\)' >&2 || true)
  fi
  (cd "$dir" && go build "${build_flags[@]}" -ldflags "-s -w" -o "$BIN/etcd.tmp" .)
  mv "$BIN/etcd.tmp" "$BIN/etcd"
  built etcd "$started" "$cpu"
}

# kube-apiserver and kubectl come from one wrapper module over k8s.io/kubernetes, so they share compiled
# packages. Upstream replaces every staging module with ./staging/src/...; a module outside the repo must
# replace each with its published v0.<minor>.<patch> instead. The list is generated from upstream's go.mod.
write_kube_wrapper() {
  local dir=$1 staging upstream_mod
  staging="v0.${KUBERNETES_VERSION#v1.}"
  log "generating the wrapper module for k8s.io/kubernetes $KUBERNETES_VERSION (staging $staging)"
  upstream_mod=$(cd "$dir" && GOFLAGS= go list -m -f '{{.GoMod}}' "k8s.io/kubernetes@$KUBERNETES_VERSION")
  {
    echo "module dbuser-operator.local/testbin/kube"
    echo
    grep -E '^go ' "$upstream_mod"
    grep -E '^godebug ' "$upstream_mod" || true
    echo
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    echo
    echo "replace ("
    awk '/=> \.\/staging\/src\//{print $1}' "$upstream_mod" | while read -r module; do
      # Only the staging modules upstream requires: the others (samples) are not all published.
      if grep -qE "^[[:space:]]+$module v0\.0\.0\$" "$upstream_mod"; then
        printf '\t%s => %s %s\n' "$module" "$module" "$staging"
      fi
    done
    echo ")"
  } >"$dir/go.mod.tmp"
  mv "$dir/go.mod.tmp" "$dir/go.mod"
}

build_kube() {
  have kube-apiserver && have kubectl && return
  need_go
  local dir="$SRC/kube-$KUBERNETES_VERSION" minor ldflags pkg cmd started=$SECONDS me cpu
  me=$BASHPID cpu=$(cpu_of "$me")
  mkdir -p "$dir"
  [[ -f "$dir/go.mod" ]] || write_kube_wrapper "$dir"
  # The version ldflags of hack/lib/version.sh, so that /version and `kubectl version` tell the truth.
  minor=$(echo "$KUBERNETES_VERSION" | cut -d. -f2)
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  # Both in one `go build`: the packages they share compile once, and kubectl's own compile while
  # kube-apiserver links (two builds in a row left one core idle during each link).
  local out="$BIN/.kube-build" missing=()
  for cmd in kube-apiserver kubectl; do have "$cmd" || missing+=("k8s.io/kubernetes/cmd/$cmd"); done
  log "building ${missing[*]##*/} $KUBERNETES_VERSION (cold: about 9 minutes on 2 cores; cached afterwards)"
  rm -rf "$out" && mkdir -p "$out"
  (cd "$dir" && GOFLAGS="$GOFLAGS -mod=mod" go build "${build_flags[@]}" -ldflags "$ldflags" -o "$out/" "${missing[@]}")
  for cmd in "${missing[@]##*/}"; do mv "$out/$cmd" "$BIN/$cmd"; done
  rmdir "$out"
  built "${missing[*]##*/}" "$started" "$cpu"
}

go_install() { # name module-path version [extra ldflags]
  have "$1" && return
  need_go
  local started=$SECONDS me cpu
  me=$BASHPID cpu=$(cpu_of "$me")
  log "building $1 $3"
  GOBIN="$BIN" go install "${build_flags[@]}" -ldflags "-s -w ${4:-}" "$2@$3"
  built "$1" "$started" "$cpu"
}

# The -X settings of helm's Makefile: its version, and the Kubernetes version it assumes when no cluster is
# asked (`helm template`, `helm lint`): the major and minor of the k8s.io/client-go its go.mod requires, v0.X.Y
# being Kubernetes 1.X. Without them helm assumes v1.20.0, and a chart's kubeVersion constraint refuses it.
helm_ldflags() {
  local gomod client_go minor
  gomod=$(cd "$SRC" && GOFLAGS= go mod download -json "helm.sh/helm/v3@$HELM_VERSION" \
    | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  client_go=$(awk '$1 == "k8s.io/client-go" {print $2; exit}' "$gomod")
  minor=$(echo "$client_go" | cut -d. -f2)
  [[ -n "$minor" ]] || { log "no k8s.io/client-go in $gomod"; exit 1; }
  local flags="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  flags+=" -X helm.sh/helm/v3/internal/version.metadata= -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    flags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$minor"
  done
  echo "$flags"
}

build_helm() {
  have helm && return
  need_go
  local flags
  flags=$(helm_ldflags)
  go_install helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION" "$flags"
}

# cert-manager's controller, for the tests of spec.tls.certificate: upstream's cmd/controller is a module of
# its own that the module proxy does not serve, so hack/cert-manager/main.go runs the controllers of the
# published module (unchanged) that the tests need. Its directory also holds the CRDs of the same module
# version (deploy/crds, which cert-manager's own integration tests load), and the main.go it was built from:
# a change of either version or main.go builds it anew. Not in KUBEBUILDER_ASSETS, so always built here.
build_cert_manager() {
  local dest="$BIN/cert-manager-$CERT_MANAGER_VERSION" began=$SECONDS
  [[ -x "$dest/cert-manager-controller" ]] && cmp -s "$HACK/cert-manager/main.go" "$dest/main.go" && return
  need_go
  local dir="$SRC/cert-manager-$CERT_MANAGER_VERSION" out="$dest.tmp" module me cpu
  me=$BASHPID cpu=$(cpu_of "$me")
  mkdir -p "$dir"
  cp "$HACK/cert-manager/main.go" "$dir/main.go"
  if [[ ! -f "$dir/go.sum" ]]; then
    (cd "$dir" && rm -f go.mod && go mod init dbuser-operator.local/testbin/cert-manager 2>/dev/null \
      && go get "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" 2>&1 \
      | grep -v '^go: \(downloading\|added\)' >&2 || true)
  fi
  log "building cert-manager's controller $CERT_MANAGER_VERSION (cold: about 2.5 minutes of both cores)"
  rm -rf "$out" && mkdir -p "$out/crds"
  # -mod=mod: the modules the build needs and no more (go mod tidy would fetch its tests' too, ~60 MB).
  (cd "$dir" && GOFLAGS="$GOFLAGS -mod=mod" \
    go build "${build_flags[@]}" -ldflags "-s -w" -o "$out/cert-manager-controller" .)
  module=$(cd "$dir" && go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)
  install -m 0644 "$module"/deploy/crds/cert-manager.io_*.yaml "$out/crds/"
  cp "$dir/main.go" "$out/main.go"
  rm -rf "$dest" && mv "$out" "$dest"
  built "cert-manager's controller (in $dest)" "$began" "$cpu"
}

# The drivers of the connection examples of docs/workload-identity.md, which
# tests/integration/operator/workload/test_documented_clients.py compiles and runs as the page shows them:
# the Go module (downloaded only: its packages compile in about a second once the standard library is in Go's
# build cache, which the other builds fill, so the test's first build does it) and Connector/J's jar (mvn,
# from Maven Central, its local repository in the cache). In $BIN/clients: go/go.mod and go.sum, the jar.
fetch_client_drivers() {
  local dir="$BIN/clients" began=$SECONDS me cpu tool out
  local jar="$dir/mysql-connector-j-$MYSQL_CONNECTOR_J_VERSION.jar"
  grep -qs "github.com/go-sql-driver/mysql $GO_MYSQL_DRIVER_VERSION" "$dir/go/go.mod" && [[ -f "$jar" ]] && return
  need_go
  for tool in javac java mvn; do
    command -v "$tool" >/dev/null || { log "$tool is required for the test of the Java example (hack/setup.sh installs it: openjdk-17-jdk-headless, maven)"; exit 1; }
  done
  me=$BASHPID cpu=$(cpu_of "$me")
  log "fetching the examples' drivers: go-sql-driver/mysql $GO_MYSQL_DRIVER_VERSION, Connector/J $MYSQL_CONNECTOR_J_VERSION"
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp/go"
  (cd "$dir.tmp/go" && go mod init dbuser-operator.local/testbin/clients 2>/dev/null \
    && go get "github.com/go-sql-driver/mysql@$GO_MYSQL_DRIVER_VERSION" 2>&1 | grep -v '^go: \(downloading\|added\)' >&2 || true)
  grep -q "github.com/go-sql-driver/mysql $GO_MYSQL_DRIVER_VERSION" "$dir.tmp/go/go.mod" \
    || { log "go get github.com/go-sql-driver/mysql@$GO_MYSQL_DRIVER_VERSION failed (above)"; exit 1; }
  # Its output only when it fails (-q still writes colour codes).
  if ! out=$(mvn -B -q -Dmaven.repo.local="$CACHE/m2" dependency:copy \
    -Dartifact="com.mysql:mysql-connector-j:$MYSQL_CONNECTOR_J_VERSION" -DoutputDirectory="$dir.tmp" 2>&1) \
    || [[ ! -f "$dir.tmp/${jar##*/}" ]]; then
    printf '%s\n' "$out" >&2
    log "mvn did not fetch ${jar##*/}"
    exit 1
  fi
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
  built "the examples' drivers (in $dir)" "$began" "$cpu"
}

start=$SECONDS
# The MySQL server roots download and unpack packages while Go compiles: built alongside, waited for below.
roots_pid=
if [[ -n "$roots" && -z "${MYSQL_URL:-}" ]]; then
  case "${DBUSER_OPERATOR_MYSQL_FLAVOUR:-}" in
    mariadb-10.11) ;;
    "" | mysql-9.7) "$(dirname "${BASH_SOURCE[0]}")/mysqlroots.sh" >/dev/null & roots_pid=$! ;;
    *) "$(dirname "${BASH_SOURCE[0]}")/mysqlroots.sh" "$DBUSER_OPERATOR_MYSQL_FLAVOUR" >/dev/null & roots_pid=$! ;;
  esac
fi
others=()
# A failed build stops the others and the roots too.
trap 'for pid in "${others[@]}" $roots_pid; do kill "$pid" 2>/dev/null || true; done' EXIT
mkdir -p "$BIN" "$SRC"
# The builds side by side: each downloads its modules (the network) before and while it compiles (the CPU),
# so one compiles while another waits; Go's module and build caches are safe to share between them.
build_etcd &
others+=($!)
(
  build_helm
  go_install actionlint github.com/rhysd/actionlint/cmd/actionlint "$ACTIONLINT_VERSION"
) &
others+=($!)
build_cert_manager &
others+=($!)
fetch_client_drivers &
others+=($!)
(build_kube)  # a shell of its own, as the others: its CPU seconds are its own (bash reaps theirs meanwhile)
for pid in "${others[@]}"; do
  wait "$pid" || { log "a build failed (above)"; exit 1; }
done
others=()
log "test binaries ready in $BIN ($((SECONDS - start)) s, CPU $(cpu_of $$) s)"
if [[ -n "$roots_pid" ]]; then
  wait "$roots_pid" || { roots_pid=; log "building the MySQL server roots failed (above)"; exit 1; }
  roots_pid=
fi
echo "$BIN"
