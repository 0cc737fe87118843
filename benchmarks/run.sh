#!/bin/sh
# Builds the release binaries and runs the issue-10 benchmark suite (a few minutes).
# Usage: benchmarks/run.sh [gattbench options]   e.g. benchmarks/run.sh --quick
set -eu
cd "$(dirname "$0")/.."
swift build -c release --product gattclient
swift build -c release --product gattbench
exec .build/release/gattbench "$@"
