#!/usr/bin/env bash
# Wireshark reads the simulator's packet captures: runs ci/capture/incast-capture.yaml (an
# 8-to-1 incast with ECN, DCQCN and PFC; hosts 0 and 1 captured), then for each pcap has
# tshark check that
#   - no frame is malformed and no expert item is a warning or an error (with the IPv4
#     header checksum validated: `-o ip.check_checksum:TRUE`);
#   - every frame but the PFC ones decodes as `infiniband`, with only the opcodes the run
#     sends (SEND first/middle/last-with-immediate/only-with-immediate, RDMA WRITE first/
#     middle/last-with-immediate, ACK, CNP), and the frame count is the one result.json names;
#   - the receiver's link carries CNPs and the sender's PFC PAUSE frames (802.1Qbb, opcode
#     0x0101) with the quanta of priority 3, XOFF and XON.
# Wireshark shows the RoCE ICRC but does not check it; the simulator's unit tests check it
# against the frames of a Linux rxe capture (backend-sim/tests/fixtures/rxe-frames.txt).
#
# tshark is installed with apt-get when missing and we are root; otherwise the check prints
# `SKIP capture-check: <reason>` and exits 0.
#
# usage: ci/capture-check.sh XRDMA_BIN
set -euo pipefail
(($# == 1)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
xrdma=$1
cd "$(dirname "$0")/.."

# wireshark-common asks whether non-root users may capture; the default (no) is fine.
# shellcheck source=ci/apt.sh
source ci/apt.sh
need tshark tshark capture-check || exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$xrdma" run ci/capture/incast-capture.yaml --out "$work/run" > "$work/run.log" 2>&1 || {
  cat "$work/run.log" >&2
  echo "capture-check: the run failed" >&2
  exit 1
}

fail=0
bad() { echo "capture-check: $*" >&2; fail=1; }
ts() { tshark -o ip.check_checksum:TRUE "$@" 2> /dev/null; }
# The packets result.json says a host's file holds.
packets_of() {
  tr -d ' \n' < "$work/run/result.json" |
    grep -o "{\"host\":$1,\"file\":\"capture-host$1.pcap\",\"packets\":[0-9]*" | grep -o '[0-9]*$'
}
# RC opcodes xrdma may send: SEND 0-5, RDMA WRITE 6-11 (the immediate data carries its
# sequence numbers), ACK 17, CNP 129; this run has at least those of the `for op` list.
allowed=' 0 1 2 3 4 5 6 7 8 9 10 11 17 129 '

for h in 0 1; do
  f=$work/run/capture-host$h.pcap
  [[ -s $f ]] || { bad "host $h: no capture file"; continue; }
  frames=$(ts -r "$f" | wc -l)
  want=$(packets_of "$h")
  [[ $frames == "$want" ]] || bad "host $h: tshark reads $frames frames, result.json names ${want:-none}"
  flagged=$(ts -r "$f" -Y '_ws.malformed || _ws.expert.severity >= warning' | wc -l)
  ((flagged == 0)) || bad "host $h: $flagged frames malformed or with expert warnings"
  # The InfiniBand dissector puts a short packet's complaint in the Info column only.
  infos=$(ts -r "$f" -T fields -e _ws.col.Info | grep -ci 'malformed\|invalid' || true)
  ((infos == 0)) || bad "host $h: $infos frames the InfiniBand dissector calls invalid"
  if ts -r "$f" -q -z expert | grep -Eq '^(Errors|Warnings) \('; then
    bad "host $h: expert errors or warnings:"
    ts -r "$f" -q -z expert >&2
  fi
  pfc=$(ts -r "$f" -Y 'macc.opcode == 0x0101' | wc -l)
  ib=$(ts -r "$f" -Y infiniband | wc -l)
  ((ib + pfc == frames)) || bad "host $h: $ib InfiniBand + $pfc PFC frames of $frames"
  echo "capture-check: host $h: $frames frames, $ib InfiniBand, $pfc PFC; opcodes (count opcode):"
  ts -r "$f" -Y infiniband -T fields -e infiniband.bth.opcode | sort -n | uniq -c | tee "$work/ops$h"
  while read -r n op; do
    [[ $allowed == *" $op "* ]] || bad "host $h: unexpected opcode $op ($n frames)"
  done < "$work/ops$h"
  for op in 0 1 3 5 6 7 9 17 129; do
    grep -Eq " $op\$" "$work/ops$h" || bad "host $h: no frame of opcode $op"
  done
  case $h in
    0) grep -Eq ' 129$' "$work/ops$h" || bad "host 0: the receiver sent no CNP" ;;
    1)
      ((pfc > 0)) || bad "host 1: no PFC frame on a sender's link"
      xoff=$(ts -r "$f" -Y 'macc.cbfc.pause_time.c3 == 65535' | wc -l)
      xon=$(ts -r "$f" -Y 'macc.cbfc.pause_time.c3 == 0 && macc.opcode == 0x0101' | wc -l)
      ((xoff > 0 && xon > 0)) || bad "host 1: PFC XOFF $xoff, XON $xon (need both)"
      ;;
  esac
done
((fail == 0)) || exit 1
echo "capture-check: Wireshark ($(tshark -v 2> /dev/null | head -1)) reads both captures cleanly"
