#!/usr/bin/env bash
# The two-host checks, INSIDE both guests of ci/softroce/two-host.sh: the same script runs on
# host a (10.99.0.1) and host b (10.99.0.2), each with its own rxe0 on eth0, the two joined by
# the wire, so every RoCE v2 packet below crosses a link.
#
# usage: ci/softroce/two-host-suite.sh RESULTS_DIR [XRDMA_BIN]
#
#   RESULTS_DIR  the share both guests write (two-host.sh's RESULTS_DIR, or a folder in it)
#   XRDMA_BIN    the `xrdma` binary built with `--features verbs`; without it the xrdma checks
#                print SKIP lines
#
# The two sides go through the checks in step: before each one they meet (each writes a file
# into RESULTS_DIR/.sync-$SOFTROCE_RUN_ID and waits for the other's), the servers run on b,
# the clients and receivers on a, and each side hands its exit status to the other the same
# way. Host a judges and counts; a check passes when both sides' parts passed. Checks:
#   perftest send_lat   ib_send_lat  64 B, busy polling, TWOHOST_LAT_ITERS (2000) iterations
#   perftest write_lat  ib_write_lat 64 B, busy polling, TWOHOST_LAT_ITERS iterations
#   perftest write_bw   ib_write_bw  64 KiB, TWOHOST_BW_ITERS (500) iterations
#                       (server on b, client on a with `-x GID_INDEX`; the client starts when
#                       the server listens and retries while its connection is refused)
#   xrdma ping          `xrdma ping --backend verbs --server --bind 10.99.0.2:18620` on b,
#                       `--connect 10.99.0.2:18620 --size 64B --iters TWOHOST_PING_ITERS (2000)
#                       --warmup 200` on a
#   xrdma bw            the same with `xrdma bw`, 64 KiB x TWOHOST_XBW_ITERS (500), port 18621
#   incast-8 ranks      scenarios/incast-8.yaml unchanged plus a `verbs.ranks` block: rank 0,
#                       the receiver, on a (10.99.0.1:18630), rank 1, the eight senders, on b
#                       (10.99.0.2:18631); passes when both ranks exit 0 and rank 0's merged
#                       result.json reports all 40 messages delivered intact, holds each rank's
#                       own device counters, and its top-level sent_pkts and data-packets are
#                       their sum (two devices; summary.txt says so). tcpdump on a's
#                       eth0 (udp port 4791, snap length 96, to a's tmpfs) records the run;
#                       the file is copied to RESULTS_DIR/wire.pcap
#   per hop ranks       scenarios/study/per-hop.yaml (2000 64 B requests, one at a time) as
#                       two ranks, the server on a and the client on b, over xrdma on rxe0
#                       (ports 18638/18639), then over the kernel's TCP on eth0 (`--backend
#                       sockets --stack tcp`, ports 18640/18641); passes when both deliver
#                       every request intact; each half round trip (p50 / 2) and TCP's over
#                       xrdma's go to figures.env (wire_*_half_rtt_64_us)
#   app echo            the application API's echo examples (staged beside XRDMA_BIN) across
#                       the wire: echo_server on b (port 18645), echo_client on a calling it
#                       20 times per size, 64 B to 1 MiB; passes when every reply checked; the
#                       64 B median round trip goes to figures.env (wire_app_echo_rtt_64_us)
#   slurm launch        scenarios/incast-8.yaml unedited, no --rank and no `verbs.ranks`: one rank
#                       per guest from SLURM_PROCID (0 on a, 1 on b), SLURM_NTASKS=2,
#                       SLURM_LOCALID=0 and SLURM_JOB_NODELIST=10.99.0.1,10.99.0.2 set by hand;
#                       passes when both exit 0, rank 0 placed the receiver on itself and the
#                       senders on rank 1, and its result.json reports all 40 messages intact
#   sweep ranks         `xrdma sweep incast-8.yaml --axis backend=verbs --axis size=4KiB,64KiB
#                       --point K` for K = 0, 1 on both guests under the same Slurm variables
#                       (what `--emit slurm --ranks 2` runs per array task), then `--collect` on
#                       a; passes when both points report all 40 messages delivered intact
#   wire capture        counts wire.pcap's packets (tcpdump's own tally) and decodes the first
#                       TWOHOST_DECODE_PACKETS (3000; decoding is slow under TCG): each one's BTH
#                       opcode read from `tcpdump -x`'s bytes (and, when tshark is installed,
#                       by tshark's RoCE dissector, which must agree); passes when they hold
#                       RC SENDs, RC WRITEs and ACKs
#   wire compare        after wire capture: scenarios/incast-8.yaml on the simulator (in the
#                       guest, `xrdma run --capture 0`: host 0's link, as a's eth0 is the
#                       receiver's), then `xrdma wire-compare` of its pcap against wire.pcap
#                       (opcodes, messages and their opcode sequences, PSN order, sizes,
#                       AckReq, ACKs per request packet, AETH MSN, NAKs, CNPs, ECN); passes
#                       when every measure is the same or listed, with its reason, in
#                       ci/softroce/wire-known-differences.txt; the table goes to
#                       two-host/wire-compare/wire-compare.txt
#   netem loss ranks    `tc qdisc add dev eth0 root netem TWOHOST_NETEM ("delay 100us loss 1%")`
#                       on the hosts in TWOHOST_NETEM_HOSTS ("a b"), then scenarios/faults/loss.yaml
#                       (the simulator's 1 %-loss incast, 4 senders x 8 x 64 KiB, local ACK
#                       timeout 1.05 ms; its `sim.faults` are the simulator's, the wire's netem
#                       is the real thing) as ranks the same way (ports 18632/18633; captured to
#                       RESULTS_DIR/wire-netem.pcap), then the qdisc removed; rxe's hw_counters
#                       read before and after on both hosts. Passes when all 32 messages are
#                       delivered intact AND rxe's retransmission counters moved
#                       (rcvd_seq_err + out_of_seq_request + duplicate_request +
#                       completer_retry_err, both hosts, > 0)
#   shaped window       `tc qdisc add dev eth0 root netem TWOHOST_SHAPE ("rate 16mbit limit
#                       10000")` on b, the clients' host (its egress is the bottleneck: rxe
#                       reaches about 50 Mb/s across the wire), then scenarios/cc/echo-shaped.yaml
#                       (4 clients on b, the server on a, 99.5 % 4 KiB and 0.5 % 256 KiB requests)
#                       as ranks twice: as shipped (adaptive window), then with
#                       `adaptive-window: false` (a window fixed at 256 KiB; ports 18634-18637).
#                       Passes when both deliver all 1200 requests intact, the adaptive run's
#                       result names the queueing-delay signal and counts window decreases on
#                       delay (transport.window, from the clients' rank), and its message p99 is
#                       lower than the fixed run's. The NIC declares 10000 Mb/s
#                       (two-host.sh's SOFTROCE_NIC_SPEED_MBPS), so rxe's port has a rate.
# TWOHOST_ONLY="SLUG..." runs only the named checks (their names with '-' for ' ').
# Every figure goes to RESULTS_DIR/figures.env (key=value; µs, perftest's MB/sec = MiB/s,
# packets, counter deltas), with xrdma's ratios to perftest, printed and never judged: both
# guests are CPU-bound TCG machines on two host cores.
# Host a ends with "softroce two-host: N passed, M failed" and exits 0 only when none failed;
# host b exits 0 when each of its parts passed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=ci/softroce/lib.sh
source "$here/lib.sh"
# shellcheck source=ci/softroce/two-host-ranks.sh
source "$here/two-host-ranks.sh"
# shellcheck source=ci/softroce/two-host-app.sh
source "$here/two-host-app.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
(($# == 1 || $# == 2)) || usage
results=$1
xrdma=${2:-}
me=${SOFTROCE_HOST:?SOFTROCE_HOST (a or b) is not set: run this through ci/softroce/two-host.sh}
case $me in
  a) peer=b ;;
  b) peer=a ;;
  *) echo "SOFTROCE_HOST=$me: must be a or b" >&2; exit 2 ;;
