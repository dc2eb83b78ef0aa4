# shellcheck shell=bash
# Helpers for scripts that run INSIDE the Soft-RoCE guest (sourced, not executed).

# Prints the index of the RoCE v2 GID of DEVICE's PORT that is IPv4-mapped (::ffff:a.b.c.d),
# read from sysfs (the same table `ibv_devinfo -v` prints). Returns 1, with the whole table on
# stderr, when there is none.
softroce_gid_index() { # DEVICE [PORT]
  local dev=$1 port=${2:-1} dir f i gid type devs
  dir=/sys/class/infiniband/$dev/ports/$port
  if [[ ! -d $dir/gids ]]; then
    devs=(/sys/class/infiniband/*)
    printf 'no RDMA device %s with port %s; devices in /sys/class/infiniband: %s\n' \
      "$dev" "$port" "${devs[*]##*/}" >&2
    return 1
  fi
  for f in "$dir"/gids/*; do
    i=${f##*/}
    gid=$(cat "$f" 2>/dev/null) || continue
    type=$(cat "$dir/gid_attrs/types/$i" 2>/dev/null) || continue
    if [[ $gid == 0000:0000:0000:0000:0000:ffff:* && $type == "RoCE v2" ]]; then
      printf '%s\n' "$i"
      return 0
    fi
  done
  {
    printf 'no IPv4-mapped RoCE v2 GID on %s port %s; its GID table:\n' "$dev" "$port"
    for f in "$dir"/gids/*; do
      i=${f##*/}
      gid=$(cat "$f" 2>/dev/null) || continue
      [[ $gid == 0000:0000:0000:0000:0000:0000:0000:0000 ]] && continue
      printf '  %s %s %s\n' "$i" "$gid" "$(cat "$dir/gid_attrs/types/$i" 2>/dev/null)"
    done
  } >&2
  return 1
}

# Prints the IPv4 address a.b.c.d held in the IPv4-mapped GID at INDEX.
softroce_gid_ipv4() { # DEVICE PORT INDEX
  local gid hi lo
  gid=$(cat "/sys/class/infiniband/$1/ports/$2/gids/$3") || return 1
  hi=${gid:30:4}
  lo=${gid:35:4}
  printf '%d.%d.%d.%d\n' "0x${hi:0:2}" "0x${hi:2:2}" "0x${lo:0:2}" "0x${lo:2:2}"
}

# Waits until a TCP socket listens on PORT (IPv4 or IPv6), while process PID lives.
# Returns 1 after SECONDS (default 20) or when PID is gone.
softroce_wait_listening() { # PORT PID [SECONDS]
  local hex deadline
  hex=$(printf ':%04X' "$1")
  deadline=$((SECONDS + ${3:-20}))
  while ((SECONDS < deadline)); do
    # /proc/net/tcp{,6}: field 2 is local ADDRESS:PORT in hex, field 4 the state (0A: LISTEN).
    if awk -v p="$hex" 'substr($2, length($2) - 4) == p && $4 == "0A" { f = 1 } END { exit !f }' \
      /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
      return 0
    fi
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# Runs one client/server pair of a perftest or libibverbs example program, both ends on the
# same device: COMMAND ARGS... -p PORT in the background as the server, then
# COMMAND ARGS... -p PORT ADDRESS as the client. Outputs go to OUTDIR/NAME.server.txt and
# OUTDIR/NAME.client.txt. Each end is bounded by SECONDS (timeout). Returns 0 when both ends
# exit 0.
softroce_run_pair() { # NAME OUTDIR PORT ADDRESS SECONDS -- COMMAND ARGS...
  local name=$1 out=$2 port=$3 addr=$4 secs=$5 spid src=0 crc=0
  shift 6
  timeout "$secs" "$@" -p "$port" > "$out/$name.server.txt" 2>&1 &
  spid=$!
  if ! softroce_wait_listening "$port" "$spid" 20; then
    printf '%s: the server did not listen on port %s (see %s)\n' \
      "$name" "$port" "$out/$name.server.txt" >&2
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    return 1
  fi
  timeout "$secs" "$@" -p "$port" "$addr" > "$out/$name.client.txt" 2>&1 || crc=$?
  wait "$spid" || src=$?
  if ((crc != 0 || src != 0)); then
    printf '%s: client exit %s, server exit %s (see %s/%s.*.txt)\n' \
      "$name" "$crc" "$src" "$out" "$name" >&2
    return 1
  fi
  return 0
}

# perftest 4.5's latency table, one line per size:
#   #bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] t_stdev[usec]
#   99% percentile[usec] 99.9% percentile[usec]
# Prints the column under HEADER_WORD (t_typical[usec], t_avg[usec], 99%...) on the line of
# SIZE bytes (header words and data columns agree up to "99%", the header splits
# "99% percentile").
softroce_perftest_lat() { # FILE HEADER_WORD SIZE
  awk -v want="$2" -v size="$3" '
    !col { for (i = 1; i <= NF; i++) if ($i == want) col = i; next }
    col && $1 == size && NF >= col { print $col; exit }' "$1" 2> /dev/null
}

# perftest's bandwidth table: #bytes #iterations BW peak[MB/sec] BW average[MB/sec]
# MsgRate[Mpps]. Prints BW average (perftest's MB is 2^20 bytes) on the line of SIZE bytes.
softroce_perftest_bw() { # FILE SIZE
  awk -v size="$2" '/BW average\[MB\/sec\]/ { h = 1; next } h && $1 == size && NF >= 5 { print $4; exit }' \
    "$1" 2> /dev/null
}

# Whether VALUE is a plain non-negative decimal number.
softroce_num() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; }

