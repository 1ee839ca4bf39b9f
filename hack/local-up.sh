#!/usr/bin/env bash
# `make run`: a local cluster in the foreground, every process on 127.0.0.1
# at free ports. etcd, kube-apiserver, kube-controller-manager, kwok with
# fake nodes, the manifests of manifests/local/, and bin/userquota-scheduler.
# Ctrl-C (or `make down` from another shell) stops each process it started,
# by PID, and removes the state folder. See docs/local-cluster.md.
#
# Environment:
#   LOCAL_NODES=4            number of kwok nodes
#   NODE_CPU=8 NODE_MEMORY=32Gi NODE_PODS=110   capacity of each node
#   SKIP_BUILD=1             do not run `make tools` and `make build` first
#   SCHEDULER_BIN=PATH       scheduler binary (default bin/userquota-scheduler)
#   SCHEDULER_CONFIG=PATH    KubeSchedulerConfiguration (default manifests/scheduler-config.yaml)
#   SCHEDULER_ARGS="..."     extra scheduler flags
#   MANIFESTS_DIR=PATH       applied after the nodes are up (default manifests/local)
#   GANG_APIS=1              serve the gang objects (docs/gangs.md): the Workload
#                            API (scheduling.k8s.io/v1alpha1, GenericWorkload and
#                            GangScheduling gates) and scheduler-plugins' PodGroup
#                            CRD; 0 leaves them off
#   LOCAL_DIR, LOG_DIR       state and log folders (default _output/local, _output/logs)
set -euo pipefail

T0="$EPOCHREALTIME"
LOG_PREFIX="local-up"
# shellcheck source=hack/local-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/local-lib.sh"
cd "$ROOT"

LOCAL_NODES="${LOCAL_NODES:-4}"
NODE_CPU="${NODE_CPU:-8}"
NODE_MEMORY="${NODE_MEMORY:-32Gi}"
NODE_PODS="${NODE_PODS:-110}"
SCHEDULER_BIN="${SCHEDULER_BIN:-$ROOT/bin/userquota-scheduler}"
SCHEDULER_CONFIG="${SCHEDULER_CONFIG:-$ROOT/manifests/scheduler-config.yaml}"
GANG_APIS="${GANG_APIS:-1}"
gang_apiserver_flags=() gang_scheduler_flags=()
if [[ "$GANG_APIS" == 1 ]]; then
  gang_apiserver_flags=(--runtime-config scheduling.k8s.io/v1alpha1=true --feature-gates GenericWorkload=true)
  gang_scheduler_flags=(--feature-gates GenericWorkload=true,GangScheduling=true)
fi
SCHEDULER_NAME="userquota-scheduler"
MANIFESTS_DIR="${MANIFESTS_DIR:-$ROOT/manifests/local}"
SERVICE_CIDR="10.96.0.0/24"   # ClusterIPs only: nothing routes them here
POD_CIDR="10.244.0.0/16"      # pod IPs kwok writes into pod status: data only
READY_TIMEOUT=60              # seconds each wait may take

command -v curl >/dev/null || die "curl is needed for health checks (apt-get install curl)"

# ---------------------------------------------------------------- state --
if [[ -d "$LOCAL_DIR" ]]; then
  if pid="$(supervisor_pid)"; then
    die "a local cluster is already running (hack/local-up.sh pid $pid, state in ${LOCAL_DIR#"$ROOT"/}); stop it with: make down"
  fi
  if any_recorded_alive; then
    warn "processes of a previous run are still alive: stopping them"
    stop_recorded || true
  fi
  log "removing the state of a previous run"
  remove_state
fi

# ---------------------------------------------------------------- build --
if [[ "${SKIP_BUILD:-}" != 1 ]]; then
  log "make tools"
  hack/tools.sh
  t="$EPOCHREALTIME"
  log "make build"
  "${MAKE:-make}" --no-print-directory -C "$ROOT" build
  log "make build done in $(since "$t")s"
fi
for b in etcd kube-apiserver kube-controller-manager kubectl kwok; do
  [[ -x "$OUT_BIN/$b" ]] || die "$OUT_BIN/$b is missing: run make tools"
done
have_scheduler=1
no_scheduler_why=""
if [[ ! -x "$SCHEDULER_BIN" ]]; then
  have_scheduler=0
  no_scheduler_why="${SCHEDULER_BIN#"$ROOT"/} missing"
  warn "${SCHEDULER_BIN#"$ROOT"/} does not exist (make build does not produce it yet)."
  warn "The cluster comes up WITHOUT the userquota scheduler: pods with"
  warn "schedulerName: $SCHEDULER_NAME stay Pending with no PodScheduled condition."