esac
peer_ip=${SOFTROCE_PEER_IP:?SOFTROCE_PEER_IP is not set}
my_ip=${SOFTROCE_IP:?SOFTROCE_IP is not set}
dev=${SOFTROCE_DEV:-rxe0}
netdev=${SOFTROCE_NETDEV:-eth0}
gid=${SOFTROCE_GID_INDEX:-$(softroce_gid_index "$dev")}
server_ip=10.99.0.2 # host b
client_ip=10.99.0.1 # host a
lat_iters=${TWOHOST_LAT_ITERS:-2000}
bw_iters=${TWOHOST_BW_ITERS:-500}
ping_iters=${TWOHOST_PING_ITERS:-2000}
xbw_iters=${TWOHOST_XBW_ITERS:-500}
netem=${TWOHOST_NETEM:-delay 100us loss 1%}
netem_hosts=${TWOHOST_NETEM_HOSTS:-a b}
shape=${TWOHOST_SHAPE:-rate 16mbit limit 10000}
only=${TWOHOST_ONLY:-}
decode_max=${TWOHOST_DECODE_PACKETS:-3000}
export XRDMA_VERBS_DEVICE=$dev XRDMA_VERBS_GID_INDEX=$gid

out=$results/two-host
mkdir -p "$out"
sync_dir=$results/.sync-${SOFTROCE_RUN_ID:?SOFTROCE_RUN_ID is not set}
mkdir -p "$sync_dir"
figures=$results/figures.env
[[ $me == a ]] && : > "$figures"

# --- the handshake, through files in the shared results folder ---------------------------
# post NAME [VALUE]: this side's NAME (atomically: write, then rename).
post() {
  printf '%s\n' "${2-}" > "$sync_dir/.$1.$me"
  mv -f "$sync_dir/.$1.$me" "$sync_dir/$1.$me"
}
# await NAME SECONDS: prints the other side's NAME once it is there; returns 1 after SECONDS,
# or at once when the other side's suite has ended.
await() {
  local f=$sync_dir/$1.$peer deadline=$((SECONDS + $2))
  while [[ ! -f $f ]]; do
    if [[ -f $sync_dir/exit.$peer ]] || ((SECONDS >= deadline)); then
      [[ -f $f ]] && break
      return 1
    fi
    sleep 0.2
  done
  cat "$f"
}
meet() { post "$1" && await "$1" "${2:-180}" > /dev/null; } # NAME [SECONDS]
trap 'post exit "$?" 2> /dev/null || true' EXIT

