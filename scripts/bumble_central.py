#!/usr/bin/env python3
"""Bumble's own GATT client against a peripheral: connects through a Bumble controller reached
over H4/TCP (the second controller `bumble_peer.py --central-port` exposes on the same virtual
link), exchanges the MTU, runs `Peer.discover_all()`, reads every readable characteristic,
writes, subscribes, and prints one JSON summary line on stdout.

With `--sensortag` it also does what a SensorTag app does: writes a period below the IR
sensor's minimum (expects TI's application error 0x80), switches the IR sensor on and waits for
a notified sample, and subscribes to the keys and waits (`--keys-timeout`) for one notification
that the peripheral's operator sends.

Summary fields: `mtu`, `services` (UUIDs in handle order), `characteristics` (count),
`descriptors` (count), `reads` (UUID → hex of the value, for the characteristics readable
without encryption), `name`, and with `--sensortag`: `period_error` (the ATT error code of the
refused period write), `ir_config` (hex read back), `ir_sample` (hex), `keys` (hex or null).
On a failure: `{"error": "..."}` and exit status 1.

Usage: python3 scripts/bumble_central.py --transport tcp-client:127.0.0.1:PORT
                                         --peer AA:BB:CC:DD:EE:FF/public [--sensortag]
                                         [--timeout S] [--keys-timeout S]
"""
import argparse
import asyncio
import json
import sys

from bumble import att, hci
from bumble.core import UUID
from bumble.device import Device, Peer
from bumble.transport import open_transport

CENTRAL_ADDRESS = 'F0:F1:F2:F3:F4:F6'
GATT_DEVICE_NAME = UUID.from_16_bits(0x2A00)
GATT_CCCD = UUID.from_16_bits(0x2902)
READ = 0x02


def ti_uuid(short: int) -> UUID:
    return UUID(f'F000{short:04X}-0451-4000-B000-000000000000')


def parse_peer(text: str) -> hci.Address:
    address, _, kind = text.partition('/')
    address_type = hci.Address.RANDOM_DEVICE_ADDRESS if kind == 'random' else hci.Address.PUBLIC_DEVICE_ADDRESS
    return hci.Address(address, address_type)


async def first_notification(peer: Peer, characteristic, timeout: float):
    received: asyncio.Future = asyncio.get_running_loop().create_future()

    def on_value(value):
        if not received.done():
            received.set_result(bytes(value))

    await peer.subscribe(characteristic, on_value)
    return received, timeout


async def session(arguments) -> dict:
    async with await open_transport(arguments.transport) as (source, sink):
        device = Device.with_hci('bumble-central', hci.Address(CENTRAL_ADDRESS), source, sink)
        await device.power_on()
        connection = await device.connect(
            parse_peer(arguments.peer), own_address_type=hci.OwnAddressType.PUBLIC, timeout=arguments.timeout)
        peer = Peer(connection)
        summary: dict = {'mtu': await peer.request_mtu(517)}
        await peer.discover_all()
        services = list(peer.services)
        summary['services'] = [str(service.uuid) for service in services]
        characteristics = [c for service in services for c in service.characteristics]
        summary['characteristics'] = len(characteristics)
        summary['descriptors'] = sum(len(c.descriptors) for c in characteristics)
        reads = {}
        for characteristic in characteristics:
            if characteristic.properties & READ:
                try:
                    reads[str(characteristic.uuid)] = bytes(await peer.read_value(characteristic)).hex()
                except att.ATT_Error as error:
                    reads[str(characteristic.uuid)] = f'error 0x{error.error_code:02X}'
        summary['reads'] = reads
        names = peer.get_characteristics_by_uuid(GATT_DEVICE_NAME)
        summary['name'] = bytes(await peer.read_value(names[0])).decode('utf-8', 'replace') if names else None

        if arguments.sensortag:
            period = peer.get_characteristics_by_uuid(ti_uuid(0xAA03))[0]
            try:
                await peer.write_value(period, bytes([0x05]), with_response=True)
                summary['period_error'] = None
            except att.ATT_Error as error:
                summary['period_error'] = error.error_code
            data = peer.get_characteristics_by_uuid(ti_uuid(0xAA01))[0]
            config = peer.get_characteristics_by_uuid(ti_uuid(0xAA02))[0]
            sample, _ = await first_notification(peer, data, arguments.timeout)
            await peer.write_value(config, bytes([0x01]), with_response=True)
            summary['ir_config'] = bytes(await peer.read_value(config)).hex()
            summary['ir_sample'] = (await asyncio.wait_for(sample, arguments.timeout)).hex()
            keys = peer.get_characteristics_by_uuid(UUID.from_16_bits(0xFFE1))[0]
            pressed, _ = await first_notification(peer, keys, arguments.keys_timeout)
            # Tell the operator (the test) we are subscribed, then wait for its notification.
            print('SUBSCRIBED keys', flush=True)
            try:
                summary['keys'] = (await asyncio.wait_for(pressed, arguments.keys_timeout)).hex()
            except asyncio.TimeoutError:
                summary['keys'] = None
            await peer.write_value(config, bytes([0x00]), with_response=True)

        await connection.disconnect()
        return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--transport', required=True, help='Bumble transport, e.g. tcp-client:127.0.0.1:PORT')
    parser.add_argument('--peer', required=True, help='AA:BB:CC:DD:EE:FF/public or /random')
    parser.add_argument('--sensortag', action='store_true', help='also drive the SensorTag services')
    parser.add_argument('--timeout', type=float, default=20.0, help='bound on each step (seconds)')
    parser.add_argument('--keys-timeout', type=float, default=10.0, help='wait for a keys notification')
    arguments = parser.parse_args()
    try:
        summary = asyncio.run(asyncio.wait_for(session(arguments), arguments.timeout * 4))
    except Exception as error:  # report every failure as one JSON line
        print(json.dumps({'error': f'{type(error).__name__}: {error}'}), flush=True)
        sys.exit(1)
    print(json.dumps(summary), flush=True)


if __name__ == '__main__':
    main()
