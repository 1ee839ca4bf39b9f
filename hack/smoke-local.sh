#!/usr/bin/env bash
# `make test-local`: the README's main command, tested. Brings up the local
# cluster (`make run`, which builds the tools and the scheduler first) in the
# background, runs the demo against it and checks the scheduler's verdicts:
# the pods within limits are scheduled and the over-limit ones held with
# the plugin's reason. Always stops the cluster (`make down`) on the way out.
set -euo pipefail

LOG_PREFIX="smoke-local"
# shellcheck source=hack/local-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/local-lib.sh"
cd "$ROOT"

READY_TIMEOUT="${READY_TIMEOUT:-900}" # includes a cold tool build
out="$LOG_DIR/smoke-local-up.out"
mkdir -p "$LOG_DIR"

stop() {
  hack/local-down.sh >/dev/null 2>&1 || true
  if [[ -n "${up_pid:-}" ]]; then wait "$up_pid" 2>/dev/null || true; fi
}
trap stop EXIT

hack/local-up.sh >"$out" 2>&1 </dev/null &
up_pid=$!
deadline=$((SECONDS + READY_TIMEOUT))
until grep -q "Local cluster ready" "$out"; do
  if ! kill -0 "$up_pid" 2>/dev/null; then
    cat "$out" >&2
    die "make run exited before the cluster was ready"
  fi
  ((SECONDS < deadline)) || { cat "$out" >&2; die "cluster not ready after ${READY_TIMEOUT}s"; }
  sleep 1
done
grep -E "ready in|Local cluster ready" "$out"
grep -q "scheduler ready" "$out" || { cat "$out" >&2; die "the scheduler did not start"; }

demo="$(hack/demo.sh 2>&1)" || { printf '%s\n' "$demo" >&2; die "make demo failed"; }
printf '%s\n' "$demo"

# examples/limits.yaml on root: sue 5 cpu, every other user 1 cpu.
expect() {
  grep -qE "$1" <<<"$demo" || die "demo output lacks: $1"
}
expect '^sue +scheduled 2, held 1'
expect '^alice +scheduled 2, held 1'
expect '^bob +scheduled 1, held 1'
expect 'user "sue" would exceed maxresources in root: cpu 4\+2 > 5'
# GANG_APIS=1 (the default): the API server serves PodGroups and Workloads,
# and the scheduler watches both.
for api in PodGroup Workload; do
  grep -q "\"$api gangs\".*served=true" "$LOG_DIR/scheduler.log" ||
    die "the scheduler does not watch ${api}s (see ${LOG_DIR#"$ROOT"/}/scheduler.log)"
done
log "local cluster smoke test passed"