# --- the checks ------------------------------------------------------------------------------
passed=0
failed=0
skipped=0
figure() { printf '%s=%s\n' "$1" "$2" >> "$figures"; } # KEY VALUE (host a)
# A line saying what a check measured: check() prints these of a part that passed.
measured() { printf 'measured %s\n' "$*"; }
skip() { # NAME REASON: both sides skip the same checks (they share the root filesystem)
  if [[ $me == a ]]; then
    echo "SKIP two-host $1: $2"
    skipped=$((skipped + 1))
  fi
}
# check NAME FUNCTION [ARG...]: both sides meet, run FUNCTION (this side's part; its output in
# RESULTS_DIR/two-host/NAME.H.log), and swap exit statuses. Host a prints both parts' tails
# and counts the check.
check() {
  local name=$1 fn=$2 slug rc=0 peer_rc t0=$SECONDS took
  shift 2
  slug=${name// /-}
  [[ -z $only || " $only " == *" $slug "* ]] || return 0
  echo "=== $name (host $me)"
  if ! meet "$slug.start" 300; then
    echo "--- $name: FAILED: host $peer did not come to this check"
    [[ $me == a ]] && failed=$((failed + 1))
    return 0
  fi
  "$fn" "$@" > "$out/$slug.$me.log" 2>&1 || rc=$?
  post "$slug.rc" "$rc"
  peer_rc=$(await "$slug.rc" 600) || peer_rc=none
  took="$((SECONDS - t0)) s"
  [[ $me == a ]] && figure "check_${slug//-/_}_s" "$((SECONDS - t0))"
  if [[ $me == b ]]; then
    grep '^measured ' "$out/$slug.b.log" | sed 's/^measured //' || true
    ((rc == 0)) && echo "--- $name: host b's part passed ($took)" || echo "--- $name: host b's part FAILED ($took)"
    ((rc == 0)) || failed=$((failed + 1))
    return 0
  fi
  if ((rc == 0)) && [[ $peer_rc == 0 ]]; then
    grep -h '^measured ' "$out/$slug.a.log" "$out/$slug.b.log" 2> /dev/null | sed 's/^measured //' || true
    echo "--- $name: passed ($took)"
    passed=$((passed + 1))
  else
    echo "host a's part (exit $rc), $out/$slug.a.log:"
    tail -n 30 "$out/$slug.a.log"
    echo "host b's part (exit $peer_rc), $out/$slug.b.log:"
    tail -n 30 "$out/$slug.b.log" 2> /dev/null || true
    echo "--- $name: FAILED ($took)"
    failed=$((failed + 1))
  fi
}

# One perftest pair: the server on b, listening on PORT; the client on a once the server
# listens, retried while its connection is refused. Outputs: RESULTS_DIR/two-host/NAME.{server,client}.txt.
perftest_pair() { # NAME PORT PROGRAM ARG...
  local name=$1 port=$2 pid rc=0 attempt
  shift 2
  local cmd=("$@" -d "$dev" -i 1 -x "$gid" -F -p "$port")
  if [[ $me == b ]]; then
    echo "server: ${cmd[*]}"
    timeout 120 "${cmd[@]}" > "$out/$name.server.txt" 2>&1 &
    pid=$!
    if softroce_wait_listening "$port" "$pid" 30; then post "$name.listening" yes; else post "$name.listening" no; fi
    wait "$pid" || rc=$?
    cat "$out/$name.server.txt"
    echo "server exit status $rc$( ((rc == 124)) && echo ' (timed out)')"
    return "$rc"
  fi
  [[ $(await "$name.listening" 60) == yes ]] || { echo "the server on b did not listen on $port"; return 1; }
  echo "client: ${cmd[*]} $server_ip"
  for attempt in 1 2 3 4 5; do
    rc=0
    timeout 120 "${cmd[@]}" "$server_ip" > "$out/$name.client.txt" 2>&1 || rc=$?
    if ((rc == 0)) || ! grep -q "Couldn't connect" "$out/$name.client.txt"; then
      break
    fi
    echo "attempt $attempt: connection refused, retrying"
    sleep 1
  done
  cat "$out/$name.client.txt"
  echo "client exit status $rc$( ((rc == 124)) && echo ' (timed out)')"
  return "$rc"
}
perftest_lat() { # NAME PORT PROGRAM: a latency test, its figures (host a)
  perftest_pair "$1" "$2" "$3" -s 64 -n "$lat_iters" || return 1
  [[ $me == a ]] || return 0
  local typ avg p99
  typ=$(softroce_perftest_lat "$out/$1.client.txt" 't_typical[usec]' 64)
  avg=$(softroce_perftest_lat "$out/$1.client.txt" 't_avg[usec]' 64)
  p99=$(softroce_perftest_lat "$out/$1.client.txt" '99%' 64)
  measured "$3 host to host, 64 B: typical $typ us, average $avg us, p99 $p99 us"
  figure "perftest_${1}_typical_us" "$typ"
  figure "perftest_${1}_avg_us" "$avg"
  figure "perftest_${1}_p99_us" "$p99"
  softroce_num "$typ" && softroce_num "$avg"
}
perftest_bw() { # NAME PORT (host a records ib_write_bw's figure)
  perftest_pair "$1" "$2" ib_write_bw -s 65536 -n "$bw_iters" || return 1
  [[ $me == a ]] || return 0
  local bw
  bw=$(softroce_perftest_bw "$out/$1.client.txt" 65536)
  measured "ib_write_bw host to host, 64 KiB: average $bw MB/s (MiB/s)"
  figure perftest_write_bw_64k_MBps "$bw"
  softroce_num "$bw"
}

# A two-process xrdma tool: the server on b, the client on a (which retries its bootstrap
# connection until the server listens).
xrdma_pair() { # NAME TOOL PORT CLIENT_ARG...
  local name=$1 tool=$2 port=$3 rc=0
  shift 3
  if [[ $me == b ]]; then
    timeout 150 "$xrdma" "$tool" --backend verbs --server --bind "$server_ip:$port" \
      > "$out/$name.server.txt" 2>&1 || rc=$?
    cat "$out/$name.server.txt"
    echo "server exit status $rc$( ((rc == 124)) && echo ' (timed out)')"
    return "$rc"
  fi
  echo "client: xrdma $tool --backend verbs --connect $server_ip:$port $*"
  timeout 300 "$xrdma" "$tool" --backend verbs --connect "$server_ip:$port" "$@" \
    > "$out/$name.client.txt" 2>&1 || rc=$?
  cat "$out/$name.client.txt"
  echo "client exit status $rc$( ((rc == 124)) && echo ' (timed out)')"
  return "$rc"
}
xrdma_ping() {
  xrdma_pair xrdma-ping ping 18620 --size 64B --iters "$ping_iters" --warmup 200 || return 1
  [[ $me == a ]] || return 0
  local typ avg
  typ=$(softroce_perftest_lat "$out/xrdma-ping.client.txt" 't_typical[usec]' 64)
  avg=$(softroce_perftest_lat "$out/xrdma-ping.client.txt" 't_avg[usec]' 64)
  measured "xrdma ping host to host, 64 B: half round trip typical $typ us, average $avg us"
  figure xrdma_ping_typical_us "$typ"
  figure xrdma_ping_avg_us "$avg"
  softroce_num "$typ"
}
xrdma_bw() {
  xrdma_pair xrdma-bw bw 18621 --size 64KiB --iters "$xbw_iters" || return 1
  [[ $me == a ]] || return 0
  local bw
  bw=$(awk '/BW average\[MB\/sec\]/ { h = 1; next } h && $1 == 65536 { print $3; exit }' \
    "$out/xrdma-bw.client.txt")
  measured "xrdma bw host to host, 64 KiB: $bw MB/s (MiB/s)"
  figure xrdma_bw_64k_MBps "$bw"
  softroce_num "$bw"
}

# rxe's counters of port 1, as NAME=VALUE lines.
counters() {
  local f
  for f in "/sys/class/infiniband/$dev/ports/1/hw_counters"/*; do
    printf '%s=%s\n' "${f##*/}" "$(cat "$f")"
  done
}
# AFTER - BEFORE for every counter, as NAME=DELTA lines.
counter_deltas() { # BEFORE_FILE AFTER_FILE
  awk -F= 'NR == FNR { b[$1] = $2; next } { printf "%s=%d\n", $1, $2 - b[$1] }' "$1" "$2"
}

