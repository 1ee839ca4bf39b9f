#!/usr/bin/env bash
# `make down`: stops a local cluster started by `make run` (hack/local-up.sh)
# from another shell, and removes its state folder. Asks the running
# hack/local-up.sh to stop (it stops its processes in order); if that script
# is gone, stops the processes recorded in _output/local/pids itself, by PID.
set -euo pipefail

LOG_PREFIX="local-down"
# shellcheck source=hack/local-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/local-lib.sh"

if [[ ! -d "$LOCAL_DIR" ]]; then
  log "no local cluster (no ${LOCAL_DIR#"$ROOT"/})"
  exit 0
fi

if pid="$(supervisor_pid)"; then
  log "asking hack/local-up.sh (pid $pid) to stop"
  kill -TERM "$pid" 2>/dev/null || true
  # It stops each process (up to 10 s each) and then removes the state.
  for ((i = 0; i < 600; i++)); do
    [[ -r "/proc/$pid/cmdline" ]] || break
    sleep 0.1
  done
  [[ -r "/proc/$pid/cmdline" ]] && warn "hack/local-up.sh (pid $pid) still running after 60 s"
fi

# Whatever is left: processes of a local-up.sh that was killed, or that did
# not finish in time.
if [[ -d "$LOCAL_DIR" ]]; then
  stop_recorded || die "some processes did not stop; state kept in $LOCAL_DIR"
  remove_state
fi
log "stopped; ${LOCAL_DIR#"$ROOT"/} removed"
