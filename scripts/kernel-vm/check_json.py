#!/usr/bin/env python3
"""Checks of gattclient's --json output for scripts/kernel-vm/guest-test.sh. Each subcommand
prints one line saying what it found and exits 0 when the check holds, 1 otherwise.

  scan FILE ADDRESS NAME TYPE          JSON Lines of `scan --json`: ADDRESS seen with NAME and
                                       addressType TYPE
  services FILE EXPECTED               `services --json` equals the database the peer serves
                                       (hci_socket_peer.py --database): every service,
                                       characteristic (handles, properties) and descriptor
  value FILE HEX                       `read --json`: the value is HEX
  notifications FILE HANDLE COUNT      `subscribe --json`: at least COUNT notifications of HANDLE
  adapters FILE EXPECTED               `adapters --json`: one line per adapter of EXPECTED (lines
                                       `INDEX ADDRESS up|down POWERED LE`, 1/0, `-` where btmgmt
                                       could not read the settings), bluetoothd false
"""
import json
import sys

BASE = '-0000-1000-8000-00805F9B34FB'
PROPERTY_BITS = {'broadcast': 0x01, 'read': 0x02, 'writeWithoutResponse': 0x04, 'write': 0x08,
                 'notify': 0x10, 'indicate': 0x20, 'authenticatedSignedWrites': 0x40,
                 'extendedProperties': 0x80}


def full_uuid(text: str) -> str:
    text = text.upper()
    if len(text) == 4:
        return f'0000{text}{BASE}'
    if len(text) == 8:
        return f'{text}{BASE}'
    return text


def json_lines(path):
    with open(path) as file:
        return [json.loads(line) for line in file if line.strip()]


def scan(path, address, name, address_type):
    documents = json_lines(path)
    matches = [d for d in documents if str(d.get('address', '')).upper() == address.upper()]
    if not matches:
        seen = sorted({d.get('address') for d in documents})
        return False, f'{address} not among {len(documents)} JSON lines (addresses {seen})'
    good = [d for d in matches if d.get('name') == name and d.get('addressType') == address_type]
    if not good:
        return False, f'{address} seen as {matches[-1]} (want name {name!r}, addressType {address_type!r})'
    return True, f'{address} name={name!r} addressType={address_type} in {len(documents)} JSON lines'


def normalise_services(services, from_gattclient):
    result = []
    for service in services:
        characteristics = []
        for characteristic in service.get('characteristics', []):
            properties = characteristic['properties']
            if from_gattclient:
                properties = sum(PROPERTY_BITS[name] for name in properties)
            characteristics.append((
                full_uuid(characteristic['uuid']), characteristic['declarationHandle'],
                characteristic['valueHandle'], properties,
                tuple((full_uuid(d['uuid']), d['handle']) for d in characteristic.get('descriptors', []))))
        result.append((full_uuid(service['uuid']), service['start'], service['end'],
                       service.get('primary', True), tuple(characteristics)))
    return result


def services(path, expected_path):
    with open(path) as file:
        got = normalise_services(json.load(file)['services'], True)
    with open(expected_path) as file:
        want = normalise_services(json.load(file)['services'], False)
    if got == want:
        characteristics = sum(len(s[4]) for s in want)
        descriptors = sum(len(c[4]) for s in want for c in s[4])
        return True, f'{len(want)} services, {characteristics} characteristics, {descriptors} descriptors: exact'
    for index, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return False, f'service {index} differs: got {g} want {w}'
    return False, f'{len(got)} services discovered, {len(want)} served'


def value(path, hex_value):
    # `read --json`: one {"kind":"value",...} line per handle (issue 19's one schema).
    values = [d for d in json_lines(path) if d.get('kind') == 'value']
    document = values[0] if len(values) == 1 else {'value': [d.get('value') for d in values]}
    got = str(document.get('value', '')).lower().replace(' ', '')
    return got == hex_value.lower(), f'value {got} (want {hex_value.lower()}), document {document}'


def notifications(path, handle, count):
    documents = json_lines(path)
    mine = [d for d in documents if d.get('kind') == 'notification' and d.get('handle') == int(handle, 0)
            and not d.get('indication')]
    return len(mine) >= int(count), f'{len(mine)} notifications of handle {handle}: {[d.get("value") for d in mine]}'


def adapters(path, expected_path):
    documents = [d for d in json_lines(path) if d.get('kind') == 'adapter']
    with open(expected_path) as file:
        expected = [line.split() for line in file if line.strip()]
    if len(documents) != len(expected):
        return False, f'{len(documents)} adapters listed, {len(expected)} expected: {documents}'
    for document, (index, address, state, powered, le) in zip(documents, expected):
        want = {'index': int(index), 'address': address.upper(), 'up': state == 'up', 'bluetoothd': False}
        if powered != '-':
            want['powered'] = powered == '1'
            want['lowEnergy'] = le == '1'
        got = {key: (str(document.get(key)).upper() if key == 'address' else document.get(key)) for key in want}
        if got != want:
            return False, f'hci{index}: got {got}, want {want} (document {document})'
    return True, f'{len(documents)} adapters as hciconfig and btmgmt see them: {documents}'


def main():
    checks = {'scan': scan, 'services': services, 'value': value, 'notifications': notifications, 'adapters': adapters}
    if len(sys.argv) < 2 or sys.argv[1] not in checks:
        print(__doc__)
        sys.exit(64)
    try:
        ok, message = checks[sys.argv[1]](*sys.argv[2:])
    except (OSError, ValueError, KeyError, TypeError) as error:
        ok, message = False, f'{type(error).__name__}: {error}'
    print(message)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
