#!/usr/bin/env bash
# Runs the libFuzzer targets of the stack (issue 9).
#
#   fuzz/run.sh TARGET|all SECONDS [libFuzzer flags…]   e.g. fuzz/run.sh all 20 (CI), fuzz/run.sh gatt-server 300
#   fuzz/run.sh list                                    the targets and their invariants
#
# Builds fuzz/ (a separate package: plain `swift build` never sees it) with
# -sanitize=fuzzer,address, regenerates the seed corpora from Fixtures/ (fuzz/make_seeds.py),
# then runs each target for SECONDS on its growing corpus fuzz/.work/corpus/TARGET (kept between
# runs) plus the seeds. Prints executions and coverage per target and appends them to
# fuzz/.work/history.tsv. A crash, hang (-timeout, 10 s), or over-limit memory (-rss_limit_mb) is a
# finding: its input goes to fuzz/.work/artifacts/TARGET/, the log to fuzz/.work/logs/, and the
# script exits 1. Reproduce one with
#   BLEFUZZ_TARGET=TARGET fuzz/.build/release/BLEFuzz fuzz/.work/artifacts/TARGET/crash-…
# Environment: FUZZ_JOBS=N runs N targets at once (default 1); FUZZ_NO_BUILD=1 skips the build.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
work="$here/.work"
binary="$here/.build/release/BLEFuzz"

if [[ $# -lt 1 ]]; then
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 64
fi
target="$1"
seconds="${2:-20}"
shift $(( $# >= 2 ? 2 : 1 ))

# The Swift runtime's crash backtracer trips AddressSanitizer; libFuzzer prints the stack.
export SWIFT_BACKTRACE=enable=no

if [[ "${FUZZ_NO_BUILD:-0}" != 1 ]]; then
    echo "building fuzz targets (swift build -c release -sanitize=fuzzer,address)…" >&2
    swift build -c release --package-path "$here" -Xswiftc -sanitize=fuzzer,address >&2
fi

if [[ "$target" == list ]]; then
    BLEFUZZ_TARGET=list "$binary"
    exit 0
fi

mapfile -t all_targets < <(BLEFUZZ_TARGET=list "$binary" | cut -f1)
if [[ "$target" == all ]]; then
    targets=("${all_targets[@]}")
else
    printf '%s\n' "${all_targets[@]}" | grep -qx -- "$target" || { echo "unknown target $target; fuzz/run.sh list" >&2; exit 64; }
    targets=("$target")
fi

mkdir -p "$work/logs"
rm -rf "$work/seeds"
python3 "$here/make_seeds.py" "$work/seeds" >/dev/null

run_one() {
    local name="$1"
    shift
    local corpus="$work/corpus/$name" artifacts="$work/artifacts/$name/" log="$work/logs/$name.log"
    mkdir -p "$corpus" "$artifacts" "$work/seeds/$name"
    local status=ok
    if ! BLEFUZZ_TARGET="$name" "$binary" "$corpus" "$work/seeds/$name" \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
        -artifact_prefix="$artifacts" -print_final_stats=1 "$@" >"$log" 2>&1; then
        status=FINDING
    fi
    local execs cov ft corp
    execs=$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    cov=$(grep -ao 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
    ft=$(grep -ao 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
    corp=$(grep -ao 'corp: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
    printf '%-18s %6ss %12s execs  cov %6s  ft %7s  corpus %6s  %s\n' \
        "$name" "$seconds" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$status"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$name" "$seconds" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$status" \
        >>"$work/history.tsv"
    [[ "$status" == ok ]] || { echo "  finding: see $log and $artifacts" >&2; return 1; }
}

failed=0
jobs="${FUZZ_JOBS:-1}"
printf '%-18s %7s %12s        %-10s %-10s %s\n' target time executions coverage features corpus
if [[ "$jobs" -le 1 ]]; then
    for name in "${targets[@]}"; do run_one "$name" "$@" || failed=1; done
else
    pids=()
    for name in "${targets[@]}"; do
        run_one "$name" "$@" &
        pids+=($!)
        while [[ $(jobs -rp | wc -l) -ge "$jobs" ]]; do sleep 1; done
    done
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
fi
exit "$failed"
