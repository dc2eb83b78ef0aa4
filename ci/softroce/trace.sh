#!/usr/bin/env bash
# Message stages on a real device INSIDE the Soft-RoCE guest: scenarios/incast-8.yaml on rxe0
# with `xrdma run --trace`, then `xrdma trace`.
#
# usage: ci/softroce/trace.sh DIR XRDMA_BIN
#
# Passes when the run delivers all 40 messages intact and every one of them has its stages
# (the sender's and the receiver's instants, on one process's clock, in order: `xrdma trace
# --json` counts 40 traced and 0 untraced), and `stages.png` was drawn.
set -euo pipefail

(($# == 2)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
dir=$1
xrdma=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=ci/softroce/lib.sh
source "$here/lib.sh"
mkdir -p "$dir"
fail() { echo "$*" >&2; exit 1; }
timeout 300 "$xrdma" run --backend verbs "$repo/scenarios/incast-8.yaml" --trace --out "$dir/run" ||
  fail "the traced run failed"
softroce_all_delivered "$dir/run/result.json" 40
"$xrdma" trace "$dir/run" | tee "$dir/trace.txt"
"$xrdma" trace "$dir/run" --json > "$dir/trace.json"
grep -q '"messages": 40,' "$dir/trace.json" || fail "not all 40 messages traced"
grep -q '"untraced": 0,' "$dir/trace.json" || fail "some messages have no stages"
[[ -s $dir/run/stages.png ]] || fail "no stages.png"
echo "trace: all 40 messages on rxe0 split into stages that add up"
