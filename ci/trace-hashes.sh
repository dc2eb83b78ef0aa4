#!/usr/bin/env bash
# The trace hash of every shipped scenario on the simulator, one line each
# (`PATH HASH`, sorted by path): diff two builds' outputs to see that a change moved no
# simulated event (a refactor must print the same lines). A run that writes no result prints
# `none` for its hash.
#
# usage: ci/trace-hashes.sh XRDMA_BIN
set -euo pipefail
(($# == 1)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
xrdma=$1
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
find scenarios -name '*.yaml' | LC_ALL=C sort | while read -r s; do
  # Exit status 2 (a run that finished with failed messages) still has a trace.
  timeout 300 "$xrdma" run "$s" --out "$work/run" > /dev/null 2>&1 || true
  h=$(grep -o '"trace-hash": "[0-9a-f]*"' "$work/run/result.json" 2> /dev/null | cut -d'"' -f4)
  echo "$s ${h:-none}"
  rm -rf "$work/run"
done
