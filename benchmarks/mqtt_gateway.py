#!/usr/bin/env python3
"""Issue 23's measured run: many devices through `gattclient gateway --mqtt` into mosquitto.

Starts scripts/bumble_peer.py with --counters N (N Bumble peripherals on one Bumble link, each
notifying a 32-bit counter at --rate Hz while subscribed), Debian's mosquitto on a free loopback
port (persistence on, its own directory), the persistent subscriber (`gattbench mqtt-count`: a
fixed client id, clean session off, QoS 1), and `gattclient gateway --mqtt` (release build)
keeping every counter connected and publishing its values at QoS 1. In the middle of the run the
broker is stopped (SIGTERM: it saves its persistence) for --outage seconds and started again on
the same port; the gateway's messages wait in its queue meanwhile. Then the counters stop, the
queue drains, and the subscriber's counts are compared with what each counter sent (bumble_peer's
own count): every value must arrive (redeliveries, QoS 1's duplicates, counted apart). Last, the
gateway is killed (SIGKILL) and the subscriber must see `offline` on the status topic: the
broker's last will.

Figures (one JSON line on stdout, a table on stderr): values sent and received, distinct, lost,
redelivered; the gateway's CPU per value over the loaded phase (user + system time from /proc,
radio side to broker: everything the gateway does for a value), the broker's CPU per value
beside it, the gateway's resident memory with N devices connected.

Usage: python3 benchmarks/mqtt_gateway.py [--counters 32] [--rate 20] [--seconds 120]
                                          [--outage 30] [--gattclient .build/release/gattclient]
                                          [--gattbench .build/release/gattbench]
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from many_devices import COUNTER, ROOT, SERVICE, Peer, cpu_seconds, rss_kib  # noqa: E402

PREFIX = 'bench'


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


class Broker:
    """mosquitto with its own configuration and persistence; stopped by its id."""

    def __init__(self):
        self.port = free_port()
        self.directory = tempfile.mkdtemp(prefix='mqtt-bench-')
        self.configuration = os.path.join(self.directory, 'mosquitto.conf')
        with open(self.configuration, 'w') as file:
            if os.getuid() == 0:
                file.write('user root\n')  # else it drops to `mosquitto`, which cannot write here
            file.write(f'listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence true\n'
                       f'persistence_location {self.directory}/\nautosave_interval 1\nmax_queued_messages 0\n'
                       'log_dest none\n')
        self.process = None
        self.start()

    def start(self):
        executable = shutil.which('mosquitto') or '/usr/sbin/mosquitto'
        self.process = subprocess.Popen([executable, '-c', self.configuration],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(('127.0.0.1', self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError('mosquitto did not start')

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def close(self):
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


class Subscriber:
    """gattbench mqtt-count: `report` on stdin, one JSON line back."""

    def __init__(self, gattbench: str, port: int):
        self.process = subprocess.Popen([gattbench, 'mqtt-count', str(port), PREFIX],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        if json.loads(self.process.stdout.readline()).get('ready') is not True:
            raise RuntimeError('mqtt-count did not start')

    def report(self) -> dict:
        self.process.stdin.write('report\n')
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def stop(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--counters', type=int, default=32)
    parser.add_argument('--rate', type=float, default=20.0)
    parser.add_argument('--seconds', type=float, default=120.0)
    parser.add_argument('--outage', type=float, default=30.0)
    parser.add_argument('--gattclient', default=os.path.join(ROOT, '.build', 'release', 'gattclient'))
    parser.add_argument('--gattbench', default=os.path.join(ROOT, '.build', 'release', 'gattbench'))
    arguments = parser.parse_args()

    peer = Peer(arguments.counters, arguments.rate, arguments.seconds + arguments.outage + 600)
    broker = Broker()
    subscriber = Subscriber(arguments.gattbench, broker.port)
    path = f'/tmp/mqtt-gateway-{os.getpid()}.json'
    with open(path, 'w') as file:
        json.dump({'prefix': PREFIX, 'devices': [{'match': {'service': SERVICE}, 'subscribe': [COUNTER]}]}, file)
    gateway = subprocess.Popen(
        [arguments.gattclient, '--no-cache', '--transport', peer.host_uri, 'gateway', '--config', path,
         '--mqtt', f'mqtt://127.0.0.1:{broker.port}', '--client-id', 'bench-gateway'],
        stdout=subprocess.DEVNULL, stderr=open(f'/tmp/mqtt-gateway-{os.getpid()}.log', 'w'))
    figures: dict = {'counters': arguments.counters, 'rate': arguments.rate, 'seconds': arguments.seconds,
                     'outage': arguments.outage}
    try:
        # Every counter connected and publishing (each has values at the subscriber).
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            report = subscriber.report()
            if len(report['devices']) == arguments.counters:
                break
            time.sleep(1)
        else:
            raise RuntimeError(f'only {len(subscriber.report()["devices"])} of {arguments.counters} counters published')
        figures['rssKiB'] = rss_kib(gateway.pid)
        start_cpu, start_broker_cpu, start_values = cpu_seconds(gateway.pid), cpu_seconds(broker.process.pid), \
            sum(device['received'] for device in subscriber.report()['devices'].values())
        half = arguments.seconds / 2
        time.sleep(half)
        # The broker goes away (saving its persistence) and comes back on the same port.
        broker_cpu = cpu_seconds(broker.process.pid) - start_broker_cpu
        broker.stop()
        time.sleep(arguments.outage)
        broker.start()
        time.sleep(half)
        end_cpu = cpu_seconds(gateway.pid)
        broker_cpu += cpu_seconds(broker.process.pid)
        peer.command('stop-counters')
        sent = peer.counts()
        # The gateway's queue drains into the broker, the broker's into the subscriber.
        total = sum(sent.values())
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            report = subscriber.report()
            distinct = sum(device['distinct'] for device in report['devices'].values())
            if distinct >= total:
                break
            time.sleep(1)
        received = sum(device['received'] for device in report['devices'].values())
        lost = {address: sent[address] - report['devices'].get(address, {}).get('distinct', 0)
                for address in sent if sent[address] != report['devices'].get(address, {}).get('distinct', 0)}
        delivered = received - start_values
        figures.update({
            'sent': total, 'received': received, 'distinct': distinct, 'lost': total - distinct,
            'redelivered': received - distinct, 'devicesShort': lost,
            'gatewayCpuMicrosecondsPerValue': round((end_cpu - start_cpu) / max(1, delivered) * 1e6, 1),
            'brokerCpuMicrosecondsPerValue': round(broker_cpu / max(1, delivered) * 1e6, 1),
            'subscriberConnections': report['connections'],
        })
        # The last will: the gateway killed, the broker says offline for it.
        gateway.kill()
        gateway.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and subscriber.report()['status'] != 'offline':
            time.sleep(0.5)
        figures['statusAfterKill'] = subscriber.report()['status']
    finally:
        if gateway.poll() is None:
            gateway.kill()
            gateway.wait()
        subscriber.stop()
        broker.close()
        peer.stop()
        os.unlink(path)
    print(json.dumps(figures))
    print(f"sent {figures.get('sent')}, distinct received {figures.get('distinct')}, lost {figures.get('lost')}, "
          f"redelivered {figures.get('redelivered')}; gateway {figures.get('gatewayCpuMicrosecondsPerValue')} µs CPU "
          f"per value, broker {figures.get('brokerCpuMicrosecondsPerValue')} µs; gateway RSS {figures.get('rssKiB')} KiB "
          f"with {arguments.counters} devices; status after kill: {figures.get('statusAfterKill')}", file=sys.stderr)
    sys.exit(0 if figures.get('lost') == 0 and figures.get('statusAfterKill') == 'offline' else 1)


if __name__ == '__main__':
    main()
