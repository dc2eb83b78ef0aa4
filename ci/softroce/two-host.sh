#!/usr/bin/env bash
# Boots two Soft-RoCE guests joined by a wire and runs one command on each, so RoCE v2
# packets really cross a link (run.sh boots one guest, whose two ends share one rxe device).
#
# usage: ci/softroce/two-host.sh WORKDIR RESULTS_DIR -- COMMAND [ARG...]
#
#   WORKDIR      prepared by ci/softroce/prepare.sh (holds softroce.env, kernel, initrd.gz).
#   RESULTS_DIR  created if needed; shared WRITABLE with BOTH guests at the same path (they
#                can hand files to each other there). Receives, for each host H in a and b:
#                guest-command-H.sh (what the guest runs), console-H.log (its whole console,
#                also streamed to stdout with "H| " before each line), .softroce-status-H;
#                and run-times.env, plus whatever the commands write.
#   COMMAND      runs inside each guest, chrooted into the host's / (read-only), in the current
#                directory, as run.sh's command does, with these set:
#                  SOFTROCE_HOST       a or b
#                  SOFTROCE_IP         10.99.0.1 on host a, 10.99.0.2 on host b (on eth0)
#                  SOFTROCE_PEER_IP    the other host's address
#                  SOFTROCE_RUN_ID     the same random word on both hosts, new each run (to
#                                      name a handshake folder in RESULTS_DIR, say)
#                  SOFTROCE_DEV (rxe0, on eth0), SOFTROCE_NETDEV (eth0), SOFTROCE_GID_INDEX
#                  (the IPv4-mapped RoCE v2 GID, index 1), SOFTROCE_RESULTS (RESULTS_DIR)
#
# The wire: each guest's virtio-net NIC (MAC 52:54:00:00:00:01 / :02) on a qemu netdev, by
# SOFTROCE_WIRE:
#   unix (default)  a unix stream socket (-netdev stream): host a listens, host b connects.
#                   Lossless: a guest too slow to take its frames holds the sender back, as
#                   a PFC-enabled RoCE fabric does. No Nagle or delayed ACK (qemu's TCP forms
#                   add ~40 ms per small exchange).
#   udp             a UDP socket netdev each way on 127.0.0.1 (SOFTROCE_WIRE_PORT and the one
#                   after it; default two free ports). The host drops the datagrams a busy
#                   guest does not read in time (a loaded host lost 20 000 frames a run), and
#                   rxe recovers them as losses; run-times.env counts them
#                   (host_udp_rcvbuf_errors).
#
# Environment: SOFTROCE_TIMEOUT (seconds for each guest's whole run, default 600),
#   SOFTROCE_MEM_MIB (memory of each guest, 1024), SOFTROCE_SMP (vCPUs of each, 1),
#   SOFTROCE_PEER_GRACE (seconds a guest may keep running once the other has ended, 60),
#   SOFTROCE_WIRE, SOFTROCE_WIRE_PORT, and as for run.sh: SOFTROCE_PASS_ENV, SOFTROCE_QUIET=1,
#   SOFTROCE_VERBOSE_KERNEL=1.
#
# Prints each host's outcome ("two-host: host a (10.99.0.1): command exited with status 0").
# Exit status: 0 when the command exited 0 on both hosts; otherwise host a's status if it is
# not 0, else host b's, where a host's status is its command's exit status, 124 when the
# guest timed out (or was stopped after the other ended), 125 when it did not get as far as
# running the command (see its console log); 2 on usage.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
say() { printf 'two-host: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 125; }

if (($# < 4)) || [[ $3 != -- ]]; then usage; fi
workdir=$1
results=$2
shift 3

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=ci/softroce/boot.sh
source "$here/boot.sh"
softroce_prepared "$workdir"

timeout_s=${SOFTROCE_TIMEOUT:-600}
mem=${SOFTROCE_MEM_MIB:-1024}
smp=${SOFTROCE_SMP:-1}
grace=${SOFTROCE_PEER_GRACE:-60}
for v in timeout_s mem smp grace; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "$v: not a whole number: ${!v}"
done

mkdir -p "$results"
results=$(cd "$results" && pwd)
softroce_check_path RESULTS_DIR "$results"
softroce_check_path "working directory" "$PWD"

hosts=(a b)
declare -A ip=([a]=10.99.0.1 [b]=10.99.0.2) mac=([a]=52:54:00:00:00:01 [b]=52:54:00:00:00:02)
declare -A peer=([a]=b [b]=a) token=() netdev=()
run_id=$(softroce_token)
tmp=$(mktemp -d)

# The wire: each guest's -netdev.
wire=${SOFTROCE_WIRE:-unix}
case $wire in
  unix)
    sock=$tmp/wire.sock
    netdev[a]="stream,id=n0,server=on,addr.type=unix,addr.path=$sock"
    netdev[b]="stream,id=n0,server=off,addr.type=unix,addr.path=$sock"
    wire_says="a unix stream socket ($sock)"
    ;;
  udp) ;;
  *) die "SOFTROCE_WIRE=$wire: udp or unix" ;;