capture_pid=
# Starts tcpdump on this side's eth0 into /tmp/NAME.pcap (the guest's tmpfs: writing over 9p
# loses packets), and waits until it captures.
capture_start() { # NAME
  tcpdump -Z root -i "$netdev" -s 96 -B 8192 -U -w "/tmp/$1.pcap" udp port 4791 \
    2> "$out/$1.tcpdump.txt" &
  capture_pid=$!
  local i
  for i in $(seq 100); do
    grep -q 'listening on' "$out/$1.tcpdump.txt" 2> /dev/null && return 0
    kill -0 "$capture_pid" 2> /dev/null || break
    sleep 0.1
  done
  echo "tcpdump did not start: $(cat "$out/$1.tcpdump.txt")" >&2
  return 1
}
# Stops the capture, copies the file to RESULTS_DIR/NAME.pcap and prints tcpdump's counts.
# tcpdump writes each packet as it reads it (-U); it is stopped once the file has not grown
# for 1 s (at most 20 s): an interrupt leaves what is still in the kernel's buffer unread
# (263 of a run's 11 901 packets were lost so under TCG).
capture_stop() { # NAME
  [[ -n $capture_pid ]] || return 1
  local size=-1 now
  for _ in $(seq 20); do
    now=$(stat -c %s "/tmp/$1.pcap" 2> /dev/null || echo 0)
    ((now == size)) && break
    size=$now
    sleep 1
  done
  kill -INT "$capture_pid" 2> /dev/null || true
  wait "$capture_pid" 2> /dev/null || true
  capture_pid=
  cp "/tmp/$1.pcap" "$results/$1.pcap"
  rm -f "/tmp/$1.pcap"
  grep -E 'packets (captured|received by filter|dropped by kernel)' "$out/$1.tcpdump.txt" || true
}

# The job secret of check NAME: host a makes it into FILE on the share (as a launcher makes
# one per job), then both sides meet, so b reads the same one.
job_secret() { # NAME FILE
  if [[ $me == a ]]; then
    rm -f "$2"
    "$xrdma" job-secret --file "$2" || return 1
  fi
  meet "$1.secret" 60
}

