#!/usr/bin/env python3
"""A Bumble GATT peripheral on a kernel controller through the HCI user channel (guest side of
scripts/kernel-vm-test.sh).

Opens `hci-socket:N` (HCI_CHANNEL_USER on hciN: the adapter must be down; the bind is retried
while the kernel still holds a freshly created VHCI controller, which answers EBUSY for about
2 s), builds the CC2650-SensorTag-like database of scripts/bumble_peer.py, advertises it with the
controller's public address, and then:

  * writes the database it serves to `--database FILE` (JSON in the shape of
    `gattclient services --json`: services, characteristics with declaration and value handles
    and property bits, descriptors), so the test compares discovery with what is really there;
  * prints `READY <ADDRESS>/public` on stdout;
  * notifies the Battery Level (0x2A19) to every subscriber every `--notify-period` seconds with
    a counter value, so `subscribe` has notifications to receive;
  * re-advertises on SIGUSR1 (btvirt's emulated controller sends each advertising report only
    once, when advertising or scanning is enabled);
  * exits after `--lifetime` seconds or on SIGTERM.
"""
import argparse
import asyncio
import errno
import json
import logging
import os
import signal
import socket
import sys

# pyenv's Python may be built without the libbluetooth headers: Bumble's hci-socket transport
# needs only these constants (Linux values); socket() accepts family 31 regardless.
for _name, _value in (('AF_BLUETOOTH', 31), ('BTPROTO_HCI', 1)):
    if not hasattr(socket, _name):
        setattr(socket, _name, _value)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import bumble_peer  # noqa: E402  (the SensorTag database, shared with the TCP harness)

from bumble import hci  # noqa: E402
from bumble.device import Device, DeviceConfiguration  # noqa: E402
from bumble.gatt import Characteristic, CharacteristicDeclaration, Descriptor, Service  # noqa: E402
from bumble.core import UUID  # noqa: E402
from bumble.host import Host  # noqa: E402
from bumble.keys import MemoryKeyStore  # noqa: E402
from bumble.pairing import PairingConfig, PairingDelegate  # noqa: E402
from bumble.transport import open_transport  # noqa: E402

log = logging.getLogger('hci_socket_peer')


def uuid_text(uuid) -> str:
    """Full 128-bit upper-case form, whatever the UUID's size."""
    text = uuid.to_bytes(force_128=True)[::-1].hex().upper()
    return f'{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}'


def database_json(device: Device) -> dict:
    services = []
    for attribute in device.gatt_server.attributes:
        if isinstance(attribute, Service):
            services.append({'uuid': uuid_text(attribute.uuid), 'start': attribute.handle,
                             'end': attribute.end_group_handle,
                             'primary': attribute.primary, 'characteristics': []})
        elif isinstance(attribute, CharacteristicDeclaration):
            characteristic = attribute.characteristic
            services[-1]['characteristics'].append({
                'uuid': uuid_text(characteristic.uuid), 'declarationHandle': attribute.handle,
                'valueHandle': attribute.value_handle, 'properties': int(characteristic.properties),
                'descriptors': []})
        elif isinstance(attribute, Descriptor):
            services[-1]['characteristics'][-1]['descriptors'].append(
                {'uuid': uuid_text(attribute.type), 'handle': attribute.handle})
    return {'services': services}


async def open_user_channel(index: int, deadline: float):
    loop = asyncio.get_running_loop()
    while True:
        try:
            return await open_transport(f'hci-socket:{index}')
        except OSError as error:
            if error.errno not in (errno.EBUSY, errno.ERFKILL, errno.ENODEV) or loop.time() > deadline:
                raise
            log.info('hci%d: %s, retrying', index, os.strerror(error.errno))
            await asyncio.sleep(0.3)


def add_secure_value(device: Device) -> None:
    """A value readable only on an encrypted link (check 11: the kernel pairs for it, our agent
    answers, the keys land in the bond store), and pairing as a NoInputNoOutput device that
    bonds (Just Works). `PAIRING done ltk=…` on stdout gives the keys Bumble stored."""
    secure = Characteristic(UUID(bumble_peer.SECURE_READ_ENCRYPTED), Characteristic.Properties.READ,
                            Characteristic.READ_REQUIRES_ENCRYPTION, b'heart rate 72')
    device.add_service(Service(UUID(bumble_peer.SECURE_SERVICE), [secure]))
    device.pairing_config_factory = lambda connection: PairingConfig(
        sc=True, mitm=False, bonding=True, delegate=PairingDelegate())
    device.keystore = MemoryKeyStore()
    bumble_peer.report_pairing(device)


async def run(arguments) -> None:
    loop = asyncio.get_running_loop()
    transport = await open_user_channel(arguments.index, loop.time() + 15)
    async with transport:
        config = DeviceConfiguration()
        config.name = 'CC2650 SensorTag'
        config.gap_service_enabled = False
        config.gatt_service_enabled = False
        # Bumble's default IRK is all zero, which gattclient refuses (anyone could make an address
        # that resolves with it): a random one, as real devices have.
        config.irk = os.urandom(16)
        host = Host(controller_source=transport.source, controller_sink=transport.sink)
        device = Device(name=config.name, address=hci.Address('C0:00:00:00:00:01'), config=config, host=host)
        characteristics = bumble_peer.add_sensortag(device)
        add_secure_value(device)
        await asyncio.wait_for(device.power_on(), 20)
        await device.start_advertising(own_address_type=hci.OwnAddressType.PUBLIC, auto_restart=True)

        with open(arguments.database, 'w') as file:
            json.dump(database_json(device), file, indent=1)
        address = device.public_address.to_string(with_type_qualifier=False)
        print(f'READY {address}/public', flush=True)

        battery = next(a for a in device.gatt_server.attributes
                       if isinstance(a, Characteristic) and a.uuid == bumble_peer.uuid16(0x2A19))
        del characteristics

        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)

        async def readvertise():
            try:
                await device.stop_advertising()
                await device.start_advertising(own_address_type=hci.OwnAddressType.PUBLIC, auto_restart=True)
                log.info('re-advertised')
            except Exception as error:  # Bumble raises protocol-specific types
                log.warning('re-advertising failed: %s', error)

        loop.add_signal_handler(signal.SIGUSR1, lambda: loop.create_task(readvertise()))

        async def notify():
            counter = 0
            while True:
                await asyncio.sleep(arguments.notify_period)
                counter = (counter + 1) % 101
                try:
                    await device.notify_subscribers(battery, bytes([counter]))
                except Exception as error:  # a link going away mid-notification
                    log.info('notify: %s', error)

        notifier = loop.create_task(notify())
        try:
            await asyncio.wait_for(stop.wait(), arguments.lifetime)
        except asyncio.TimeoutError:
            log.info('lifetime over')
        notifier.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--index', type=int, default=1, help='the controller (hciN), default 1')
    parser.add_argument('--database', required=True, help='where to write the served database (JSON)')
    parser.add_argument('--notify-period', type=float, default=0.3)
    parser.add_argument('--lifetime', type=float, default=240.0)
    parser.add_argument('--verbose', action='store_true')
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.INFO if arguments.verbose else logging.WARNING, stream=sys.stderr)
    asyncio.run(run(arguments))


if __name__ == '__main__':
    main()
