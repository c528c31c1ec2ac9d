#!/usr/bin/env bash
# Builds outpost-helm (build/helm/main.go), the hub's chart renderer: Helm's own library
# (helm.sh/helm/v4, pinned in build/helm/go.mod; module checksums checked against go.sum and the Go
# checksum database, -mod=readonly refuses anything go.mod does not pin). docs/catalog.md, "Helm
# charts", says why the hub renders with it.
#
#   bash build/helm/build.sh          prints the binary's path as its last line of stdout
#
# The binary is cached outside the repository, keyed by the Helm version and the hash of go.sum and
# the program's sources:
#   ${OUTPOST_CACHE:-${XDG_CACHE_HOME:-~/.cache}/outpost}/outpost-helm-<helm version>-<hash>/outpost-helm
# A second run finds it and costs nothing. Concurrent runs wait for each other (flock).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
say() { printf 'helm-build: %s\n' "$*" >&2; }
fail() { printf 'helm-build: FAILED: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null || fail "no Go toolchain on PATH; install Go >= 1.26 (helm.sh/helm/v4 v4.3.2 needs it) (https://go.dev/dl) to build the chart renderer"
version="$(awk '$1 == "helm.sh/helm/v4" { print $2; exit }' "$here/go.mod")"
[ -n "$version" ] || fail "build/helm/go.mod does not require helm.sh/helm/v4"
grep -q "helmVersion = \"$version\"" "$here/version.go" || fail "build/helm/version.go does not say $version as go.mod does"
sum="$(cat "$here/go.mod" "$here/go.sum" "$here"/*.go | sha256sum | cut -c1-12)"
cache="${OUTPOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/outpost}"
dir="$cache/outpost-helm-$version-$sum"
bin="$dir/outpost-helm"

mkdir -p "$cache"
exec 9>"$cache/helm-build.lock"
flock 9

if [ ! -x "$bin" ]; then
  start=$(date +%s)
  say "building outpost-helm (Helm $version) into $dir (a cold build takes minutes; later runs reuse it)"
  mkdir -p "$dir"
  (
    cd "$here"
    # GOFLAGS from the environment could say -mod=mod; the pinned go.sum must decide.
    GOFLAGS=-mod=readonly CGO_ENABLED=0 GONOSUMDB= GOPRIVATE= \
      nice -n 10 go build -trimpath -ldflags "-s -w" -o "$bin.tmp" .
  ) || { rm -f "$bin.tmp"; fail "go build of build/helm (Helm $version) failed (output above)"; }
  mv "$bin.tmp" "$bin"
  say "built in $(($(date +%s) - start)) s: $bin"
fi
echo "$bin"
