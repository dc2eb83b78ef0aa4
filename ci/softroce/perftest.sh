#!/usr/bin/env bash
# Runs perftest on the Soft-RoCE device, INSIDE the guest (ci/softroce/run.sh ... -- this).
#
# usage: ci/softroce/perftest.sh RESULTS_DIR
#
# Both ends of each test run on the same device (SOFTROCE_DEV, default rxe0) with the same GID:
# the server in the background, the client connecting to the IPv4 address held in the device's
# IPv4-mapped RoCE v2 GID, whose index (-x) is read from the GID table in sysfs.
#   ib_send_lat   64 B, busy polling (no -e), PERFTEST_LAT_ITERS iterations (default 10000)
#   ib_write_lat  64 B, busy polling,         PERFTEST_LAT_ITERS iterations
#   ib_read_lat   64 B, busy polling,         PERFTEST_LAT_ITERS iterations (not halved)
#   ib_write_bw   64 KiB,                      PERFTEST_BW_ITERS iterations (default 5000)
# Busy polling matters: in the TCG guest a completion-channel wake-up (-e) costs ~150 us.
#
# Writes RESULTS_DIR/perftest/<test>.{server,client}.txt (raw outputs), and the summary as
# RESULTS_DIR/perftest.env (key=value lines) and RESULTS_DIR/perftest.json (same keys):
#   send_lat_typical_us, send_lat_p99_us, write_lat_typical_us, write_lat_p99_us,
#   read_lat_typical_us, read_lat_p99_us
#       microseconds; perftest's t_typical (the median) and 99% percentile of the client side
#       (half a round trip for SEND and WRITE, a whole READ for READ, as perftest reports).
#   write_bw_64k_MBps   perftest's "BW average[MB/sec]", where perftest's MB is 2^20 bytes
#   write_bw_64k_Bps    the same in bytes per second (x 1048576)
#   device, gid_index, address, kernel, lat_iters, bw_iters, duration_s
# Exit status: 0 when all four ran and gave their figures, 1 otherwise.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=ci/softroce/lib.sh
source "$here/lib.sh"

(($# == 1)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
results=$1
out=$results/perftest
mkdir -p "$out"

dev=${SOFTROCE_DEV:-rxe0}
port=1
lat_iters=${PERFTEST_LAT_ITERS:-10000}
bw_iters=${PERFTEST_BW_ITERS:-5000}
t0=$EPOCHREALTIME

idx=$(softroce_gid_index "$dev" "$port")
addr=$(softroce_gid_ipv4 "$dev" "$port" "$idx")
echo "perftest: $dev port $port, GID index $idx (::ffff:$addr)"
common=(-d "$dev" -i "$port" -x "$idx" -F)

failed=0
# The figures of the 64 B latency and the 64 KiB bandwidth tables (lib.sh).
lat_field() { softroce_perftest_lat "$1" "$2" 64; } # FILE HEADER_WORD
bw_average() { softroce_perftest_bw "$1" 65536; }   # FILE

num() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; }
# Whether NAME's client output holds the figure this script reads.
has_figure() { # NAME
  if [[ $1 == *_bw ]]; then
    num "$(bw_average "$out/$1.client.txt")"
  else
    num "$(lat_field "$out/$1.client.txt" 't_typical[usec]')"
  fi
}
# Runs one perftest pair; retried (twice, on another TCP port) when perftest's own timing
# yields no figure, as it occasionally prints `inf` for every column under TCG.
run() { # NAME TCP_PORT COMMAND ARGS...
  local name=$1 tcp=$2 attempt
  shift 2
  for attempt in 1 2 3; do
    echo "perftest: $name: $* (attempt $attempt)"
    if softroce_run_pair "$name" "$out" "$((tcp + 10 * (attempt - 1)))" "$addr" 120 -- "$@" \
      && has_figure "$name"; then
      return 0
    fi
    echo "perftest: $name gave no usable figure (see $out/$name.client.txt)" >&2
  done
  failed=1
}
run send_lat 18515 ib_send_lat "${common[@]}" -s 64 -n "$lat_iters"
run write_lat 18516 ib_write_lat "${common[@]}" -s 64 -n "$lat_iters"
run read_lat 18518 ib_read_lat "${common[@]}" -s 64 -n "$lat_iters"
run write_bw 18517 ib_write_bw "${common[@]}" -s 65536 -n "$bw_iters"

send_typ=$(lat_field "$out/send_lat.client.txt" 't_typical[usec]')
send_p99=$(lat_field "$out/send_lat.client.txt" '99%')
write_typ=$(lat_field "$out/write_lat.client.txt" 't_typical[usec]')
write_p99=$(lat_field "$out/write_lat.client.txt" '99%')
read_typ=$(lat_field "$out/read_lat.client.txt" 't_typical[usec]')
read_p99=$(lat_field "$out/read_lat.client.txt" '99%')
bw=$(bw_average "$out/write_bw.client.txt")
bw_bps=
if [[ -n $bw ]]; then
  bw_bps=$(awk -v m="$bw" 'BEGIN { printf "%.0f", m * 1048576 }')
fi
duration=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')

for v in send_typ send_p99 write_typ write_p99 read_typ read_p99 bw; do
  if ! num "${!v}"; then
    echo "perftest: no figure for $v (see $out)" >&2
    failed=1
  fi
done

kernel=$(uname -r)
keys=(device gid_index address kernel lat_iters bw_iters send_lat_typical_us send_lat_p99_us
  write_lat_typical_us write_lat_p99_us read_lat_typical_us read_lat_p99_us write_bw_64k_MBps
  write_bw_64k_Bps duration_s)
vals=("$dev" "$idx" "$addr" "$kernel" "$lat_iters" "$bw_iters" "$send_typ" "$send_p99"
  "$write_typ" "$write_p99" "$read_typ" "$read_p99" "$bw" "$bw_bps" "$duration")
{
  for i in "${!keys[@]}"; do
    printf '%s=%s\n' "${keys[$i]}" "${vals[$i]}"
  done
} > "$results/perftest.env"
{
  printf '{'
  for i in "${!keys[@]}"; do
    ((i)) && printf ','
    v=${vals[$i]}
    if num "$v" && [[ ${keys[$i]} != address ]]; then
      printf '\n  "%s": %s' "${keys[$i]}" "$v"
    elif [[ -z $v ]]; then
      printf '\n  "%s": null' "${keys[$i]}"
    else
      printf '\n  "%s": "%s"' "${keys[$i]}" "$v"
    fi
  done
  printf '\n}\n'
} > "$results/perftest.json"

echo "perftest: send_lat typical ${send_typ:-?} us (p99 ${send_p99:-?}), write_lat typical" \
  "${write_typ:-?} us (p99 ${write_p99:-?}), read_lat typical ${read_typ:-?} us" \
  "(p99 ${read_p99:-?}), write_bw 64 KiB ${bw:-?} MB/s (MiB/s);" \
  "${duration} s; summary in $results/perftest.json"
exit "$failed"