esac
# Two free UDP ports on 127.0.0.1, one per end of the wire.
udp_free() { ! ss -Hulnp "sport = :$1" 2> /dev/null | grep -q .; }
if [[ $wire != udp ]]; then
  :
elif [[ -n ${SOFTROCE_WIRE_PORT:-} ]]; then
  if ! [[ $SOFTROCE_WIRE_PORT =~ ^[0-9]+$ ]] || ((SOFTROCE_WIRE_PORT < 1 || SOFTROCE_WIRE_PORT > 65534)); then
    die "SOFTROCE_WIRE_PORT: not a UDP port below 65535: $SOFTROCE_WIRE_PORT"
  fi
  port_a=$SOFTROCE_WIRE_PORT
else
  port_a=
  for _ in $(seq 50); do
    p=$((20000 + 2 * (RANDOM % 20000)))
    if udp_free "$p" && udp_free "$((p + 1))"; then
      port_a=$p
      break
    fi
  done
  [[ -n $port_a ]] || die "found no two free UDP ports for the wire (set SOFTROCE_WIRE_PORT)"
fi
if [[ $wire == udp ]]; then
  port_b=$((port_a + 1))
  netdev[a]="socket,id=n0,udp=127.0.0.1:$port_b,localaddr=127.0.0.1:$port_a"
  netdev[b]="socket,id=n0,udp=127.0.0.1:$port_a,localaddr=127.0.0.1:$port_b"
  wire_says="UDP 127.0.0.1:$port_a <-> 127.0.0.1:$port_b"
fi

# Stops a guest still running (its qemu, by the pid qemu wrote).
stop_guest() { # H
  local pid
  pid=$(cat "$tmp/qemu-$1.pid" 2> /dev/null) || return 0
  if [[ -n $pid ]]; then kill "$pid" 2> /dev/null || true; fi
}
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  stop_guest a
  stop_guest b
  wait 2> /dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for h in "${hosts[@]}"; do
  rm -f "$results/.softroce-status-$h" "$results/console-$h.log"
  token[$h]=$(softroce_token)
  script=$results/guest-command-$h.sh
  softroce_command_script "$script" SOFTROCE_HOST="$h" SOFTROCE_PEER_IP="${ip[${peer[$h]}]}" \
    SOFTROCE_RUN_ID="$run_id" -- "$@"
done
rm -f "$results/run-times.env"

# Boots host H; its qemu exit status goes to $tmp/qemu-H.rc, the time it ended to $tmp/end-H.
boot_guest() { # H
  local h=$1 append rc=0
  append=$(softroce_append "${token[$h]}" "$results" "$results/guest-command-$h.sh" \
    "softroce_ip=${ip[$h]}/24" softroce_netdev=eth0 "softroce_status=$results/.softroce-status-$h")
  softroce_qemu_args "$results" "$append" "$mem" "$smp"
  softroce_boot "${token[$h]}" "$results/console-$h.log" "$tmp/marks-$h" "$h| " "$timeout_s" \
    "${SOFTROCE_QEMU[@]}" -pidfile "$tmp/qemu-$h.pid" \
    -netdev "${netdev[$h]}" \
    -device "virtio-net-pci,netdev=n0,mac=${mac[$h]}" || rc=$?
  printf '%s\n' "$rc" > "$tmp/qemu-$h.rc"
  printf '%s\n' "$EPOCHREALTIME" > "$tmp/end-$h"
}