# A cluster launch dry run across the wire: scenarios/incast-8.yaml unedited, one rank per
# guest started the way `srun -N 2` starts them (SLURM_PROCID 0 on a, 1 on b, SLURM_NTASKS=2,
# SLURM_LOCALID=0, SLURM_JOB_NODELIST listing the two guests), with no --rank and no
# `verbs.ranks`: the ranks meet at the first node (a, port 18515) and learn each other's
# address there. The guests have no name service between them, so the node list holds their
# addresses where a cluster's holds host names.
slurm_check() {
  local dir=$out/slurm-launch rank=1 rc=0 log
  [[ $me == a ]] && rank=0
  mkdir -p "$dir"
  log=$dir/rank$rank.log
  rm -rf "$dir/report.$me"
  job_secret slurm-launch "$dir/job.secret" || return 1
  XRDMA_JOB_SECRET=$(cat "$dir/job.secret") \
    SLURM_PROCID=$rank SLURM_LOCALID=0 SLURM_NTASKS=2 SLURM_JOB_NODELIST="$client_ip,$server_ip" \
    timeout 300 "$xrdma" run --backend verbs "$repo/scenarios/incast-8.yaml" \
    --out "$dir/report.$me" > "$log" 2>&1 || rc=$?
  cat "$log"
  ((rc == 0)) || return 1
  if [[ $me == b ]]; then
    grep -qF 'records handed to rank 0, which writes the report' "$log" \
      || { echo "rank 1 did not hand its records to rank 0"; return 1; }
    return 0
  fi
  grep -qE 'rank 0 at [0-9.]+:18516: host 0 \(receiver\)' "$log" \
    || { echo "rank 0 did not place the receiver on itself"; return 1; }
  grep -qE 'rank 1 at [0-9.]+:18516: hosts 1-8 \(senders\)' "$log" \
    || { echo "rank 0 did not place the eight senders on rank 1"; return 1; }
  softroce_all_delivered "$dir/report.a/result.json" 40 || return 1
  measured "incast-8.yaml unedited, ranks from the Slurm variables alone: 40 messages delivered intact across the wire"
}

