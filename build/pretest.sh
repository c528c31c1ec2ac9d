#!/usr/bin/env bash
# Runs before `npm test` (npm's pretest hook): makes a fresh clone testable with that one command.
# Installs npm dependencies from the lockfile when node_modules is missing or unusable, then the
# system dependencies of the tests (podman, busybox, Chromium, the test image) through
# build/setup.sh, which is idempotent and takes well under a second when everything is there.
# Usable: the pinned Node is there and opens a SQLite database through better-sqlite3. (Checking
# for better-sqlite3's build/Release binding instead, as before, reinstalled on every run since it
# loads its N-API prebuild: a second `npm ci` of ~20 s after the one .ci/run does.)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x node_modules/.bin/node ] ||
  ! node_modules/.bin/node -e "new (require('better-sqlite3'))(':memory:').close()" 2>/dev/null; then
  echo "pretest: installing npm dependencies (npm ci)"
  npm ci --no-audit --no-fund
fi
bash build/setup.sh
# The hub's Helm chart renderer (build/helm): a no-op once cached, a cold build of minutes once.
bash build/helm/build.sh >/dev/null
