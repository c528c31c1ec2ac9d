#!/usr/bin/env bash
# Builds localhost/outpost-busybox:latest, the image Outpost's podman tests (and offline demos)
# run: no registry is reachable from the machines we test on, so the image is made from Debian's
# busybox-static, one static binary plus a symlink per applet (/bin/sh, httpd, sleep, ...).
# Usage: build-image.sh [IMAGE]   (needs root, podman and busybox-static; CONTAINERS_CONF honoured)
set -euo pipefail

image="${1:-localhost/outpost-busybox:latest}"
busybox=/bin/busybox
[ -x "$busybox" ] || { echo "build-image: $busybox is missing; install busybox-static (apt-get install busybox-static)" >&2; exit 1; }
# The dynamically linked busybox package installs the same path and would fail in an empty rootfs.
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'install ok installed' \
  || { echo "build-image: $busybox is not from busybox-static; apt-get install busybox-static" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/root" "$root/www" "$root/var/www"
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
  [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
done
# httpd and id look users up; a container with no passwd file shows "unknown uid" everywhere.
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > "$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
printf 'outpost-busybox\n' > "$root/www/index.html"

tar -C "$root" --numeric-owner --owner=0 --group=0 -cf "$work/rootfs.tar" .
podman import --quiet \
  --change 'ENV PATH=/bin' \
  --change 'WORKDIR /' \
  --change 'CMD ["/bin/sh"]' \
  --message "busybox-static $(dpkg-query -W -f='${Version}' busybox-static 2>/dev/null || echo unknown)" \
  "$work/rootfs.tar" "$image" >/dev/null
echo "build-image: built $image"
