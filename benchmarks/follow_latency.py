#!/usr/bin/env python3
"""Issue 25: how soon `gattclient dump --follow FILE` shows a record another process appends,
and what it costs while it waits.

A writer (this script) appends one btsnoop record at a time to a file the follower reads,
waits until the follower's line for it appears on its standard output, and notes the time
between the append and the line. Then it leaves the follower idle and reads its CPU time
from /proc. The follower is stopped by its pid with SIGINT (its normal end: exit 0).

    python3 benchmarks/follow_latency.py [--records 200] [--interval 0.02] [--idle 5]
        [--gattclient .build/release/gattclient]
"""
import argparse
import os
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

BTSNOOP_EPOCH = 0x00DCDDB30F2F8000


def record(number):
    """An HCI Reset command (H4 indicator 0x01, opcode 0x0c03, no parameters)."""
    packet = bytes([0x01, 0x03, 0x0C, 0x00])
    stamp = BTSNOOP_EPOCH + int(time.time() * 1_000_000)
    return struct.pack(">IIIIQ", len(packet), len(packet), 2, 0, stamp) + packet


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200)
    parser.add_argument("--interval", type=float, default=0.02)
    parser.add_argument("--idle", type=float, default=5.0)
    parser.add_argument("--gattclient", default=".build/release/gattclient")
    args = parser.parse_args()

    directory = tempfile.mkdtemp(prefix="follow-")
    path = os.path.join(directory, "live.btsnoop")
    with open(path, "wb") as f:
        f.write(b"btsnoop\0" + struct.pack(">II", 1, 1002))
    follower = subprocess.Popen([args.gattclient, "dump", "--follow", path], stdout=subprocess.PIPE)
    latencies = []
    pending = b""
    try:
        with open(path, "ab", buffering=0) as out:
            for number in range(1, args.records + 1):
                marker = f"#{number} ".encode()
                started = time.monotonic()
                out.write(record(number))
                deadline = started + 5
                while marker not in pending:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        sys.exit(f"record {number}: no line within 5 s")
                    ready, _, _ = select.select([follower.stdout], [], [], left)
                    if ready:
                        chunk = os.read(follower.stdout.fileno(), 65536)
                        if not chunk:
                            sys.exit("the follower ended")
                        pending += chunk
                latencies.append(time.monotonic() - started)
                pending = pending[pending.index(marker) + len(marker):]
                time.sleep(args.interval)
        before = cpu_seconds(follower.pid)
        time.sleep(args.idle)
        idle = cpu_seconds(follower.pid) - before
    finally:
        follower.send_signal(signal.SIGINT)
        try:
            code = follower.wait(timeout=10)
        except subprocess.TimeoutExpired:
            follower.kill()
            code = follower.wait()
        os.unlink(path)
        os.rmdir(directory)
    latencies.sort()
    ms = [value * 1000 for value in latencies]
    print(f"dump --follow: {len(ms)} records appended one at a time, {args.interval * 1000:.0f} ms apart")
    print(f"  append → line shown: median {statistics.median(ms):.2f} ms, "
          f"p99 {ms[int(len(ms) * 0.99) - 1]:.2f} ms, max {ms[-1]:.2f} ms  (target ≤ 100 ms: "
          f"{'MET' if ms[-1] <= 100 else 'MISSED'})")
    print(f"  CPU while idle for {args.idle:.0f} s: {idle * 1000:.0f} ms")
    print(f"  exit after SIGINT: {code}")


if __name__ == "__main__":
    main()
