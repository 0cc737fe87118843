#!/usr/bin/env python3
"""Bumble's central pairing with a peripheral (ours): connects through a Bumble controller reached
over H4/TCP (the second controller `bumble_peer.py --central-port` exposes), reads a protected
characteristic before pairing (expects Insufficient Encryption or Authentication), pairs with the
configuration given, reads it again, and prints one JSON line: `before` (the ATT error code of the
first read), `value` (hex of the second read), `ltk` (hex, PDU octet order: the Secure Connections
LTK, or the legacy LTK the peripheral distributed), `ediv`, `rand`, `authenticated`, `sc`.
On a failure: `{"error": "..."}` and exit status 1.

Usage: python3 scripts/bumble_pairing_central.py --transport tcp-client:127.0.0.1:PORT
           --peer AA:BB:CC:DD:EE:FF/public --uuid UUID [--pairing sc|legacy] [--mitm]
           [--io none|display|keyboard|yesno|keyboard-display] [--passkey N] [--timeout S]
"""
import argparse
import asyncio
import secrets
import json
import sys

from bumble import att, hci
from bumble.core import UUID
from bumble.device import Device, Peer
from bumble.keys import MemoryKeyStore
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.transport import open_transport

CENTRAL_ADDRESS = 'F0:F1:F2:F3:F4:F6'
IO = {
    'none': PairingDelegate.NO_OUTPUT_NO_INPUT,
    'display': PairingDelegate.DISPLAY_OUTPUT_ONLY,
    'keyboard': PairingDelegate.KEYBOARD_INPUT_ONLY,
    'yesno': PairingDelegate.DISPLAY_OUTPUT_AND_YES_NO_INPUT,
    'keyboard-display': PairingDelegate.DISPLAY_OUTPUT_AND_KEYBOARD_INPUT,
}


class Delegate(PairingDelegate):
    def __init__(self, io, passkey):
        super().__init__(io_capability=IO[io])
        self.passkey = passkey

    async def accept(self):
        return True

    async def confirm(self, auto=False):
        return True

    async def compare_numbers(self, number, digits):
        return True

    async def get_number(self):
        return self.passkey

    async def generate_passkey(self):
        return self.passkey

    async def display_number(self, number, digits):
        pass


def parse_peer(text: str) -> hci.Address:
    address, _, kind = text.partition('/')
    address_type = hci.Address.RANDOM_DEVICE_ADDRESS if kind == 'random' else hci.Address.PUBLIC_DEVICE_ADDRESS
    return hci.Address(address, address_type)


async def session(arguments) -> dict:
    async with await open_transport(arguments.transport) as (source, sink):
        device = Device.with_hci('bumble-pairing-central', hci.Address(CENTRAL_ADDRESS), source, sink)
        device.keystore = MemoryKeyStore()
        # Bumble's default IRK is all zero, which our stack refuses: a random one, as real devices have.
        device.irk = secrets.token_bytes(16)
        device.pairing_config_factory = lambda connection: PairingConfig(
            sc=arguments.pairing == 'sc', mitm=arguments.mitm, bonding=True,
            delegate=Delegate(arguments.io, arguments.passkey))
        await device.power_on()
        connection = await device.connect(
            parse_peer(arguments.peer), own_address_type=hci.OwnAddressType.PUBLIC, timeout=arguments.timeout)
        peer = Peer(connection)
        await peer.discover_services()
        for service in peer.services:
            await service.discover_characteristics()
        targets = peer.get_characteristics_by_uuid(UUID(arguments.uuid))
        if not targets:
            return {'error': f'no characteristic {arguments.uuid}'}
        target = targets[0]
        before = None
        try:
            await target.read_value()
        except att.ATT_Error as error:
            before = int(error.error_code)
        await asyncio.wait_for(connection.pair(), arguments.timeout)
        value = await target.read_value()
        keys = await device.keystore.get(str(connection.peer_address))
        result = {'before': before, 'value': bytes(value).hex()}
        if keys is not None:
            key = keys.ltk or keys.ltk_central
            if key is not None:
                result['ltk'] = key.value.hex()
                result['ediv'] = key.ediv or 0
                result['rand'] = (key.rand or bytes(8)).hex()
                result['authenticated'] = bool(key.authenticated)
            result['sc'] = keys.ltk is not None
        await connection.disconnect()
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--transport', required=True)
    parser.add_argument('--peer', required=True)
    parser.add_argument('--uuid', required=True)
    parser.add_argument('--pairing', choices=['sc', 'legacy'], default='sc')
    parser.add_argument('--mitm', action='store_true')
    parser.add_argument('--io', choices=sorted(IO), default='none')
    parser.add_argument('--passkey', type=int, default=123456)
    parser.add_argument('--timeout', type=float, default=30.0)
    arguments = parser.parse_args()
    try:
        result = asyncio.run(asyncio.wait_for(session(arguments), arguments.timeout * 3))
    except Exception as error:  # Bumble raises protocol-specific exception types.
        print(json.dumps({'error': f'{type(error).__name__}: {error}'}), flush=True)
        sys.exit(1)
    print(json.dumps(result), flush=True)


if __name__ == '__main__':
    main()
