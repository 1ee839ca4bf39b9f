#!/usr/bin/env bash
# `make soak` and `make soak-short`: the soak harness (test/soak,
# docs/reliability.md). Builds what it needs (kube-apiserver,
# kube-controller-manager and kwok with hack/tools.sh, the scheduler with
# `make build`, the harness itself), then runs it. Every argument is handed
# to the harness: `hack/soak.sh -short`, `hack/soak.sh -lifecycles=20000
# -kills=10`, `hack/soak.sh -h` for the list. SOAK_LIFECYCLES, SOAK_KILLS,
# SOAK_APISERVER_RESTARTS, SOAK_NO_SCHEDULER and SOAK_DURATION set the
# defaults of the matching flags.
#
# Logs of every process and the report (report.md, report.json) go to
# _output/soak/<time>/ (or -out). Exit status: 0 pass, 1 an invariant broke
# (the report shows both sides), 2 the harness could not run, 3 stopped by
# -duration before the targets.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
GO="${GO:-go}"
OUT_BIN="$ROOT/_output/bin"

log() { printf 'soak: %s\n' "$*"; }

log "hack/tools.sh kube-apiserver kube-controller-manager kwok"
hack/tools.sh kube-apiserver kube-controller-manager kwok
log "make build"
"${MAKE:-make}" --no-print-directory -C "$ROOT" build
log "building the harness (test/soak) and testing its oracle"
"$GO" build -o "$OUT_BIN/soak" ./test/soak
"$GO" test -count=1 ./test/soak

exec "$OUT_BIN/soak" -tools "$OUT_BIN" -scheduler "$ROOT/bin/userquota-scheduler" -root "$ROOT" "$@"
