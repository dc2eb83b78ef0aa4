#!/usr/bin/env bash
# The four issue-4 figures of xrdma on the Soft-RoCE device, INSIDE the guest, after
# ci/softroce/perftest.sh has written RESULTS_DIR/perftest.env.
#
# usage: ci/softroce/figures.sh RESULTS_DIR XRDMA_BIN
#
#   XRDMA_BIN  the `xrdma` binary built with `--features verbs`
#
# Runs on SOFTROCE_DEV (default rxe0; XRDMA_VERBS_* pick device and GID as for every verbs run),
# each tool's output in RESULTS_DIR/figures/<tool>.txt:
#   ping      two processes, like ib_send_lat's server and client: `xrdma ping --backend verbs
#             --server --bind 127.0.0.1:FIG_PING_PORT (18520)` and `xrdma ping --backend verbs
#             --connect 127.0.0.1:FIG_PING_PORT --size 64B --iters FIG_PING_ITERS (10000)
#             --warmup 1000` (ping.txt: the client, ping-server.txt: the server)
#   ping-1p   the same ping with both ends in one process (`xrdma ping --backend verbs ...`)
#   ping-send, ping-write, ping-read
#             the verbs-level pings beside ib_send_lat, ib_write_lat, ib_read_lat: two
#             processes on ports FIG_VERB_PORT (18522) + 0, 1, 2, `xrdma ping --backend verbs
#             --verb send|write|read --size 64B --iters FIG_PING_ITERS --warmup 1000`
#   bw        two processes, like ib_write_bw's server and client: `xrdma bw --backend verbs
#             --server --bind 127.0.0.1:FIG_BW_PORT (18521)` and `xrdma bw --backend verbs
#             --connect 127.0.0.1:FIG_BW_PORT --size 64KiB --iters FIG_BW_ITERS (5000)`
#             (bw.txt: the client, bw-server.txt: the server)
#   bw-1p     the same stream with both ends in one process
#   qp-setup  xrdma qp-setup --backend verbs --iters FIG_QP_ITERS (100)
#   idle      xrdma idle --backend verbs --seconds FIG_IDLE_SECONDS (3)
# and writes RESULTS_DIR/figures.env (key=value lines; µs, MiB/s as perftest's MB/sec, %):
#   xrdma_half_rtt_64_typical_us  send_lat_typical_us  half_rtt_ratio      (target <= 1.2)
#     (the two-process ping; xrdma_half_rtt_64_one_process_typical_us: the one-process one)
#   xrdma_bw_64k_MBps             write_bw_64k_MBps    bw_ratio            (target >= 0.9)
#     (two processes; xrdma_bw_64k_one_process_MBps: the one-process stream)
#   qp_setup_fresh_us             qp_setup_cached_us   qp_setup_speedup    (target >= 20)
#   qp_setup_cached_without_reset_us (reference: the cached path when the reset is done at close)
#   idle_cpu_percent                                                       (target < 5)
#   xrdma_verb_VERB_64_typical_us  VERB_lat_typical_us  verb_VERB_deviation (target <= 0.2)
#     for VERB in send, write, read: |xrdma's typical / perftest's - 1|, the verbs-level
#     ping's typical latency within 20 % of perftest's on the same device and size
#   <each ratio>_target, <each ratio>_met (yes / no / unknown)
# It reports figures and never fails on a missed target. Exit status: 0 when every tool ran
# and gave its figure, 1 otherwise (a perftest figure missing makes its ratio empty, not a
# failure here: perftest.sh reports that itself).
set -euo pipefail

