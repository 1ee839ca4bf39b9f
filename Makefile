# userquota: build, test and benchmark. `make help` lists the targets.

GO       ?= go
BIN      ?= bin
# How much each parser fuzz target runs in `make test`: a smoke run of a
# count of inputs, not a duration. go1.26's fuzz coordinator can report a
# duration's own deadline as a failure ("context deadline exceeded", no
# input: golang/go#75804, fixed in go1.27); a count has no deadline. Run
# `make fuzz FUZZTIME=10m` for a real session.
FUZZTIME ?= 100000x
# Unit tiers run under the race detector; the integration tier (one test
# binary linking a whole API server) runs without it.
PKGS     := ./pkg/... ./cmd/... ./test/perf/alternation ./test/perf/cpubuckets ./test/perf/memlat ./test/perf/paired
# How `make build` builds the binaries. The Dockerfile runs `make build`, so
# the image holds the binary a local build makes: static (CGO_ENABLED=0, the
# runtime image has no libc), no local paths or VCS stamp in it (-trimpath,
# -buildvcs=false), so the same sources and Go version give the same bytes
# in any checkout.
BUILD_ENV   := CGO_ENABLED=0
BUILD_FLAGS := -trimpath -buildvcs=false

.PHONY: all help build test test-unit test-integration test-local fuzz bench bench-letin lint clean tools run down demo

all: build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build the binaries into bin/ (kubectl-userquota: put bin/ on PATH for `kubectl userquota`)
	$(BUILD_ENV) $(GO) build $(BUILD_FLAGS) -o $(BIN)/userquota-scheduler ./cmd/scheduler
	$(BUILD_ENV) $(GO) build $(BUILD_FLAGS) -o $(BIN)/userquotactl ./cmd/userquotactl
	$(BUILD_ENV) $(GO) build $(BUILD_FLAGS) -o $(BIN)/kubectl-userquota ./cmd/kubectl-userquota
	$(BUILD_ENV) $(GO) build $(BUILD_FLAGS) -o $(BIN)/userquota-webhook ./cmd/webhook

# The test tiers `make test` runs, in order; each prints a timing line.
TEST_STAGES ?= lint test-unit fuzz test-integration test-local bench-scheduler-smoke soak-short

test: ## every test tier that needs no Docker (what CI runs), with a timing line per stage
	@for stage in $(TEST_STAGES); do \
	  start=$$(date +%s); \
	  $(MAKE) --no-print-directory $$stage || { echo "== stage $$stage FAILED after $$(( $$(date +%s) - start ))s"; exit 1; }; \
	  echo "== stage $$stage: $$(( $$(date +%s) - start ))s"; \
	done

test-unit: ## unit, golden, differential and concurrency tests, with -race
	$(GO) test -race -count=1 $(PKGS)

# The chart's tests (charts/userquota) run helm, built first by hack/tools.sh
# (a few minutes once, then a stamp check).
test-integration: ## scheduler + plugin against a real kube-apiserver and etcd, in process; the Helm chart and the dashboard
	GO=$(GO) hack/tools.sh helm
	GO=$(GO) hack/gotest.sh _output/test-integration.log -count=1 -timeout 20m ./test/integration

test-local: ## make run + make demo + make down, checking the verdicts (builds the tools)
	hack/smoke-local.sh

bench-letin: ## let-in latency over 1000 releases on the real API server (docs/throughput.md)
	$(GO) test -count=1 -timeout 20m -run '^TestLetInLatency$$' -v ./test/integration -args -letin-releases=1000 | grep -E 'let-in latency|^(ok|FAIL|---)'

fuzz: ## fuzz the queue-config and quota-tree parsers for FUZZTIME each
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./pkg/queueconfig
	$(GO) test -run='^$$' -fuzz='^FuzzTreeJSON$$' -fuzztime=$(FUZZTIME) ./pkg/queueconfig

bench: ## ugm, share and let-in micro-benchmarks (see docs/performance.md)
	$(GO) test -run='^$$' -bench=. -benchmem -count=1 ./pkg/resources ./pkg/shares ./pkg/ugm
	$(GO) test -run='^$$' -bench=LetIn -benchmem -count=1 ./pkg/plugins/userquota

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

# Container image (docs/install.md; hack/e2e-kind.sh builds it too). Needs
# Docker; not run in CI (no container engine there).
IMAGE ?= userquota-scheduler:dev
DOCKER ?= docker

.PHONY: image

image: ## build the container image IMAGE (needs Docker; not run in CI)
	$(DOCKER) build -t $(IMAGE) .

# Scheduling throughput with and without UserQuota, a backlog of pods held
# for quota against the framework's floor (gated pods), and recovery
# (docs/throughput.md). The full run is not part of `make test` (about an
# hour on 2 cores); its 100-node smoke is. The harness (test/perf) runs etcd and a
# kube-apiserver in its test process and bin/userquota-scheduler as a
# subprocess; the tables (throughput.md, backlog.md, recovery.md), the raw
# samples (.json) and the scheduler's /metrics of every run go to BENCH_OUT.
# Throughput, backlog and recovery run in separate processes (each its own
# etcd), so the 50k backlog and 100k recovery pods never sit under the
# throughput runs.
BENCH_OUT  ?= _output/bench
BENCH_RUNS ?= 5
# TestBacklog: runs of its three cases (backlog, floor, floor-control).
BACKLOG_RUNS ?= 3
PERF_BIN    = -perf -scheduler=$(abspath $(BIN))/userquota-scheduler

.PHONY: bench-scheduler bench-scheduler-smoke

