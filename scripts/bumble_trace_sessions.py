#!/usr/bin/env python3
"""Record three real ATT sessions between two Bumble stacks and write them as text traces.

Each session runs a Bumble central and a Bumble peripheral (two virtual controllers on a
LocalLink, random static addresses: Bumble's LocalLink drops ACL data for public ones). Every
HCI packet the central's host exchanges with its controller is written to a btsnoop (H4) file
in a temporary directory; scripts/btsnoop_to_trace.py then turns the ATT PDUs of that file into
a trace (`>` the central's host sent it, `<` the peer did). The btsnoop files are deleted
unless --keep-btsnoop names a directory for them.

The sessions reproduce three behaviours a GATT client must survive:

  bumble-peer-mtu-during-discovery.trace
      A notification arrives before the central's first request; the PEER (the peripheral)
      sends an Exchange MTU Request (Rx MTU 247) while the central's first Read By Group Type
      Request is outstanding, the central answers it (Rx MTU 247), and only then does the
      peer answer the discovery request; full discovery follows at ATT_MTU 247, then a
      43-octet Write Request (sent in two ACL fragments).
  bumble-ccc-notification-burst.trace
      Discovery of one service by UUID (Find By Type Value), its characteristics and the
      descriptors of one, a CCC write enabling notifications (answered, then one notification), then
      three Write Requests to a control point, each answered and followed by a burst of 12
      notifications (37 in all).
  bumble-discovery-errors.trace
      Primary service discovery in four Read By Group Type rounds (the last, 128-bit, service's
      group ends at 0xFFFF, so no round ends in an error), included-service and characteristic discovery per service, then
      descriptor discovery: Read By Type and Find Information Requests ending in Error
      Response Attribute Not Found.

Usage: python3 scripts/bumble_trace_sessions.py [OUT_DIR] [--keep-btsnoop DIR]
       (OUT_DIR defaults to Fixtures/traces; pip install bumble)
"""
import argparse
import asyncio
import os
import shutil
import sys
import tempfile

from bumble import __version__ as bumble_version
from bumble.controller import Controller
from bumble.core import UUID
from bumble.device import Device, Peer
from bumble.gatt import Characteristic, CharacteristicValue, Descriptor, Service
from bumble.hci import Address
from bumble.link import LocalLink
from bumble.snoop import BtSnooper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import btsnoop_to_trace  # noqa: E402  (the converter beside this script)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMAND = 'python3 scripts/bumble_trace_sessions.py Fixtures/traces'
TIMEOUT = 10

R = Characteristic.Properties.READ
W = Characteristic.Properties.WRITE
WNR = Characteristic.Properties.WRITE_WITHOUT_RESPONSE
N = Characteristic.Properties.NOTIFY
READABLE = Characteristic.READABLE
WRITEABLE = Characteristic.WRITEABLE
VENDOR = '6E400000-B5A3-F393-E0A9-E50E24DC{:04X}'


def u16(value):
    return UUID.from_16_bits(value)


def description(text):
    """A Characteristic User Description descriptor (0x2901)."""
    return Descriptor(u16(0x2901), Descriptor.READABLE, text.encode())


def device_information():
    return Service(u16(0x180A), [
        Characteristic(u16(0x2A29), R, READABLE, b'Bumble'),
        Characteristic(u16(0x2A24), R, READABLE, b'trace-peer'),
        Characteristic(u16(0x2A26), R, READABLE, b'0.0.236'),
    ])


class Session:
    """A LocalLink with a peripheral and a central; the central's HCI goes to `snoop_path`."""

    def __init__(self, peripheral_name, snoop_path):
        self.link = LocalLink()
        peripheral_controller = Controller('peripheral', link=self.link)
        central_controller = Controller('central', link=self.link)
        self.peripheral = Device.with_hci(peripheral_name, Address('F4:6C:0E:12:34:56'),
                                          peripheral_controller, peripheral_controller)
        self.central = Device.with_hci('central', Address('C0:11:22:33:44:55'),
                                       central_controller, central_controller)
        # The central's GATT server answers a peer's Exchange MTU Request with 247.
        self.central.gatt_server.max_mtu = 247
        self.snoop_path = snoop_path
        self.snoop_file = None
        self.peripheral_connection = None

    async def connect(self):
        self.snoop_file = open(self.snoop_path, 'wb')
        self.central.host.snooper = BtSnooper(self.snoop_file)
        await self.peripheral.power_on()
        await self.central.power_on()
        accepted = asyncio.get_running_loop().create_future()
        self.peripheral.on('connection', lambda c: accepted.done() or accepted.set_result(c))
        await self.peripheral.start_advertising(auto_restart=False)
        connection = await asyncio.wait_for(self.central.connect(self.peripheral.random_address),
                                            TIMEOUT)
        self.peripheral_connection = await asyncio.wait_for(accepted, TIMEOUT)
        return connection

    async def finish(self, connection):
        await connection.disconnect()
        await asyncio.sleep(0.05)
        self.central.host.snooper = None
        self.snoop_file.close()


