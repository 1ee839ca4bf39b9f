#!/usr/bin/env bash
# `make demo`: against the cluster of a running `make run`, submits a small
# workload as several users and prints what was scheduled and what was
# held by quota, and why (pod phase and the PodScheduled condition).
#
#   hack/demo.sh           run it (re-creates namespace $DEMO_NAMESPACE)
#   hack/demo.sh --clean   delete the namespace and stop
#
# Environment:
#   DEMO_NAMESPACE=userquota-demo   namespace of the demo pods
#   DEMO_QUEUE=root.default          queue (label userquota.io/queue) of every pod
#   DEMO_SCHEDULER=userquota-scheduler  schedulerName of the pods
#   DEMO_WORKLOAD=FILE               workload lines "USER GROUPS COUNT CPU MEMORY"
#                                    (GROUPS comma-separated, or - for none)
#   DEMO_TIMEOUT=30                  seconds to wait for the scheduler's verdicts
set -euo pipefail

LOG_PREFIX="demo"
# shellcheck source=hack/local-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/local-lib.sh"

NS="${DEMO_NAMESPACE:-userquota-demo}"
QUEUE="${DEMO_QUEUE:-root.default}"
SCHEDULER="${DEMO_SCHEDULER:-userquota-scheduler}"
TIMEOUT="${DEMO_TIMEOUT:-30}"

# The default workload, sized for examples/limits.yaml (limits on root:
# sue 5 cpu; every other user 1 cpu; groups development/test 10 cpu each):
# sue's third pod, alice's third and bob's second should be held by quota.
default_workload='
# user  groups        count  cpu   memory
sue     dev           3      2     2Gi
alice   development   3      500m  1Gi
bob     -             2      1     1Gi
'

[[ -x "$KUBECTL" ]] || die "$KUBECTL is missing: run make tools"
[[ -f "$ADMIN_KUBECONFIG" ]] || die "no local cluster: start one with make run (no ${ADMIN_KUBECONFIG#"$ROOT"/})"
k() { "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }
k get --raw /readyz >/dev/null 2>&1 || die "the local cluster's API server does not answer: is make run still up?"

if k get namespace "$NS" >/dev/null 2>&1; then
  log "deleting namespace $NS of a previous demo"
  k delete namespace "$NS" --wait --timeout=60s >/dev/null
fi
[[ "${1:-}" == --clean ]] && exit 0
[[ $# -eq 0 ]] || die "usage: hack/demo.sh [--clean]"

k create namespace "$NS" >/dev/null
deadline=$((SECONDS + 30))
until k -n "$NS" get serviceaccount default >/dev/null 2>&1; do
  ((SECONDS < deadline)) || die "namespace $NS has no default ServiceAccount after 30 s (kube-controller-manager down?)"
  sleep 0.2
done

if [[ -n "${DEMO_WORKLOAD:-}" ]]; then
  workload="$(cat "$DEMO_WORKLOAD")"
else
  workload="$default_workload"
fi

# One pod manifest per line of the workload, in order: the scheduler sees
# them in the order they are created.
manifest() {
  local user groups count cpu memory i gjson
  while read -r user groups count cpu memory; do
    [[ -z "${user:-}" || "$user" == \#* ]] && continue
    gjson=""
    if [[ "$groups" != - ]]; then gjson="\"${groups//,/\",\"}\""; fi
    for ((i = 1; i <= count; i++)); do
      cat <<EOF
---
apiVersion: v1
kind: Pod
metadata:
  name: $user-$i
  namespace: $NS
  labels:
    userquota.io/queue: $QUEUE
    demo.userquota.io/user: $user
  annotations:
    userquota.io/user-info: '{"user":"$user","groups":[$gjson]}'
spec:
  schedulerName: $SCHEDULER
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: registry.k8s.io/pause:3.10
    resources:
      requests: {cpu: "$cpu", memory: "$memory"}
EOF
    done
  done <<<"$workload"
}

log "submitting to namespace $NS, queue $QUEUE, schedulerName $SCHEDULER:"
printf '%s\n' "$workload" | awk 'NF && $1 !~ /^#/ { printf "  %-8s groups %-14s %s pods x cpu %s, memory %s\n", $1, $2, $3, $4, $5 }'
manifest | k apply -f - >/dev/null

# A pod is decided when it is bound (spec.nodeName) or the scheduler marked
# it PodScheduled=False.
fields='{range .items[*]}{.metadata.name}{"\t"}{.metadata.labels.demo\.userquota\.io/user}{"\t"}{.spec.containers[0].resources.requests.cpu}{"\t"}{.status.phase}{"\t"}{.spec.nodeName}{"\t"}{.status.conditions[?(@.type=="PodScheduled")].status}{"\t"}{.status.conditions[?(@.type=="PodScheduled")].reason}{"\t"}{.status.conditions[?(@.type=="PodScheduled")].message}{"\n"}{end}'
deadline=$((SECONDS + TIMEOUT))
while true; do
  table="$(k -n "$NS" get pods --sort-by=.metadata.creationTimestamp -o jsonpath="$fields")"
  undecided="$(awk -F'\t' '$5 == "" && $6 != "False"' <<<"$table" | wc -l)"
  [[ "$undecided" -eq 0 ]] && break
  if ((SECONDS >= deadline)); then
    warn "$undecided pod(s) still undecided after ${TIMEOUT}s: is a scheduler named $SCHEDULER running? (make run prints whether it started)"
    break
  fi
  sleep 0.5
done
# Bound pods turn Running when kwok sees them: give them a moment.
for _ in 1 2 3 4 5 6 7 8 9 10; do
  awk -F'\t' '$5 != "" && $4 != "Running"' <<<"$table" | grep -q . || break
  sleep 0.3
  table="$(k -n "$NS" get pods --sort-by=.metadata.creationTimestamp -o jsonpath="$fields")"
done

echo
awk -F'\t' '
  BEGIN { printf "%-10s %-7s %-5s %-8s %-12s %s\n", "POD", "USER", "CPU", "PHASE", "NODE", "VERDICT" }
  {
    verdict = "waiting (no scheduler verdict yet)"
    if ($5 != "") verdict = "scheduled"
    else if ($6 == "False" && $7 == "QuotaHeld") verdict = "HELD: " $8
    else if ($6 == "False") verdict = "UNSCHEDULABLE (" $7 "): " $8
    node = ($5 == "" ? "-" : $5)
    printf "%-10s %-7s %-5s %-8s %-12s %s\n", $1, $2, $3, $4, node, verdict
    if (!($2 in users)) { users[$2] = 1; order[++n] = $2 }
    if ($5 != "") ok[$2]++; else if ($6 == "False") no[$2]++; else wait[$2]++
  }
  END {
    printf "\n"
    for (i = 1; i <= n; i++) {
      u = order[i]
      printf "%-7s scheduled %d, held %d%s\n", u, ok[u], no[u], (wait[u] ? sprintf(", undecided %d", wait[u]) : "")
    }
  }' <<<"$table"
cat <<EOF

More: kubectl --kubeconfig ${ADMIN_KUBECONFIG#"$ROOT"/} -n $NS describe pod NAME
      (a held pod's reason is in its PodScheduled and userquota.io/QuotaAdmitted conditions and its QuotaHeld event)
Clean up: hack/demo.sh --clean
EOF