# A sweep's verbs points as ranks across the wire, each point run the way a Slurm job step of
# `xrdma sweep --emit slurm --ranks 2` runs it: scenarios/incast-8.yaml over two message sizes,
# `--point K` for K = 0, 1 on both guests with the Slurm variables set by hand, then
# `--collect` on a.
sweep_check() {
  local dir=$out/sweep-ranks rank=1 k
  [[ $me == a ]] && rank=0
  local sweep=("$xrdma" sweep "$repo/scenarios/incast-8.yaml" --axis backend=verbs
    --axis size=4KiB,64KiB --out "$dir/sweep")
  [[ $me == a ]] && rm -rf "$dir"
  meet sweep-ranks.clean 60 || return 1
  mkdir -p "$dir"
  job_secret sweep-ranks "$dir/job.secret" || return 1
  for k in 0 1; do
    XRDMA_JOB_SECRET=$(cat "$dir/job.secret") \
      SLURM_PROCID=$rank SLURM_LOCALID=0 SLURM_NTASKS=2 SLURM_JOB_NODELIST="$client_ip,$server_ip" \
      timeout 300 "${sweep[@]}" --point "$k" > "$dir/point$k.$me.log" 2>&1 \
      || { cat "$dir/point$k.$me.log"; return 1; }
    cat "$dir/point$k.$me.log"
    meet "sweep-ranks.point$k" 300 || return 1
  done
  [[ $me == a ]] || return 0
  "${sweep[@]}" --collect > "$dir/collect.log" 2>&1 || { cat "$dir/collect.log"; return 1; }
  cat "$dir/collect.log"
  local f n=0
  for f in "$dir"/sweep/points/*/result.json; do
    softroce_all_delivered "$f" 40 || return 1
    n=$((n + 1))
  done
  ((n == 2)) || { echo "$n point results, not 2"; return 1; }
  measured "sweep of incast-8.yaml over 2 sizes on the verbs backend, each point as 2 ranks (one per guest): both points delivered all 40 messages intact, collected into one index"
}

# Every packet's BTH opcode in a capture, read from tcpdump's hex bytes (-x: from the IP
# header on; IPv4 only, as RoCE v2 with IPv4-mapped GIDs is): IHL x 4 + 8 (UDP) bytes in.
# Prints "COUNT OPCODE_HEX NAME" lines, and "nak COUNT" for ACKs whose AETH syndrome is a NAK.
# MAX > 0: the first MAX packets only (decoding is slow in the TCG guest: ~150 packets/s).
decode_bth() { # PCAP [MAX]
  local count=()
  ((${2:-0} > 0)) && count=(-c "$2")
  tcpdump -nn -x "${count[@]}" -r "$1" 2> /dev/null | awk '
    function byte(at) { # the byte at offset AT, as a number (mawk has no strtonum)
      return (index("0123456789abcdef", substr(hex, 2 * at + 1, 1)) - 1) * 16 \
        + index("0123456789abcdef", substr(hex, 2 * at + 2, 1)) - 1
    }
    function flush() {
      if (hex == "") return
      ihl = (byte(0) % 16) * 4
      op = substr(hex, (ihl + 8) * 2 + 1, 2)
      n[op]++
      # An ACKNOWLEDGE whose AETH syndrome (the byte after the 12-byte BTH) is 011xxxxx: a NAK.
      if (op == "11" && byte(ihl + 20) >= 96 && byte(ihl + 20) < 128) naks++
      hex = ""
    }
    /^[^ \t]/ { flush(); next }
    /^[ \t]+0x[0-9a-f]+:/ { for (i = 2; i <= NF; i++) hex = hex $i }
    END {
      flush()
      split("00 SEND_FIRST 01 SEND_MIDDLE 02 SEND_LAST 03 SEND_LAST_IMM 04 SEND_ONLY 05 SEND_ONLY_IMM 06 WRITE_FIRST 07 WRITE_MIDDLE 08 WRITE_LAST 09 WRITE_LAST_IMM 0a WRITE_ONLY 0b WRITE_ONLY_IMM 0c READ_REQUEST 11 ACKNOWLEDGE 81 CNP", w, " ")
      for (i = 1; i in w; i += 2) name[w[i]] = w[i + 1]
      for (op in n) printf "%d %s RC_%s\n", n[op], op, (op in name ? name[op] : "OTHER")
      printf "nak %d\n", naks
    }' | sort -k2
}
wire_check() {
  [[ $me == a ]] || return 0
  local pcap=$results/wire.pcap hist total sends writes acks captured
  [[ -s $pcap ]] || { echo "no capture at $pcap"; return 1; }
  captured=$(sed -n 's/^\([0-9]*\) packets captured$/\1/p' "$out/wire.tcpdump.txt")
  measured "tcpdump on a's eth0 captured ${captured:-?} packets during the incast-8 ranks run" \
    "($(sed -n 's/^\([0-9]*\) packets dropped by kernel$/\1/p' "$out/wire.tcpdump.txt") dropped by the kernel)"
  figure wire_packets_captured "$captured"
  hist=$(decode_bth "$pcap" "$decode_max")
  echo "$hist" > "$out/wire-opcodes.txt"
  measured "BTH opcodes of the first $decode_max packets of $pcap (count, opcode, name):"
  # shellcheck disable=SC2001 # one prefix per line
  sed "s/^/measured   /" <<< "$hist"
  total=$(awk '$1 != "nak" { s += $1 } END { print s + 0 }' <<< "$hist")
  sends=$(awk '$3 ~ /^RC_SEND/ { s += $1 } END { print s + 0 }' <<< "$hist")
  writes=$(awk '$3 ~ /^RC_WRITE/ { s += $1 } END { print s + 0 }' <<< "$hist")
  acks=$(awk '$3 == "RC_ACKNOWLEDGE" { s += $1 } END { print s + 0 }' <<< "$hist")
  measured "wire: of $total RoCE v2 packets decoded, $sends RC SEND, $writes RC WRITE, $acks RC ACK"
  figure wire_packets_decoded "$total"
  figure wire_rc_send "$sends"
  figure wire_rc_write "$writes"
  figure wire_rc_ack "$acks"
  # NAKs on a clean wire: frames the qemu UDP wire dropped (a guest too slow to drain it).
  figure wire_naks_decoded "$(sed -n 's/^nak //p' <<< "$hist")"
  if command -v tshark > /dev/null; then
    local tshark_hist
    tshark_hist=$(tshark -r "$pcap" -c "$decode_max" -T fields -e infiniband.bth.opcode 2> "$out/tshark.err" \
      | awk 'NF { n[$1]++ } END { for (o in n) printf "%d %02x\n", n[o], o }' | sort -k2)
    measured "tshark's RoCE dissector (count, opcode):"
    # shellcheck disable=SC2001 # one prefix per line
    sed "s/^/measured   /" <<< "$tshark_hist"
    if [[ $tshark_hist != "$(awk '$1 != "nak" { print $1, $2 }' <<< "$hist")" ]]; then
      echo "tshark and the BTH decoding above disagree"
      return 1
    fi
    measured "tshark agrees"
  else
    measured "(tshark not installed: decoded from tcpdump's bytes only; SOFTROCE_TSHARK=1 prepare.sh installs it)"
  fi
  ((total > 0 && sends > 0 && writes > 0 && acks > 0))
}

# The simulator's capture of incast-8 against the wire's: every measure the same or a known
# difference (ci/softroce/wire-known-differences.txt says why each one differs).
wire_compare_check() {
  [[ $me == a ]] || return 0
  local dir=$out/wire-compare rc=0 tally
  [[ -s $results/wire.pcap ]] || { echo "no capture at $results/wire.pcap"; return 1; }
  mkdir -p "$dir"
  "$xrdma" run "$repo/scenarios/incast-8.yaml" --capture 0 --out "$dir/sim" > "$dir/sim-run.txt" 2>&1 \
    || { tail -n 5 "$dir/sim-run.txt"; echo "the simulator's run of incast-8.yaml failed"; return 1; }
  "$xrdma" wire-compare "$dir/sim/capture-host0.pcap" "$results/wire.pcap" \
    --known "$here/wire-known-differences.txt" > "$dir/wire-compare.txt" 2>&1 || rc=$?
  # shellcheck disable=SC2001 # one prefix per line
  sed "s/^/measured   /" <<< "$(sed '/^$/,$d' "$dir/wire-compare.txt")"
  tally=$(grep '^wire-compare: ' "$dir/wire-compare.txt" || true)
  measured "${tally:-wire-compare printed no tally} ($dir/wire-compare.txt has each measure's counts)"
  figure wire_compare_same "$(sed -n 's/.* \([0-9]*\) same,.*/\1/p' <<< "$tally")"
  figure wire_compare_known "$(sed -n 's/.* \([0-9]*\) differ (known).*/\1/p' <<< "$tally")"
  figure wire_compare_unknown "$(sed -n 's/.* \([0-9]*\) differ (UNKNOWN).*/\1/p' <<< "$tally")"
  figure wire_acks_per_request_packet "$(awk '/^acks-per-request-packet:/ { getline; getline; print $9; exit }' "$dir/wire-compare.txt" | tr -d ';')"
  ((rc == 0)) && return 0
  cat "$dir/wire-compare.txt"
  grep -e 'UNKNOWN' -e '^error' "$dir/wire-compare.txt" || true
  echo "wire-compare exited $rc (1: a difference not in wire-known-differences.txt; 2: unreadable input)"
  return 1
}