# Frames the wire lost on the host: UDP datagrams dropped because the receiving qemu did not
# read its socket in time (a guest too slow to drain its NIC).
udp_rcvbuf_errors() {
  awk '$1 == "Udp:" && !h { for (i = 2; i <= NF; i++) if ($i == "RcvbufErrors") c = i; h = 1; next }
    $1 == "Udp:" && h && c { print $c; exit }' /proc/net/snmp 2> /dev/null
}
udp_errors0=$(udp_rcvbuf_errors)
say "booting two guests (timeout ${timeout_s} s, ${mem} MiB and ${smp} vCPU each), wire" \
  "on $wire_says; consoles: $results/console-{a,b}.log"
t0=$EPOCHREALTIME
declare -A job=()
boot_guest a &
job[a]=$!
if [[ $wire == unix ]]; then
  # b connects to the socket a listens on.
  for _ in $(seq 300); do
    [[ -S $sock ]] || ! kill -0 "${job[a]}" 2> /dev/null && break
    sleep 0.1
  done
fi
boot_guest b &
job[b]=$!
# When one guest ends, the other gets SOFTROCE_PEER_GRACE seconds before it is stopped: a
# command waiting for a peer that crashed must not hold the run until the timeout.
first=
while [[ -z $first ]]; do
  for h in "${hosts[@]}"; do
    if ! kill -0 "${job[$h]}" 2> /dev/null; then
      first=$h
      break
    fi
  done
  [[ -n $first ]] || sleep 0.5
done
other=${peer[$first]}
deadline=$((SECONDS + grace))
while kill -0 "${job[$other]}" 2> /dev/null && ((SECONDS < deadline)); do
  sleep 0.5
done
if kill -0 "${job[$other]}" 2> /dev/null; then
  say "host $first ended; host $other still runs after ${grace} s: stopping it"
  : > "$tmp/stopped-$other"
  stop_guest "$other"
fi
wait "${job[a]}" "${job[b]}" || true
t1=$EPOCHREALTIME

declare -A stage=() rc=() qemu_rc=() outcome=()
for h in "${hosts[@]}"; do
  qemu_rc[$h]=$(cat "$tmp/qemu-$h.rc" 2> /dev/null || echo none)
  read -r "stage[$h]" "rc[$h]" <<< \
    "$(softroce_status "${token[$h]}" "$results/.softroce-status-$h" "$results/console-$h.log")"
  if [[ ${stage[$h]} == command && ${rc[$h]} != none ]]; then
    outcome[$h]=${rc[$h]}
    say "host $h (${ip[$h]}): command exited with status ${rc[$h]}"
  elif [[ ${stage[$h]} == setup ]]; then
    outcome[$h]=125
    say "host $h (${ip[$h]}): guest setup failed before the command ran (see $results/console-$h.log)"
  elif [[ -f $tmp/stopped-$h ]]; then
    outcome[$h]=124
    say "host $h (${ip[$h]}): stopped ${grace} s after host ${peer[$h]} ended (see $results/console-$h.log)"
  elif [[ ${qemu_rc[$h]} == 124 || ${qemu_rc[$h]} == 137 ]]; then
    outcome[$h]=124
    say "host $h (${ip[$h]}): timed out after ${timeout_s} s (see $results/console-$h.log)"
  else
    outcome[$h]=125
    say "host $h (${ip[$h]}): the guest ended without a status line (qemu exit ${qemu_rc[$h]}; see $results/console-$h.log)"
  fi
done
{
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "total_s=%.2f\n", b - a }'
  printf 'wire=%s\n' "$wire_says"
  udp_errors1=$(udp_rcvbuf_errors)
  if [[ $wire == udp && -n $udp_errors0 && -n $udp_errors1 ]]; then
    printf 'host_udp_rcvbuf_errors=%s\n' "$((udp_errors1 - udp_errors0))"
  fi
  for h in "${hosts[@]}"; do
    printf '%s_ip=%s\n%s_qemu_exit=%s\n' "$h" "${ip[$h]}" "$h" "${qemu_rc[$h]}"
    softroce_times "${h}_" "$t0" "$(cat "$tmp/end-$h" 2> /dev/null || echo "$t1")" "$tmp/marks-$h"
    printf '%s_stage=%s\n%s_rc=%s\n' "$h" "${stage[$h]}" "$h" "${rc[$h]}"
  done
} > "$results/run-times.env"
say "times: $(tr '\n' ' ' < "$results/run-times.env")"

if [[ ${outcome[a]} != 0 ]]; then
  exit "${outcome[a]}"
fi
exit "${outcome[b]}"
