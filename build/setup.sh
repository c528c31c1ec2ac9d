#!/usr/bin/env bash
# Installs what Outpost's tests need on a Debian 12 machine (CI runs it as root before `npm test`;
# `npm run setup` locally). Idempotent and quick when everything is there: it only calls apt-get
# for missing packages, rewrites the podman config only when it differs, and builds the test image
# only when it is absent.
#
# What and why:
# - podman + runc + catatonit: the podman driver's runtime. runc because crun refuses hybrid
#   cgroups v1; catatonit because `podman kube play` builds its pod infra ("pause") image from it
#   and fails with 'finding pause binary' without it. containernetworking-plugins (pulls iptables)
#   is the network stack: root pods get a bridge IP the host can reach. Not needed as root on a
#   native overlay-capable filesystem: uidmap, slirp4netns, fuse-overlayfs (rootless only).
# - busybox-static: the process driver's test commands and the busybox test image.
# - chromium + chromium-driver: the UI tests.
# - prometheus: for its promtool; test/metrics.test.ts runs `promtool check metrics` on the hub's
#   /metrics and on an edge's (through the hub). The Prometheus server itself is not started.
# - containerd (with its shim and ctr) and gcc: the artifacts of the real clusters test/clusters.test.ts
#   makes on an edge (docs/clusters.md): containerd, runc, the CNI plugins and etcd from Debian, the
#   Kubernetes components from test/kube/build.sh, the pause image from a static C binary (gcc -static;
#   libc6-dev comes with gcc). Installing containerd starts no daemon here: each node runs its own.
# - etcd-server: the store of the real kube-apiserver the kubernetes driver is tested against
#   (test/kube/harness.ts). kube-apiserver itself is built from Go modules by test/kube/build.sh
#   (vitest's globalSetup runs it; it needs the Go toolchain, >= 1.24, which Debian 12 lacks).
# - docker-registry (CNCF distribution), skopeo, apache2-utils (htpasswd): the private registry
#   test/images.test.ts starts on loopback (htpasswd auth, TLS from a test CA) and fills with skopeo.
# - clamav-daemon: clamd, the catalog's malware scanner; test/fixtures/clamd.ts starts its own clamd
#   with its own config and a signature database the test makes (its systemd service and
#   freshclam play no part: no signature download is needed).
# - postgresql: the server and psql for the hub's PostgreSQL backend (issue #22); test/fixtures/postgres.ts
#   starts its own throwaway cluster (initdb + pg_ctl as nobody, a loopback port, a temp dir). The
#   system service the package sets up plays no part.
# - openssh-server (and its client): the SSH `-L` hop the interconnect benchmark compares the hub
#   with (bench/lib/ssh-hop.ts starts its own sshd on loopback with its own keys and config file;
#   the system service plays no part).
# - systemd: for systemd-analyze; the install tests (edge/install.test.ts, hub/install.test.ts,
#   test/e2e/install.test.ts) verify the units `outpost edge|hub install` writes with
#   `systemd-analyze verify`. systemd need not run as init for that.
# - kubectl and the other Kubernetes components are not Debian's (kubernetes-client is 1.20): the
#   tests build them at the version test/kube/go.mod pins (test/kube/build.sh, vitest's globalSetup).
# - faketime: libfaketime moves an edge agent's clock in test/hardening-clock.test.ts (edges whose
#   clock is hours behind or a year ahead of the hub's certificates).
# - /etc/outpost/containers.conf (override the path with OUTPOST_CONTAINERS_CONF): podman settings
#   for machines without systemd; the podman driver sets CONTAINERS_CONF to it for every podman
#   process it starts, and so does this script.
# - localhost/outpost-busybox:latest: the image podman tests run (no registry is reachable).
#
# Flags: --verify also runs a container and a two-container `podman kube play` (always done when
# this run installed or built something).
set -euo pipefail