bench-scheduler: build ## throughput (1000 nodes, 10000 pods, 4 cases incl. the A/A control x BENCH_RUNS), backlog (50000 pods, 40000 held, vs the floor x BACKLOG_RUNS) and recovery (100k pods) into BENCH_OUT (~1 h)
	mkdir -p $(BENCH_OUT)
	$(GO) test -run='^$$' -bench=Recovery -benchtime=3x -count=1 ./pkg/plugins/userquota > $(BENCH_OUT)/recovery-go.txt 2>&1; \
	  status=$$?; grep -E '^(Benchmark|goos|goarch|pkg|cpu|ok|FAIL)' $(BENCH_OUT)/recovery-go.txt; exit $$status
	cd test/perf && $(GO) test -count=1 -timeout=3h -run='^TestThroughput$$' -args $(PERF_BIN) \
	  -out=$(abspath $(BENCH_OUT)) -nodes=1000 -pods=10000 -users=1000 -queues=100 -runs=$(BENCH_RUNS) \
	  -case=baseline,userquota,refused,control
	cd test/perf && $(GO) test -count=1 -timeout=3h -run='^TestBacklog$$' -args $(PERF_BIN) \
	  -out=$(abspath $(BENCH_OUT)) -nodes=1000 -backlog-pods=50000 -backlog-held=0.8 -users=1000 -queues=100 \
	  -runs=$(BACKLOG_RUNS) -case=backlog,floor,floor-control
	cd test/perf && $(GO) test -count=1 -timeout=1h -run='^TestRecovery$$' -args $(PERF_BIN) \
	  -out=$(abspath $(BENCH_OUT)) -nodes=1000 -users=1000 -queues=100 -recovery-pods=100000 -recovery-runs=3

# The scale shape (issue "Scale to where users are"; docs/throughput.md
# "At scale"): 5,000 nodes, 50,000 pods of 10,000 users in 1,000 leaf
# queues under a three-level tree with user and group limits on every
# level. Hours on 2 cores; not part of `make test` (the smoke runs a
# three-level tree). SCALE_RUNS runs of every case, interleaved.
SCALE_OUT   ?= _output/bench-scale
SCALE_RUNS  ?= 3
SCALE_SHAPE  = -nodes=5000 -users=10000 -queues=1000 -levels=3 -groups=20 -run-timeout=45m
# CPU profiles from the first binding and, in the backlog, heap profiles at
# each run's end (docs/throughput.md, "Memory at scale"), under SCALE_OUT/pprof.
SCALE_PPROF ?= 20s

.PHONY: bench-scale

bench-scale: build ## the scale shape: 5000 nodes, 50000 pods of 10000 users in 1000 leaf queues (3 levels): throughput (4 cases), backlog vs floor (3 cases), recovery at 50000 bound pods, SCALE_RUNS each, into SCALE_OUT (hours)
	mkdir -p $(SCALE_OUT)
	cd test/perf && $(GO) test -count=1 -timeout=8h -run='^TestThroughput$$' -args $(PERF_BIN) \
	  -out=$(abspath $(SCALE_OUT)) $(SCALE_SHAPE) -pods=50000 -runs=$(SCALE_RUNS) -case=baseline,userquota,refused,control -pprof=$(SCALE_PPROF)
	cd test/perf && $(GO) test -count=1 -timeout=8h -run='^TestBacklog$$' -args $(PERF_BIN) \
	  -out=$(abspath $(SCALE_OUT)) $(SCALE_SHAPE) -backlog-pods=50000 -backlog-held=0.8 -runs=$(SCALE_RUNS) \
	  -case=backlog,floor,floor-control -pprof=$(SCALE_PPROF)
	cd test/perf && $(GO) test -count=1 -timeout=4h -run='^TestRecovery$$' -args $(PERF_BIN) \
	  -out=$(abspath $(SCALE_OUT)) $(SCALE_SHAPE) -recovery-pods=50000 -recovery-runs=$(SCALE_RUNS)

bench-scheduler-smoke: build ## the benchmark harness on 100 nodes: throughput (1000 pods, 3 cases), backlog and floor (1000 pods, 800 held), 2000-pod recovery, one run each (CI smoke, no timing assertion)
	cd test/perf && $(GO) test -count=1 -timeout=10m -run='^(TestWorkload|TestThroughput|TestBacklog|TestRecovery)$$' -args $(PERF_BIN) \
	  -out=$(abspath $(BENCH_OUT))-smoke -nodes=100 -pods=1000 -users=100 -queues=10 -levels=3 -runs=1 -warmup=false \
	  -case=baseline,userquota,refused,backlog,floor -backlog-pods=1000 -backlog-held=0.8 -status-qps=5000 \
	  -recovery-pods=2000 -recovery-runs=1

# Soak (docs/reliability.md): the local control plane and two scheduler
# replicas under churn, with SIGKILLs of the leader, failovers, API server
# restarts and pods deleted while no scheduler runs; after every quiet
# period the leader's usage must equal the usage recomputed from the API
# server's pods exactly. hack/soak.sh builds what it needs (tools, make
# build, the harness in test/soak) and hands SOAK_FLAGS to the harness
# (`make soak SOAK_FLAGS="-lifecycles=20000 -kills=10"`; -h lists them).
# Logs and report.md go to _output/soak/<time>/.
SOAK_FLAGS ?=

.PHONY: soak soak-short

soak: ## soak: 100,000 pod lifecycles, 50 leader kills, 5 API server restarts, zero drift (hours; not in make test)
	hack/soak.sh $(SOAK_FLAGS)

soak-short: ## the soak's CI variant: 2,500 pod lifecycles, 3 leader kills, 1 API server restart (a few minutes)
	hack/soak.sh -short $(SOAK_FLAGS)
