#!/bin/sh
# Repeatable instruction counts for the capture decoder (callgrind counts instructions, so the
# noisy shared machine does not matter), plus a perf call graph where perf works.
# Usage: benchmarks/profile.sh [summary|json|text] [RECORDS]   (defaults: summary 10000)
set -eu
cd "$(dirname "$0")/.."
mode=${1:-summary}
records=${2:-10000}
out=/tmp/gattbench
mkdir -p "$out"
capture="$out/capture-$records.btsnoop"
[ -f .build/release/gattclient ] || swift build -c release --product gattclient
[ -f .build/release/gattbench ] || swift build -c release --product gattbench
[ -f "$capture" ] || .build/release/gattbench generate --records "$records" "$capture"
case "$mode" in
  summary) args="dump --summary $capture" ;;
  json) args="--json dump $capture" ;;
  text) args="dump $capture" ;;
  *) echo "usage: $0 [summary|json|text] [RECORDS]" >&2; exit 64 ;;
esac
if command -v valgrind >/dev/null; then
  # shellcheck disable=SC2086
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.$mode.out" .build/release/gattclient $args >/dev/null
  callgrind_annotate --inclusive=yes "$out/callgrind.$mode.out" 2>/dev/null | head -40
fi
if command -v perf >/dev/null; then
  # shellcheck disable=SC2086
  perf record -q -g -o "$out/perf.$mode.data" .build/release/gattclient $args >/dev/null 2>&1 &&
    perf report -i "$out/perf.$mode.data" --children --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -30
fi
