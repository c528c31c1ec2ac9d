#!/usr/bin/env bash
# Builds a real Kubernetes component the tests run (kube-apiserver by default; kubectl,
# kube-controller-manager, kube-scheduler, kubelet on request), from the published Kubernetes Go
# modules pinned in test/kube/go.mod (k8s.io/kubernetes at a release tag, its k8s.io/* staging
# modules replaced by the matching v0.x releases; each component a `tool` line). Module checksums
# are checked against test/kube/go.sum and the Go checksum database; -mod=readonly refuses
# anything go.mod does not pin.
#
#   bash test/kube/build.sh [kube-apiserver|kubectl|kube-controller-manager|kube-scheduler|kubelet|informer] [RELEASE]
#
# `informer` is test/kube/informer/main.go, a client-go program built against the same pinned
# modules (its cache key adds its source's hash).
#
# RELEASE (e.g. v1.33.13-outpost.1) links the same sources again as another release: only
# `gitVersion` differs (-X k8s.io/component-base/version.gitVersion), so the Go build cache makes it
# a link, not a compile. The upgrade tests use it as "the next version" (test/clusters-upgrade.test.ts).
#
# Each binary is cached outside the repository, keyed by the component, the Kubernetes version and
# go.sum:
#   ${OUTPOST_CACHE:-${XDG_CACHE_HOME:-~/.cache}/outpost}/<component>-<version>-<go.sum hash>/<component>
# A second run finds it and costs nothing. Prints the binary's path as its last line of stdout.
# Concurrent runs wait for each other (flock), so only one builds at a time.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
say() { printf 'kube-build: %s\n' "$*" >&2; }
fail() { printf 'kube-build: FAILED: %s\n' "$*" >&2; exit 1; }

component="${1:-kube-apiserver}"
release="${2:-}"
case "$component" in
  kube-apiserver | kubectl | kube-controller-manager | kube-scheduler | kubelet | informer) ;;
  *) fail "unknown component '$component': use kube-apiserver, kubectl, kube-controller-manager, kube-scheduler, kubelet or informer" ;;
esac
command -v go >/dev/null || fail "no Go toolchain on PATH; install Go >= 1.24 (https://go.dev/dl) to build $component"
version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2; exit }' "$here/go.mod")"
[ -n "$version" ] || fail "test/kube/go.mod does not require k8s.io/kubernetes at a v1.x release"
if [ -n "$release" ]; then
  case "$release" in
    "$version"-*) ;;
    *) fail "release '$release' must be $version-SOMETHING (the pinned sources, linked as another release)" ;;
  esac
  [[ "$release" =~ ^v[0-9]+\.[0-9]+\.[0-9]+-[0-9A-Za-z.-]+$ ]] || fail "release '$release': use letters, digits, '.' and '-' after the version"
  version="$release"
fi
sum="$(sha256sum "$here/go.sum" | cut -c1-12)"
pkg_path="k8s.io/kubernetes/cmd/$component"
if [ "$component" = informer ]; then
  sum="$sum-$(sha256sum "$here/informer/main.go" | cut -c1-12)"
  pkg_path=./informer
fi
cache="${OUTPOST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/outpost}"
dir="$cache/$component-$version-$sum"
bin="$dir/$component"

mkdir -p "$cache"
exec 9>"$cache/kube-build.lock"
flock 9

if [ ! -x "$bin" ]; then
  start=$(date +%s)
  say "building $component $version into $dir (a cold build takes a while; later runs reuse it)"
  mkdir -p "$dir"
  minor="${version#v1.}"
  minor="${minor%%.*}"
  pkg=k8s.io/component-base/version
  ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  (
    cd "$here"
    # GOFLAGS from the environment could say -mod=mod; the pinned go.sum must decide.
    GOFLAGS=-mod=readonly CGO_ENABLED=0 GONOSUMDB= GOPRIVATE= GONOSUMCHECK= \
      nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$bin.tmp" "$pkg_path"
  ) || { rm -f "$bin.tmp"; fail "go build $pkg_path ($version) failed (output above)"; }
  mv "$bin.tmp" "$bin"
  say "built in $(($(date +%s) - start)) s: $bin"
fi
echo "$bin"
