#!/usr/bin/env bash
# The project's tests INSIDE the Soft-RoCE guest, on rxe0 (what ci/test.sh runs there).
#
# usage: ci/softroce/suite.sh RESULTS_DIR XRDMA_BIN [TEST_BIN...]
#
#   XRDMA_BIN  the `xrdma` binary built with `--features verbs`
#   TEST_BIN   test executables of the xrdma-verbs crate and the application API's device tests
#              each run whole, or PATH#FILTER: only the tests whose names contain FILTER
#              (the runner's verbs fabric tests, `xrdma_runner-...#fabric::verbs::`)
#
# Checks, each counted as passed or failed:
#   verbs tests     every TEST_BIN, one test thread (the backend's own tests, the
#                   verbs-level conformance cases of xrdma-conformance, and the runner's
#                   verbs fabric tests: its clock starts at the run's first turn)
#   conformance     `xrdma conformance --backend verbs`: the cases the simulator passes in
#                   `cargo test`, unchanged, on rxe0
#   soak            `xrdma soak --backend verbs`: 100 000 messages checked in order, then 1000
#                   close/connect cycles through the QP cache with no growth of QPs, MRs or
#                   buffers
#   incast-8        `xrdma run --backend verbs scenarios/incast-8.yaml`: the shipped scenario,
#                   unedited, writing the same report as on the simulator (RESULTS_DIR/incast-8)
#   incast-8 ranks  incast-8.yaml as two processes on rxe0: the script writes a variant with a
#                   `verbs.ranks` block (rank 0: the receiver on 127.0.0.1:18530, rank 1: the
#                   eight senders on 127.0.0.1:18531) into RESULTS_DIR/incast-8-ranks/, runs
#                   `xrdma run --backend verbs --rank 1` in the background and `--rank 0` in
#                   the foreground, and passes when both exit 0 and rank 0's merged
#                   result.json reports every message delivered intact, holds both ranks'
#                   own device counters, and counts their one rxe0 once (top-level sent_pkts
#                   and data-packets equal rank 0's own; summary.txt says the device is shared)
#   echo ranks      an echo run (2 clients x 100 requests) as two processes, the same way:
#                   every workload runs across ranks
#   slurm launch    ci/softroce/launch.sh: incast-8.yaml unedited as two ranks started the way
#                   srun starts them (SLURM_PROCID/SLURM_LOCALID 0 and 1, SLURM_NTASKS=2,
#                   SLURM_JOB_NODELIST=localhost set by hand; no --rank, no `verbs.ranks`):
#                   passes when both exit 0 and rank 0's report has every message intact
#   stat socket     ci/softroce/stat.sh: `xrdma stat --socket` against a running verbs run
#                   (the table under --watch, Prometheus, JSON): connections in RTS as the
#                   device reports them, rxe0's hw_counters beside xrdma's
#   trace           ci/softroce/trace.sh: incast-8.yaml with `xrdma run --trace` on rxe0; every
#                   message split into stages (`xrdma trace`)
#   rnr-stall       scenarios/rnr-stall.yaml on rxe0: RNR NAKs counted, every message intact
#   rc attributes   scenarios/rc-attributes.yaml (an `rc:` block with perftest's values) on
#                   rxe0 and on the simulator: both result.json files record the same RC QP
#                   attributes (`transport.rc`: retry counts, RNR timer, path MTU), the ones
#                   the block gives, but the local ACK timeout, which rxe0 raises to code 17
#                   (backend-verbs/src/soft_roce.rs); every message arrives intact on rxe0
#   peer killed     a two-process bw whose server is killed mid-stream: the client ends with
#                   a typed error in time
#   perftest        ci/softroce/perftest.sh RESULTS_DIR (ib_send_lat, ib_write_lat, ib_write_bw)
#   figures         ci/softroce/figures.sh RESULTS_DIR XRDMA_BIN: xrdma's ping, bw, qp-setup and
#                   idle tools against perftest's figures (RESULTS_DIR/figures.env); passes when
#                   the tools ran and gave numbers, whether or not the targets are met; each
#                   missed target is then printed as `!!! TARGET MISSED: NAME = VALUE (target T)`
#   calibrate       ci/softroce/calibrate.sh RESULTS_DIR XRDMA_BIN: a host profile fitted to
#                   xrdma's ping and bw on rxe0 (`xrdma calibrate measure`, `fit`), then its
#                   prediction error on held-out scenarios (`xrdma calibrate run`,
#                   RESULTS_DIR/calibrate/calibrate.env); passes when every step ran and gave
#                   its figures, whether or not the 25 % target is met; each miss is printed
#                   as `!!! TARGET MISSED: ...`
#   per hop         scenarios/study/per-hop.yaml over xrdma on rxe0 and over loopback TCP
#                   (`--backend sockets --stack tcp`): each run delivers every message intact;
#                   RESULTS_DIR/per-hop.env holds each stack's half round trip and CPU per
#                   request and response (figures, no target)
#   app echo        the application API's examples (app/examples, staged beside XRDMA_BIN):
#                   echo_server on 127.0.0.1:18710, echo_client calling it 20 times for each
#                   size from 64 B to 1 MiB; passes when the client checked every reply
#   app mesh        app/examples/mesh.rs with 1, 2 and 4 workers per process, each client
#                   worker connected to every server worker, 20 000 64 B messages each; passes
#                   when every message is ACKed; messages/s go to figures.env
#                   (app_mesh_*_workers_msgs_per_s)
#   app stat        a mesh server worker pinned to CPU 0 with a stat socket; `xrdma stat
#                   --socket` shows it on CPU 0 beside the device's NUMA node
# Ends with the line "softroce: N passed, M failed"; exit status 0 only when none failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=ci/softroce/lib.sh
source "$here/lib.sh"

