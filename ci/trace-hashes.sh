#!/usr/bin/env bash
# The trace hash of every shipped scenario on the simulator and a digest of its result, one
# line each (`PATH TRACE-HASH RESULT-DIGEST`, sorted by path): diff two builds' outputs to see
# that a change moved no simulated event and changed no byte of any result (a refactor must
# print the same lines). The digest is the first 16 hex digits of the SHA-256 of result.json
# without its `wall-clock` object, the one part that differs from run to run. A run that
# writes no result prints `none` for both.
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
  r=$work/run/result.json
  h=$(grep -o '"trace-hash": "[0-9a-f]*"' "$r" 2> /dev/null | cut -d'"' -f4) || true
  d=none
  if [[ -s $r ]]; then
    d=$(sed '/^  "wall-clock": {$/,/^  },$/d' "$r" | sha256sum | cut -c1-16)
  fi
  echo "$s ${h:-none} $d"
  rm -rf "$work/run"
done
