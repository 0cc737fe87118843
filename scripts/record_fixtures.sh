#!/usr/bin/env bash
# Records the sessions in Fixtures/recorded/: each line of Fixtures/recorded/MANIFEST is
#   NAME|TRANSPORT|ARGUMENTS...
# and is run as `gattclient --json --record Fixtures/recorded/NAME.btsnoop --transport T ARGUMENTS`,
# its output kept in NAME.out. Tests (Tests/CLITests/RecordedFixtureTests.swift) replay each file
# with `--transport replay:NAME.btsnoop` and the same arguments, and compare the output (times
# removed). TRANSPORT `bumble` starts scripts/bumble_peer.py (pip install bumble) and uses its
# tcp: URI; `sim` is the built-in simulation.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --product gattclient >/dev/null
bin=$(swift build --show-bin-path)/gattclient
out=Fixtures/recorded
peer_pid=""
cleanup() { [ -n "$peer_pid" ] && kill "$peer_pid" 2>/dev/null || true; }
trap cleanup EXIT
bumble_uri=""
while IFS='|' read -r name transport args; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    if [ "$transport" = bumble ]; then
        if [ -z "$bumble_uri" ]; then
            coproc PEER { python3 scripts/bumble_peer.py --device sensortag --device bluefruit --mtu 23 --lifetime 300; }
            peer_pid=$PEER_PID
            read -r -t 30 ready <&"${PEER[0]}"
            bumble_uri=${ready#READY }
        fi
        uri=$bumble_uri
    else
        uri=$transport
    fi
    echo "recording $name: gattclient --json --transport $transport $args"
    if [[ "$name" == *-indications ]]; then
        # The peer indicates while we are subscribed: start the subscription, then ask the
        # Bumble peer (through its stdin) for three indications of Service Changed (0x000a).
        # shellcheck disable=SC2086
        "$bin" --json --record "$out/$name.btsnoop" --transport "$uri" $args > "$out/$name.out" &
        client=$!
        sleep 2
        echo "indicate sensortag 0x000a 3" >&"${PEER[1]}"
        wait "$client" || echo "  (exit $?)"
        continue
    fi
    # shellcheck disable=SC2086
    "$bin" --json --record "$out/$name.btsnoop" --transport "$uri" $args > "$out/$name.out" || echo "  (exit $?: a recorded failure)"
done < "$out/MANIFEST"
