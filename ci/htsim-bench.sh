#!/usr/bin/env bash
# Paired wall-clock comparison of xrdma's packet simulator against csg-htsim's htsim_roce
# (https://github.com/Broadcom/csg-htsim) on the same workloads:
#
#   pfc-incast   one switch, 257 hosts, hosts 1..256 each send 2 MiB to host 0 at t = 0,
#                no congestion control, PFC lossless, 100 Gb/s links, 1 µs per link, 1 KiB MTU.
#                Ours: `xrdma bench --case pfc-incast`. htsim: a 2-tier "fat tree" whose only ToR
#                holds all 257 hosts (its single uplink to one idle agg switch carries nothing).
#   fattree-1024 k = 16 fat tree (1024 hosts), host h sends 1 MiB to host (h + 512) mod 1024.
#                Ours: `xrdma bench --case fattree-1024` (16 back-to-back 64 KiB WRITEs per QP);
#                htsim: one 1 MiB flow per pair, its default k = 16 three-tier fat tree.
#
# Both sides: per-flow ECMP, PFC XOFF/XON set to ours (32 MiB buffer shared over the ports,
# minus 28 462 B headroom), line-rate senders. Known difference: per-packet wire overhead is
# 82 B (+RETH) ours vs 64 B htsim, so htsim's completion times come out about 1.6 % shorter.
# htsim's RoceSrc reseeds with srand(time(NULL)), so its ECMP path choice (fat tree) changes
# from run to run; the last-done figure is printed as min..max over the runs.
#
# Runs alternate ours, htsim, ours, htsim, ... N times per case (default 7) and print the median
# process wall time of each side (whole process, setup included), the ratio ours/htsim, peak RSS
# and each side's last flow completion (simulated time).
#
# Usage: ci/htsim-bench.sh [HTSIM_SRC_OR_BINARY] [XRDMA_BINARY]
#   HTSIM_SRC_OR_BINARY  a csg-htsim checkout (built here, with its switch port-count asserts
#                        raised, into $HTSIM_BUILD_DIR) or a built htsim_roce; default $HTSIM.
#   XRDMA_BINARY         default target/release/xrdma.
# Env: N (runs per side), CASES (default "pfc-incast fattree-1024"), JOBS (make -j, default 2).
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
HTSIM=${1:-${HTSIM:-}}
XRDMA=${2:-$here/target/release/xrdma}
N=${N:-7}
CASES=${CASES:-pfc-incast fattree-1024}

skip() { echo "SKIP htsim-bench: $*"; exit 0; }
[ -n "$HTSIM" ] || skip "no csg-htsim source or htsim_roce binary given (arg 1 or \$HTSIM)"
[ -e "$HTSIM" ] || skip "$HTSIM not found"
[ -x "$XRDMA" ] || { echo "htsim-bench: $XRDMA is not an executable (cargo build --release)" >&2; exit 1; }

# --- htsim_roce: take the binary, or build it from a copy of the source -----------------------
if [ -d "$HTSIM" ]; then
    [ -f "$HTSIM/sim/datacenter/main_roce.cpp" ] || skip "$HTSIM has no sim/datacenter/main_roce.cpp"
    build=${HTSIM_BUILD_DIR:-${TMPDIR:-/tmp}/htsim-bench-build}
    rev=$(git -C "$HTSIM" rev-parse HEAD 2>/dev/null || echo none)
    htsim_bin=$build/sim/datacenter/htsim_roce
    if [ "$rev" = none ] || [ "$(cat "$build/rev" 2>/dev/null)" != "$rev" ] || [ ! -x "$htsim_bin" ]; then
        echo "building htsim_roce ($rev) in $build" >&2
        rm -rf "$build" && mkdir -p "$build" && cp -R "$HTSIM/sim" "$build/"
        # FatTreeTopology asserts a ToR has < 96 ports and agg/core < 64 (`assert(addPort(q) < 96)`,
        # so keep NDEBUG off); one ToR with 257 hosts needs them raised.
        f=$build/sim/datacenter/fat_tree_topology.cpp
        sed '/addPort/s/) < 96);/) < 4096);/; /addPort/s/) < 64);/) < 4096);/' "$f" >"$f.new" && mv "$f.new" "$f"
        [ "$(grep -c 'addPort(.*) < 4096);' "$f")" -ge 5 ] || { echo "htsim-bench: port-assert patch did not apply" >&2; exit 1; }
        make -C "$build/sim" -j"${JOBS:-2}" libhtsim.a >"$build/build.log" 2>&1 &&
            make -C "$build/sim/datacenter" -j"${JOBS:-2}" htsim_roce >>"$build/build.log" 2>&1 ||
            { tail -20 "$build/build.log" >&2; echo "htsim-bench: htsim build failed ($build/build.log)" >&2; exit 1; }
        echo "$rev" >"$build/rev"
    fi
else
    htsim_bin=$HTSIM
fi
[ -x "$htsim_bin" ] || skip "$htsim_bin is not executable"
echo "htsim: $htsim_bin"
echo "xrdma: $XRDMA"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# PFC thresholds of ours for a switch with $1 ports, in htsim's unit (1024 B packets): "low high".
pfc() { xoff=$((33554432 / $1 - 28462)); echo "$(((xoff - 2 * 1106) / 1024)) $((xoff / 1024))"; }

# --- the two cases' htsim inputs ------------------------------------------------------------
cat >"$tmp/incast.topo" <<'EOF'
Nodes 257
Tiers 2
Podsize 257

