#!/usr/bin/env bash
# Two xrdma builds on rxe0, paired run by run, INSIDE the Soft-RoCE guest: what a change
# costs on a device. Each of RUNS rounds runs A then B: `xrdma run --backend verbs
# scenarios/incast-8.yaml` (wall time) and `xrdma bw --backend verbs --size 64KiB --iters
# 20000` (MB/s); prints every round and the median per-pair ratios A/B.
#
# usage: ci/softroce.sh -- ci/softroce/ab-cost.sh OUT_FILE A_BIN B_BIN [RUNS (6)]
#   (both binaries built with --features verbs)
set -euo pipefail
(($# >= 3)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
out=$1
a=$2
b=$3
runs=${4:-6}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export XRDMA_VERBS_DEVICE=${SOFTROCE_DEV:-rxe0}
: > "$out"
for i in $(seq 1 "$runs"); do
  for which in A B; do
    bin=$a
    [[ $which == B ]] && bin=$b
    t0=$(date +%s.%N)
    "$bin" run --backend verbs "$repo/scenarios/incast-8.yaml" --out "/tmp/ab-$which$i" \
      > "/tmp/ab-$which$i.log" 2>&1
    t1=$(date +%s.%N)
    # The data row's third column: BW average [MB/sec].
    mbs=$("$bin" bw --backend verbs --size 64KiB --iters 20000 2> /dev/null | tail -n 1 |
      awk '{print $3}')
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    echo "$i $which run_wall_s=$wall bw_mbs=$mbs" | tee -a "$out"
  done
done
# Pair A and B of each round; the medians of the ratios.
ratios() { # FIELD (3: run wall, 4: bw)
  awk -v f="$1" '{ split($f, v, "="); if ($2 == "A") a[$1] = v[2]; else b[$1] = v[2] }
    END { for (k in a) if (b[k] > 0) print a[k] / b[k] }' "$out"
}
median() { sort -g | awk '{ x[NR] = $1 } END { if (NR) print (NR % 2) ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2 }'; }
echo "ab-cost: $runs pairs, median A/B run wall $(ratios 3 | median), median A/B bw $(ratios 4 | median)"
