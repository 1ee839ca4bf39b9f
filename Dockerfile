# syntax=docker/dockerfile:1
# userquota-scheduler image: `make image` (or docker build -t IMAGE .).
# The build stage runs `make build`, so the binary is the one a local
# `make build` makes, with the same flags (Makefile: BUILD_ENV, BUILD_FLAGS:
# static, -trimpath). The runtime image is distroless static, non-root.
# Not built in our CI (no container engine there): hack/e2e-kind.sh builds
# and runs it.
ARG GO_IMAGE=golang:1.26
ARG RUNTIME_IMAGE=gcr.io/distroless/static:nonroot

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    make build BIN=/out

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/userquota-scheduler /usr/local/bin/userquota-scheduler
# The admission webhook (manifests/webhook.yaml) runs from the same image.
COPY --from=build /out/userquota-webhook /usr/local/bin/userquota-webhook
# distroless "nonroot": uid and gid 65532 (the Deployment sets the same).
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/userquota-scheduler"]
