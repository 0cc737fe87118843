#!/usr/bin/env bash
# Runs the main package's test suite under a sanitizer (issue 9).
#
#   fuzz/sanitize-tests.sh [address|thread] [extra swift test arguments…]
#
# address (the default) is what CI runs; thread is for local runs. The build goes to its own
# scratch directory (.build/sanitize-<sanitizer>) so it never disturbs the normal .build. Prints the
# wall-clock time of the build and of the test run.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizer="${1:-address}"
shift $(( $# > 0 ? 1 : 0 ))
scratch=".build/sanitize-$sanitizer"
# The Swift runtime's crash backtracer trips AddressSanitizer; the sanitizer prints the report.
export SWIFT_BACKTRACE=enable=no
# Leak checking would report the runtime's and Swift Testing's process-lifetime caches.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1}"
# Every bounded wait of the tests (TestSupport.withTimeout) four times longer: the sanitized
# process runs slower, and once stalled for up to 20 s while the Bumble peers started.
export TEST_TIMEOUT_SCALE="${TEST_TIMEOUT_SCALE:-4}"
# The minute of 32 Bumble peripherals (ManyDevicesInteropTests) runs in the plain suite; under the
# sanitizer it would only load the machine under every other test's timing.
export GATTCLIENT_SOAK_SECONDS="${GATTCLIENT_SOAK_SECONDS:-0}"

start=$(date +%s)
swift build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch"
built=$(date +%s)
status=0
swift test --skip-build --sanitize="$sanitizer" --scratch-path "$scratch" "$@" || status=$?
done_=$(date +%s)
echo "sanitizer $sanitizer: build $((built - start)) s, tests $((done_ - built)) s, exit $status"
exit "$status"
