#!/usr/bin/env bash
# End-to-end on a kind cluster, for machines with Docker (our CI has none:
# it runs test/integration instead). Creates a kind cluster, builds the
# image (`make image`) and loads it, makes the two serving certificates
# and applies manifests/ (kubectl apply -k) as docs/install.md does, waits
# for the scheduler and the webhook, runs manifests/examples/ as alice and
# bob (impersonated: the webhook stamps the submitter) and checks that alice's
# third Job pod stays Pending with the plugin's reason while the other pods
# run; then deletes the cluster. Needs docker, kind, kubectl, make and openssl.
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
for tool in docker kind kubectl make openssl; do
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

log "installing manifests/ (docs/install.md, \"Install\")"
certs="$(mktemp -d)"
kubectl create namespace userquota-system
(
  cd "$certs"
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=userquota-ca -keyout ca.key -out ca.crt
  for svc in userquota-webhook userquota-scheduler-rest; do
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$svc.userquota-system.svc" -keyout "$svc.key" -out "$svc.csr"
    printf 'subjectAltName=DNS:%s.userquota-system.svc\nextendedKeyUsage=serverAuth\n' "$svc" >"$svc.ext"
    openssl x509 -req -in "$svc.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile "$svc.ext" -out "$svc.crt"
  done
  kubectl -n userquota-system create secret tls userquota-webhook-tls --cert=userquota-webhook.crt --key=userquota-webhook.key
  kubectl -n userquota-system create secret generic userquota-scheduler-tls --type=kubernetes.io/tls \
    --from-file=tls.crt=userquota-scheduler-rest.crt --from-file=tls.key=userquota-scheduler-rest.key --from-file=ca.crt
)
kubectl apply -k manifests/
sed "s|clientConfig:|clientConfig:\n    caBundle: $(base64 -w0 <"$certs/ca.crt")|" manifests/webhook-config.yaml | kubectl apply -f -
rm -rf "$certs"
if [[ "$IMAGE" != userquota-scheduler:dev ]]; then
  kubectl -n userquota-system set image deploy/userquota-scheduler scheduler="$IMAGE"
  kubectl -n userquota-system set image deploy/userquota-webhook webhook="$IMAGE"
fi
kubectl -n userquota-system rollout status deploy/userquota-scheduler --timeout 180s
kubectl -n userquota-system rollout status deploy/userquota-webhook --timeout 180s
holder="$(kubectl -n userquota-system get lease userquota-scheduler -o jsonpath='{.spec.holderIdentity}')"
[[ -n "$holder" ]] || die "no replica holds the Lease userquota-system/userquota-scheduler"
log "leader: $holder"

log "running manifests/examples/ as alice and bob"
# The webhook stamps whoever submits: each example as its user, who may
# edit workloads in the namespace.
kubectl create rolebinding example-users --clusterrole=edit --user=alice --user=bob
kubectl apply --as=alice --as-group=data -f manifests/examples/job-alice.yaml
kubectl apply --as=bob -f manifests/examples/deployment-bob.yaml
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