start_ms=$(date +%s%3N)
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
conf="${OUTPOST_CONTAINERS_CONF:-/etc/outpost/containers.conf}"
image="${OUTPOST_TEST_IMAGE:-localhost/outpost-busybox:latest}"
packages=(podman runc catatonit containernetworking-plugins busybox-static chromium chromium-driver etcd-server prometheus systemd faketime clamav-daemon docker-registry skopeo apache2-utils postgresql containerd gcc openssh-server)
verify=0
changed=0
[ "${1:-}" = "--verify" ] && verify=1

say() { printf 'setup: %s\n' "$*"; }
fail() { printf 'setup: FAILED: %s\n' "$*" >&2; exit 1; }

# --- packages ---------------------------------------------------------------------------------
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || fail "missing packages: ${missing[*]}; run this script as root (sudo npm run setup)"
  export DEBIAN_FRONTEND=noninteractive
  # Other jobs may hold the dpkg lock (unattended upgrades, a parallel install): wait for it.
  apt_opts=(-o DPkg::Lock::Timeout=300 -o Dpkg::Use-Pty=0 -qq)
  # Refresh the package lists only when apt does not know a package (a fresh image has none).
  for p in "${missing[@]}"; do
    if ! apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
      say "apt-get update (no candidate for $p)"
      apt-get "${apt_opts[@]}" update >/dev/null || fail "apt-get update failed; check the Debian mirror in /etc/apt/sources.list*"
      break
    fi
  done
  say "installing ${missing[*]}"
  log="$(mktemp)"
  if ! apt-get "${apt_opts[@]}" install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    rm -f "$log"
    fail "apt-get install ${missing[*]} failed (output above)"
  fi
  rm -f "$log"
  changed=1
else
  say "packages present: ${packages[*]}"
fi

# --- podman configuration ---------------------------------------------------------------------
if ! cmp -s "$here/podman/containers.conf" "$conf" 2>/dev/null; then
  mkdir -p "$(dirname "$conf")" || fail "cannot create $(dirname "$conf"); run as root or set OUTPOST_CONTAINERS_CONF to a writable path"
  install -m 0644 "$here/podman/containers.conf" "$conf" || fail "cannot write $conf"
  say "wrote $conf"
  changed=1
else
  say "podman config up to date: $conf"
fi
export CONTAINERS_CONF="$conf"

podman info --format '{{.Host.OCIRuntime.Name}}' >/dev/null 2>&1 \
  || fail "podman does not work with $conf: $(podman info 2>&1 | tail -n 3)"

# --- test image -------------------------------------------------------------------------------
if podman image exists "$image"; then
  say "image present: $image"
else
  "$here/podman/build-image.sh" "$image" || fail "building $image failed (output above)"
  say "built $image"
  changed=1
fi

# --- smoke test -------------------------------------------------------------------------------
if [ $verify = 1 ] || [ $changed = 1 ]; then
  out="$(podman run --rm "$image" echo outpost-ok 2>&1)" || fail "podman run $image failed: $out"
  [ "$out" = outpost-ok ] || fail "podman run $image printed '$out' instead of 'outpost-ok'"
  pod="outpost-setup-check-$$"
  yaml="$(mktemp --suffix=.yaml)"
  cat >"$yaml" <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $pod
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: a
    image: $image
    command: ["sleep", "600"]
  - name: b
    image: $image
    command: ["sleep", "600"]
YAML
  cleanup_pod() { podman pod rm -f -t 0 "$pod" >/dev/null 2>&1 || true; rm -f "$yaml"; }
  trap cleanup_pod EXIT
  out="$(podman kube play "$yaml" 2>&1)" || fail "podman kube play of a two-container pod failed: $out"
  running="$(podman ps --filter "pod=$pod" --filter status=running --format '{{.Names}}' | grep -c -- "^$pod-" || true)"
  [ "$running" = 2 ] || fail "podman kube play started $running of 2 containers in pod $pod"
  cleanup_pod
  trap - EXIT
  say "verified: podman run and a two-container kube play work"
fi

say "done in $(( $(date +%s%3N) - start_ms )) ms"