Tier 0
Downlink_speed_Gbps 100
Radix_Down 257
Radix_Up 1
Oversubscribed 257
Downlink_Latency_ns 1000
Switch_Latency_ns 0

Tier 1
Downlink_speed_Gbps 100
Radix_Down 1
Downlink_Latency_ns 1000
Switch_Latency_ns 0
EOF
{ echo "Nodes 257"; echo "Connections 256"
  i=1; while [ $i -le 256 ]; do echo "$i->0 id $i start 0 size 2097152"; i=$((i + 1)); done
} >"$tmp/incast.cm"
{ echo "Nodes 1024"; echo "Connections 1024"
  i=0; while [ $i -lt 1024 ]; do echo "$i->$(((i + 512) % 1024)) id $((i + 1)) start 0 size 1048576"; i=$((i + 1)); done
} >"$tmp/perm.cm"

# -q: output-queue size in packets; htsim's lossless queues never drop, they only print a line
# per packet above it, so it is set far above what PFC lets build up (ours: 32 MiB shared).
common="-strat ecmp_host -paths 1 -mtu 1024 -q 65536 -end 1000000"
htsim_args() {
    case $1 in
    pfc-incast) echo "-topo $tmp/incast.topo -tm $tmp/incast.cm -nodes 257 $common -pfc_thresholds $(pfc 257)" ;;
    fattree-1024) echo "-tiers 3 -nodes 1024 -linkspeed 100000 -hop_latency 1 -tm $tmp/perm.cm $common -pfc_thresholds $(pfc 16)" ;;
    esac
}

# run OUTFILE CMD...: append "wall_s rss_kib" of one run to OUTFILE.times, output to OUTFILE.
run() {
    out=$1; shift
    s=$(date +%s.%N)
    if [ -x /usr/bin/time ]; then /usr/bin/time -f %M -o "$out.rss" "$@" >"$out" 2>&1
    else "$@" >"$out" 2>&1; echo - >"$out.rss"; fi || { echo "htsim-bench: failed: $*" >&2; tail -5 "$out" >&2; exit 1; }
    e=$(date +%s.%N)
    echo "$(echo "$e $s" | awk '{printf "%.3f", $1 - $2}') $(tail -1 "$out.rss")" >>"$out.times"
}
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# Last completion of one run, in µs. Ours: the "last done" column of the bench row
# (e.g. "46.393 ms"); htsim: the latest "Flow ... finished at <us>" line.
ours_last() {
    grep "^$1 " "$2" | awk '{v = $(NF-3); u = $(NF-2)
        printf "%.1f\n", v * (u == "s" ? 1e6 : u == "ms" ? 1e3 : (u == "ns" ? 1e-3 : 1))}'
}
htsim_last() {
    awk '/ finished at / {for (i = 1; i < NF; i++) if ($i == "at" && $(i+1) + 0 > m) m = $(i+1) + 0; n++}
        END {printf "%.1f %d\n", m, n}' "$1"
}
col() { cut -d' ' -f"$1" "$2" | tr '\n' ' '; }

for case in $CASES; do
    args=$(htsim_args "$case")
    echo
    echo "== $case: $N paired runs (wall = whole process; last done = simulated µs)"
    echo "   ours:  $XRDMA bench --case $case"
    echo "   htsim: (cd TMP && $htsim_bin $args -o TMP/logout.dat)"
    rm -f "$tmp"/*.times "$tmp"/*.last
    i=1
    while [ "$i" -le "$N" ]; do
        run "$tmp/ours" "$XRDMA" bench --case "$case"
        ours_last "$case" "$tmp/ours" >>"$tmp/ours.last"
        # htsim writes logout.dat into its working directory
        (cd "$tmp" && run "$tmp/htsim" "$htsim_bin" $args -o "$tmp/logout.dat")
        htsim_last "$tmp/htsim" >>"$tmp/htsim.last"
        i=$((i + 1))
    done
    for side in ours htsim; do
        w=$(cut -d' ' -f1 "$tmp/$side.times" | median)
        r=$(cut -d' ' -f2 "$tmp/$side.times" | median | awk '{printf "%.1f", $1 / 1024}')
        l=$(cut -d' ' -f1 "$tmp/$side.last" | sort -n | sed -n '1p;$p' | tr '\n' ' ' | awk '{print ($1 == $2) ? $1 : $1 ".." $2}')
        printf '   %-5s median wall %8.3f s   RSS %7s MiB   last done %s us\n' "$side" "$w" "$r" "$l"
        eval "${side}_w=$w"
    done
    ratio=$(echo "$ours_w $htsim_w" | awk '{printf "%.3f", $1 / $2}')
    echo "   ratio ours/htsim (median wall): $ratio"
    # The targets of the simulator-speed work: ≤ 0.10× htsim on the incast, ≤ 0.15× on the fat tree.
    case $case in pfc-incast) target=0.10 ;; *) target=0.15 ;; esac
    if echo "$ratio $target" | awk '{exit !($1 <= $2)}'; then echo "   target <= $target: met"
    else echo "   !!! TARGET MISSED: $case ratio $ratio is above $target !!!"; fi
    echo "   ours  walls: $(col 1 "$tmp/ours.times")  sim loop (last run): $(grep "^$case " "$tmp/ours" | awk '{print $3}') s"
    echo "   htsim walls: $(col 1 "$tmp/htsim.times")  flows finished: $(col 2 "$tmp/htsim.last")"
done
