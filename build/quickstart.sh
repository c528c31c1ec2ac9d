#!/usr/bin/env bash
# `npm run quickstart`: a hub and one edge on this machine, in the background, with the sample
# workload (examples/hello.yaml) deployed and READY 1/1. Safe to run again: whatever already runs
# is kept. `npm run quickstart -- --stop` removes the workload and stops both.
#
# Everything lives in ./.outpost/: hub/ and edge/ (data), hub.log and edge.log, cli.json (the CLI's
# login). The hub listens on 127.0.0.1:${OUTPOST_QUICKSTART_PORT:-7443} with TLS; the edge uses the
# process driver, is named "local" and labelled region=eu, which the sample placement selects.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
Q=$ROOT/.outpost
EXE=$ROOT/dist/outpost
PORT=${OUTPOST_QUICKSTART_PORT:-7443}
HUB_URL=https://127.0.0.1:$PORT
export OUTPOST_CONFIG=$Q/cli.json
# A user's own OUTPOST_HUB/OUTPOST_TOKEN would point the CLI at another hub.
unset OUTPOST_HUB OUTPOST_TOKEN OUTPOST_PROJECT OUTPOST_CA

say() { printf '\033[1m==>\033[0m %s\n' "$*"; }
die() { printf 'quickstart: %s\n' "$*" >&2; exit 1; }

# Running, not a zombie left unreaped, and ours (a recycled pid would run something else).
alive() {
  local pid
  pid=$(cat "$Q/$1.pid" 2>/dev/null) || return 1
  [ -r "/proc/$pid/stat" ] || return 1
  [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "--data $Q/$1"
}

# Polls "$@" for up to $1 seconds.
wait_for() {
  local secs=$1; shift
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.5
  done
}

prepare() {
  command -v node >/dev/null || die "node is not installed: install Node 20 (https://nodejs.org or your distribution's nodejs package)"
  # The sample workload runs busybox httpd on the host (process driver).
  if ! command -v busybox >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      say "installing busybox-static (the sample workload's web server)"
      apt-get install -y -qq busybox-static >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get install -y -qq busybox-static >/dev/null; } || die "cannot install busybox-static: install it by hand (apt-get install busybox-static)"
    else
      die "busybox is not installed: the sample workload needs it (sudo apt-get install busybox-static)"
    fi
  fi
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    say "installing dependencies (npm ci)"
    npm ci --no-audit --no-fund
  fi
  # The web UI is embedded when ui/dist exists at build time.
  if grep -q '"build:ui"' package.json && { [ ! -f ui/dist/index.html ] || [ -n "$(find ui -path ui/dist -prune -o -type f -newer ui/dist/index.html -print -quit)" ]; }; then
    say "building the web UI (npm run build:ui)"
    npm run --silent build:ui >/dev/null
  fi
  say "building dist/outpost if it is older than the sources"
  node_modules/.bin/tsx --eval '
    import { ensureBuilt } from "./build/sea/freshness.ts";
    const built = ensureBuilt(process.cwd(), ["dist/outpost", "dist/outpost.cjs"]);
    console.log(built ? "    built dist/outpost" : "    dist/outpost is up to date");
  '
  mkdir -p "$Q"
  # The directory ignores itself: no change to the repository's .gitignore needed.
  [ -f "$Q/.gitignore" ] || echo '*' > "$Q/.gitignore"
}

start_hub() {
  if alive hub; then
    say "hub already running (pid $(cat "$Q/hub.pid"))"
  else
    say "starting the hub on $HUB_URL (data in .outpost/hub, log in .outpost/hub.log)"
    # setsid: the hub keeps running after this script and is not hit by the terminal's Ctrl-C.
    setsid "$EXE" hub --data "$Q/hub" --listen "127.0.0.1:$PORT" >>"$Q/hub.log" 2>&1 </dev/null &
    echo $! >"$Q/hub.pid"
  fi
  local token
  wait_for 30 test -s "$Q/hub/admin.token" || die "the hub did not start; see .outpost/hub.log (port $PORT in use? set OUTPOST_QUICKSTART_PORT)"
  token=$(cat "$Q/hub/admin.token")
  wait_for 30 "$EXE" login --hub "$HUB_URL" --token "$token" || {
    alive hub || die "the hub exited; see the end of .outpost/hub.log (port $PORT in use? set OUTPOST_QUICKSTART_PORT)"
    "$EXE" login --hub "$HUB_URL" --token "$token" >&2 || true
    die "cannot log in to the hub at $HUB_URL; see .outpost/hub.log"
  }
}

