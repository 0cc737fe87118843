#!/usr/bin/env python3
"""Issue 21's measured run: many devices on one adapter, against Bumble's own central.

Starts scripts/bumble_peer.py with --counters N (N Bumble peripherals on one Bumble link, each
notifying a 32-bit counter at --rate Hz while subscribed; the link's host controller exposed over
H4/TCP for our host, a second controller for Bumble's central), then, one after the other:

  ours    `gattclient gateway` (release build) keeps every counter connected and subscribed (a
          configuration matching the counter service), its JSON Lines read here: values per
          device (duplicates, reordering, gaps), states, reconnect times; --disconnects random
          disconnects from the peripherals' side spread over the run, each followed by the
          device's return
  library our library alone (`gattbench managed`: managed devices, a count per value, no
          output) on a fresh link: the same work as Bumble's central
  bumble  Bumble's own host and GATT client (this script, in a second process) connects to the
          same counters through the second controller and subscribes, counting each value

For each: CPU per delivered notification (user + system time of the central's process over the
loaded phase, from /proc), idle CPU with every link up and the counters stopped (10 s), resident
memory after connecting (and per connection above the process's start), values received against
values sent (bumble_peer.py's own count). One JSON line of figures on stdout, a table on stderr.

Usage: python3 benchmarks/many_devices.py [--counters 32] [--rate 20] [--seconds 600]
                                          [--disconnects 100] [--gattclient .build/release/gattclient]
                                          [--gattbench .build/release/gattbench] [--skip-bumble]
"""
import argparse
import asyncio
import json
import os
import random
import select
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER = os.path.join(ROOT, 'scripts', 'bumble_peer.py')
SERVICE = 'C0DE0001-0000-4000-8000-00805F9B34FB'
COUNTER = 'C0DE0002-0000-4000-8000-00805F9B34FB'
TICKS = os.sysconf('SC_CLK_TCK')


def cpu_seconds(pid: int) -> float:
    with open(f'/proc/{pid}/stat') as file:
        fields = file.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def rss_kib(pid: int) -> int:
    with open(f'/proc/{pid}/status') as file:
        for line in file:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


