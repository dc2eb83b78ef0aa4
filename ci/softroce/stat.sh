#!/usr/bin/env bash
# `xrdma stat` against a running verbs process INSIDE the Soft-RoCE guest, on rxe0.
#
# usage: ci/softroce/stat.sh DIR XRDMA_BIN
#
# Runs an 8-to-1 incast of 8 x 20 x 4 MiB on rxe0 with `--stat-socket` (in /tmp) in the
# background and, while it runs, asks it with `xrdma stat --socket` three ways: the table under
# `--watch 0.25 --count 4`, `--prometheus`, `--json`. Passes when the run delivers every
# message intact and its socket answered: the receiver's 8 connections established with their
# QPs in RTS (read from the device with ibv_query_qp), rxe0's own hw_counters beside them (with
# their change and rate from the second answer on), Prometheus samples of both, and a JSON
# answer naming the verbs backend; and when the socket is gone after the run.
set -euo pipefail

(($# == 2)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
dir=$1
xrdma=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=ci/softroce/lib.sh
source "$here/lib.sh"
mkdir -p "$dir"
# A socket cannot live on the 9p share the results are on: the guest's own /tmp.
sock=${TMPDIR:-/tmp}/xrdma-stat-$$.sock
rm -f "$sock"
cat > "$dir/stat-incast.yaml" << 'YAML'
name: stat-incast
workload:
  incast:
    senders: 8
    receiver: 0
    messages:
      - { size: 4MiB, count: 20 }
YAML

fail() { echo "$*" >&2; exit 1; }
timeout 300 "$xrdma" run --backend verbs "$dir/stat-incast.yaml" --out "$dir/run" \
  --stat-socket "$sock" > "$dir/run.log" 2>&1 &
run=$!
for _ in $(seq 1 600); do
  [[ -S $sock ]] && break
  kill -0 "$run" 2>/dev/null || break
  sleep 0.05
done
[[ -S $sock ]] || { cat "$dir/run.log"; fail "the run never opened $sock"; }
rc=0
"$xrdma" stat --socket "$sock" --watch 0.25 --count 4 --host 0 > "$dir/table.txt" 2>&1 || rc=$?
"$xrdma" stat --socket "$sock" --prometheus > "$dir/prometheus.txt" 2>&1 || rc=$?
"$xrdma" stat --socket "$sock" --json > "$dir/answer.json" 2>&1 || rc=$?
wait "$run" || { cat "$dir/run.log"; fail "the run failed"; }
cat "$dir/table.txt"
tail -n 5 "$dir/run.log"
((rc == 0)) || fail "a stat call failed (see $dir/*.txt, $dir/answer.json)"
softroce_all_delivered "$dir/run/result.json" 160
[[ ! -e $sock ]] || fail "$sock is still there after the run"

answers=$(grep -c '^pid .* backend verbs' "$dir/table.txt" || true)
((answers >= 2)) || fail "fewer than two answers while the run ran ($answers)"
rows=$(grep -cE '^ +0 +[0-9#]+ +[0-9]+ +established +0x[0-9a-f]+ +RTS ' "$dir/table.txt" || true)
((rows >= 8)) || fail "the receiver's 8 connections are not shown established in RTS ($rows rows)"
grep -qE '^device rxe[0-9]+ port [0-9]+ \(sysfs hw_counters\)' "$dir/table.txt" ||
  fail "no device counters beside xrdma's"
grep -qE '^  sent_pkts +[0-9]+ +\+[0-9]+ +[0-9.]+/s' "$dir/table.txt" ||
  fail "no sent_pkts change and rate under --watch"
grep -qE '^xrdma_conn_recv_bytes_total\{host="0",' "$dir/prometheus.txt" ||
  fail "no per-connection Prometheus samples"
grep -qE '^xrdma_device_counter_total\{device="rxe[0-9]+",port="[0-9]+",counter="sent_pkts"\} [0-9]+$' \
  "$dir/prometheus.txt" || fail "no device counter Prometheus samples"
grep -qF '"backend":"verbs"' "$dir/answer.json" || fail "the JSON answer does not name the verbs backend"
echo "stat socket: $answers answers while the run ran, 8 connections in RTS, rxe0's counters beside"
