#!/usr/bin/env bash
# Boots the Soft-RoCE guest once and runs one command in it.
#
# usage: ci/softroce/run.sh WORKDIR RESULTS_DIR -- COMMAND [ARG...]
#
#   WORKDIR      prepared by ci/softroce/prepare.sh (holds softroce.env, kernel, initrd.gz).
#   RESULTS_DIR  created if needed; shared WRITABLE with the guest at the same path. Receives
#                guest-command.sh (the generated script the guest runs), console.log (the whole
#                guest console, also streamed to stdout), run-times.env, and whatever the
#                command writes there.
#   COMMAND      runs inside the guest, chrooted into the host's / (read-only), in the current
#                directory, with SOFTROCE_RESULTS, SOFTROCE_DEV (rxe0), SOFTROCE_IP and
#                SOFTROCE_GID_INDEX set. The guest's /tmp is a fresh tmpfs: reach host files by
#                their host path, write into RESULTS_DIR or /tmp.
#
# Environment: SOFTROCE_TIMEOUT (seconds for the whole guest run, default 240),
#   SOFTROCE_MEM_MIB (2048), SOFTROCE_SMP (2), SOFTROCE_PASS_ENV (names of host variables to
#   pass to the command; RUST_BACKTRACE and RUST_LOG always are), SOFTROCE_QUIET=1 (console to
#   the log only), SOFTROCE_VERBOSE_KERNEL=1 (kernel messages on the console).
#
# Exit status: the command's exit status inside the guest; 124 when the run timed out;
# 125 when the guest did not get as far as running the command (see console.log); 2 on usage.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
say() { printf 'softroce-run: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 125; }

if (($# < 4)) || [[ $3 != -- ]]; then usage; fi
workdir=$1
results=$2
shift 3

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=ci/softroce/boot.sh
source "$here/boot.sh"
softroce_prepared "$workdir"

timeout_s=${SOFTROCE_TIMEOUT:-240}
mem=${SOFTROCE_MEM_MIB:-2048}
smp=${SOFTROCE_SMP:-2}

mkdir -p "$results"
results=$(cd "$results" && pwd)
softroce_check_path RESULTS_DIR "$results"
softroce_check_path "working directory" "$PWD"
rm -f "$results/.softroce-status" "$results/console.log" "$results/run-times.env"

token=$(softroce_token)
script=$results/guest-command.sh
softroce_command_script "$script" -- "$@"
softroce_qemu_args "$results" "$(softroce_append "$token" "$results" "$script")" "$mem" "$smp"

log=$results/console.log
marks=$(mktemp)
trap 'rm -f "$marks"' EXIT

say "booting $(basename "$KERNEL") under qemu TCG (timeout ${timeout_s} s); console: $log"
t0=$EPOCHREALTIME
qemu_rc=0
softroce_boot "$token" "$log" "$marks" "" "$timeout_s" "${SOFTROCE_QEMU[@]}" || qemu_rc=$?
t1=$EPOCHREALTIME

read -r stage rc <<< "$(softroce_status "$token" "$results/.softroce-status" "$log")"
{
  printf 'qemu_exit=%s\n' "$qemu_rc"
  softroce_times "" "$t0" "$t1" "$marks"
  printf 'stage=%s\nrc=%s\n' "$stage" "$rc"
} > "$results/run-times.env"
say "times: $(tr '\n' ' ' < "$results/run-times.env")"

if [[ $stage == command && $rc != none ]]; then
  say "guest command exited with status $rc"
  exit "$rc"
fi
if [[ $qemu_rc == 124 || $qemu_rc == 137 ]]; then
  say "timed out after ${timeout_s} s (see $log)"
  exit 124
fi
if [[ $stage == setup ]]; then
  say "guest setup failed before the command ran (see $log)"
else
  say "the guest ended without a status line (qemu exit $qemu_rc; see $log)"
fi
exit 125
