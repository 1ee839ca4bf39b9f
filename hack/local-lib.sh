# shellcheck shell=bash
# shellcheck disable=SC2034 # variables used by the scripts that source this
# Shared by hack/local-up.sh, hack/local-down.sh and hack/demo.sh: where the
# local cluster keeps its state and how its processes are stopped. Sourced,
# never run.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_BIN="${OUT_BIN:-$ROOT/_output/bin}"
# State of the running cluster: kubeconfigs, tokens, keys, etcd data, PIDs.
# Removed when the cluster stops.
LOCAL_DIR="${LOCAL_DIR:-$ROOT/_output/local}"
# Logs of the last run; kept after it stops, replaced by the next one.
LOG_DIR="${LOG_DIR:-$ROOT/_output/logs}"
PID_FILE="$LOCAL_DIR/pids"           # lines: NAME PID BINARY, in start order
SUPERVISOR_PID_FILE="$LOCAL_DIR/local-up.pid"
ADMIN_KUBECONFIG="$LOCAL_DIR/admin.kubeconfig"
KUBECTL="$OUT_BIN/kubectl"

log() { printf '%s %s\n' "${LOG_PREFIX:-local}:" "$*"; }
warn() { printf '%s WARNING: %s\n' "${LOG_PREFIX:-local}:" "$*" >&2; }
die() { printf '%s ERROR: %s\n' "${LOG_PREFIX:-local}:" "$*" >&2; exit 1; }

# since T0: seconds (one decimal) from an $EPOCHREALTIME stamp to now.
since() { LC_ALL=C awk -v s="$1" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.1f", e - s }'; }

# is_ours PID BINARY: PID is alive and runs BINARY (argv[0]), so a PID that
# the kernel has reused for something else is never signalled.
is_ours() {
  local pid="$1" bin="$2" argv0
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  argv0="$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline" | head -n 1)" || return 1
  [[ "$argv0" == "$bin" ]]
}

# stop_pid NAME PID BINARY: SIGTERM, up to 10 s to exit, then SIGKILL.
stop_pid() {
  local name="$1" pid="$2" bin="$3" i
  is_ours "$pid" "$bin" || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do
    is_ours "$pid" "$bin" || { log "stopped $name (pid $pid)"; return 0; }
    sleep 0.1
  done
  warn "$name (pid $pid) still running after 10 s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    is_ours "$pid" "$bin" || return 0
    sleep 0.1
  done
  warn "$name (pid $pid) did not exit"
  return 1
}

# stop_recorded: stops every process in $PID_FILE, last started first.
stop_recorded() {
  [[ -f "$PID_FILE" ]] || return 0
  local lines=() i name pid bin rc=0
  mapfile -t lines <"$PID_FILE"
  for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
    read -r name pid bin <<<"${lines[$i]}"
    [[ -n "${pid:-}" ]] || continue
    stop_pid "$name" "$pid" "$bin" || rc=1
  done
  return "$rc"
}

# any_recorded_alive: true if a process of $PID_FILE still runs.
any_recorded_alive() {
  [[ -f "$PID_FILE" ]] || return 1
  local name pid bin
  while read -r name pid bin; do
    [[ -n "${pid:-}" ]] || continue
    is_ours "$pid" "$bin" && return 0
  done <"$PID_FILE"
  return 1
}

# supervisor_pid: PID of a live hack/local-up.sh that owns $LOCAL_DIR, if any.
supervisor_pid() {
  [[ -f "$SUPERVISOR_PID_FILE" ]] || return 1
  local pid
  read -r pid <"$SUPERVISOR_PID_FILE" || return 1
  [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' '\n' 2>/dev/null <"/proc/$pid/cmdline" | grep -q 'local-up\.sh$' || return 1
  echo "$pid"
}

# remove_state: deletes $LOCAL_DIR, refusing anything that is not a folder
# named as we name it.
remove_state() {
  [[ -d "$LOCAL_DIR" ]] || return 0
  [[ -f "$LOCAL_DIR/.userquota-local" ]] || die "$LOCAL_DIR has no .userquota-local marker: not removing it"
  rm -rf -- "$LOCAL_DIR"
}
