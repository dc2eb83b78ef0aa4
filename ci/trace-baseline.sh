#!/usr/bin/env bash
# The committed trace hashes: every shipped scenario's trace hash on the simulator, and the
# digest of its result.json less `wall-clock`, must equal its line in ci/trace-hashes.txt.
# determinism.sh shows a run agrees with itself; this shows it agrees with what the commit says
# it is, so a change that moves simulated events or changes a byte of a result in any shipped
# scenario fails here unless the same commit updates the file (on purpose):
#   ci/trace-hashes.sh target/release/xrdma > ci/trace-hashes.txt
# Prints the differing lines and exits 1 on a difference.
#
# usage: ci/trace-baseline.sh XRDMA_BIN
set -euo pipefail
(($# == 1)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
cd "$(dirname "$0")/.."
got=$(ci/trace-hashes.sh "$1")
if d=$(diff -u ci/trace-hashes.txt - <<< "$got"); then
  echo "trace baseline: $(wc -l < ci/trace-hashes.txt) shipped scenarios' traces and results match ci/trace-hashes.txt"
  exit 0
fi
echo "!!! trace baseline: these shipped scenarios' trace hashes or results differ from ci/trace-hashes.txt"
echo "!!! (- committed, + this build). If the change is meant to move simulated events or change"
echo "!!! a result, update the file in the same commit:"
echo "!!!   ci/trace-hashes.sh target/release/xrdma > ci/trace-hashes.txt"
grep '^[-+]scenarios' <<< "$d" | sed 's/^/!!!   /'
exit 1
