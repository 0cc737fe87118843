#!/usr/bin/env python3
"""Issue 36, hole 5: a flood of MQTT commands at `gattclient gateway --commands`.

Starts Debian's mosquitto on a free loopback port (its own directory) and `gattclient gateway
--mqtt --commands` (release build) on the simulated SensorTag (`--transport sim:sensortag`),
whose configuration allows one read (the battery level, 2A19) and one write (the IR period). A
raw MQTT 3.1.1 client of this script's own (no paho here) subscribes to the answers
(`PREFIX/dev/+/+/+/result`) and publishes --count commands at QoS 0 as fast as the socket takes
them: a third allowed reads, a third unlisted characteristics, a third unknown devices. It waits
until every command is answered (or --settle seconds pass without an answer) and reads the
gateway's resident memory from /proc before the flood (connected, idle), after it, and at its
peak (VmHWM).

Figures (one JSON line on stdout, a summary on stderr): commands sent, answers (done, refused as
not allowed, refused for a full queue), the gateway's RSS before, after and peak, and the
difference (goal: after − before within 10 MiB).

Usage: python3 benchmarks/command_flood.py [--count 200000] [--queue 64] [--settle 10]
                                           [--gattclient .build/release/gattclient]
"""

import argparse
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from many_devices import ROOT, rss_kib  # noqa: E402
from mqtt_gateway import Broker  # noqa: E402

PREFIX = 'flood'
TAG = '54:6C:0E:9A:3B:01'
IR_PERIOD = 'F000AA03-0451-4000-B000-000000000000'
CONFIGURATION = {
    'prefix': PREFIX,
    'devices': [{'address': TAG + '/public', 'commands': {'write': [IR_PERIOD], 'read': ['2A19']}}],
}


def peak_kib(pid: int) -> int:
    with open(f'/proc/{pid}/status') as file:
        for line in file:
            if line.startswith('VmHWM:'):
                return int(line.split()[1])
    return 0


def encoded_length(length: int) -> bytes:
    out = bytearray()
    while True:
        byte = length % 128
        length //= 128
        out.append(byte | (0x80 if length else 0))
        if not length:
            return bytes(out)


def string(text: str) -> bytes:
    data = text.encode()
    return struct.pack('!H', len(data)) + data


