#!/usr/bin/env bash
# The project's tests INSIDE the Soft-RoCE guest, on rxe0 (what ci/test.sh runs there).
#
# usage: ci/softroce/suite.sh RESULTS_DIR XRDMA_BIN [TEST_BIN...]
#
#   XRDMA_BIN  the `xrdma` binary built with `--features verbs`
#   TEST_BIN   test executables of the xrdma-verbs crate (`cargo test -p xrdma-verbs --no-run`)
#
# Checks, each counted as passed or failed:
#   verbs tests     every TEST_BIN, one test thread (the backend's own verbs-level tests)
#   conformance     `xrdma conformance --backend verbs`: the cases the simulator passes in
#                   `cargo test`, unchanged, on rxe0
#   incast-8        `xrdma run --backend verbs scenarios/incast-8.yaml`: the shipped scenario,
#                   unedited, writing the same report as on the simulator (RESULTS_DIR/incast-8)
#   perftest        ci/softroce/perftest.sh RESULTS_DIR (ib_send_lat, ib_write_lat, ib_write_bw)
#   figures         ci/softroce/figures.sh RESULTS_DIR XRDMA_BIN: xrdma's ping, bw, qp-setup and
#                   idle tools against perftest's figures (RESULTS_DIR/figures.env); passes when
#                   the tools ran and gave numbers, whether or not the targets are met
# Ends with the line "softroce: N passed, M failed"; exit status 0 only when none failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

(($# >= 2)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
results=$1
xrdma=$2
shift 2
mkdir -p "$results"
export XRDMA_VERBS_DEVICE=${SOFTROCE_DEV:-rxe0}
[[ -n ${SOFTROCE_GID_INDEX:-} ]] && export XRDMA_VERBS_GID_INDEX=$SOFTROCE_GID_INDEX

passed=0
failed=0
check() { # NAME LOG COMMAND...
  local name=$1 log=$2
  shift 2
  echo "=== $name"
  if "$@" > "$log" 2>&1; then
    tail -n 3 "$log"
    echo "--- $name: passed"
    passed=$((passed + 1))
  else
    tail -n 40 "$log"
    echo "--- $name: FAILED (log: $log)"
    failed=$((failed + 1))
  fi
}

for t in "$@"; do
  check "verbs tests $(basename "$t")" "$results/$(basename "$t").log" \
    timeout 300 "$t" --test-threads=1 --nocapture
done
check conformance "$results/conformance.log" timeout 300 "$xrdma" conformance --backend verbs
check incast-8 "$results/incast-8.log" \
  timeout 300 "$xrdma" run --backend verbs "$repo/scenarios/incast-8.yaml" --out "$results/incast-8"
check perftest "$results/perftest.log" "$here/perftest.sh" "$results"
check figures "$results/figures.log" "$here/figures.sh" "$results" "$xrdma"

echo "softroce: $passed passed, $failed failed"
((failed == 0))