(($# >= 2)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
results=$1
xrdma=$2
shift 2
mkdir -p "$results"
export XRDMA_VERBS_DEVICE=${SOFTROCE_DEV:-rxe0}
[[ -n ${SOFTROCE_GID_INDEX:-} ]] && export XRDMA_VERBS_GID_INDEX=$SOFTROCE_GID_INDEX

passed=0
failed=0
check() { # NAME LOG COMMAND...
  local name=$1 log=$2
  shift 2
  echo "=== $name"
  if "$@" > "$log" 2>&1; then
    tail -n 3 "$log"
    echo "--- $name: passed"
    passed=$((passed + 1))
  else
    tail -n 40 "$log"
    echo "--- $name: FAILED (log: $log)"
    failed=$((failed + 1))
  fi
}

for t in "$@"; do
  bin=${t%%#*}
  filter=()
  [[ $t == *#* ]] && filter=("${t#*#}")
  check "verbs tests $(basename "$bin")${filter:+ ${filter[*]}}" "$results/$(basename "$bin").log" \
    timeout 300 "$bin" "${filter[@]}" --test-threads=1 --nocapture
done
check conformance "$results/conformance.log" timeout 300 "$xrdma" conformance --backend verbs
# 100 000 messages over rxe0, checked in order, then close/connect cycles through the QP cache
# (QPs, MRs and buffers must not grow).
check soak "$results/soak.log" \
  timeout 600 "$xrdma" soak --backend verbs --messages 100000 --cycles 1000
check incast-8 "$results/incast-8.log" \
  timeout 300 "$xrdma" run --backend verbs "$repo/scenarios/incast-8.yaml" --out "$results/incast-8"
# A scenario as two processes on rxe0: rank 1 in the background, rank 0 (the receiver, which
# merges the records) in the foreground; passes when both exit 0 and rank 0's result reports
# all WANT messages delivered intact.
two_ranks() { # DIR SCENARIO WANT
  local dir=$1 scenario=$2 want=$3 sender rc=0 secret
  # One job secret for both ranks: their bootstrap connection proves it.
  secret=$("$xrdma" job-secret) || return 1
  XRDMA_JOB_SECRET=$secret timeout 300 "$xrdma" run --backend verbs "$scenario" --rank 1 \
    --out "$dir/rank1" > "$dir/rank1.log" 2>&1 &
  sender=$!
  XRDMA_JOB_SECRET=$secret timeout 300 "$xrdma" run --backend verbs "$scenario" --rank 0 \
    --out "$dir" || rc=$?
  wait "$sender" || { echo "rank 1 failed: $(tail -n 5 "$dir/rank1.log")" >&2; rc=1; }
  cat "$dir/rank1.log"
  ((rc == 0)) || return 1
  softroce_all_delivered "$dir/result.json" "$want" || return 1
  echo "two ranks: all $want messages delivered intact (merged by rank 0)"
}
# incast-8.yaml as two processes: the shipped file with a `verbs.ranks` block appended.
incast_ranks() { # DIR
  local dir=$1 scenario=$1/incast-8-ranks.yaml
  mkdir -p "$dir"
  softroce_ranks_variant "$repo/scenarios/incast-8.yaml" "$scenario" \
    127.0.0.1:18530 '[0]' 127.0.0.1:18531 '[1, 2, 3, 4, 5, 6, 7, 8]' || return 1
  # 8 senders x 5 messages.
  two_ranks "$dir" "$scenario" 40 || return 1
  # Both ranks on rxe0: each rank's own counters are recorded, the one device counted once
  # (the top-level figures are rank 0's reading, not twice the traffic).
  local top net r0 r1 rest
  read -r top net r0 r1 rest <<< "$(softroce_rank_counter "$dir/result.json" sent_pkts data-packets)"
  if ! [[ $r0 =~ ^[0-9]+$ && $r1 =~ ^[0-9]+$ && -z $rest ]]; then
    echo "not both ranks' own sent_pkts (rank 0: $r0, rank 1: $r1)"
    return 1
  fi
  if [[ $top != "$r0" || $net != "$r0" ]]; then
    echo "top-level sent_pkts $top and data-packets $net, not rank 0's $r0 (one device, counted once)"
    return 1
  fi
  grep -qF 'of 1 device, shared by ranks 0, 1 (counted once)' "$dir/summary.txt" ||
    { echo "summary.txt does not say the device is shared"; return 1; }
  echo "one rxe0 for both ranks, counted once: sent_pkts rank 0 $r0, rank 1 $r1, top-level $top"
}
# An echo run as two processes: the server, and two clients (every workload runs across ranks).
echo_ranks() { # DIR
  local dir=$1 scenario=$1/echo-ranks.yaml
  mkdir -p "$dir"
  cat > "$scenario" << 'YAML'
name: echo-ranks
workload:
  echo:
    clients: 2
    server: 0
    concurrency: 2
    requests: 100
    request-sizes:
      - { size: 4KiB, weight: 9 }
      - { size: 256KiB, weight: 1 }
    response-size: 64B
    time-limit: 120s
verbs:
  ranks:
    - { address: "127.0.0.1:18532", hosts: [0] }
    - { address: "127.0.0.1:18533", hosts: [1, 2] }
YAML
  # 2 clients x 100 exchanges, each request and its response intact.
  two_ranks "$dir" "$scenario" 200
}
check "incast-8 ranks" "$results/incast-8-ranks.log" incast_ranks "$results/incast-8-ranks"
check "echo ranks" "$results/echo-ranks.log" echo_ranks "$results/echo-ranks"
check "slurm launch" "$results/slurm-launch.log" \
  "$here/launch.sh" "$results/slurm-launch" "$xrdma"

check "stat socket" "$results/stat-socket.log" "$here/stat.sh" "$results/stat-socket" "$xrdma"
check trace "$results/trace.log" "$here/trace.sh" "$results/trace" "$xrdma"

# RNR end to end on rxe: scenarios/rnr-stall.yaml unedited (no receive credits, 16 receives,
# a 10 ms receiver stall): the stalled host's NIC answers RNR NAKs, and every message still
# arrives intact.
rnr_stall() { # DIR
  local dir=$1
  timeout 300 "$xrdma" run --backend verbs "$repo/scenarios/rnr-stall.yaml" --out "$dir" || return 1
  local rnr
  rnr=$(grep -o '"rnr-naks": [0-9]*' "$dir/result.json" | grep -o '[0-9]*$')
  echo "RNR NAKs on rxe0: ${rnr:-none}"
  [[ -n $rnr ]] && ((rnr > 0))
}
check "rnr-stall" "$results/rnr-stall.log" rnr_stall "$results/rnr-stall"
# One `rc:` block, the same QP attributes on both backends: the verbs backend passes them to
# ibv_modify_qp (path MTU: the smaller of rc.path-mtu and the port's active MTU, 1024 on rxe
# over a 1500-byte Ethernet MTU; local ACK timeout: at least code 17 on rxe,
# backend-verbs/src/soft_roce.rs), the simulator's NIC uses them; each result records what it
# applied.
rc_attributes() { # DIR
  local dir=$1 verbs sim
  timeout 300 "$xrdma" run --backend verbs "$repo/scenarios/rc-attributes.yaml" \
    --out "$dir/verbs" || return 1
  timeout 300 "$xrdma" run "$repo/scenarios/rc-attributes.yaml" --out "$dir/sim" || return 1
  # The `rc` object inside `transport` (pretty-printed, one key per line).
  rc_of() { sed -n '/"transport": {/,$p' "$1" | sed -n '/"rc": {/,/}/p'; }
  verbs=$(rc_of "$dir/verbs/result.json")
  sim=$(rc_of "$dir/sim/result.json")
  echo "verbs: $verbs"
  echo "sim:   $sim"
  # All but the local ACK timeout alike; that is the block's on the simulator, 17 on rxe0.
  not_timeout() { grep -v '"local-ack-timeout'; }
  [[ -n $verbs && $(not_timeout <<< "$verbs") == "$(not_timeout <<< "$sim")" ]] ||
    { echo "the two backends applied different RC attributes" >&2; return 1; }
  grep -qF '"local-ack-timeout": 14,' <<< "$sim" || { echo "sim result lacks the block's timeout 14" >&2; return 1; }
  for want in '"local-ack-timeout": 17,' '"min-rnr-timer": 12,' '"path-mtu": 1024' \
    '"retry-cnt": 7,' '"rnr-retry": 7,'; do
    grep -qF "$want" <<< "$verbs" || { echo "verbs result lacks $want" >&2; return 1; }
  done
  grep -q '"delivered": 8,' "$dir/verbs/result.json" &&
    grep -Eq '"missing": 0$' "$dir/verbs/result.json"
}
check "rc attributes" "$results/rc-attributes.log" rc_attributes "$results/rc-attributes"
# The peer process killed mid-transfer: a two-process bw stream whose server is killed with
# SIGKILL after 5 s. The client must end with a typed error well within its timeout, never
# hang, never report the stream complete.
peer_killed() { # DIR
  local dir=$1 server client rc=0 t0
  mkdir -p "$dir"
  # The server itself in the background (not under `timeout`, whose SIGKILL would leave
  # it running); it gives up by itself after the tool's own 300 s limit.
  "$xrdma" bw --backend verbs --server --bind 127.0.0.1:18540 > "$dir/server.log" 2>&1 &
  server=$!
  t0=$SECONDS
  timeout 120 "$xrdma" bw --backend verbs --connect 127.0.0.1:18540 --size 64KiB \
    --iters 100000000 > "$dir/client.log" 2>&1 &
  client=$!
  # Let the stream get going (the guest is slow to start two processes), then kill.
  sleep 5
  kill -9 "$server" 2>/dev/null || true
  wait "$client" || rc=$?
  cat "$dir/client.log"
  echo "client exit status $rc after $((SECONDS - t0)) s"
  ((rc != 0 && rc != 124)) || { echo "the client did not fail with an error in time" >&2; return 1; }
  grep -Eqi 'error|failed' "$dir/client.log"
}
check "peer killed" "$results/peer-killed.log" peer_killed "$results/peer-killed"
check perftest "$results/perftest.log" "$here/perftest.sh" "$results"
check figures "$results/figures.log" "$here/figures.sh" "$results" "$xrdma"
# A missed target does not fail the suite (the guest's speed varies with the host), but it is
# said loudly, one line each, with the figure and its target.
missed_targets() { # FIGURES_ENV
  local key value name
  while IFS='=' read -r key value; do
    [[ $key == *_met && $value == no ]] || continue
    name=${key%_met}
    echo "!!! TARGET MISSED: $name = $(sed -n "s/^$name=//p" "$1") (target $(sed -n "s/^${name}_target=//p" "$1"))"
  done < "$1"
}
[[ -f $results/figures.env ]] && missed_targets "$results/figures.env"
# The per-hop study on this machine: scenarios/study/per-hop.yaml unedited, over xrdma on rxe0
# and over the kernel's TCP on loopback (--backend sockets); RESULTS_DIR/per-hop.env holds each
# stack's half round trip (p50 / 2) and the running thread's CPU time per request and
# response, µs, and TCP's over xrdma's, also appended to RESULTS_DIR/figures.env (each key
# prefixed per_hop_). A figure, not a target: the guest's speed varies.
per_hop() {
  local dir=$results/per-hop stack backend p50 cpu
  mkdir -p "$dir"
  for stack in xrdma tcp; do
    backend=verbs
    [[ $stack == tcp ]] && backend=sockets
    timeout 300 "$xrdma" run --backend "$backend" --stack "$stack" \
      "$repo/scenarios/study/per-hop.yaml" --out "$dir/$stack" > "$dir/$stack.log" 2>&1 ||
      { tail -n 20 "$dir/$stack.log" >&2; return 1; }
    softroce_all_delivered "$dir/$stack/result.json" 10000 || return 1
    p50=$(sed -n 's/^  p50 *\([0-9.]*\) µs$/\1/p' "$dir/$stack/summary.txt")
    cpu=$(sed -n 's/^host CPU *\([0-9.]*\) µs per message.*/\1/p' "$dir/$stack/summary.txt")
    if ! softroce_num "$p50" || ! softroce_num "$cpu"; then
      echo "no p50 or host CPU line in $dir/$stack/summary.txt" >&2
      return 1
    fi
    echo "${stack}_half_rtt_64_us=$(awk -v p="$p50" 'BEGIN { printf "%.3f", p / 2 }')"
    echo "${stack}_cpu_per_exchange_us=$cpu"
  done > "$dir.env"
  awk -F= '{ v[$1] = $2 } END {
    printf "tcp_over_xrdma_half_rtt=%.2f\n", v["tcp_half_rtt_64_us"] / v["xrdma_half_rtt_64_us"]
    printf "tcp_over_xrdma_cpu=%.2f\n", v["tcp_cpu_per_exchange_us"] / v["xrdma_cpu_per_exchange_us"]
  }' "$dir.env" >> "$dir.env"
  cat "$dir.env"
  # Beside perftest's and the tools' figures, with their names.
  sed 's/^/per_hop_/' "$dir.env" >> "$results/figures.env"
}
check "per hop" "$results/per-hop.log" per_hop
# The application API's echo server and client, two processes on rxe0.
app_echo() {
  local dir rc=0 pid
  dir=$(dirname "$xrdma")
  [[ -x $dir/echo_server && -x $dir/echo_client ]] || { echo "no echo examples beside $xrdma"; return 1; }
  "$dir/echo_server" 127.0.0.1:18710 > "$results/app-echo-server.log" 2>&1 &
  pid=$!
  timeout 300 "$dir/echo_client" 127.0.0.1:18710 20 || rc=$?
  kill "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  return "$rc"
}
check "app echo" "$results/app-echo.log" app_echo
# Many workers in a full mesh (app/examples/mesh.rs), 1, 2 and 4 per process: messages/s.
app_mesh() {
  local dir rc=0 pid w port=18720 line
  dir=$(dirname "$xrdma")
  [[ -x $dir/mesh ]] || { echo "no mesh example beside $xrdma"; return 1; }
  for w in 1 2 4; do
    "$dir/mesh" server "$port" "$w" > "$results/app-mesh-server-$w.log" 2>&1 &
    pid=$!
    # The client retries its connections until the server's workers listen.
    line=$(timeout 300 "$dir/mesh" client 127.0.0.1 "$port" "$w" 20000 | tail -n 1) || rc=1
    kill "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
    echo "$line"
    [[ $line =~ messages_per_s=([0-9]+) ]] || { echo "no messages/s from $w workers"; return 1; }
    echo "app_mesh_${w}_workers_msgs_per_s=${BASH_REMATCH[1]}" >> "$results/figures.env"
    port=$((port + w))
  done
  return "$rc"
}
check "app mesh" "$results/app-mesh.log" app_mesh
# A worker's placement through `xrdma stat`: mesh's server worker 0 pins itself to CPU 0 and
# answers on its stat socket.
app_stat() {
  local dir sdir pid out rc=0
  dir=$(dirname "$xrdma")
  sdir=$(mktemp -d)
  "$dir/mesh" server 18740 1 "$sdir" > "$results/app-stat-server.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do [[ -S $sdir/worker-0.sock ]] && break; sleep 0.1; done
  out=$("$xrdma" stat --socket "$sdir/worker-0.sock" 2>&1) || rc=1
  kill "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  rm -rf "$sdir"
  cat "$results/app-stat-server.log"
  echo "$out"
  ((rc == 0)) && grep -q 'cpu 0 (allowed 0)' <<< "$out" &&
    grep -q "device $XRDMA_VERBS_DEVICE numa node" <<< "$out"
}
check "app stat" "$results/app-stat.log" app_stat
check calibrate "$results/calibrate.log" "$here/calibrate.sh" "$results" "$xrdma"
grep -h '^!!! TARGET MISSED' "$results/calibrate.log" || true

echo "softroce: $passed passed, $failed failed"
((failed == 0))
