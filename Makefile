# userquota: build, test and benchmark. `make help` lists the targets.

GO       ?= go
BIN      ?= bin
# How long the parser fuzz target runs in `make test` (a smoke run; run
# `make fuzz FUZZTIME=10m` for a real session).
FUZZTIME ?= 20s
# Unit tiers run under the race detector; the integration tier (one test
# binary linking a whole API server) runs without it.
PKGS     := ./pkg/... ./cmd/...

.PHONY: all help build test test-unit test-integration test-local fuzz bench lint clean tools run down demo

all: build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build the binaries into bin/
	$(GO) build -o $(BIN)/userquota-scheduler ./cmd/scheduler
	$(GO) build -o $(BIN)/userquotactl ./cmd/userquotactl

# The test tiers `make test` runs, in order; each prints a timing line.
TEST_STAGES ?= lint test-unit fuzz test-integration test-local

test: ## every test tier that needs no Docker (what CI runs), with a timing line per stage
	@for stage in $(TEST_STAGES); do \
	  start=$$(date +%s); \
	  $(MAKE) --no-print-directory $$stage || { echo "== stage $$stage FAILED after $$(( $$(date +%s) - start ))s"; exit 1; }; \
	  echo "== stage $$stage: $$(( $$(date +%s) - start ))s"; \
	done

test-unit: ## unit, golden, differential and concurrency tests, with -race
	$(GO) test -race -count=1 $(PKGS)

test-integration: ## scheduler + plugin against a real kube-apiserver and etcd, in process
	$(GO) test -count=1 -timeout 20m ./test/integration

test-local: ## make run + make demo + make down, checking the verdicts (builds the tools)
	hack/smoke-local.sh

fuzz: ## fuzz the queue-config parser for FUZZTIME
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=$(FUZZTIME) ./pkg/queueconfig

bench: ## ugm micro-benchmarks (see docs/performance.md)
	$(GO) test -run='^$$' -bench=. -benchmem -count=1 ./pkg/resources ./pkg/ugm

lint: ## gofmt and go vet
	@out="$$(gofmt -l $$(find . -name '*.go' -not -path './_output/*'))"; \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean: ## remove build output
	rm -rf $(BIN)

# Local control plane (docs/local-cluster.md). Tools go to _output/bin/,
# the running cluster's state to _output/local/.
tools: ## build etcd, kube-apiserver, kube-controller-manager, kubectl and kwok into _output/bin/
	hack/tools.sh

run: ## local cluster in the foreground: control plane, 4 kwok nodes, manifests, scheduler (Ctrl-C stops it)
	hack/local-up.sh

down: ## stop a `make run` started from another shell and remove its state
	hack/local-down.sh

demo: ## against a running `make run`: pods as several users, what was scheduled and what was refused
	hack/demo.sh