async def wait_for_count(items, count):
    for _ in range(TIMEOUT * 100):
        if len(items) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f'{len(items)} of {count} notifications arrived')


async def record_peer_mtu_during_discovery(snoop_path):
    session = Session('pen', snoop_path)
    ink = Characteristic(u16(0xFFF1), R | N, READABLE, bytes(3),
                         [description('ink level')])
    command = Characteristic(u16(0xFFF2), W | WNR, WRITEABLE, b'')
    pen_state = Characteristic(UUID(VENDOR.format(0x0003)), R | N, READABLE, b'\x00')
    session.peripheral.add_services([
        device_information(),
        Service(u16(0xFFF0), [ink, command]),
        Service(UUID(VENDOR.format(0x0001)), [pen_state]),
    ])

    # The peer's GATT server: on the first Read By Group Type Request, the peripheral first
    # runs its own Exchange MTU as a client (waiting for the central's answer), and only
    # then answers the outstanding discovery request.
    server = session.peripheral.gatt_server
    answer_discovery = server.on_att_read_by_group_type_request
    exchanged = []

    def on_read_by_group_type(bearer, request):
        if exchanged:
            answer_discovery(bearer, request)
            return

        async def exchange_then_answer():
            mtu = await Peer(session.peripheral_connection).request_mtu(247)
            exchanged.append(mtu)
            answer_discovery(bearer, request)

        exchanged.append(None)
        asyncio.get_running_loop().create_task(exchange_then_answer())

    server.on_att_read_by_group_type_request = on_read_by_group_type

    connection = await session.connect()
    received = []
    client = connection.gatt_client
    take_notification = client.on_att_handle_value_notification

    def on_notification(notification):
        received.append(notification)
        take_notification(notification)

    client.on_att_handle_value_notification = on_notification
    # A notification before any request (the peer has not been subscribed to: forced).
    await server.notify_subscriber(session.peripheral_connection, ink, b'\x44\x01\x00', force=True)
    await wait_for_count(received, 1)

    peer = Peer(connection)
    await asyncio.wait_for(peer.discover_all(), TIMEOUT)
    assert exchanged == [None, 247], exchanged
    assert connection.att_mtu == 247, connection.att_mtu
    assert [s.uuid for s in peer.services][2:] == [u16(0x180A), u16(0xFFF0),
                                                 UUID(VENDOR.format(0x0001))], peer.services
    # A Write Request only ATT_MTU 247 allows (43 octets; the central's host splits it over
    # two ACL fragments of at most 27 octets).
    [command_proxy] = peer.get_characteristics_by_uuid(u16(0xFFF2))
    await command_proxy.write_value(bytes(range(0x40, 0x68)), with_response=True)
    assert command.value == bytes(range(0x40, 0x68)), command.value
    await session.finish(connection)


async def record_ccc_notification_burst(snoop_path):
    session = Session('logger', snoop_path)
    stream = Characteristic(UUID(VENDOR.format(0x0011)), N, READABLE, b'',
                            [description('samples')])
    bursts = []

    def on_control(_connection, value):
        bursts.append(bytes(value))

    control = Characteristic(UUID(VENDOR.format(0x0012)), W, WRITEABLE,
                             CharacteristicValue(write=on_control))
    service_uuid = UUID(VENDOR.format(0x0010))
    session.peripheral.add_services([
        device_information(),
        Service(service_uuid, [stream, control]),
    ])

    async def notify_ready(_connection, characteristic, notify_enabled, _indicate_enabled):
        if characteristic is stream and notify_enabled:
            await session.peripheral.notify_subscribers(stream, b'\x01\x00')

    session.peripheral.on('characteristic_subscription',
                          lambda *args: asyncio.get_running_loop().create_task(notify_ready(*args)))

    connection = await session.connect()
    peer = Peer(connection)
    [service] = await asyncio.wait_for(peer.discover_service(service_uuid), TIMEOUT)
    await asyncio.wait_for(peer.discover_characteristics(service=service), TIMEOUT)
    [stream_proxy] = peer.get_characteristics_by_uuid(stream.uuid, service)
    [control_proxy] = peer.get_characteristics_by_uuid(control.uuid, service)

    received = []
    # Bumble's subscribe discovers the characteristic's descriptors, then writes the CCC.
    await stream_proxy.subscribe(lambda value: received.append(bytes(value)))
    await wait_for_count(received, 1)
    for block in range(3):
        request = bytes([0x55, 0xAA, block, 12])
        await control_proxy.write_value(request, with_response=True)
        assert bursts[-1] == request, bursts
        # The Write Response has gone out; the peer now streams the block it was asked for.
        for index in range(12):
            sample = bytes([block, index]) + bytes((block * 12 + index + k) & 0xFF for k in range(18))
            await session.peripheral.notify_subscribers(stream, sample)
        await wait_for_count(received, 1 + 12 * (block + 1))
    assert len(received) == 37, len(received)
    await session.finish(connection)


