#!/usr/bin/env bash
# Runs before `npm test` (npm's pretest hook): makes a fresh clone testable with that one command.
# Installs npm dependencies from the lockfile when node_modules is missing, then the system
# dependencies of the tests (podman, busybox, Chromium, the test image) through build/setup.sh,
# which is idempotent and takes well under a second when everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules/.bin ] || [ ! -e node_modules/better-sqlite3/build/Release/better_sqlite3.node ]; then
  echo "pretest: installing npm dependencies (npm ci)"
  npm ci --no-audit --no-fund
fi
bash build/setup.sh
# The hub's Helm chart renderer (build/helm): a no-op once cached, a cold build of minutes once.
bash build/helm/build.sh >/dev/null
