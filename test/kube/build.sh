#!/usr/bin/env bash
# Builds the real kube-apiserver the kubernetes driver is tested against, from the published
# Kubernetes Go modules pinned in test/kube/go.mod (k8s.io/kubernetes at a release tag, its k8s.io/*
# staging modules replaced by the matching v0.x releases). Module checksums are checked against
# test/kube/go.sum and the Go checksum database; -mod=readonly refuses anything go.mod does not pin.
#
# The binary is cached outside the repository, keyed by the Kubernetes version and go.sum:
#   ${OUTPOST_CACHE:-${XDG_CACHE_HOME:-~/.cache}/outpost}/kube-apiserver-<version>-<go.sum hash>/kube-apiserver
# A second run finds it and costs nothing. Prints the binary's path as its last line of stdout.
# Concurrent runs wait for each other (flock), so only one builds.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
say() { printf 'kube-build: %s\n' "$*" >&2; }
fail() { printf 'kube-build: FAILED: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null || fail "no Go toolchain on PATH; install Go >= 1.24 (https://go.dev/dl) to build kube-apiserver"
version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2; exit }' "$here/go.mod")"
[ -n "$version" ] || fail "test/kube/go.mod does not require k8s.io/kubernetes at a v1.x release"
sum="$(sha256sum "$here/go.sum" | cut -c1-12)"
cache="${OUTPOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/outpost}"
dir="$cache/kube-apiserver-$version-$sum"
bin="$dir/kube-apiserver"

mkdir -p "$cache"
exec 9>"$cache/kube-apiserver.lock"
flock 9

if [ ! -x "$bin" ]; then
  start=$(date +%s)
  say "building kube-apiserver $version into $dir (a cold build takes a while; later runs reuse it)"
  mkdir -p "$dir"
  minor="${version#v1.}"
  minor="${minor%%.*}"
  pkg=k8s.io/component-base/version
  ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  (
    cd "$here"
    # GOFLAGS from the environment could say -mod=mod; the pinned go.sum must decide.
    GOFLAGS=-mod=readonly CGO_ENABLED=0 GONOSUMDB= GOPRIVATE= GONOSUMCHECK= \
      nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$bin.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  ) || { rm -f "$bin.tmp"; fail "go build k8s.io/kubernetes/cmd/kube-apiserver ($version) failed (output above)"; }
  mv "$bin.tmp" "$bin"
  say "built in $(($(date +%s) - start)) s: $bin"
fi
echo "$bin"
