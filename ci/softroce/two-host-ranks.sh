# The two-host suite's runs of a scenario as two ranks across the wire, sourced by
# ci/softroce/two-host-suite.sh (its variables and helpers: out, me, xrdma, figure, meet, ...):
# ranks_run and the checks built on it, incast-8 ranks and per hop ranks.

# A shipped scenario (its receiver is host 0) as two ranks: rank 0, the receiver, on a at
# PORT0, rank 1, the senders SENDERS (a YAML list), on b at PORT1; on a, captured to
# RESULTS_DIR/PCAP.pcap when PCAP is given. Passes when both ranks exit 0 and rank 0's merged
# result.json reports WANT messages delivered intact. RANKS_STACK=tcp runs it over the
# kernel's TCP (--backend sockets --stack tcp) instead of xrdma on rxe0.
ranks_run() { # SCENARIO SENDERS WANT DIR PORT0 PORT1 [PCAP]
  local src=$repo/scenarios/$1 senders=$2 want=$3 dir=$out/$4 pcap=${7:-} rc=0
  local scenario stack_args=(--backend verbs)
  [[ ${RANKS_STACK:-xrdma} == tcp ]] && stack_args=(--backend sockets --stack tcp)
  [[ $1 == /* ]] && src=$1 # a variant written by the check
  scenario=$dir/$(basename "$1" .yaml)-ranks.$me.yaml
  mkdir -p "$dir"
  # Both sides write the same bytes (rank 0 checks rank 1's file hash).
  softroce_ranks_variant "$src" "$scenario" "$client_ip:$5" '[0]' "$server_ip:$6" "$senders" \
    || return 1
  # One job secret for both ranks (made by a, read by b): their bootstrap connection proves it.
  job_secret "${4//\//-}" "$dir/job.secret" || return 1
  if [[ $me == b ]]; then
    XRDMA_JOB_SECRET=$(cat "$dir/job.secret") \
      timeout 300 "$xrdma" run "${stack_args[@]}" "$scenario" --rank 1 --out "$dir/rank1" || rc=$?
    return "$rc"
  fi
  counters > "$dir/counters-before.a.env"
  if [[ -n $pcap ]]; then capture_start "$pcap" || return 1; fi
  XRDMA_JOB_SECRET=$(cat "$dir/job.secret") \
    timeout 300 "$xrdma" run "${stack_args[@]}" "$scenario" --rank 0 --out "$dir" || rc=$?
  if [[ -n $pcap ]]; then capture_stop "$pcap" || rc=1; fi
  counters > "$dir/counters-after.a.env"
  counter_deltas "$dir/counters-before.a.env" "$dir/counters-after.a.env" > "$dir/counters-delta.a.env"
  ((rc == 0)) || return 1
  softroce_all_delivered "$dir/result.json" "$want" || return 1
  measured "$(basename "$1") over two hosts: all $want messages delivered intact, merged by rank 0"
  [[ ${RANKS_STACK:-xrdma} == tcp ]] && return 0
  measured "host a's rxe0 during the run: $(grep -E '^(sent_pkts|rcvd_pkts)=' "$dir/counters-delta.a.env" | tr '\n' ' ')"
}
ranks_check() {
  # 8 senders x 5 messages.
  ranks_run incast-8.yaml '[1, 2, 3, 4, 5, 6, 7, 8]' 40 incast-8-ranks 18630 18631 \
    "${capture:+wire}" || return 1
  if [[ $me == a ]]; then
    figure incast_ranks_sent_pkts_a "$(sed -n 's/^sent_pkts=//p' "$out/incast-8-ranks/counters-delta.a.env")"
    figure incast_ranks_rcvd_pkts_a "$(sed -n 's/^rcvd_pkts=//p' "$out/incast-8-ranks/counters-delta.a.env")"
    ranks_devices_check "$out/incast-8-ranks/result.json" || return 1
  fi
}
# Both ranks' own device counters are in rank 0's result.json, and the top-level sent_pkts
# and the network's data-packets are their sum (a's rxe0 and b's rxe0: two devices).
ranks_devices_check() { # RESULT_JSON
  local top net r0 r1 rest
  read -r top net r0 r1 rest <<< "$(softroce_rank_counter "$1" sent_pkts data-packets)"
  if ! [[ $r0 =~ ^[0-9]+$ && $r1 =~ ^[0-9]+$ && -z $rest ]]; then
    echo "$1: not both ranks' own sent_pkts (rank 0: $r0, rank 1: $r1${rest:+, more: $rest})"
    return 1
  fi
  if [[ $top != $((r0 + r1)) || $net != "$top" ]]; then
    echo "$1: top-level sent_pkts $top and data-packets $net, not rank 0's $r0 + rank 1's $r1"
    return 1
  fi
  grep -qF 'summed over 2 devices' "$(dirname "$1")/summary.txt" ||
    { echo "summary.txt does not say its device figures are summed over 2 devices"; return 1; }
  measured "rank 0's result.json: sent_pkts rank 0 (a's rxe0) $r0 + rank 1 (b's rxe0) $r1 = top-level $top = data-packets $net"
  figure incast_ranks_sent_pkts_rank0 "$r0"
  figure incast_ranks_sent_pkts_rank1 "$r1"
}

# The per-hop study across the wire: scenarios/study/per-hop.yaml as two ranks, the server
# on a and the client on b, over xrdma on rxe0, then over the kernel's TCP on eth0; each
# stack's half round trip (p50 / 2) and TCP's over xrdma's go to figures.env. A figure, not
# a target: both guests are CPU-bound under TCG.
per_hop_check() {
  local stack port=18638 rc=0 p50 variant=$out/per-hop/variant-$me/per-hop.yaml
  # 2000 requests: the shipped 10 000 outlast its 10 s time limit on two TCG guests (about
  # 1 ms a request). Each side writes its own copy (one file written twice on the share races).
  mkdir -p "$(dirname "$variant")"
  sed 's/^    requests: 10000$/    requests: 2000/' "$repo/scenarios/study/per-hop.yaml" > "$variant"
  grep -q '^    requests: 2000$' "$variant" || { echo "no requests key to shorten"; return 1; }
  for stack in xrdma tcp; do
    RANKS_STACK=$stack ranks_run "$variant" '[1]' 2000 "per-hop/$stack" "$port" \
      "$((port + 1))" || rc=1
    port=$((port + 2))
    meet "per-hop-$stack.done" 400 || rc=1
    [[ $me == a && -f $out/per-hop/$stack/summary.txt ]] || continue
    p50=$(sed -n 's/^  p50 *\([0-9.]*\) µs$/\1/p' "$out/per-hop/$stack/summary.txt")
    softroce_num "$p50" || { echo "no p50 in the $stack run's summary"; rc=1; continue; }
    figure "wire_${stack}_half_rtt_64_us" "$(awk -v p="$p50" 'BEGIN { printf "%.3f", p / 2 }')"
  done
  ((rc == 0)) || return 1
  [[ $me == a ]] || return 0
  figure wire_tcp_over_xrdma_half_rtt \
    "$(ratio "$(value wire_tcp_half_rtt_64_us)" "$(value wire_xrdma_half_rtt_64_us)")"
  measured "per hop across the wire, 64 B: xrdma $(value wire_xrdma_half_rtt_64_us) us," \
    "kernel TCP $(value wire_tcp_half_rtt_64_us) us"
}

