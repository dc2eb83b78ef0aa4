#!/usr/bin/env bash
# CI entry point for the tests on a real RDMA device: Soft-RoCE (rdma_rxe) in a qemu guest.
#
# usage: ci/softroce.sh [--two-host] [--workdir DIR] [--results DIR] [--timeout SECONDS]
#                       [-- COMMAND [ARG...]]
#
#   1. ci/softroce/prepare.sh WORKDIR (default target/softroce; cached between runs): host
#      packages through apt, Debian's stock kernel, the initramfs.
#   2. one guest boot (ci/softroce/run.sh) that runs COMMAND inside, default
#      `ci/softroce/smoke.sh RESULTS` (ibv_devinfo, ibv_rc_pingpong loopback, perftest).
#      COMMAND sees SOFTROCE_RESULTS, SOFTROCE_DEV, SOFTROCE_IP, SOFTROCE_GID_INDEX.
#      With --two-host: two guests joined by a wire (ci/softroce/two-host.sh), COMMAND on
#      each, default `ci/softroce/two-host-suite.sh RESULTS` (perftest host to host; give
#      the suite an xrdma binary for the rest); COMMAND also sees SOFTROCE_HOST (a or b),
#      SOFTROCE_PEER_IP and SOFTROCE_RUN_ID.
#   3. prints where the results are (default results/softroce-<UTC time> under the repo root).
#
# Exit status: 0 when the guest command passed, or when this machine cannot run the guest
# (a line "SKIP softroce: <reason>" says why: not x86_64 or not Debian-based, packages missing
# and not root, no network to the package registry; or SOFTROCE_SKIP=1); otherwise non-zero:
# the guest command's status, 124 on timeout, 125 when the guest did not reach the command.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

workdir=$repo/target/softroce
results=
two_host=0
timeout_s=
while (($#)); do
  case $1 in
    --two-host) two_host=1; shift ;;
    --workdir) workdir=${2:?}; shift 2 ;;
    --results) results=${2:?}; shift 2 ;;
    --timeout) timeout_s=${2:?}; shift 2 ;;
    --) shift; break ;;
    -h | --help) usage ;;
    *) usage ;;
  esac
done
results=${results:-$repo/results/softroce-$(date -u +%Y%m%dT%H%M%SZ)}
if ((two_host)); then
  timeout_s=${timeout_s:-${SOFTROCE_TIMEOUT:-600}}
else
  timeout_s=${timeout_s:-${SOFTROCE_TIMEOUT:-240}}
fi

skip() { printf 'SKIP softroce: %s\n' "$*"; exit 0; }
now() { printf '%s' "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

[[ ${SOFTROCE_SKIP:-0} != 1 ]] || skip "SOFTROCE_SKIP=1"

echo "==> Soft-RoCE: prepare $workdir"
t_prep=$(now)
prep_log=$(mktemp)
trap 'rm -f "$prep_log"' EXIT
set +e
"$here/softroce/prepare.sh" "$workdir" 2>&1 | tee "$prep_log"
prep_rc=${PIPESTATUS[0]}
set -e
if ((prep_rc == 3)); then
  skip "$(sed -n 's/^prepare: unavailable: //p' "$prep_log" | tail -n 1)"
elif ((prep_rc != 0)); then
  echo "softroce: prepare failed (exit $prep_rc)" >&2
  exit "$prep_rc"
fi
prep_s=$(since "$t_prep")

mkdir -p "$results"
results=$(cd "$results" && pwd)
if (($#)); then
  cmd=("$@")
elif ((two_host)); then
  cmd=("$here/softroce/two-host-suite.sh" "$results")
else
  cmd=("$here/softroce/smoke.sh" "$results")
fi

if ((two_host)); then
  echo "==> Soft-RoCE: two guests joined by a wire (timeout ${timeout_s} s): ${cmd[*]}"
  runner=$here/softroce/two-host.sh
else
  echo "==> Soft-RoCE: one guest run (timeout ${timeout_s} s): ${cmd[*]}"
  runner=$here/softroce/run.sh
fi
set +e
SOFTROCE_TIMEOUT=$timeout_s "$runner" "$workdir" "$results" -- "${cmd[@]}"
rc=$?
set -e

echo
echo "==> Soft-RoCE summary"
echo "prepare_s=$prep_s"
[[ -f $results/run-times.env ]] && cat "$results/run-times.env"
[[ -f $results/perftest.env ]] && cat "$results/perftest.env"
((two_host)) && [[ -f $results/figures.env ]] && cat "$results/figures.env"
echo "softroce: results in $results"
if ((rc == 0)); then
  echo "softroce: PASS"
else
  echo "softroce: FAIL (exit $rc; console in $results/console*.log)"
fi
exit "$rc"
