#!/usr/bin/env python3
"""Record a real HCI session between two Bumble stacks as a btsnoop (H4) fixture.

A Bumble central scans (actively; Bumble's controller answers with extended reports), connects to a Bumble peripheral serving a small
SensorTag-like database (GAP, GATT, Battery, TI IR temperature), exchanges the MTU, discovers
everything, reads the battery level, switches the IR sensor on, subscribes to its data and
receives notifications, then disconnects. Every HCI packet the central's host exchanges with its
controller is written to the output file, so the fixture is third-party bytes (Bumble's host and
controller), not our own encoder's.

Usage: python3 scripts/bumble_sensortag_session.py OUT.btsnoop   (pip install bumble)
"""
import asyncio
import sys

from bumble.controller import Controller
from bumble.core import AdvertisingData, UUID
from bumble.device import Device, Peer
from bumble.gatt import Characteristic, Service, Descriptor
from bumble.hci import Address
from bumble.link import LocalLink
from bumble.snoop import BtSnooper

TI = 'F000{:04X}-0451-4000-B000-000000000000'


async def main(out_path):
    link = LocalLink()
    peripheral_controller = Controller('peripheral', link=link)
    central_controller = Controller('central', link=link)
    # Random static addresses: Bumble's LocalLink drops ACL data for public addresses.
    peripheral = Device.with_hci('CC2650 SensorTag', Address('F4:6C:0E:12:34:56'),
                                 peripheral_controller, peripheral_controller)
    central = Device.with_hci('central', Address('C0:11:22:33:44:55'),
                              central_controller, central_controller)

    ir_data = Characteristic(UUID(TI.format(0xAA01)),
                             Characteristic.Properties.READ | Characteristic.Properties.NOTIFY,
                             Characteristic.READABLE, bytes(4))
    ir_config = Characteristic(UUID(TI.format(0xAA02)),
                               Characteristic.Properties.READ | Characteristic.Properties.WRITE,
                               Characteristic.READABLE | Characteristic.WRITEABLE, b'\x00')
    ir_period = Characteristic(UUID(TI.format(0xAA03)),
                               Characteristic.Properties.READ | Characteristic.Properties.WRITE,
                               Characteristic.READABLE | Characteristic.WRITEABLE, b'\x64')
    battery = Characteristic(UUID.from_16_bits(0x2A19),
                             Characteristic.Properties.READ | Characteristic.Properties.NOTIFY,
                             Characteristic.READABLE, b'\x5c')
    peripheral.add_services([
        Service(UUID.from_16_bits(0x180F), [battery]),
        Service(UUID(TI.format(0xAA00)), [ir_data, ir_config, ir_period]),
    ])
    peripheral.advertising_data = bytes(AdvertisingData([
        (AdvertisingData.FLAGS, bytes([0x06])),
        (AdvertisingData.INCOMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS, bytes([0x0F, 0x18])),
    ]))
    peripheral.scan_response_data = bytes(AdvertisingData([
        (AdvertisingData.COMPLETE_LOCAL_NAME, b'CC2650 SensorTag'),
    ]))

    with open(out_path, 'wb') as out:
        central.host.snooper = BtSnooper(out)
        await peripheral.power_on()
        await central.power_on()
        await peripheral.start_advertising(auto_restart=False)

        seen = asyncio.get_running_loop().create_future()

        def on_advertisement(advertisement):
            if advertisement.address == peripheral.random_address and not seen.done():
                seen.set_result(advertisement)

        central.on('advertisement', on_advertisement)
        await central.start_scanning(active=True, filter_duplicates=False)
        await asyncio.wait_for(seen, 5)
        await asyncio.sleep(0.05)
        await central.stop_scanning()

        connection = await asyncio.wait_for(central.connect(peripheral.random_address), 5)
        peer = Peer(connection)
        await peer.request_mtu(247)
        await asyncio.wait_for(peer.discover_all(), 10)
        [level] = await peer.read_characteristics_by_uuid(UUID.from_16_bits(0x2A19))
        assert level == b'\x5c', level

        [config] = peer.get_characteristics_by_uuid(UUID(TI.format(0xAA02)))
        await config.write_value(b'\x01', with_response=True)
        [data] = peer.get_characteristics_by_uuid(UUID(TI.format(0xAA01)))
        received = []
        await data.subscribe(lambda value: received.append(value))
        for raw in range(5):
            sample = (0x0B68 + raw * 4).to_bytes(2, 'little') + (0x0C40 + raw).to_bytes(2, 'little')
            await peripheral.notify_subscribers(ir_data, sample)
        for _ in range(100):
            if len(received) == 5:
                break
            await asyncio.sleep(0.01)
        assert len(received) == 5, received
        await config.write_value(b'\x00', with_response=True)
        await connection.disconnect()
        await asyncio.sleep(0.05)


if __name__ == '__main__':
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else 'session.btsnoop'))