(($# == 2)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
results=$1
xrdma=$2
out=$results/figures
mkdir -p "$out"
export XRDMA_VERBS_DEVICE=${XRDMA_VERBS_DEVICE:-${SOFTROCE_DEV:-rxe0}}

failed=0
tool() { # NAME ARGS...
  local name=$1
  shift
  echo "figures: $name: xrdma $*"
  if ! timeout 300 "$xrdma" "$@" > "$out/$name.txt" 2>&1; then
    echo "figures: $name failed:" >&2
    tail -n 20 "$out/$name.txt" >&2
    failed=1
  fi
  cat "$out/$name.txt"
}
# Server and client of a two-process tool (NAME.txt: the client, NAME-server.txt: the
# server), ARGS given to both (a server takes the options it shares with its client, such as
# ping's --verb and --size, and ignores the client's counts); the client retries its
# connection until the server listens.
pair() { # NAME PORT TOOL ARGS...
  local name=$1 port=$2 tool=$3
  shift 3
  echo "figures: $name: xrdma $tool --backend verbs --server / --connect 127.0.0.1:$port $*"
  timeout 300 "$xrdma" "$tool" --backend verbs --server --bind "127.0.0.1:$port" "$@" \
    > "$out/$name-server.txt" 2>&1 &
  local server=$!
  if ! timeout 300 "$xrdma" "$tool" --backend verbs --connect "127.0.0.1:$port" "$@" \
    > "$out/$name.txt" 2>&1; then
    echo "figures: $name (two processes) failed:" >&2
    tail -n 20 "$out/$name.txt" >&2
    failed=1
  fi
  if ! wait "$server"; then
    echo "figures: $name server failed:" >&2
    tail -n 20 "$out/$name-server.txt" >&2
    failed=1
  fi
  cat "$out/$name.txt" "$out/$name-server.txt"
}
ping_args=(--size 64B --iters "${FIG_PING_ITERS:-10000}" --warmup 1000)
bw_args=(--size 64KiB --iters "${FIG_BW_ITERS:-5000}")
pair ping "${FIG_PING_PORT:-18520}" ping "${ping_args[@]}"
tool ping-1p ping --backend verbs "${ping_args[@]}"
verb_port=${FIG_VERB_PORT:-18522}
for verb in send write read; do
  pair "ping-$verb" "$verb_port" ping --verb "$verb" "${ping_args[@]}"
  verb_port=$((verb_port + 1))
done
pair bw "${FIG_BW_PORT:-18521}" bw "${bw_args[@]}"
tool bw-1p bw --backend verbs "${bw_args[@]}"
tool qp-setup qp-setup --backend verbs --iters "${FIG_QP_ITERS:-100}"
tool idle idle --backend verbs --seconds "${FIG_IDLE_SECONDS:-3}"

# The column under header word WORD on the line after the header (the tools print a header
# line and one data line; headers with "[" name their units).
column() { # FILE WORD
  awk -v want="$2" '
    !col { for (i = 1; i <= NF; i++) if ($i == want) col = i; next }
    NF >= col { print $col; exit }' "$1" 2>/dev/null
}
# Data line fields by position (for headers whose words hold spaces).
field() { # FILE HEADER_REGEX N
  awk -v re="$2" -v n="$3" '$0 ~ re { h = 1; next } h && NF >= n { print $n; exit }' "$1" \
    2>/dev/null
}
env_value() { # FILE KEY
  sed -n "s/^$2=//p" "$1" 2>/dev/null | tail -n 1
}

half_rtt=$(column "$out/ping.txt" 't_typical[usec]')
half_rtt_1p=$(column "$out/ping-1p.txt" 't_typical[usec]')
bw=$(field "$out/bw.txt" 'average.MB.sec' 3)
bw_1p=$(field "$out/bw-1p.txt" 'average.MB.sec' 3)
fresh=$(field "$out/qp-setup.txt" 'fresh_median' 2)
cached=$(field "$out/qp-setup.txt" 'fresh_median' 3)
speedup=$(field "$out/qp-setup.txt" 'fresh_median' 4)
cached_no_reset=$(field "$out/qp-setup.txt" 'fresh_median' 5)
idle=$(field "$out/idle.txt" 'of one core' 3)
send_lat=$(env_value "$results/perftest.env" send_lat_typical_us)
declare -A verb_typ verb_perftest
for verb in send write read; do
  verb_typ[$verb]=$(column "$out/ping-$verb.txt" 't_typical[usec]')
  verb_perftest[$verb]=$(env_value "$results/perftest.env" "${verb}_lat_typical_us")
done
write_bw=$(env_value "$results/perftest.env" write_bw_64k_MBps)

num() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; }
for v in half_rtt half_rtt_1p bw bw_1p fresh cached speedup idle; do
  if ! num "${!v}"; then
    echo "figures: no figure for $v (see $out)" >&2
    failed=1
  fi
done
for verb in send write read; do
  if ! num "${verb_typ[$verb]}"; then
    echo "figures: no figure for ping --verb $verb (see $out/ping-$verb.txt)" >&2
    failed=1
  fi
done
ratio() { # A B -> A/B, or empty
  if num "$1" && num "$2" && awk -v b="$2" 'BEGIN { exit !(b > 0) }'; then
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'
  fi
}
deviation() { # A B -> |A/B - 1|, or empty
  local r
  r=$(ratio "$1" "$2")
  if [[ -n $r ]]; then
    awk -v r="$r" 'BEGIN { d = r - 1; if (d < 0) d = -d; printf "%.3f", d }'
  fi
}
met() { # VALUE OP LIMIT -> yes / no / unknown
  if ! num "$1"; then
    echo unknown
  elif awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN {
      exit !((op == "<=" && v <= l) || (op == ">=" && v >= l) || (op == "<" && v < l)) }'; then
    echo yes
  else
    echo no
  fi
}
half_rtt_ratio=$(ratio "$half_rtt" "$send_lat")
bw_ratio=$(ratio "$bw" "$write_bw")
# The tool's own ratio of the unrounded medians.
qp_setup_speedup=$speedup

{
  echo "xrdma_half_rtt_64_typical_us=$half_rtt"
  echo "send_lat_typical_us=$send_lat"
  echo "half_rtt_ratio=$half_rtt_ratio"
  echo "half_rtt_ratio_target=<=1.2"
  echo "half_rtt_ratio_met=$(met "$half_rtt_ratio" '<=' 1.2)"
  echo "xrdma_half_rtt_64_one_process_typical_us=$half_rtt_1p"
  echo "half_rtt_one_process_ratio=$(ratio "$half_rtt_1p" "$send_lat")"
  echo "xrdma_bw_64k_MBps=$bw"
  echo "write_bw_64k_MBps=$write_bw"
  echo "bw_ratio=$bw_ratio"
  echo "bw_ratio_target=>=0.9"
  echo "bw_ratio_met=$(met "$bw_ratio" '>=' 0.9)"
  echo "xrdma_bw_64k_one_process_MBps=$bw_1p"
  echo "bw_one_process_ratio=$(ratio "$bw_1p" "$write_bw")"
  echo "qp_setup_fresh_us=$fresh"
  echo "qp_setup_cached_us=$cached"
  echo "qp_setup_speedup=$qp_setup_speedup"
  echo "qp_setup_speedup_target=>=20"
  echo "qp_setup_speedup_met=$(met "$qp_setup_speedup" '>=' 20)"
  echo "qp_setup_cached_without_reset_us=$cached_no_reset"
  echo "idle_cpu_percent=$idle"
  echo "idle_cpu_percent_target=<5"
  echo "idle_cpu_percent_met=$(met "$idle" '<' 5)"
  for verb in send write read; do
    d=$(deviation "${verb_typ[$verb]}" "${verb_perftest[$verb]}")
    echo "xrdma_verb_${verb}_64_typical_us=${verb_typ[$verb]}"
    echo "${verb}_lat_typical_us=${verb_perftest[$verb]}"
    echo "verb_${verb}_deviation=$d"
    echo "verb_${verb}_deviation_target=<=0.2"
    echo "verb_${verb}_deviation_met=$(met "$d" '<=' 0.2)"
  done
} > "$results/figures.env"
echo "figures: $results/figures.env"
cat "$results/figures.env"
exit "$failed"
