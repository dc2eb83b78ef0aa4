#!/usr/bin/env bash
# Determinism: every shipped scenario runs twice on the simulator and the two runs must agree
# bit for bit: the trace hash (every event, in order), every message's record (messages.csv)
# and the summary table (but for its wall-clock line). Prints one line per scenario and
# "determinism: N passed, M failed"; exit status 0 only when none failed.
#
# usage: ci/determinism.sh XRDMA_BIN SCENARIO...
set -euo pipefail
(($# >= 2)) || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
xrdma=$1
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
for s in "$@"; do
  name=$(basename "$s" .yaml)
  ok=1
  for k in a b; do
    # Exit status 2 (a run that finished with failed messages) is still a result to compare.
    set +e
    timeout 300 "$xrdma" run "$s" --csv --out "$work/$name-$k" > /dev/null 2> "$work/$name-$k.err"
    rc=$?
    set -e
    if ((rc != 0 && rc != 2)); then
      echo "determinism: $s: run $k exited $rc: $(tail -n 1 "$work/$name-$k.err")"
      ok=0
    fi
  done
  if ((ok)); then
    hash() { grep -o '"trace-hash": "[0-9a-f]*"' "$1/result.json" || echo "no trace hash"; }
    if [[ $(hash "$work/$name-a") != $(hash "$work/$name-b") ]]; then
      echo "determinism: $s: trace hashes differ: $(hash "$work/$name-a") vs $(hash "$work/$name-b")"
      ok=0
    elif ! cmp -s "$work/$name-a/messages.csv" "$work/$name-b/messages.csv"; then
      echo "determinism: $s: per-message records differ"
      ok=0
    elif ! diff -q <(grep -v '^wall clock' "$work/$name-a/summary.txt") \
      <(grep -v '^wall clock' "$work/$name-b/summary.txt") > /dev/null; then
      echo "determinism: $s: summaries differ"
      ok=0
    fi
  fi
  if ((ok)); then
    echo "determinism: $s: same $(hash "$work/$name-a" | sed 's/"//g') twice"
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
  rm -rf "$work/$name-a" "$work/$name-b"
done
echo "determinism: $passed passed, $failed failed"
((failed == 0))