fi

# ------------------------------------------------------------ processes --
mkdir -p "$LOCAL_DIR" "$LOG_DIR"
touch "$LOCAL_DIR/.userquota-local"
echo "$$" >"$SUPERVISOR_PID_FILE"
: >"$PID_FILE"
rm -f "$LOG_DIR"/*.log

cleaned=0
cleanup() {
  local rc=$?
  [[ "$cleaned" == 1 ]] && return
  cleaned=1
  trap '' INT TERM HUP
  echo
  log "stopping"
  stop_recorded || true
  remove_state || true
  log "stopped; removed ${LOCAL_DIR#"$ROOT"/} (logs kept in ${LOG_DIR#"$ROOT"/})"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 0' TERM   # make down: a requested stop
trap 'exit 129' HUP

# start NAME BINARY ARGS...: runs BINARY in a session of its own (so a
# terminal's Ctrl-C reaches only this script, which then stops everything in
# order), logs to $LOG_DIR/NAME.log and records the PID.
start() {
  local name="$1" bin="$2"
  shift 2
  setsid "$bin" "$@" >"$LOG_DIR/$name.log" 2>&1 </dev/null &
  local pid=$!
  echo "$name $pid $bin" >>"$PID_FILE"
  log "started $name (pid $pid, log ${LOG_DIR#"$ROOT"/}/$name.log)"
}

# wait_for WHAT CMD...: retries CMD every 0.2 s for READY_TIMEOUT seconds;
# fails (showing the log tails) if it never succeeds or a process died.
wait_for() {
  local what="$1" deadline
  shift
  deadline=$((SECONDS + READY_TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    check_alive
    if ((SECONDS >= deadline)); then
      die "timed out after ${READY_TIMEOUT}s waiting for $what (logs in ${LOG_DIR#"$ROOT"/})"
    fi
    sleep 0.2
  done
}

# check_alive: fails, with the last lines of its log, if a process died.
check_alive() {
  local name pid bin
  while read -r name pid bin; do
    if ! is_ours "$pid" "$bin"; then
      echo "---- last lines of ${LOG_DIR#"$ROOT"/}/$name.log" >&2
      tail -n 20 "$LOG_DIR/$name.log" >&2 || true
      die "$name (pid $pid) exited"
    fi
  done <"$PID_FILE"
}

# free_port: a TCP port no socket uses, not handed out yet, and below the
# kernel's ephemeral range (where the outgoing connections of the processes
# started in the meantime would take it).
used_ports=" "
ephemeral_low=32768
if [[ -r /proc/sys/net/ipv4/ip_local_port_range ]]; then
  read -r ephemeral_low _ </proc/sys/net/ipv4/ip_local_port_range
fi
port_span=$((ephemeral_low - 10000))
((port_span >= 1000)) || die "the ephemeral port range starts at $ephemeral_low: no room below it for our ports"
free_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((10000 + (RANDOM * 32768 + RANDOM) % port_span))
    [[ "$used_ports" == *" $p "* ]] && continue
    if command -v ss >/dev/null; then
      [[ -z "$(ss -Htan "sport = :$p")" ]] || continue
    elif (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      continue
    fi
    used_ports+="$p "
    echo "$p"
    return 0
  done
  die "no free port found"
}
# Assigned here, not in $(...) subshells, so used_ports keeps every port.
alloc_port() { local -n _var="$1"; local p; p="$(free_port)" || exit 1; used_ports+="$p "; _var="$p"; }

alloc_port ETCD_PORT; alloc_port ETCD_PEER_PORT; alloc_port APISERVER_PORT
alloc_port KCM_PORT; alloc_port KWOK_PORT; alloc_port SCHEDULER_PORT; alloc_port REST_PORT
printf 'etcd=%s etcd-peer=%s kube-apiserver=%s kube-controller-manager=%s kwok=%s scheduler=%s scheduler-rest=%s\n' \
  "$ETCD_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" "$KCM_PORT" "$KWOK_PORT" "$SCHEDULER_PORT" "$REST_PORT" >"$LOCAL_DIR/ports"

# -------------------------------------------------------- credentials ----
PKI="$LOCAL_DIR/pki"
mkdir -p "$PKI"
chmod 700 "$LOCAL_DIR" "$PKI"
if command -v openssl >/dev/null; then
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
else
  log "openssl not found: generating the service-account key with hack/genkey"
  go run ./hack/genkey "$PKI/sa.key"
fi
token() { od -An -tx1 -N16 /dev/urandom | tr -d ' \n'; }
ADMIN_TOKEN="$(token)"; SCHEDULER_TOKEN="$(token)"; KCM_TOKEN="$(token)"
# token,user,uid,"group1,group2"
cat >"$PKI/tokens.csv" <<EOF
$ADMIN_TOKEN,admin,admin,"system:masters"
$SCHEDULER_TOKEN,system:kube-scheduler,system:kube-scheduler
$KCM_TOKEN,system:kube-controller-manager,system:kube-controller-manager
EOF
chmod 600 "$PKI/tokens.csv"

# kube-apiserver writes a self-signed apiserver.crt into --cert-dir; it
# verifies as its own CA.
CA="$PKI/apiserver.crt"
kubeconfig() { # FILE USER TOKEN
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $CA
users:
- name: $2
  user:
    token: $3
contexts:
- name: local
  context:
    cluster: local
    user: $2
current-context: local
EOF
  chmod 600 "$1"
}
kubeconfig "$ADMIN_KUBECONFIG" admin "$ADMIN_TOKEN"
kubeconfig "$LOCAL_DIR/scheduler.kubeconfig" system:kube-scheduler "$SCHEDULER_TOKEN"
kubeconfig "$LOCAL_DIR/controller-manager.kubeconfig" system:kube-controller-manager "$KCM_TOKEN"
k() { "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }

# ---------------------------------------------------------------- etcd --
t="$EPOCHREALTIME"
start etcd "$OUT_BIN/etcd" \
  --name local --data-dir "$LOCAL_DIR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "local=http://127.0.0.1:$ETCD_PEER_PORT" \
  --unsafe-no-fsync --log-level warn
wait_for "etcd" curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"
log "etcd ready in $(since "$t")s"

# ------------------------------------------------------ kube-apiserver --
# Admission: the default plugin set. ServiceAccount and TaintNodesByCondition
# stay on, because kube-controller-manager runs the controllers they rely on
# (serviceaccount-controller creates each namespace's default ServiceAccount;
# node-lifecycle-controller lifts the not-ready taint once kwok reports the
# node Ready). See docs/local-cluster.md.
t="$EPOCHREALTIME"
start kube-apiserver "$OUT_BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
  --cert-dir "$PKI" \
  --token-auth-file "$PKI/tokens.csv" \
  --authorization-mode RBAC \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$PKI/sa.key" \
  --service-account-signing-key-file "$PKI/sa.key" \
  --service-cluster-ip-range "$SERVICE_CIDR" \
  --endpoint-reconciler-type none \
  --profiling=false \
  "${gang_apiserver_flags[@]}"
wait_for "kube-apiserver /readyz" k get --raw /readyz
log "kube-apiserver ready in $(since "$t")s: https://127.0.0.1:$APISERVER_PORT"

# --------------------------------------------- kube-controller-manager --
t="$EPOCHREALTIME"
controllers=(
  serviceaccount-controller root-ca-certificate-publisher-controller
  namespace-controller garbage-collector-controller
  deployment-controller replicaset-controller job-controller
  ttl-after-finished-controller disruption-controller
  node-lifecycle-controller pod-garbage-collector-controller
)
start kube-controller-manager "$OUT_BIN/kube-controller-manager" \
  --kubeconfig "$LOCAL_DIR/controller-manager.kubeconfig" \
  --use-service-account-credentials \
  --service-account-private-key-file "$PKI/sa.key" \
  --root-ca-file "$CA" \
  --controllers "$(IFS=,; echo "${controllers[*]}")" \
  --leader-elect=false \
  --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
  --profiling=false

# ---------------------------------------------------------------- kwok --
# Node IP 127.0.0.1 and kwok's own port as the "kubelet" port: anything the
# API server forwards to a node (kubectl logs/exec) goes to kwok, on loopback.
start kwok "$OUT_BIN/kwok" \
  --kubeconfig "$ADMIN_KUBECONFIG" \
  --config "$ROOT/hack/kwok/node-initialize.yaml,$ROOT/hack/kwok/node-heartbeat-with-lease.yaml,$ROOT/hack/kwok/pod-ready.yaml,$ROOT/hack/kwok/pod-complete.yaml,$ROOT/hack/kwok/pod-delete.yaml" \
  --manage-all-nodes=false \
  --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
  --node-ip 127.0.0.1 --node-port "$KWOK_PORT" \
  --cidr "$POD_CIDR" \
  --server-address "127.0.0.1:$KWOK_PORT" \
  --node-lease-duration-seconds 40

nodes_yaml() {
  local i
  for ((i = 1; i <= LOCAL_NODES; i++)); do
    cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/arch: amd64
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    type: kwok
status:
  allocatable: {cpu: "$NODE_CPU", memory: "$NODE_MEMORY", pods: "$NODE_PODS"}
  capacity: {cpu: "$NODE_CPU", memory: "$NODE_MEMORY", pods: "$NODE_PODS"}
EOF
  done
}
nodes_yaml | k apply -f - >/dev/null
log "created $LOCAL_NODES kwok nodes (cpu $NODE_CPU, memory $NODE_MEMORY, pods $NODE_PODS each)"

nodes_ready() {
  local out
  out="$(k get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.spec.taints}{"\n"}{end}')"
  [[ "$(grep -c ' True $' <<<"$out")" -eq "$LOCAL_NODES" ]]
}
wait_for "the default ServiceAccount (kube-controller-manager)" k -n default get serviceaccount default
wait_for "$LOCAL_NODES nodes Ready without taints (kwok, node-lifecycle-controller)" nodes_ready
log "kube-controller-manager and kwok ready in $(since "$t")s"

# ----------------------------------------------------------- manifests --
if [[ "$GANG_APIS" == 1 ]]; then
  # scheduler-plugins' PodGroup CRD, from the module the scheduler pins.
  crd="$(go list -m -f '{{.Dir}}' sigs.k8s.io/scheduler-plugins)/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml"
  log "PodGroup CRD and the Workload API (GANG_APIS=1)"
  k apply -f "$crd"
  wait_for "the PodGroup API served" k get --raw /apis/scheduling.x-k8s.io/v1alpha1
fi
rel_manifests="${MANIFESTS_DIR#"$ROOT"/}"
if [[ -d "$MANIFESTS_DIR" ]]; then
  if [[ -f "$MANIFESTS_DIR/kustomization.yaml" ]]; then
    log "kubectl apply -k $rel_manifests"
    k apply -k "$MANIFESTS_DIR"
  else
    log "kubectl apply -R -f $rel_manifests"
    k apply -R -f "$MANIFESTS_DIR"
  fi
else
  warn "no $rel_manifests/: nothing applied. It should hold the namespace userquota-system,"
  warn "RBAC letting user system:kube-scheduler read the queue-config ConfigMap, and that ConfigMap."
  if [[ "$have_scheduler" == 1 ]]; then
    warn "Without them the scheduler cannot load its queue config: not starting it."
    have_scheduler=0
    no_scheduler_why="no $rel_manifests/ to give it its queue config"
  fi
fi

# ----------------------------------------------------------- scheduler --
# With --config, kube-scheduler ignores --kubeconfig: the path has to be in
# clientConnection.kubeconfig, so the config is copied and that key set (and
# leaderElect set to false, which --leader-elect=false also forces).
set_kubeconfig_in() { # SRC DST KUBECONFIG REST_ADDRESS
  grep -Eq '^kind:[[:space:]]*KubeSchedulerConfiguration[[:space:]]*$' "$1" ||
    die "$1 is not a KubeSchedulerConfiguration (kind: KubeSchedulerConfiguration at top level)"
  awk -v kc="$3" -v rest="$4" '
    function flush_cc() { if (in_cc && !done) { print cc_indent "kubeconfig: " kc; done = 1 } in_cc = 0 }
    # The plugin usage REST API: on loopback at a free port, not on every
    # interface at its default :9089; plain HTTP without authentication
    # (loopback only), and no leader election (one scheduler, --leader-elect=false).
    /^[[:space:]]+restAddress:/ { match($0, /^[[:space:]]+/); print substr($0, 1, RLENGTH) "restAddress: \"" rest "\""; next }
    /^[[:space:]]+restAuth:/ { match($0, /^[[:space:]]+/); print substr($0, 1, RLENGTH) "restAuth: false"; next }
    # Plain HTTP: the production serving certificate (a Secret mounted in
    # the Deployment) is not here.
    /^[[:space:]]+rest(Cert|Key)File:/ { next }
    /^[[:space:]]+leaderElectionLease:/ { match($0, /^[[:space:]]+/); print substr($0, 1, RLENGTH) "leaderElectionLease: \"\""; next }
    # One process here: no leader election (the production config has it on).
    /^[[:space:]]+leaderElect:/ { match($0, /^[[:space:]]+/); print substr($0, 1, RLENGTH) "leaderElect: false"; next }
    /^clientConnection:[[:space:]]*(#.*)?$/ { print; in_cc = 1; cc_indent = ""; next }
    /^clientConnection:/ { print "set_kubeconfig_in: clientConnection must be a block mapping" > "/dev/stderr"; exit 3 }
    in_cc && /^[[:space:]]*(#.*)?$/ { print; next }
    in_cc && /^[[:space:]]+/ {
      if (cc_indent == "") { match($0, /^[[:space:]]+/); cc_indent = substr($0, 1, RLENGTH) }
      if ($0 ~ "^" cc_indent "kubeconfig:") { print cc_indent "kubeconfig: " kc; done = 1; next }
      print; next
    }
    in_cc { if (cc_indent == "") cc_indent = "  "; flush_cc() }
    { print }
    END {
      if (in_cc) { if (cc_indent == "") cc_indent = "  "; flush_cc() }
      if (!done) { print "clientConnection:"; print "  kubeconfig: " kc }
    }' "$1" >"$2"
}
SCHED_CFG="$LOCAL_DIR/scheduler-config.yaml"
if [[ -f "$SCHEDULER_CONFIG" ]]; then
  set_kubeconfig_in "$SCHEDULER_CONFIG" "$SCHED_CFG" "$LOCAL_DIR/scheduler.kubeconfig" "127.0.0.1:$REST_PORT"
  grep -q 'restAddress: "127.0.0.1' "$SCHED_CFG" ||
    warn "${SCHEDULER_CONFIG#"$ROOT"/} sets no restAddress: the plugin's REST API listens on its default (all interfaces)"
  sched_cfg_from="${SCHEDULER_CONFIG#"$ROOT"/}"
else
  sched_cfg_from="a default profile named $SCHEDULER_NAME (no ${SCHEDULER_CONFIG#"$ROOT"/}: no quota plugin configured)"
  cat >"$SCHED_CFG" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $LOCAL_DIR/scheduler.kubeconfig
leaderElection:
  leaderElect: false
profiles:
- schedulerName: $SCHEDULER_NAME
EOF
fi
if [[ "$have_scheduler" == 1 ]]; then
  t="$EPOCHREALTIME"
  # shellcheck disable=SC2086 # SCHEDULER_ARGS is a list of flags
  start scheduler "$SCHEDULER_BIN" \
    --config "$SCHED_CFG" \
    --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" \
    "${gang_scheduler_flags[@]}" \
    ${SCHEDULER_ARGS:-}
  wait_for "scheduler /healthz" curl -skf --max-time 2 "https://127.0.0.1:$SCHEDULER_PORT/healthz"
  log "scheduler ready in $(since "$t")s (config from $sched_cfg_from)"
fi

# --------------------------------------------------------------- ready --
rel_kc="${ADMIN_KUBECONFIG#"$ROOT"/}"
if [[ "$have_scheduler" == 1 ]]; then
  sched_line="scheduler: ${SCHEDULER_BIN#"$ROOT"/} (schedulerName $SCHEDULER_NAME, config from $sched_cfg_from)"
else
  sched_line="scheduler: NOT RUNNING ($no_scheduler_why)"
fi
cat <<EOF

========================================================================
Local cluster ready in $(since "$T0")s (state ${LOCAL_DIR#"$ROOT"/}, logs ${LOG_DIR#"$ROOT"/})
$sched_line
$LOCAL_NODES kwok nodes; API server https://127.0.0.1:$APISERVER_PORT
Try, in another shell:

export KUBECONFIG=$ADMIN_KUBECONFIG PATH=$OUT_BIN:\$PATH
kubectl get nodes
make demo        # pods as several users: what was scheduled, what was refused and why
# one pod by hand, as alice (group dev) in queue root.default:
kubectl apply -f - <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: alice-1
  labels: {userquota.io/queue: root.default}
  annotations: {userquota.io/user-info: '{"user":"alice","groups":["dev"]}'}
spec:
  schedulerName: $SCHEDULER_NAME
  containers:
  - {name: main, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}
YAML
kubectl get pods -o wide
kubectl describe pod alice-1   # if refused: the reason is under Events and the PodScheduled condition
make down        # or Ctrl-C here: stops everything and removes ${LOCAL_DIR#"$ROOT"/}

($rel_kc: user admin, group system:masters)
========================================================================
EOF

# Foreground until Ctrl-C / make down / a process dies.
while true; do
  sleep 1 &
  wait $! || true
  if ! any_recorded_alive; then die "every process has exited"; fi
  check_alive
done