start_edge() {
  if alive edge; then
    say "edge already running (pid $(cat "$Q/edge.pid"))"
    return
  fi
  local args=(edge --data "$Q/edge")
  if [ ! -f "$Q/edge/edge.json" ]; then
    local join
    join=$("$EXE" token create --ttl 10m --uses 1)
    args+=(--hub "$HUB_URL" --join-token "$join" --name local --labels region=eu --driver process)
  fi
  say "starting the edge \"local\" (process driver, data in .outpost/edge, log in .outpost/edge.log)"
  setsid "$EXE" "${args[@]}" >>"$Q/edge.log" 2>&1 </dev/null &
  echo $! >"$Q/edge.pid"
  wait_for 30 "$EXE" edge local status --data "$Q/edge" || {
    alive edge || die "the edge exited; see the end of .outpost/edge.log"
    die "the edge agent does not answer on .outpost/edge/agent.sock; see .outpost/edge.log"
  }
}

placement_ready() { "$EXE" get placement hello-eu | grep -Eq '^hello-eu +1/1 '; }

up() {
  prepare
  start_hub
  start_edge
  say "applying examples/hello.yaml (a busybox web server on port 8080, placed on edges labelled region=eu)"
  "$EXE" apply -f examples/hello.yaml
  say "waiting for READY 1/1"
  wait_for 60 placement_ready || {
    "$EXE" get placement hello-eu >&2 || true
    "$EXE" describe placement hello-eu >&2 || true
    die "hello-eu is not ready after 60 s (is port 8080 taken by another program?); see above and .outpost/edge.log"
  }
  "$EXE" get placement hello-eu
  cat <<EOF

The hub and the edge run in the background. To use the CLI from this shell:

  export OUTPOST_CONFIG=$Q/cli.json PATH=$ROOT/dist:\$PATH
  outpost get edges -o wide
  outpost describe placement hello-eu
  outpost edge local status --data $Q/edge     # what the edge runs, asked on site

Web UI: $HUB_URL/ (a certificate from the hub's own CA: the browser warns; the token to sign in
is in .outpost/hub/admin.token). The sample is busybox httpd on 127.0.0.1:8080, serving /tmp.
Logs: .outpost/hub.log, .outpost/edge.log (JSON lines). Stop everything: npm run quickstart -- --stop
EOF
}

workloads_gone() {
  "$EXE" edge local status --data "$Q/edge" -o json | node -e '
    let s = ""; process.stdin.on("data", (c) => (s += c)).on("end", () => process.exit(JSON.parse(s).workloads.length === 0 ? 0 : 1));'
}

stop_one() {
  alive "$1" || { rm -f "$Q/$1.pid"; return 0; }
  local pid
  pid=$(cat "$Q/$1.pid")
  kill -TERM "$pid"
  wait_for 30 bash -c "[ ! -r /proc/$pid/stat ] || [ \"\$(cut -d' ' -f3 /proc/$pid/stat)\" = Z ]" || kill -KILL "$pid" 2>/dev/null || true
  rm -f "$Q/$1.pid"
  say "stopped the $1 (pid $pid)"
}

stop() {
  [ -x "$EXE" ] && [ -d "$Q" ] || { say "nothing to stop"; exit 0; }
  # Nothing runs and no workload is left behind: nothing to start just to stop it.
  if ! alive hub && ! alive edge && ! compgen -G "$Q/edge/runtime/*/workloads/*/state.json" >/dev/null; then
    rm -f "$Q/hub.pid" "$Q/edge.pid"
    say "nothing is running"
    return
  fi
  if [ -f "$Q/edge/edge.json" ]; then
    # Workloads outlive the agent by design: both must run for the edge to remove them.
    start_hub
    start_edge
    say "deleting the placement hello-eu; the edge stops its workload"
    "$EXE" delete placement hello-eu 2>/dev/null || true
    wait_for 30 workloads_gone || die "the edge still runs workloads after 30 s; see \`outpost edge local status --data .outpost/edge\` and .outpost/edge.log"
  fi
  stop_one edge
  stop_one hub
  say "stopped. The data stays in .outpost/ (run again to resume, rm -rf .outpost to start afresh)"
}

case "${1:-}" in
  '') up ;;
  --stop) stop ;;
  -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) die "unknown argument $1: use no argument to start, --stop to stop" ;;
esac