async def record_discovery_errors(snoop_path):
    session = Session('toy car', snoop_path)
    battery = Characteristic(u16(0x2A19), R | N, READABLE, b'\x5c')
    motor = Characteristic(u16(0xFFE1), N, READABLE, b'',
                           [description('motor state')])
    steering = Characteristic(u16(0xFFE9), WNR, WRITEABLE, b'', [description('steering')])
    lights = Characteristic(u16(0xFFA1), R | W, READABLE | WRITEABLE, b'\x00')
    horn = Characteristic(u16(0xFFA2), W, WRITEABLE, b'')
    firmware = Characteristic(UUID(VENDOR.format(0x0021)), R | N, READABLE, b'\x01\x02')
    last = Service(UUID(VENDOR.format(0x0020)), [firmware])
    session.peripheral.add_services([
        device_information(),
        Service(u16(0x180F), [battery]),
        Service(u16(0xFFE0), [motor]),
        Service(u16(0xFFE5), [steering]),
        Service(u16(0xFFA0), [lights, horn]),
        last,
    ])
    # Like many real peripherals, the last service's group runs to the end of the handle range.
    last.end_group_handle = 0xFFFF

    connection = await session.connect()
    peer = Peer(connection)
    services = await asyncio.wait_for(peer.discover_services(), TIMEOUT)
    for service in services:
        await asyncio.wait_for(peer.discover_included_services(service), TIMEOUT)
        await asyncio.wait_for(peer.discover_characteristics(service=service), TIMEOUT)
    for service in services:
        for characteristic in service.characteristics:
            await asyncio.wait_for(peer.discover_descriptors(characteristic), TIMEOUT)
    assert services[-1].end_group_handle == 0xFFFF, services[-1]
    await session.finish(connection)


SESSIONS = [
    ('bumble-peer-mtu-during-discovery', record_peer_mtu_during_discovery, [
        'A Bumble central (our side) and a Bumble peripheral: a notification on 0x%s before any',
        'request; the PEER\'s Exchange MTU Request (Rx MTU 247) while our first Read By Group Type',
        'Request is outstanding, answered by us (Rx MTU 247) before the peer answers the request;',
        'then full discovery at ATT_MTU 247, and a 43-octet Write Request that only ATT_MTU 247',
        'allows (sent by our host in two ACL fragments).',
    ]),
    ('bumble-ccc-notification-burst', record_ccc_notification_burst, [
        'A Bumble central (our side) and a Bumble peripheral: discovery of one 128-bit service by',
        'UUID (Find By Type Value), of its characteristics and of the notifying one\'s descriptors;',
        'a CCC write (0100) enabling notifications, answered and followed by one notification;',
        'then three Write Requests to a control point, each answered and followed by a burst of',
        '12 notifications (37 notifications in all).',
    ]),
    ('bumble-discovery-errors', record_discovery_errors, [
        'A Bumble central (our side) and a Bumble peripheral whose last service ends at 0xFFFF:',
        'primary services in four Read By Group Type rounds, included services (Read By Type',
        '2802) and characteristics (Read By Type 2803) per service, then descriptors (Find',
        'Information), with Error Response Attribute Not Found ending each round.',
    ]),
]


def header(name, summary):
    return summary + [
        '',
        f'Recorded with: {COMMAND}',
        f'  (bumble {bumble_version}: two Bumble stacks, virtual controllers on a LocalLink; the',
        '  central\'s HCI written as an H4 btsnoop to a temporary directory, not kept), converted',
        '  by scripts/btsnoop_to_trace.py; "frame N" is the btsnoop record number.',
        '\'>\' our side (the central\'s host) -> peer, \'<\' peer -> host.',
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('out_dir', nargs='?', default=os.path.join(REPO, 'Fixtures', 'traces'))
    parser.add_argument('--keep-btsnoop', metavar='DIR',
                        help='copy the recorded btsnoop files here (they are not fixtures)')
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='bumble-traces-') as scratch:
        for name, record, summary in SESSIONS:
            snoop_path = os.path.join(scratch, name + '.btsnoop')
            asyncio.run(record(snoop_path))
            with open(snoop_path, 'rb') as capture:
                pdus = btsnoop_to_trace.extract(capture.read())
            lines = summary
            if '%s' in lines[0]:  # name the handle the early notification uses
                lines = [lines[0] % f'{pdus[0][2][1] | pdus[0][2][2] << 8:04x}'] + lines[1:]
            out_path = os.path.join(args.out_dir, name + '.trace')
            with open(out_path, 'w') as out:
                out.write(btsnoop_to_trace.render(pdus, header(name, lines)))
            print(f'{out_path}: {len(pdus)} ATT PDUs')
            if args.keep_btsnoop:
                os.makedirs(args.keep_btsnoop, exist_ok=True)
                shutil.copy(snoop_path, args.keep_btsnoop)
    return 0


if __name__ == '__main__':
    sys.exit(main())
