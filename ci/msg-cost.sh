#!/usr/bin/env bash
# Instructions per message per side of the core and its driver, counted by callgrind (exact
# and repeatable, unlike time on this machine): conformance/examples/msg_cost.rs streams
# messages from host 0 to host 1 over the in-memory transport; it runs at two message counts
# and the difference, divided by the difference in messages, is the cost of one message
# (setup cancels out). Each side's cost is the inclusive count of its turns (the sender's
# sends included); "of which the in-memory NIC" is what the in-memory transport did as a NIC
# inside them (executing WRs, with their copies; posting receives; completions), which a
# real host hands to its NIC.
#
# valgrind is installed with apt-get when missing and we are root; otherwise it prints SKIP.
#
# usage: ci/msg-cost.sh [SIZE (64)] [DEPTH (16)] [N1 (2000)] [N2 (12000)]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
size=${1:-64}
depth=${2:-16}
n1=${3:-2000}
n2=${4:-12000}
# shellcheck source=ci/apt.sh
source "$repo/ci/apt.sh"
need valgrind valgrind msg-cost || exit 0
cd "$repo"
cargo build --release -q -p xrdma-conformance --example msg_cost
bin=${CARGO_TARGET_DIR:-$repo/target}/release/examples/msg_cost
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Inclusive instructions of the functions named by REGEX (the whole name) in callgrind file
# FILE. callgrind_annotate lists a function once per source file its code came from (inlined
# code under the inlined function's file), so its parts are summed.
inclusive() { # FILE REGEX
  callgrind_annotate --inclusive=yes --threshold=100 "$1" 2> /dev/null |
    awk -v re="^[^:]*:($2)( \\[|$)" '{ line = $0; sub(/^ *[0-9,]+ *\([^)]*\) */, "", line) }
      line ~ re { gsub(/,/, "", $1); s += $1 } END { print s + 0 }'
}
for n in "$n1" "$n2"; do
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.$n" "$bin" "$n" "$size" "$depth" \
    > "$work/out.$n" 2> "$work/err.$n" || { cat "$work/err.$n" >&2; exit 1; }
  total=$(sed -n 's/^summary: *//p' "$work/cg.$n" | tr -d ',')
  sender=$(inclusive "$work/cg.$n" 'msg_cost::sender_turn|msg_cost::send')
  receiver=$(inclusive "$work/cg.$n" 'msg_cost::receiver_turn')
  # What the in-memory NIC does: execute a WR (its copy, its completions), take a receive
  # WR, hand out completions.
  transport=$(inclusive "$work/cg.$n" 'xrdma_conformance::mem::MemTransport::execute|<xrdma_conformance::mem::MemTransport as xrdma::transport::Transport>::(post_recv|poll_cq)')
  echo "n=$n total=$total sender=$sender receiver=$receiver transport=$transport" > "$work/row.$n"
done
awk -v n1="$n1" -v n2="$n2" -v size="$size" '
  { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[NR, kv[1]] = kv[2] } }
  END {
    d = n2 - n1
    printf "msg-cost: %d B messages, per message (Ir, callgrind):\n", size
    printf "  sender side    %8.0f\n", (v[2, "sender"] - v[1, "sender"]) / d
    printf "  receiver side  %8.0f\n", (v[2, "receiver"] - v[1, "receiver"]) / d
    printf "  of which the in-memory NIC (both sides) %8.0f\n", (v[2, "transport"] - v[1, "transport"]) / d
    printf "  whole program  %8.0f\n", (v[2, "total"] - v[1, "total"]) / d
  }' "$work/row.$n1" "$work/row.$n2"
