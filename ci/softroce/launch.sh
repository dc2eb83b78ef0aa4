#!/usr/bin/env bash
# A cluster launch dry run INSIDE the Soft-RoCE guest: scenarios/incast-8.yaml, unedited, as
# two ranks on rxe0 started the way `srun` starts them, with no --rank and no `verbs.ranks`.
#
# usage: ci/softroce/launch.sh DIR XRDMA_BIN
#
# Both processes run the same command line, `xrdma run --backend verbs incast-8.yaml --out
# DIR/report`, with the Slurm variables set by hand: SLURM_NTASKS=2,
# SLURM_JOB_NODELIST=localhost, SLURM_PROCID and SLURM_LOCALID 0 and 1 (two bootstrap ports on
# one node: 18516 and 18517) and one job secret (`xrdma job-secret`, in XRDMA_JOB_SECRET).
# They meet at rank 0 on localhost:18515, the receiver runs on
# rank 0 and the eight senders on rank 1, and rank 0 writes the report.
# Passes when both exit 0, rank 0 printed that assignment, rank 1 handed its records to rank 0,
# and DIR/report/result.json reports all 40 messages (8 senders x 5) delivered intact.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

(($# == 2)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
dir=$1
xrdma=$2
mkdir -p "$dir"
rm -rf "$dir/report"

slurm_task() { # RANK
  SLURM_PROCID=$1 SLURM_LOCALID=$1 SLURM_NTASKS=2 SLURM_JOB_NODELIST=localhost \
    timeout 120 "$xrdma" run --backend verbs "$repo/scenarios/incast-8.yaml" --out "$dir/report"
}

# One secret for the job, as a launcher makes it; both ranks prove it at the rendezvous.
XRDMA_JOB_SECRET=$("$xrdma" job-secret)
export XRDMA_JOB_SECRET

t0=$SECONDS
rc=0
slurm_task 1 > "$dir/rank1.log" 2>&1 &
sender=$!
slurm_task 0 > "$dir/rank0.log" 2>&1 || rc=$?
wait "$sender" || { echo "rank 1 failed" >&2; rc=1; }
echo "--- rank 0"
cat "$dir/rank0.log"
echo "--- rank 1"
cat "$dir/rank1.log"
echo "both ranks done in $((SECONDS - t0)) s"
((rc == 0)) || { echo "a rank failed (rank 0 exit status $rc)" >&2; exit 1; }

fail() { echo "$*" >&2; exit 1; }
grep -qF 'rank 0 at 127.0.0.1:18516: host 0 (receiver)' "$dir/rank0.log" ||
  fail "rank 0 did not print the receiver on itself at 127.0.0.1:18516"
grep -qF 'rank 1 at 127.0.0.1:18517: hosts 1-8 (senders)' "$dir/rank0.log" ||
  fail "rank 0 did not print the eight senders on rank 1 at 127.0.0.1:18517"
grep -qF 'records handed to rank 0, which writes the report' "$dir/rank1.log" ||
  fail "rank 1 did not hand its records to rank 0"
result=$dir/report/result.json
[[ -f $result ]] || fail "rank 0 wrote no $result"
if ! grep -q '"delivered": 40,' "$result" ||
  ! grep -q '"digest-mismatches": 0,' "$result" ||
  ! grep -q '"duplicates": 0,' "$result" ||
  ! grep -Eq '"missing": 0$' "$result"; then
  fail "$result does not report all 40 messages delivered intact"
fi
echo "slurm launch: all 40 messages delivered intact (report by rank 0)"
