#!/usr/bin/env bash
# What watching a run costs: the main job (scenarios/incast-256.yaml on the simulator) run
# unwatched and with N `xrdma stat --socket --watch 0.01` clients, in turn, RUNS times each;
# prints each pair's wall-time ratio (watched / unwatched) and their median.
#
# usage: ci/stat-watch-cost.sh XRDMA_BIN [N (4)] [RUNS (5)]
set -euo pipefail
(($# >= 1)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
xrdma=$1
n=${2:-4}
runs=${3:-5}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
unwatched() {
  "$xrdma" run scenarios/incast-256.yaml --out "$tmp/plain" > /dev/null 2>&1
}
watched() {
  local sock=$tmp/s.sock run i
  "$xrdma" run scenarios/incast-256.yaml --out "$tmp/watched" --stat-socket "$sock" \
    > /dev/null 2>&1 &
  run=$!
  while [[ ! -S $sock ]]; do
    kill -0 "$run" 2> /dev/null || break
    sleep 0.005
  done
  for i in $(seq 1 "$n"); do
    "$xrdma" stat --socket "$sock" --watch 0.01 > /dev/null 2>&1 &
  done
  wait "$run"
}
ratios=()
for r in $(seq 1 "$runs"); do
  t0=$(now); unwatched; t1=$(now); watched; t2=$(now)
  read -r plain seen ratio <<< "$(awk -v a="$t0" -v b="$t1" -v c="$t2" \
    'BEGIN { printf "%.3f %.3f %.3f", b - a, c - b, (c - b) / (b - a) }')"
  echo "pair $r: unwatched $plain s, $n watchers $seen s, ratio $ratio"
  ratios+=("$ratio")
  wait
done
median=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
printf 'stat-watch-cost: %d watchers at 10 ms: median wall ratio %.3f over %d pairs\n' "$n" "$median" "$runs"
