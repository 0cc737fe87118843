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
  # Valgrind 3.19 cannot read the Swift 6.3 toolchain's DWARF ("Possibly corrupted debuginfo
  # file"): profile a copy without debug info (symbols stay).
  objcopy --strip-debug .build/release/gattclient "$out/gattclient-nodebug"
  # Start-up alone, on a one-record capture, to subtract from the total.
  [ -f "$out/capture-1.btsnoop" ] || .build/release/gattbench generate --records 1 "$out/capture-1.btsnoop" >/dev/null
  one=$(echo "$args" | sed "s|$capture|$out/capture-1.btsnoop|")
  # shellcheck disable=SC2086
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.startup.out" "$out/gattclient-nodebug" $one \
    >/dev/null 2>"$out/callgrind.startup.log"
  # shellcheck disable=SC2086
  valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.$mode.out" "$out/gattclient-nodebug" $args \
    >/dev/null 2>"$out/callgrind.$mode.log"
  total=$(sed -n 's/.*Collected : //p' "$out/callgrind.$mode.log")
  startup=$(sed -n 's/.*Collected : //p' "$out/callgrind.startup.log")
  echo "instructions: $total total, $startup start-up, $(( (total - startup) / records )) per record"
  callgrind_annotate --inclusive=yes "$out/callgrind.$mode.out" 2>/dev/null | head -40
fi
if command -v perf >/dev/null; then
  # shellcheck disable=SC2086
  perf record -q -g -o "$out/perf.$mode.data" .build/release/gattclient $args >/dev/null 2>&1 &&
    perf report -i "$out/perf.$mode.data" --children --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -30
fi
