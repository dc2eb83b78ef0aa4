#!/usr/bin/env bash
# Whether a run's cost grows linearly with its size: instructions of a whole `xrdma run`
# (simulation, result, summary, plots), counted by callgrind (exact and repeatable, unlike
# time on this machine), along two dimensions:
#
#   senders   an N:1 incast of one 16 KiB message per sender, N = S, 2S, 5S, 10S (300 to 3000)
#   messages  8 senders x M messages of 64 B each, M = K, 2K, 5K, 10K
#
# The marginal cost of one unit (a sender, a message) between the two larger sizes must be at
# most 1.2x the marginal cost between the two smaller ones: a run 10x larger then costs at most
# 12x as much beyond its fixed setup. Fixed costs (the program, the plots' font) cancel out.
# A dimension over the limit prints "!!! SCALE-COST FAILED" and the script exits 1.
#
# valgrind is installed with apt-get when missing and we are root; otherwise it prints SKIP.
#
# usage: ci/scale-cost.sh [XRDMA_BINARY] [S (300)] [K (1000)]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=ci/apt.sh
source "$repo/ci/apt.sh"
need valgrind valgrind scale-cost || exit 0
bin=${1:-}
if [[ -z $bin ]]; then
  (cd "$repo" && cargo build --release -q)
  bin=${CARGO_TARGET_DIR:-$repo/target}/release/xrdma
fi
s=${2:-300}
k=${3:-1000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# scenario NAME SENDERS SIZE COUNT: an incast of SENDERS x COUNT messages of SIZE bytes, over
# a switch buffer of 64 KiB a port (at least 32 MiB), so PFC's headroom always fits. The
# incast lasts in proportion to its bytes, so the network is sampled every SENDERS/30 µs (at
# least 10 µs): the per-sender time series (senders x samples) then grow with the run, not
# with its square.
scenario() {
  local buffer=$((($2 + 1) * 64)) interval=$(($2 / 30))
  ((buffer >= 32768)) || buffer=32768
  ((interval >= 10)) || interval=10
  cat > "$work/$1.yaml" << YAML
name: $1
workload:
  incast:
    senders: $2
    receiver: 0
    messages:
      - { size: $3, count: $4 }
sim:
  switch-buffer: ${buffer}KiB
  sample-interval: ${interval}us
  ecn: { kmin: 400KB, kmax: 1600KB, pmax: 0.2 }
  pfc: {}
YAML
}

# instructions NAME: callgrind's total for `xrdma run` of scenario NAME.
instructions() {
  valgrind --tool=callgrind --callgrind-out-file="$work/$1.cg" "$bin" run "$work/$1.yaml" \
    --out "$work/$1.out" > "$work/$1.log" 2>&1 || { tail -20 "$work/$1.log" >&2; exit 1; }
  sed -n 's/^summary: *//p' "$work/$1.cg" | tr -d ','
}

failed=0
# dimension NAME UNIT BASE PER MAKE: MAKE NAME-x N writes the scenario of size N, which has
# N x PER units.
dimension() {
  local name=$1 unit=$2 base=$3 per=$4 make=$5 f n
  declare -A ir
  for f in 1 2 5 10; do
    n=$((base * f))
    "$make" "$name-$f" "$n"
    ir[$f]=$(instructions "$name-$f")
  done
  awk -v name="$name" -v unit="$unit" -v b="$((base * per))" \
    -v i1="${ir[1]}" -v i2="${ir[2]}" -v i5="${ir[5]}" -v i10="${ir[10]}" 'BEGIN {
      small = (i2 - i1) / b; large = (i10 - i5) / (5 * b); r = large / small
      printf "scale-cost %s: Ir %.0f, %.0f, %.0f, %.0f at %d, %d, %d, %d %ss\n", name, i1, i2, i5, i10,
        b, 2 * b, 5 * b, 10 * b, unit
      printf "  per %s: %.0f Ir from %d to %d, %.0f Ir from %d to %d: ratio %.3f (limit 1.2)\n",
        unit, small, b, 2 * b, large, 5 * b, 10 * b, r
      printf "  whole runs: %d %ss cost %.2fx the run of %d\n", 10 * b, unit, i10 / i1, b
      exit !(r <= 1.2)
    }' || { echo "!!! SCALE-COST FAILED: $name: a larger run costs more per $unit !!!"; failed=1; }
}

senders() { scenario "$1" "$2" 16KiB 1; }
messages() { scenario "$1" 8 64B "$2"; }
dimension senders sender "$s" 1 senders
[[ ${ONLY:-} == senders ]] || dimension messages message "$k" 8 messages
exit "$failed"