# Writes OUT: the scenario file SRC unchanged, then a `verbs.ranks` block of two processes,
# rank 0 listening on ADDRESS0 and running the hosts in HOSTS0 (a YAML list such as "[0]"),
# rank 1 on ADDRESS1 with HOSTS1. Returns 1 when SRC has a `verbs:` block of its own.
softroce_ranks_variant() { # SRC OUT ADDRESS0 HOSTS0 ADDRESS1 HOSTS1
  if grep -q '^verbs:' "$1"; then
    echo "$1 has a verbs: block; the ranks variant appends its own" >&2
    return 1
  fi
  {
    cat "$1"
    printf '\n# Two processes (ranks), each listening on its own address.\n'
    printf 'verbs:\n  ranks:\n'
    printf '    - { address: "%s", hosts: %s }\n' "$3" "$4" "$5" "$6"
  } > "$2"
}

# A device counter in a run across processes' result.json at FILE (as write_json lays it
# out: two-space indent, so the environment's keys sit 4 deep, its device-counters' 6, each
# rank's 10): prints "TOP NET R0 R1 ...", the top-level environment.device-counters COUNTER,
# the network counter NET_KEY (e.g. data-packets), and each rank's own COUNTER in rank order,
# `-` where a value is absent.
softroce_rank_counter() { # FILE COUNTER NET_KEY
  awk -v key="\"$2\":" -v netkey="\"$3\":" '
    function value(line) { sub(/^[^:]*: */, "", line); sub(/,$/, "", line); return line }
    function at(line, depth, k) { return substr(line, 1, depth + length(k)) == sprintf("%" depth "s", "") k }
    BEGIN { top = "-"; net = "-"; n = 0 }
    /^  "environment": \{/ { env = 1; next }
    /^  "network": \{/ { nw = 1; next }
    /^  \}/ { env = 0; nw = 0 }
    nw && at($0, 4, netkey) { net = value($0) }
    env && /^      \{$/ { n++; rank[n] = "-" }
    env && at($0, 6, key) { top = value($0) }
    env && n > 0 && at($0, 10, key) { rank[n] = value($0) }
    END { printf "%s %s", top, net; for (i = 1; i <= n; i++) printf " %s", rank[i]; print "" }
  ' "$1"
}

# Whether the result.json at FILE reports WANT messages delivered intact: WANT delivered,
# no digest mismatch, no duplicate, none missing. Says which when not.
softroce_all_delivered() { # FILE WANT
  if ! grep -q "\"delivered\": $2," "$1" ||
    ! grep -q '"digest-mismatches": 0,' "$1" ||
    ! grep -q '"duplicates": 0,' "$1" ||
    ! grep -Eq '"missing": 0$' "$1"; then
    echo "$1 does not report all $2 messages delivered intact:" >&2
    grep -E '"(delivered|digest-mismatches|duplicates|missing)":' "$1" >&2 || true
    return 1
  fi
}