netem_check() {
  local dir=$out/netem-loss-ranks rc=0 retrans shaped=1
  mkdir -p "$dir"
  counters > "$dir/netem-before.$me.env"
  if [[ " $netem_hosts " == *" $me "* ]]; then
    # A failed qdisc still goes on to meet the peer below, so the peer is not left waiting
    # for this side until the guests time out; this side then runs no ranks.
    # shellcheck disable=SC2086 # the netem options are words
    tc qdisc add dev "$netdev" root netem $netem || { echo "tc netem failed"; shaped=0; rc=1; }
  fi
  tc qdisc show dev "$netdev"
  if meet netem-on 120 && ((shaped)); then
    # 4 senders x 8 messages.
    ranks_run faults/loss.yaml '[1, 2, 3, 4]' 32 netem-loss-ranks 18632 18633 \
      "${capture:+wire-netem}" || rc=1
  else
    echo "host $peer did not set up netem"
    rc=1
  fi
  meet netem-done 400 || rc=1
  tc -s qdisc show dev "$netdev"
  if [[ " $netem_hosts " == *" $me "* ]]; then
    tc qdisc del dev "$netdev" root || rc=1
  fi
  counters > "$dir/netem-after.$me.env"
  counter_deltas "$dir/netem-before.$me.env" "$dir/netem-after.$me.env" \
    > "$dir/counters-netem.$me.env"
  measured "host $me's rxe0 counter deltas over the netem run: $(grep -v '=0$' "$dir/counters-netem.$me.env" | tr '\n' ' ')"
  post netem-counters ok
  [[ $me == a ]] || return "$rc"
  await netem-counters 120 > /dev/null || { echo "no counters from host b"; return 1; }
  local k v h
  for k in rcvd_seq_err out_of_seq_request duplicate_request completer_retry_err \
    retry_exceeded_err sent_pkts rcvd_pkts; do
    for h in a b; do
      v=$(sed -n "s/^$k=//p" "$dir/counters-netem.$h.env")
      figure "netem_${k}_${h}" "${v:-}"
    done
  done
  retrans=$(cat "$dir/counters-netem.a.env" "$dir/counters-netem.b.env" | awk -F= '
    $1 ~ /^(rcvd_seq_err|out_of_seq_request|duplicate_request|completer_retry_err)$/ { s += $2 }
    END { print s + 0 }')
  figure netem_retransmission_events "$retrans"
  measured "netem $netem on host(s) $netem_hosts: retransmission counters (rcvd_seq_err +" \
    "out_of_seq_request + duplicate_request + completer_retry_err, both hosts) moved by $retrans"
  if [[ -s $results/wire-netem.pcap ]]; then
    local hist
    hist=$(decode_bth "$results/wire-netem.pcap")
    echo "$hist" > "$out/wire-netem-opcodes.txt"
    figure netem_wire_packets "$(awk '$1 != "nak" { s += $1 } END { print s + 0 }' <<< "$hist")"
    figure netem_wire_naks "$(sed -n 's/^nak //p' <<< "$hist")"
    measured "seen on a's eth0: $(awk '$1 != "nak" { s += $1 } END { print s + 0 }' <<< "$hist") packets, $(sed -n 's/^nak //p' <<< "$hist") NAKs"
  fi
  ((rc == 0)) || return 1
  ((retrans > 0)) || { echo "no retransmission seen in rxe's counters"; return 1; }
}

# A figure's value, and A / B to three places (empty unless both are numbers and B > 0).
value() { sed -n "s/^$1=//p" "$figures" | tail -n 1; }
ratio() { # A B
  if softroce_num "$1" && softroce_num "$2" && awk -v b="$2" 'BEGIN { exit !(b > 0) }'; then
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'
  fi
}
# The message p99 (µs) of the summary at FILE (its "message completion time" block).
summary_p99() { awk '/^message completion time/ { b = 1 } b && $1 == "p99" { print $2; exit }' "$1"; }
# A whole-number field NAME of the result's transport.window at FILE.
window_field() { sed -n "s/^ *\"$2\": \([0-9]*\),\{0,1\}$/\1/p" "$1" | tail -n 1; }

shaped_check() {
  local dir=$out/shaped-window rc=0 shaped=1 fixed t0 p99a p99f dec smallest
  mkdir -p "$dir"
  # Each side writes the same variant into a folder of its own (rank 0 checks rank 1's
  # file hash; two writers of one file on the share would race).
  mkdir -p "$dir/variant-$me"
  fixed=$dir/variant-$me/echo-shaped-fixed.yaml
  sed 's/^  adaptive-window: true.*/  adaptive-window: false/' "$repo/scenarios/cc/echo-shaped.yaml" > "$fixed"
  grep -q '^  adaptive-window: false$' "$fixed" || { echo "no adaptive-window key to turn off"; shaped=0; rc=1; }
  # The binary's pages in the page cache first (the root is a 9p share): a first run that
  # pages it in under TCG adds ~100 ms to its first messages, which the second would not pay.
  cat "$xrdma" > /dev/null
  if [[ $me == b ]] && ((shaped)); then
    # shellcheck disable=SC2086 # the netem options are words
    tc qdisc add dev "$netdev" root netem $shape || { echo "tc netem failed"; shaped=0; rc=1; }
    tc qdisc show dev "$netdev"
  fi
  if meet shape-on 120 && ((shaped)); then
    t0=$SECONDS
    ranks_run cc/echo-shaped.yaml '[1, 2, 3, 4]' 1200 shaped-window/adaptive 18634 18635 || rc=1
    [[ $me == a ]] && figure shaped_adaptive_run_s "$((SECONDS - t0))"
    meet shape-between 400 || rc=1
    t0=$SECONDS
    ranks_run "$fixed" '[1, 2, 3, 4]' 1200 shaped-window/fixed 18636 18637 || rc=1
    [[ $me == a ]] && figure shaped_fixed_run_s "$((SECONDS - t0))"
  else
    echo "host $peer did not come to the shaped runs"
    rc=1
  fi
  meet shape-done 400 || rc=1
  if [[ $me == b ]] && tc qdisc show dev "$netdev" | grep -q netem; then
    tc -s qdisc show dev "$netdev"
    tc qdisc del dev "$netdev" root || rc=1
  fi
  [[ $me == a ]] || return "$rc"
  local ra=$dir/adaptive/result.json rf=$dir/fixed/result.json
  p99a=$(summary_p99 "$dir/adaptive/summary.txt")
  p99f=$(summary_p99 "$dir/fixed/summary.txt")
  dec=$(window_field "$ra" delay-decreases)
  smallest=$(window_field "$ra" smallest-bytes)
  figure shaped_netem "\"$shape\""
  figure shaped_p99_adaptive_us "$p99a"
  figure shaped_p99_fixed_us "$p99f"
  figure shaped_p99_ratio "$(ratio "$p99a" "$p99f")"
  figure shaped_delay_decreases "$dec"
  figure shaped_window_decreases "$(window_field "$ra" decreases)"
  figure shaped_smallest_window_bytes "$smallest"
  figure shaped_fixed_delay_decreases "$(window_field "$rf" delay-decreases)"
  measured "netem $shape on b: message p99 $p99a us with the adaptive window, $p99f us fixed" \
    "(ratio $(ratio "$p99a" "$p99f")); $dec window decreases on delay, smallest window $smallest B"
  ((rc == 0)) || return 1
  grep -A3 '"congestion-signals"' "$ra" | grep -q '"queueing-delay"' \
    || { echo "the adaptive run's result does not name the queueing-delay signal"; return 1; }
  softroce_num "${dec:-}" && ((dec > 0)) || { echo "the window never shrank on delay"; return 1; }
  softroce_num "$p99a" && softroce_num "$p99f" || { echo "no p99 in the summaries"; return 1; }
  # The p99 comparison is a target, not a pass condition: on two CPU-bound TCG guests a
  # loaded host can leave rxe itself slower than the shaped wire, and then no window helps.
  # A miss is said loudly (and kept in figures.env); it does not fail the check.
  if awk -v a="$p99a" -v f="$p99f" 'BEGIN { exit !(a < f) }'; then
    figure shaped_p99_lower_met yes
  else
    figure shaped_p99_lower_met no
    echo "!!! TARGET MISSED: shaped_p99_ratio = $(ratio "$p99a" "$p99f") (target < 1: p99 $p99a us adaptive, $p99f us fixed)"
    measured "!!! TARGET MISSED: the adaptive window's p99 is not below the fixed window's ($p99a us >= $p99f us)"
  fi
}

echo "two-host suite on host $me ($my_ip, peer $peer_ip): $dev on $netdev, GID index $gid"
t0=$EPOCHREALTIME
capture=
command -v tcpdump > /dev/null && capture=yes

check "perftest send_lat" perftest_lat send_lat 18615 ib_send_lat
check "perftest write_lat" perftest_lat write_lat 18616 ib_write_lat
check "perftest write_bw" perftest_bw write_bw 18617
if [[ -z $xrdma ]]; then
  for c in "xrdma ping" "xrdma bw" "incast-8 ranks" "per hop ranks" "slurm launch" "sweep ranks" "wire capture" "wire compare" "netem loss ranks" "shaped window"; do
    skip "$c" "no XRDMA_BIN given (the \`xrdma\` binary built with --features verbs)"
  done
else
  check "xrdma ping" xrdma_ping
  check "xrdma bw" xrdma_bw
  [[ -n $capture ]] || skip "wire capture" "tcpdump is not installed (prepare.sh installs it as root)"
  [[ -n $capture ]] || skip "wire compare" "tcpdump is not installed (prepare.sh installs it as root)"
  check "incast-8 ranks" ranks_check
  check "per hop ranks" per_hop_check
  check "app echo" app_echo_check
  check "slurm launch" slurm_check
  check "sweep ranks" sweep_check
  [[ -n $capture ]] && check "wire capture" wire_check
  [[ -n $capture ]] && check "wire compare" wire_compare_check
  if command -v tc > /dev/null; then
    check "netem loss ranks" netem_check
    check "shaped window" shaped_check
  else
    skip "netem loss ranks" "tc (iproute2) is not installed"
    skip "shaped window" "tc (iproute2) is not installed"
  fi
fi
duration=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')

if [[ $me == b ]]; then
  echo "two-host suite, host b: its parts of the checks ran in $duration s, $failed failed"
  ((failed == 0))
  exit
fi
# Ratios to perftest, informational (no target: both guests are CPU-bound under TCG).
figure half_rtt_ratio "$(ratio "$(value xrdma_ping_typical_us)" "$(value perftest_send_lat_typical_us)")"
figure bw_ratio "$(ratio "$(value xrdma_bw_64k_MBps)" "$(value perftest_write_bw_64k_MBps)")"
figure lat_iters "$lat_iters"
figure bw_iters "$bw_iters"
figure ping_iters "$ping_iters"
figure xbw_iters "$xbw_iters"
figure suite_s "$duration"
echo "two-host figures ($figures; the ratios are informational, not targets):"
cat "$figures"
# The handshake folder goes once host b's suite has ended (it may still read its last file).
await exit 60 > /dev/null && rm -rf "$sync_dir"
echo "softroce two-host: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
