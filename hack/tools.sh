#!/usr/bin/env bash
# Builds the local control plane into _output/bin/ (git-ignored):
#   etcd, kube-apiserver, kube-controller-manager, kubectl  - from this module
#     (they are `tool` lines in go.mod, so the replace block applies)
#   kwok, helm                                              - each its own `go install`
# Versions come from hack/versions.env. Usage: hack/tools.sh [NAME...]
# (`make tools` builds the local control plane; helm, for the chart's tests
# and `helm install`, only when named: `hack/tools.sh helm`.)
#
# Every build uses the same flags (no -trimpath, -buildvcs=false, the same
# -ldflags), so the Go build cache is shared between them. A binary whose
# inputs have not changed (go.mod, go.sum, versions, flags, Go toolchain and
# environment: recorded in _output/bin/.NAME.stamp) is not even handed to
# `go build`; FORCE=1 hands every one to it (and go's cache still makes an
# up-to-date one cost only the check, a few seconds).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=hack/versions.env
source hack/versions.env

GO="${GO:-go}"
OUT_BIN="${OUT_BIN:-$ROOT/_output/bin}"
mkdir -p "$OUT_BIN"

# Version stamps: without them kubectl reports v0.0.0-master and warns about
# the version skew with the server.
kube_major="${KUBE_VERSION#v}"; kube_major="${kube_major%%.*}"
kube_minor="${KUBE_VERSION#v*.}"; kube_minor="${kube_minor%%.*}"
ldflags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${p}.gitVersion=${KUBE_VERSION}"
  ldflags+=" -X ${p}.gitMajor=${kube_major} -X ${p}.gitMinor=${kube_minor}"
  ldflags+=" -X ${p}.gitTreeState=clean"
done
ldflags="${ldflags# }"
# One build mode for every binary: the same flags on each command line.
build_flags=(-buildvcs=false -ldflags "$ldflags")

declare -A pkg=(
  [etcd]=go.etcd.io/etcd/server/v3
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
  [kwok]=sigs.k8s.io/kwok/cmd/kwok
  [helm]=helm.sh/helm/v3/cmd/helm
)
# Built outside this module, each at its own version.
declare -A own_version=([kwok]="$KWOK_VERSION" [helm]="$HELM_VERSION")
all=(etcd kube-apiserver kube-controller-manager kubectl kwok)
known=("${all[@]}" helm)

check_gomod() {
  local mod want got
  for mod in "k8s.io/kubernetes=$KUBE_VERSION" "go.etcd.io/etcd/server/v3=$ETCD_VERSION"; do
    want="${mod#*=}"; mod="${mod%%=*}"
    got="$("$GO" list -m -f '{{.Version}}' "$mod")"
    if [[ "$got" != "$want" ]]; then
      echo "tools: go.mod has $mod $got but hack/versions.env says $want." >&2
      echo "tools: run: go get -tool ${pkg[kube-apiserver]}@$KUBE_VERSION ${pkg[kube-controller-manager]}@$KUBE_VERSION ${pkg[kubectl]}@$KUBE_VERSION ${pkg[etcd]}@$ETCD_VERSION" >&2
      exit 1
    fi
  done
}

# extra_ldflags NAME: what the tool's own release build stamps beyond ours.
# helm's Makefile stamps its version, and the Kubernetes version that
# `helm template` and `helm lint` assume without a cluster: the minor of its
# k8s.io/client-go, the major that plus one (0.37 is 1.37); unstamped it
# assumes 1.20, and a chart asking for a newer kubeVersion fails to render.
extra_ldflags() {
  [[ "$1" == helm ]] || return 0
  local gomod client major minor v
  gomod="$(GOWORK=off GOFLAGS="" "$GO" mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  client="$(awk '$1 == "k8s.io/client-go" { print $2 }' "$gomod")"
  [[ "$client" =~ ^v([0-9]+)\.([0-9]+)\. ]] || { echo "tools: no k8s.io/client-go version in helm's go.mod ($gomod)" >&2; exit 1; }
  major=$((BASH_REMATCH[1] + 1)) minor="${BASH_REMATCH[2]}"
  printf ' -X helm.sh/helm/v3/internal/version.version=%s' "$HELM_VERSION"
  printf ' -X helm.sh/helm/v3/internal/version.gitTreeState=clean'
  for v in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    printf ' -X %s.k8sVersionMajor=%s -X %s.k8sVersionMinor=%s' "$v" "$major" "$v" "$minor"
  done
}

# identity FILE: changes when go writes a new binary (go touches the mtime of
# an up-to-date one, so the mtime alone says nothing).
identity() { stat -c %i.%s "$1" 2>/dev/null || echo none; }
report() { # NAME START STATUS
  LC_ALL=C awk -v n="$1" -v s="$2" -v e="$EPOCHREALTIME" -v st="$3" \
    'BEGIN { printf "tools: %-24s %7.1fs  %s\n", n, e - s, st }'
}

# stamp_of NAME: a hash of everything that decides the binary.
go_env=""
stamp_of() {
  local name="$1"
  [[ -n "$go_env" ]] || go_env="$("$GO" version; "$GO" env GOOS GOARCH GOAMD64 CGO_ENABLED GOFLAGS GOEXPERIMENT CC GOROOT)"
  {
    printf '%s\n' "$name" "${pkg[$name]}" "$KUBE_VERSION" "$ETCD_VERSION" "$KWOK_VERSION" "${build_flags[@]}" "$go_env"
    if [[ -n "${own_version[$name]:-}" ]]; then printf '%s\n' "${own_version[$name]}"; else cat go.mod go.sum; fi
  } | sha256sum | cut -d' ' -f1
}

build() {
  local name="$1" start before status stamp extra
  start="$EPOCHREALTIME"
  stamp="$(stamp_of "$name")"
  if [[ "${FORCE:-}" != 1 && -x "$OUT_BIN/$name" && -f "$OUT_BIN/.$name.stamp" &&
    "$(cat "$OUT_BIN/.$name.stamp")" == "$stamp" ]]; then
    report "$name" "$start" "up to date (inputs unchanged)"
    return
  fi
  rm -f "$OUT_BIN/.$name.stamp"
  before="$(identity "$OUT_BIN/$name")"
  if [[ -n "${own_version[$name]:-}" ]]; then
    # Outside this module (kwok and helm need newer k8s.io libraries than
    # ours): GOWORK=off and no -mod flags, so go.mod here plays no part.
    extra="$(extra_ldflags "$name")"
    GOWORK=off GOFLAGS="" GOBIN="$OUT_BIN" \
      "$GO" install -buildvcs=false -ldflags "$ldflags$extra" "${pkg[$name]}@${own_version[$name]}"
  else
    "$GO" build "${build_flags[@]}" -o "$OUT_BIN/$name" "${pkg[$name]}"
  fi
  if [[ "$(identity "$OUT_BIN/$name")" == "$before" ]]; then status="up to date (checked by go)"; else status="built"; fi
  echo "$stamp" >"$OUT_BIN/.$name.stamp"
  report "$name" "$start" "$status"
}

names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=("${all[@]}")
for n in "${names[@]}"; do
  [[ -n "${pkg[$n]:-}" ]] || { echo "tools: unknown tool '$n' (known: ${known[*]})" >&2; exit 2; }
done

total_start="$EPOCHREALTIME"
check_gomod
for n in "${names[@]}"; do build "$n"; done
LC_ALL=C awk -v s="$total_start" -v e="$EPOCHREALTIME" -v d="${OUT_BIN#"$ROOT"/}" \
  'BEGIN { printf "tools: %-24s %7.1fs  in %s\n", "total", e - s, d }'
