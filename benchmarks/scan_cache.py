#!/usr/bin/env python3
"""Issue 36, hole 6: 1 000 000 distinct random advertiser addresses through the scan caches.

Runs `gattbench scan-cache --records N` (release build): N advertisements, each from a new random
address, through an adapter's scan hub (the devices replayed to scans that join later, one scan's
record of what it was given) and the address-type cache, with the default bounds (4 096 devices,
forgotten after 300 s unheard; `ScanCacheLimits`), 1 µs apart on the given clock; then one more
device 301 s later, when every earlier one has expired. Before these bounds the same caches grew
by one entry per address and were never freed (+49 MB for 194 000 addresses in the gateway).

Figures: the entries in the largest cache after N addresses (goal: the cap), the heap in use and
the resident memory before and after, ns an address, the devices left after the expiry. The
table from gattbench on stderr, its JSON line on stdout.

Usage: python3 benchmarks/scan_cache.py [--records 1000000] [--gattbench .build/release/gattbench]
"""

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--records', type=int, default=1_000_000)
    parser.add_argument('--gattbench', default=os.path.join(ROOT, '.build', 'release', 'gattbench'))
    arguments = parser.parse_args()
    run = subprocess.run([arguments.gattbench, 'scan-cache', '--records', str(arguments.records)],
                         capture_output=True, text=True, check=True)
    lines = run.stdout.splitlines()
    figures = json.loads(lines[-1])
    print('\n'.join(lines[:-1]), file=sys.stderr)
    verdict = 'met' if figures['largestCache'] <= 4096 and figures['devicesAfterExpiry'] == 1 else 'NOT met'
    print(f"largest cache after {figures['addresses']:,} addresses: {figures['largestCache']:,} entries (cap 4 096: {verdict}); "
          f"heap {figures['heapBeforeKiB']} → {figures['heapAfterKiB']} KiB", file=sys.stderr)
    print(json.dumps(figures))


if __name__ == '__main__':
    main()
