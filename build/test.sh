#!/usr/bin/env bash
# `npm test`: the type check and the format check beside the test suite, not before it (they took
# ~35 s of a run's wall time, most of it while vitest would have been starting up). Their output is
# printed when they finish; when one fails, the tests are stopped and the run fails at once, as it
# did when they ran first. Arguments go to vitest (`npm test -- test/foo.test.ts`).
set -uo pipefail
cd "$(dirname "$0")/.."
checks_log=$(mktemp)
trap 'rm -f "$checks_log"' EXIT
(npm run --silent typecheck && npm run --silent lint) >"$checks_log" 2>&1 &
checks=$!
vitest run "$@" &
tests=$!
if wait "$checks"; then
  echo "== typecheck and lint passed"
else
  cat "$checks_log"
  echo "== typecheck or lint failed (above): stopping the tests"
  kill -TERM "$tests" 2>/dev/null
  wait "$tests"
  exit 1
fi
wait "$tests"