class RawClient:
    """MQTT 3.1.1 over one socket: CONNECT, SUBSCRIBE, PUBLISH at QoS 0, PUBLISH read back."""

    def __init__(self, port: int, client_id: str):
        self.socket = socket.create_connection(('127.0.0.1', port))
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        variable = string('MQTT') + bytes([4, 0x02]) + struct.pack('!H', 60)
        payload = string(client_id)
        self.socket.sendall(bytes([0x10]) + encoded_length(len(variable) + len(payload)) + variable + payload)
        self.buffer = bytearray()
        self.offset = 0
        kind, _ = self.packet()
        assert kind == 0x20, 'no CONNACK'

    def packet(self):
        """The next packet (type, body); (None, b'') at the end. The buffer is read from an
        offset and compacted only when consumed: slicing it per packet made the reader quadratic."""
        while True:
            available = len(self.buffer) - self.offset
            if available >= 2:
                length, multiplier, index = 0, 1, self.offset + 1
                complete = False
                while index < len(self.buffer):
                    byte = self.buffer[index]
                    length += (byte & 0x7F) * multiplier
                    multiplier *= 128
                    index += 1
                    if not byte & 0x80:
                        complete = True
                        break
                if complete and len(self.buffer) >= index + length:
                    kind, body = self.buffer[self.offset] & 0xF0, bytes(self.buffer[index:index + length])
                    self.offset = index + length
                    return kind, body
            if self.offset:
                del self.buffer[:self.offset]
                self.offset = 0
            chunk = self.socket.recv(1 << 20)
            if not chunk:
                return None, b''
            self.buffer += chunk

    def subscribe(self, topic: str):
        body = struct.pack('!H', 1) + string(topic) + bytes([0])
        self.socket.sendall(bytes([0x82]) + encoded_length(len(body)) + body)
        kind, _ = self.packet()
        assert kind == 0x90, 'no SUBACK'

    @staticmethod
    def publish_packet(topic: str, payload: bytes) -> bytes:
        body = string(topic) + payload
        return bytes([0x30]) + encoded_length(len(body)) + body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--count', type=int, default=200_000)
    parser.add_argument('--queue', type=int, default=64)
    parser.add_argument('--settle', type=float, default=10)
    parser.add_argument('--qos', type=int, default=1, help="the gateway's --qos (its values and answers)")
    parser.add_argument('--only', choices=['read', 'unlisted', 'unknown'],
                        help='every command of one kind (default: a third each)')
    parser.add_argument('--gattclient', default=os.path.join(ROOT, '.build', 'release', 'gattclient'))
    arguments = parser.parse_args()

    broker = Broker()
    directory = tempfile.mkdtemp(prefix='command-flood-')
    configuration = os.path.join(directory, 'gateway.json')
    with open(configuration, 'w') as file:
        json.dump(CONFIGURATION, file)
    stderr_path = os.path.join(directory, 'gateway.stderr')
    gateway = None
    try:
        with open(stderr_path, 'w') as errors:
            gateway = subprocess.Popen(
                [arguments.gattclient, '--no-cache', '--transport', 'sim:sensortag', 'gateway', '--config', configuration,
                 '--mqtt', f'mqtt://127.0.0.1:{broker.port}', '--commands', '--command-queue', str(arguments.queue), '--qos', str(arguments.qos)],
                stdout=subprocess.DEVNULL, stderr=errors)
        listener = RawClient(broker.port, 'flood-listener')
        listener.subscribe(f'{PREFIX}/dev/+/+/+/result')
        listener.subscribe(f'{PREFIX}/dev/+/state')
        # Connected, then one allowed read answered: the gateway is up and idle.
        probe = RawClient(broker.port, 'flood-probe')
        deadline = time.monotonic() + 60
        connected = False
        while time.monotonic() < deadline and not connected:
            kind, body = listener.packet()
            connected = kind == 0x30 and b'"connected"' in body
        assert connected, 'the SensorTag did not connect'
        probe.socket.sendall(RawClient.publish_packet(f'{PREFIX}/dev/{TAG}/180F/2A19/read', b''))
        while True:
            kind, body = listener.packet()
            if kind == 0x30 and b'/result' in body[:200]:
                break
        time.sleep(2)  # idle: the figure before
        before = rss_kib(gateway.pid)

        answers = {'done': 0, 'notAllowed': 0, 'queueFull': 0, 'other': 0}
        last_answer = [time.monotonic()]

        def count_answers():
            while True:
                kind, body = listener.packet()
                if kind is None:
                    return
                if kind != 0x30:
                    continue
                topic_length = struct.unpack('!H', body[:2])[0]
                topic = body[2:2 + topic_length]
                if not topic.endswith(b'/result'):
                    continue
                payload = body[2 + topic_length:]
                if b'"ok":true' in payload:
                    answers['done'] += 1
                elif b'command queue is full' in payload:
                    answers['queueFull'] += 1
                elif b'not in the configuration' in payload or b'not a device of this gateway' in payload:
                    answers['notAllowed'] += 1
                else:
                    answers['other'] += 1
                last_answer[0] = time.monotonic()

        reader = threading.Thread(target=count_answers, daemon=True)
        reader.start()
        packets = [
            RawClient.publish_packet(f'{PREFIX}/dev/{TAG}/180F/2A19/read', b''),
            RawClient.publish_packet(f'{PREFIX}/dev/{TAG}/F000AA00-0451-4000-B000-000000000000/F000AA02-0451-4000-B000-000000000000/set', b'00'),
            RawClient.publish_packet(f'{PREFIX}/dev/11:22:33:44:55:66/180F/2A19/read', b''),
        ]
        if arguments.only:
            packets = [packets[['read', 'unlisted', 'unknown'].index(arguments.only)]]
        started = time.monotonic()
        batch = []
        for n in range(arguments.count):
            batch.append(packets[n % len(packets)])
            if len(batch) == 1000:
                probe.socket.sendall(b''.join(batch))
                batch = []
        if batch:
            probe.socket.sendall(b''.join(batch))
        sent_in = time.monotonic() - started
        while sum(answers.values()) < arguments.count and time.monotonic() - last_answer[0] < arguments.settle:
            time.sleep(0.1)
        answered_in = time.monotonic() - started
        time.sleep(2)
        after = rss_kib(gateway.pid)
        peak = peak_kib(gateway.pid)
        figures = {
            'commands': arguments.count, 'sentSeconds': round(sent_in, 2), 'answeredSeconds': round(answered_in, 2),
            'answers': sum(answers.values()), **answers, 'queue': arguments.queue,
            'rssBeforeKiB': before, 'rssAfterKiB': after, 'rssPeakKiB': peak, 'growthKiB': after - before,
        }
        print(json.dumps(figures))
        print(f'{arguments.count} commands in {sent_in:.1f} s, {sum(answers.values())} answered in {answered_in:.1f} s '
              f'({answers["done"]} done, {answers["notAllowed"]} refused as not allowed, {answers["queueFull"]} for a full '
              f'queue of {arguments.queue}); gateway RSS {before} KiB before, {after} KiB after '
              f'({(after - before) / 1024:+.1f} MiB; goal within 10 MiB), peak {peak} KiB', file=sys.stderr)
    finally:
        if gateway and gateway.poll() is None:
            gateway.terminate()
            try:
                gateway.wait(timeout=20)
            except subprocess.TimeoutExpired:
                gateway.kill()
                gateway.wait()
        broker.stop()
        with open(stderr_path) as file:
            lines = file.read().splitlines()
        print('gateway stderr (last lines):\n  ' + '\n  '.join(lines[-8:]), file=sys.stderr)
        for name in os.listdir(directory):
            os.unlink(os.path.join(directory, name))
        os.rmdir(directory)


if __name__ == '__main__':
    main()
