#!/usr/bin/env python3
"""Issue 24's measured run: full discovery of the CC2650-like database over one ATT bearer and
over Enhanced ATT bearers.

Starts scripts/bumble_peer.py with its SensorTag serving EATT (--eatt) and every ATT response
held back --delay milliseconds (the same per-PDU delay on every bearer, as a slow link gives),
then runs `gattclient services --json` (release build) against it, --runs times with one bearer
and --runs times with `--eatt N`. Each run discovers from scratch
(--no-cache, no Database Hash on this device). Both configurations encrypt the link first
(--security medium: Just Works with Bumble, on a fresh bond directory each run), so the
difference in wall time is the discovery's.

Figures (one JSON line on stdout, a table on stderr): per configuration the ATT requests, the
sequential round trips of the discovery (gattclient's own count: all of them on one bearer; with
EATT, the service discovery plus the longest part), the median wall time of the whole command
(connect, pairing for EATT, discovery, disconnect) and of the discovery alone estimated as round
trips × delay; the tree compared between the two (it must be the same); the requests each
bearer carried as Bumble counted them.

Usage: python3 benchmarks/eatt_discovery.py [--bearers 5] [--delay 20] [--runs 5]
                                            [--gattclient .build/release/gattclient]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from many_devices import Peer as CounterPeer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER = os.path.join(ROOT, 'scripts', 'bumble_peer.py')
SENSORTAG = '54:6C:0E:12:34:56/public'


class Peer(CounterPeer):
    """bumble_peer.py with an EATT SensorTag (commands as many_devices' Peer); stopped by its id."""

    def __init__(self, delay: float):  # noqa: super().__init__ starts a counter peer; this one differs
        self.process = subprocess.Popen(
            [sys.executable, PEER, '--device', 'sensortag', '--eatt', '--att-delay', str(delay), '--lifetime', '600'],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.uri = None
        deadline = time.monotonic() + 60
        while self.uri is None:
            if time.monotonic() > deadline:
                raise RuntimeError('bumble_peer.py did not start')
            line = self.process.stdout.readline().strip()
            if line.startswith('READY '):
                self.uri = line.split()[1]

    def bearers(self) -> dict:
        return {word.split('=')[0]: int(word.split('=')[1]) for word in self.command('bearers sensortag').split()[3:]}


def discover(gattclient: str, uri: str, bearers: int) -> dict:
    with tempfile.TemporaryDirectory(prefix='eatt-bench-') as state:
        environment = dict(os.environ, XDG_STATE_HOME=state, XDG_CACHE_HOME=state)
        arguments = [gattclient, '--no-cache', '--json', '--transport', uri, '--timeout', '60']
        # Both encrypt (Just Works): EATT needs it, and the one-bearer run pays the same pairing.
        arguments += ['--security', 'medium']
        if bearers > 1:
            arguments += ['--eatt', str(bearers - 1)]
        started = time.monotonic()
        run = subprocess.run(arguments + ['services', SENSORTAG], capture_output=True, text=True, timeout=120,
                             env=environment)
        elapsed = time.monotonic() - started
    if run.returncode != 0:
        raise RuntimeError(f'gattclient failed: {run.stderr}')
    record = next(json.loads(line) for line in run.stdout.splitlines() if '"kind":"services"' in line)
    record['seconds'] = elapsed
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--bearers', type=int, default=5, help='Enhanced ATT bearers (1 to 5)')
    parser.add_argument('--delay', type=float, default=20.0, help='milliseconds before each ATT response')
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--gattclient', default=os.path.join(ROOT, '.build', 'release', 'gattclient'))
    arguments = parser.parse_args()
    peer = Peer(arguments.delay)
    try:
        results = {}
        trees = {}
        for total in (1, arguments.bearers + 1):
            before = peer.bearers()
            runs = [discover(arguments.gattclient, peer.uri, total) for _ in range(arguments.runs)]
            after = peer.bearers()
            trees[total] = json.dumps(runs[-1]['services'], sort_keys=True)
            requests = runs[-1]['attRequests']
            # The Exchange MTU before discovery is one round trip in both (attRoundTrips counts
            # the discovery's own).
            trips = runs[-1]['attRoundTrips'] + 1 if 'attRoundTrips' in runs[-1] else requests
            results[f'{total} bearer(s)'] = {
                'attRequests': requests,
                'roundTrips': trips,
                'medianSeconds': round(statistics.median(run['seconds'] for run in runs), 3),
                'discoveryEstimateSeconds': round(trips * arguments.delay / 1000, 3),
                'perBearer': {name: count - before.get(name, 0) for name, count in after.items()
                              if count - before.get(name, 0) > 0},
            }
        same = trees[1] == trees[arguments.bearers + 1]
        print(json.dumps({'delayMs': arguments.delay, 'runs': arguments.runs, 'sameTree': same, 'results': results}))
        for name, figures in results.items():
            print(f'{name:14} {figures["attRequests"]:4} requests, {figures["roundTrips"]:4} in sequence, '
                  f'median {figures["medianSeconds"]:.3f} s per command (discovery ≈ {figures["discoveryEstimateSeconds"]:.3f} s)',
                  file=sys.stderr)
        print(f'same tree: {same}', file=sys.stderr)
    finally:
        peer.stop()


if __name__ == '__main__':
    main()
