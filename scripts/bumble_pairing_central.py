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
           [--claim-identity ADDR/TYPE] [--zero-irk] [--withhold-keys] [--attempts N]

Hostile variants (each patches Bumble's smp.Session or device, as an attacker's stack would):
  --claim-identity ADDR/TYPE  Identity Address Information names another device's identity
  --zero-irk                  Identity Information carries an all-zero IRK
  --withhold-keys             the central distributes none of the keys it promised (its side of
                              pairing ends; ours waits for them), then reads
  --attempts N                pairs N times in a row on one link, each with --passkey (a wrong one
                              fails with Confirm Value Failed); `attempts` lists each outcome:
                              "ok", or the Pairing Failed reason code (9: Repeated Attempts)
With a hostile variant the result also has `read_error` when the read after pairing failed.
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
        if arguments.zero_irk:
            device.irk = bytes(16)
        if arguments.claim_identity:
            claim_identity(arguments.claim_identity)
        if arguments.withhold_keys:
            withhold_keys()
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
        result = {'before': before}
        if arguments.attempts > 1:
            outcomes = []
            for _ in range(arguments.attempts):
                try:
                    await asyncio.wait_for(connection.pair(), arguments.timeout)
                    outcomes.append('ok')
                    break
                except (Exception, asyncio.CancelledError) as error:  # Bumble's SMP failure carries the reason code
                    outcomes.append(int(getattr(error, 'error_code', -1) or -1))
            result['attempts'] = outcomes
            return result
        hostile = arguments.claim_identity or arguments.zero_irk or arguments.withhold_keys
        try:
            await asyncio.wait_for(connection.pair(), arguments.timeout)
        except (Exception, asyncio.CancelledError) as error:  # the link's end cancels Bumble's waits
            if not hostile:
                raise
            result['pair_error'] = f'{type(error).__name__}: {error}'
        try:
            value = await asyncio.wait_for(target.read_value(), arguments.timeout * 2)
        except (Exception, asyncio.CancelledError) as error:
            if not hostile:
                raise
            result['read_error'] = f'{type(error).__name__}: {error}'
            return result
        keys = await device.keystore.get(str(connection.peer_address))
        result['value'] = bytes(value).hex()
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


def claim_identity(text: str) -> None:
    """Identity Address Information names `text` instead of our address."""
    from bumble import smp
    claimed = parse_peer(text)

    def send_identity_address_command(session) -> None:
        session.send_command(smp.SMP_Identity_Address_Information_Command(
            addr_type=claimed.address_type, bd_addr=claimed))
    smp.Session.send_identity_address_command = send_identity_address_command


def withhold_keys() -> None:
    """As initiator, send none of the keys promised: Bumble's side completes as if it had."""
    from bumble import smp
    original = smp.Session.distribute_keys

    def distribute_keys(session) -> None:
        if session.is_initiator:
            session.initiator_key_distribution = 0
        original(session)
    smp.Session.distribute_keys = distribute_keys


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
    parser.add_argument('--claim-identity', default=None)
    parser.add_argument('--zero-irk', action='store_true')
    parser.add_argument('--withhold-keys', action='store_true')
    parser.add_argument('--attempts', type=int, default=1)
    arguments = parser.parse_args()
    try:
        result = asyncio.run(asyncio.wait_for(session(arguments), arguments.timeout * 3))
    except Exception as error:  # Bumble raises protocol-specific exception types.
        print(json.dumps({'error': f'{type(error).__name__}: {error}'}), flush=True)
        sys.exit(1)
    print(json.dumps(result), flush=True)


if __name__ == '__main__':
    main()
