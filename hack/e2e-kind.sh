#!/usr/bin/env bash
# End-to-end on a kind cluster, for machines with Docker (our CI has none:
# it runs test/integration instead). Creates a kind cluster, builds the
# image (`make image`) and loads it, applies manifests/ (kubectl apply -k),
# waits for the scheduler, runs manifests/examples/ and checks that alice's
# third Job pod stays Pending with the plugin's reason while the other pods
# run; then deletes the cluster. Needs docker, kind, kubectl and make.
#
# Environment:
#   KIND_CLUSTER=userquota-e2e   cluster name
#   KIND_NODE_IMAGE=kindest/node:v1.35.N  node image (default: kind's own); the
#                                scheduler is built on Kubernetes 1.35 and
#                                wants an API server at 1.35 or 1.36
#   IMAGE=userquota-scheduler:dev  image to build and load (the Deployment's)
#   KEEP_CLUSTER=1               keep the cluster afterwards (to look around)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CLUSTER="${KIND_CLUSTER:-userquota-e2e}"
IMAGE="${IMAGE:-userquota-scheduler:dev}"
# What manifests/queue-config.yaml makes of manifests/examples/job-alice.yaml.
WANT='user "alice" would exceed maxresources in root.batch: cpu 500m+250m > 500m'

log() { printf 'e2e-kind: %s\n' "$*"; }
die() { printf 'e2e-kind: FAILED: %s\n' "$*" >&2; exit 1; }
for tool in docker kind kubectl make; do
  command -v "$tool" >/dev/null || die "$tool is needed"
done

kind create cluster --name "$CLUSTER" --wait 120s ${KIND_NODE_IMAGE:+--image "$KIND_NODE_IMAGE"}
cleanup() {
  local rc=$?
  if ((rc != 0)); then
    kubectl -n userquota-system get pods -o wide || true
    kubectl -n userquota-system logs deploy/userquota-scheduler --tail 50 || true
    kubectl get pods -o wide || true
  fi
  if [[ -n "${KEEP_CLUSTER:-}" ]]; then
    log "keeping cluster $CLUSTER (kind delete cluster --name $CLUSTER)"
  else
    kind delete cluster --name "$CLUSTER"
  fi
  exit "$rc"
}
trap cleanup EXIT
kubectl config use-context "kind-$CLUSTER"

log "building and loading $IMAGE"
make image IMAGE="$IMAGE"
kind load docker-image "$IMAGE" --name "$CLUSTER"

log "installing manifests/"
kubectl apply -k manifests/
if [[ "$IMAGE" != userquota-scheduler:dev ]]; then
  kubectl -n userquota-system set image deploy/userquota-scheduler scheduler="$IMAGE"
fi
kubectl -n userquota-system rollout status deploy/userquota-scheduler --timeout 180s
holder="$(kubectl -n userquota-system get lease userquota-scheduler -o jsonpath='{.spec.holderIdentity}')"
[[ -n "$holder" ]] || die "no replica holds the Lease userquota-system/userquota-scheduler"
log "leader: $holder"

log "running manifests/examples/"
kubectl apply -f manifests/examples/
kubectl rollout status deploy/example-bob --timeout 180s

# The third Job pod is refused (PodScheduled=False with the plugin's reason).
msgs=""
for _ in $(seq 90); do
  msgs="$(kubectl get pods -l job-name=example-alice \
    -o jsonpath='{range .items[*]}{.spec.nodeName}|{.status.conditions[?(@.type=="PodScheduled")].message}{"\n"}{end}')"
  grep -qF "$WANT" <<<"$msgs" && break
  sleep 2
done
grep -qF "$WANT" <<<"$msgs" || die "no pod of job example-alice refused with: $WANT"$'\n'"$msgs"
# ... stays Pending, while the other two are bound.
sleep 10
msgs="$(kubectl get pods -l job-name=example-alice \
  -o jsonpath='{range .items[*]}{.spec.nodeName}|{.status.phase}{"\n"}{end}')"
[[ "$(grep -c '^|Pending$' <<<"$msgs")" == 1 ]] || die "want exactly one unbound Pending pod of example-alice:"$'\n'"$msgs"
[[ "$(grep -c '^[^|]' <<<"$msgs")" == 2 ]] || die "want two bound pods of example-alice:"$'\n'"$msgs"
pending="$(kubectl get pods -l job-name=example-alice --field-selector spec.nodeName= -o name)"
kubectl describe "$pending" | sed -n '/^Events:/,$p'
log "passed: alice's third pod stays Pending with: $WANT"
