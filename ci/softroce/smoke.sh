#!/usr/bin/env bash
# The default test run INSIDE the Soft-RoCE guest (what ci/softroce.sh runs without a command).
#
# usage: ci/softroce/smoke.sh RESULTS_DIR
#
# Checks, each counted as passed or failed:
#   devinfo    `ibv_devinfo -v -d rxe0` lists port 1 PORT_ACTIVE on an Ethernet link layer
#              (output in RESULTS_DIR/ibv_devinfo.txt)
#   pingpong   `ibv_rc_pingpong` loopback on rxe0 (server and client on the same device and GID),
#              4096 B x 1000 round trips (outputs in RESULTS_DIR/pingpong/)
#   perftest   ci/softroce/perftest.sh RESULTS_DIR (ib_send_lat, ib_write_lat, ib_write_bw)
# Ends with the line "softroce: N passed, M failed"; exit status 0 only when none failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=ci/softroce/lib.sh
source "$here/lib.sh"

(($# == 1)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
results=$1
mkdir -p "$results"
dev=${SOFTROCE_DEV:-rxe0}

passed=0
failed=0
check() { # NAME COMMAND...
  local name=$1
  shift
  echo "=== $name"
  if "$@"; then
    echo "--- $name: passed"
    passed=$((passed + 1))
  else
    echo "--- $name: FAILED"
    failed=$((failed + 1))
  fi
}

devinfo() {
  ibv_devinfo -v -d "$dev" > "$results/ibv_devinfo.txt" 2>&1 || { cat "$results/ibv_devinfo.txt"; return 1; }
  rdma link show > "$results/rdma-link.txt" 2>&1 || true
  grep -E 'hca_id|state:|active_mtu|link_layer|GID\[' "$results/ibv_devinfo.txt"
  grep -q 'PORT_ACTIVE' "$results/ibv_devinfo.txt" \
    && grep -q 'link_layer:[[:space:]]*Ethernet' "$results/ibv_devinfo.txt"
}

pingpong() {
  local idx addr
  idx=$(softroce_gid_index "$dev" 1) || return 1
  addr=$(softroce_gid_ipv4 "$dev" 1 "$idx") || return 1
  mkdir -p "$results/pingpong"
  softroce_run_pair rc_pingpong "$results/pingpong" 18520 "$addr" 60 -- \
    ibv_rc_pingpong -d "$dev" -i 1 -g "$idx" -s 4096 -n 1000 || return 1
  # The client reports e.g. "8192000 bytes in 0.05 seconds = 1234.56 Mbit/sec" and
  # "1000 iters in 0.05 seconds = 50.00 usec/iter".
  cat "$results/pingpong/rc_pingpong.client.txt"
  grep -q '^1000 iters in' "$results/pingpong/rc_pingpong.client.txt"
}

check devinfo devinfo
check pingpong pingpong
check perftest "$here/perftest.sh" "$results"

echo "softroce: $passed passed, $failed failed"
((failed == 0))