class Peer:
    """bumble_peer.py with its counters; commands answered by RESULT lines."""

    def __init__(self, counters: int, rate: float, lifetime: float):
        self.process = subprocess.Popen(
            [sys.executable, PEER, '--counters', str(counters), '--counter-rate', str(rate),
             '--central-port', '0', '--lifetime', str(lifetime)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.host_uri = self.central_uri = None
        self.addresses = []
        deadline = time.monotonic() + 60
        while self.central_uri is None:
            if time.monotonic() > deadline:
                raise RuntimeError('bumble_peer.py did not start')
            line = self.process.stdout.readline().strip()
            if line.startswith('READY '):
                self.host_uri = line.split()[1]
            elif line.startswith('DEVICE counter-'):
                self.addresses.append(line.split()[2].split('/')[0])
            elif line.startswith('CENTRAL '):
                self.central_uri = line.split()[1]

    def command(self, line: str) -> str:
        self.process.stdin.write(line + '\n')
        self.process.stdin.flush()
        while True:
            answer = self.process.stdout.readline()
            if not answer:
                raise RuntimeError('bumble_peer.py ended')
            if answer.startswith('RESULT '):
                return answer.strip()

    def counts(self) -> dict:
        fields = self.command('counts').split()[3:]
        return {field.split('=')[0]: int(field.split('=')[1].split(':')[0]) for field in fields}

    def next_values(self) -> dict:
        """The value each counter would notify next."""
        fields = self.command('counts').split()[3:]
        return {field.split('=')[0]: int(field.split('=')[1].split(':')[1]) for field in fields}

    def stop(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def run_ours(peer: Peer, arguments) -> dict:
    configuration = {'devices': [{'match': {'service': SERVICE}, 'subscribe': [COUNTER]}]}
    path = f'/tmp/many-devices-{os.getpid()}.json'
    with open(path, 'w') as file:
        json.dump(configuration, file)
    total = arguments.seconds + 300
    gateway = subprocess.Popen(
        [arguments.gattclient, '--no-cache', '--transport', peer.host_uri, 'gateway', '--config', path,
         '--duration', str(total)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    values: dict = {address: [] for address in peer.addresses}
    # Per device, how many values had arrived at each disconnect: a value missing right there was
    # in flight as the link went (queued in the peripheral's controller), not lost by the host.
    gaps_at: dict = {address: [] for address in peer.addresses}
    connected: set = set()
    restored: list = []
    start_rss = rss_kib(gateway.pid)

    # The gateway's output read with os.read, lines split here: `select` on the pipe and a
    # buffered `readline` would leave lines that arrived together in Python's buffer, unseen
    # until more output comes (the last values of a stream never would).
    fd = gateway.stdout.fileno()
    pending = bytearray()

    def lines():
        while True:
            end = pending.find(b'\n')
            if end < 0:
                return
            line = bytes(pending[:end])
            del pending[:end + 1]
            yield line

    def pump(until: float, stop_when=None):
        while time.monotonic() < until:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                if stop_when and stop_when():
                    return True
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return False
            pending.extend(chunk)
            for line in lines():
                handle(line)
            if stop_when and stop_when():
                return True
        return stop_when is None

    def handle(line: bytes):
        message = json.loads(line)
        topic, payload = message['topic'], message['payload']
        address = topic.split('/')[2]
        if topic.endswith('/state'):
            if payload['state'] == 'connected':
                connected.add(address)
            elif payload['state'] == 'disconnected':
                connected.discard(address)
                gaps_at[address].append(len(values[address]))
            elif payload['state'] == 'reconnected':
                restored.append(payload['restoredSeconds'])
        elif topic.endswith(COUNTER):
            values[address].append(int.from_bytes(bytes.fromhex(payload['value']), 'little'))

    began = time.monotonic()
    pump(began + 240, lambda: len(connected) == len(peer.addresses))
    connect_seconds = time.monotonic() - began
    connected_rss = rss_kib(gateway.pid)
    cpu_start, loaded_start = cpu_seconds(gateway.pid), time.monotonic()
    received_start = sum(len(v) for v in values.values())
    # The loaded phase, with random disconnects from the peripherals' side spread over it.
    moments = sorted(random.uniform(0, arguments.seconds * 0.9) for _ in range(arguments.disconnects))
    for moment in moments:
        pump(loaded_start + moment)
        peer.command(f'disconnect counter-{random.randint(1, len(peer.addresses))}')
    pump(loaded_start + arguments.seconds)
    loaded_cpu = cpu_seconds(gateway.pid) - cpu_start
    loaded_seconds = time.monotonic() - loaded_start
    received_loaded = sum(len(v) for v in values.values()) - received_start
    peer.command('stop-counters')
    pump(time.monotonic() + 3)
    # Idle: every link up (waiting for any still reconnecting), nothing notified.
    pump(time.monotonic() + 30, lambda: len(connected) == len(peer.addresses))
    idle_start, idle_cpu0 = time.monotonic(), cpu_seconds(gateway.pid)
    pump(idle_start + 10)
    idle_cpu = (cpu_seconds(gateway.pid) - idle_cpu0) / (time.monotonic() - idle_start)
    sent = peer.counts()
    next_values = peer.next_values()
    gateway.terminate()
    gateway.wait(10)
    os.unlink(path)
    received = {address: len(v) for address, v in values.items()}
    # Values missing between the first and the last received, and those of them just after a gap.
    missing = missing_at_gaps = missing_first = missing_last = 0
    for address, v in values.items():
        if not v:
            continue
        missing_first += v[0]  # each counter starts at 0
        if address in next_values:
            missing_last += max(0, next_values[address] - 1 - v[-1])
            if next_values[address] - 1 != v[-1]:
                print(f'{address}: last values {v[-3:]}, the counter\'s next {next_values[address]}, '
                      f'disconnects after value counts {gaps_at[address]} of {len(v)}', file=sys.stderr)
        lost = set(range(v[0], v[-1] + 1)) - set(v)
        missing += len(lost)
        after_gap = {v[index - 1] + 1 for index in gaps_at[address] if 0 < index <= len(v)}
        missing_at_gaps += len(lost & after_gap)
    duplicates = sum(len(v) - len(set(v)) for v in values.values())
    reordered = sum(sum(1 for a, b in zip(v, v[1:]) if b <= a) for v in values.values())
    return {
        'connectSeconds': round(connect_seconds, 2),
        'received': sum(received.values()), 'sent': sum(sent.values()),
        'devicesReceivedAll': sum(1 for address in peer.addresses if received[address] == sent.get(address)),
        'missing': missing, 'missingInFlightAtADisconnect': missing_at_gaps,
        'missingBeforeFirst': missing_first, 'missingAfterLast': missing_last,
        'duplicates': duplicates, 'reordered': reordered,
        'disconnects': arguments.disconnects, 'reconnects': len(restored),
        'restoredMaxSeconds': round(max(restored), 3) if restored else None,
        'cpuMicrosecondsPerNotification': round(loaded_cpu / max(received_loaded, 1) * 1e6, 1),
        'loadedCpuPercent': round(loaded_cpu / loaded_seconds * 100, 1),
        'idleCpuPercent': round(idle_cpu * 100, 2),
        'rssKiB': connected_rss, 'rssKiBPerConnection': round((connected_rss - start_rss) / len(peer.addresses), 1),
    }


async def bumble_central(uri: str, addresses: list, seconds: float, report) -> None:
    from bumble import hci
    from bumble.core import UUID
    from bumble.device import Device, Peer as GattPeer
    from bumble.transport import open_transport

    async with await open_transport(uri.replace('tcp:', 'tcp-client:')) as (source, sink):
        device = Device.with_hci('bumble-central', hci.Address('F0:F1:F2:F3:F4:F6'), source, sink)
        await device.power_on()
        counts = {address: 0 for address in addresses}
        for address in addresses:
            connection = await device.connect(hci.Address(address, hci.Address.RANDOM_DEVICE_ADDRESS), timeout=30)
            peer = GattPeer(connection)
            await peer.request_mtu(517)
            await peer.discover_services([UUID(SERVICE)])
            for service in peer.services:
                await service.discover_characteristics([UUID(COUNTER)])
            characteristic = peer.get_characteristics_by_uuid(UUID(COUNTER))[0]

            def on_value(_value, address=address):
                counts[address] += 1

            await peer.subscribe(characteristic, on_value)
        report('connected', counts)
        await asyncio.sleep(seconds)
        report('loaded', counts)
        await asyncio.sleep(13)
        report('idle', counts)


def run_child(peer: Peer, arguments, command: list) -> dict:
    """A central in a child process (its CPU measured from here) that prints `connected N`,
    `loaded N` and `idle N` (values counted so far) at the ends of its phases."""
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, bufsize=1)
    start_rss = rss_kib(child.pid)
    phases = {}
    marks = {}
    deadline = time.monotonic() + arguments.seconds + 400
    while len(phases) < 3 and time.monotonic() < deadline:
        line = child.stdout.readline()
        if not line:
            break
        phase, total = line.split()
        phases[phase] = int(total)
        marks[phase] = (time.monotonic(), cpu_seconds(child.pid), rss_kib(child.pid))
        if phase == 'loaded':
            peer.command('stop-counters')
    child.wait(30)
    if len(phases) < 3:
        return {'error': 'the central did not finish'}
    (t0, c0, rss), (t1, c1, _), (t2, c2, _) = marks['connected'], marks['loaded'], marks['idle']
    received = phases['loaded'] - phases['connected']
    return {
        'received': phases['idle'],
        'cpuMicrosecondsPerNotification': round((c1 - c0) / max(received, 1) * 1e6, 1),
        'loadedCpuPercent': round((c1 - c0) / (t1 - t0) * 100, 1),
        'idleCpuPercent': round((c2 - c1 - 0) / (t2 - t1) * 100, 2),
        'rssKiB': rss, 'rssKiBPerConnection': round((rss - start_rss) / len(peer.addresses), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--counters', type=int, default=32)
    parser.add_argument('--rate', type=float, default=20.0)
    parser.add_argument('--seconds', type=float, default=600.0)
    parser.add_argument('--disconnects', type=int, default=100)
    parser.add_argument('--gattclient', default=os.path.join(ROOT, '.build', 'release', 'gattclient'))
    parser.add_argument('--gattbench', default=os.path.join(ROOT, '.build', 'release', 'gattbench'))
    parser.add_argument('--skip-bumble', action='store_true')
    parser.add_argument('--only-ours', action='store_true', help='the gateway run alone (its accounting)')
    parser.add_argument('--bumble-central', default=None, help=argparse.SUPPRESS)
    parser.add_argument('--addresses', default='', help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.bumble_central:
        def report(phase, counts):
            print(phase, sum(counts.values()), flush=True)
        asyncio.run(bumble_central(arguments.bumble_central, arguments.addresses.split(','), arguments.seconds, report))
        return
    figures = {'counters': arguments.counters, 'rate': arguments.rate, 'seconds': arguments.seconds}
    lifetime = arguments.seconds * 2 + 900
    peer = Peer(arguments.counters, arguments.rate, lifetime)
    try:
        figures['ours'] = run_ours(peer, arguments)
    finally:
        peer.stop()
    if arguments.only_ours:
        print(json.dumps(figures), flush=True)
        return
    # Fresh links (and fresh counters) for the library alone and for Bumble's central: the same
    # work, no disconnects.
    peer = Peer(arguments.counters, arguments.rate, lifetime)
    try:
        figures['library'] = run_child(peer, arguments, [
            arguments.gattbench, 'managed', peer.host_uri, str(arguments.seconds), ','.join(peer.addresses)])
    finally:
        peer.stop()
    if not arguments.skip_bumble:
        peer = Peer(arguments.counters, arguments.rate, lifetime)
        try:
            figures['bumble'] = run_child(peer, arguments, [
                sys.executable, os.path.abspath(__file__), '--bumble-central', peer.central_uri,
                '--seconds', str(arguments.seconds), '--addresses', ','.join(peer.addresses)])
        finally:
            peer.stop()
    print(json.dumps(figures), flush=True)
    for name in ('ours', 'library', 'bumble'):
        if name in figures:
            print(f'{name:7} ' + ', '.join(f'{key} {value}' for key, value in figures[name].items()), file=sys.stderr)


if __name__ == '__main__':
    main()
