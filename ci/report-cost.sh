#!/usr/bin/env bash
# What reporting costs beside the simulation: one sender's open-loop 64 B messages (1 M by
# default) run on the simulator, timed end to end by /usr/bin/time -v. Prints the simulation's
# wall time (the result's wall-seconds), the end-to-end wall time and their ratio, the peak RSS
# and `xrdma validate`'s estimate; then the same for the memory of scenarios/incast-256.yaml,
# the same over kernel TCP, incasts of 300 and 4096 senders and 8 senders' 2 M small
# messages. Says "!!! TARGET MISSED" when the ratio is above 3 or an estimate is off the peak
# by more than 30 %. Takes about 5 s a
# million messages, and 15 s more; not part of ci/test.sh.
#
# usage: ci/report-cost.sh XRDMA_BIN [MESSAGES (1000000)]
set -euo pipefail
(($# >= 1)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
xrdma=$(realpath "$1")
n=${2:-1000000}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/open-loop.yaml" << EOF
name: report-cost
description: one sender, $n open-loop 64 B messages at 1 M/s to host 0
workload:
  open-loop: { senders: 1, receiver: 0, rate: 1M/s, count: $n, size: 64B }
sim:
  seed: 1
  link-rate: 100Gbps
  link-delay: 1us
  mtu: 1KiB
  header-bytes: 82
  switch-buffer: 32MiB
  ecn: { kmin: 400KB, kmax: 1600KB, pmax: 0.2 }
  pfc: {}
EOF
missed=0
# estimate_mib SCENARIO: validate's estimate in MiB.
estimate_mib() {
  "$xrdma" validate "$1" | sed -n 's/.*about \([0-9.]*\) \([KMGT]\)iB of memory.*/\1 \2/p' |
    awk '{ f = ($2 == "K") ? 1 / 1024 : ($2 == "M") ? 1 : ($2 == "G") ? 1024 : 1048576; printf "%.1f", $1 * f }'
}
# timed NAME SCENARIO: runs it; sets wall (s), peak (MiB) and sim (s).
timed() {
  /usr/bin/time -v "$xrdma" run "$2" --out "$tmp/$1" > /dev/null 2> "$tmp/$1.time" ||
    { tail -n 30 "$tmp/$1.time" >&2; echo "report-cost: $2: the run failed" >&2; exit 1; }
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$tmp/$1.time")
  peak=$(awk '/Maximum resident set size/ { printf "%.1f", $NF / 1024 }' "$tmp/$1.time")
  sim=$(grep -o '"wall-seconds": [0-9.e+-]*' "$tmp/$1/result.json" | awk '{ print $2 }')
}
# judge WHAT ESTIMATE_MIB PEAK_MIB: prints the memory line and flags an estimate off by > 30 %.
judge() {
  local off
  off=$(awk -v e="$2" -v p="$3" 'BEGIN { printf "%+.0f", (e - p) / p * 100 }')
  echo "$1: peak RSS $3 MiB, validate's estimate $2 MiB ($off %)"
  if awk -v o="$off" 'BEGIN { exit !(o > 30 || o < -30) }'; then
    echo "!!! TARGET MISSED: $1: the estimate is off the measured peak by more than 30 % !!!"
    missed=1
  fi
}

timed open-loop "$tmp/open-loop.yaml"
ratio=$(awk -v w="$wall" -v s="$sim" 'BEGIN { printf "%.2f", w / s }')
echo "open loop, $n x 64 B, one sender: simulation $(printf '%.2f' "$sim") s, end to end $(printf '%.2f' "$wall") s, ratio $ratio"
if awk -v r="$ratio" 'BEGIN { exit !(r > 3) }'; then
  echo "!!! TARGET MISSED: end to end is more than 3 x the simulation !!!"
  missed=1
fi
judge "open loop, $n messages" "$(estimate_mib "$tmp/open-loop.yaml")" "$peak"
timed incast-256 scenarios/incast-256.yaml
judge "incast-256" "$(estimate_mib scenarios/incast-256.yaml)" "$peak"
# Larger incasts from the same file: N senders x one MESSAGE over a switch buffer of 128 KiB a
# port (PFC's headroom must fit), and 8 senders x COUNT small messages.
incast() { # NAME SENDERS SIZE COUNT
  local buffer=$((($2 + 1) * 128))
  ((buffer >= 32768)) || buffer=32768
  sed -e "s/senders: 256/senders: $2/" -e '/size: 1MiB/d' \
    -e "s/{ size: 64KiB, count: 4 }/{ size: $3, count: $4 }/" \
    -e "s/switch-buffer: 32MiB/switch-buffer: ${buffer}KiB/" scenarios/incast-256.yaml > "$tmp/$1.yaml"
  timed "$1" "$tmp/$1.yaml"
  judge "$1 ($2 senders x $4 x $3)" "$(estimate_mib "$tmp/$1.yaml")" "$peak"
}
sed 's/^sim:$/stack: tcp\nsim:/' scenarios/incast-256.yaml > "$tmp/incast-256-tcp.yaml"
timed incast-256-tcp "$tmp/incast-256-tcp.yaml"
judge "incast-256 over kernel TCP" "$(estimate_mib "$tmp/incast-256-tcp.yaml")" "$peak"
incast incast-300 300 16KiB 1
incast incast-4096 4096 64KiB 1
incast small-2m 8 64B 250000
exit "$missed"
