#!/usr/bin/env bash
# Runs `go test ARGS...`, its whole output shown and kept in LOG. When it
# fails, the failed tests and their messages are printed again at the end:
# the integration tier's output is mostly the in-process control plane's
# logs, and a CI log that keeps only the tail would lose them.
#
#   hack/gotest.sh LOG [go test arguments...]
set -uo pipefail
log=$1
shift
mkdir -p "$(dirname "$log")"
status=0
"${GO:-go}" test "$@" 2>&1 | tee "$log" || status=$?
if [ "$status" -ne 0 ]; then
  echo "== go test $* failed (exit $status); its failures (whole output: $log):"
  grep -E -- '^[[:space:]]*--- FAIL|^[[:space:]]+[A-Za-z0-9_]+_test\.go:[0-9]+: |^panic: |^FAIL|test timed out' "$log" | tail -200
fi
exit "$status"
