#!/usr/bin/env python3
"""Convert an H4 btsnoop capture into an ATT conversation trace (Fixtures/traces format).

Reads a btsnoop file of datalink 1002 (HCI UART, H4: each record starts with the packet
indicator), reassembles L2CAP PDUs from the ACL data packets per connection handle and
direction (Packet_Boundary_Flag 0b00 or 0b10 starts a PDU, 0b01 continues one; 0b11, a
complete PDU on BR/EDR, is taken as a start too), keeps the PDUs on CID 0x0004 (ATT) and
prints one line per ATT PDU:

    > hex    host -> controller (the recording host sent it: our side in the trace)
    < hex    controller -> host (the peer sent it)

Each PDU line is preceded by a `# frame N: OPCODE_NAME, ...` comment, N being the 1-based
btsnoop record that completed the PDU. Partial PDUs cut by a new start fragment, by a
Disconnection Complete event or by the end of the file are reported on stderr and left out.

Usage:
    python3 scripts/btsnoop_to_trace.py IN.btsnoop [-o OUT.trace] [--handle H]
                                        [--header LINE ...]

`--header` lines (repeatable) are written first as `#` comments. With several connections
carrying ATT, `--handle` picks one (decimal or 0x hex); without it the conversion fails.
Standard library only.
"""
import argparse
import struct
import sys

BTSNOOP_MAGIC = b'btsnoop\0'
DATALINK_H4 = 1002
H4_ACL = 0x02
H4_EVENT = 0x04
EVENT_DISCONNECTION_COMPLETE = 0x05
ATT_CID = 0x0004

OPCODES = {
    0x01: 'ERROR_RSP',
    0x02: 'EXCHANGE_MTU_REQ',
    0x03: 'EXCHANGE_MTU_RSP',
    0x04: 'FIND_INFORMATION_REQ',
    0x05: 'FIND_INFORMATION_RSP',
    0x06: 'FIND_BY_TYPE_VALUE_REQ',
    0x07: 'FIND_BY_TYPE_VALUE_RSP',
    0x08: 'READ_BY_TYPE_REQ',
    0x09: 'READ_BY_TYPE_RSP',
    0x0A: 'READ_REQ',
    0x0B: 'READ_RSP',
    0x0C: 'READ_BLOB_REQ',
    0x0D: 'READ_BLOB_RSP',
    0x0E: 'READ_MULTIPLE_REQ',
    0x0F: 'READ_MULTIPLE_RSP',
    0x10: 'READ_BY_GROUP_TYPE_REQ',
    0x11: 'READ_BY_GROUP_TYPE_RSP',
    0x12: 'WRITE_REQ',
    0x13: 'WRITE_RSP',
    0x16: 'PREPARE_WRITE_REQ',
    0x17: 'PREPARE_WRITE_RSP',
    0x18: 'EXECUTE_WRITE_REQ',
    0x19: 'EXECUTE_WRITE_RSP',
    0x1B: 'HANDLE_VALUE_NTF',
    0x1D: 'HANDLE_VALUE_IND',
    0x1E: 'HANDLE_VALUE_CFM',
    0x20: 'READ_MULTIPLE_VARIABLE_REQ',
    0x21: 'READ_MULTIPLE_VARIABLE_RSP',
    0x23: 'MULTIPLE_HANDLE_VALUE_NTF',
    0x52: 'WRITE_CMD',
    0xD2: 'SIGNED_WRITE_CMD',
}

ERROR_CODES = {
    0x01: 'INVALID_HANDLE',
    0x02: 'READ_NOT_PERMITTED',
    0x03: 'WRITE_NOT_PERMITTED',
    0x04: 'INVALID_PDU',
    0x05: 'INSUFFICIENT_AUTHENTICATION',
    0x06: 'REQUEST_NOT_SUPPORTED',
    0x07: 'INVALID_OFFSET',
    0x08: 'INSUFFICIENT_AUTHORIZATION',
    0x09: 'PREPARE_QUEUE_FULL',
    0x0A: 'ATTRIBUTE_NOT_FOUND',
    0x0B: 'ATTRIBUTE_NOT_LONG',
    0x0C: 'INSUFFICIENT_ENCRYPTION_KEY_SIZE',
    0x0D: 'INVALID_ATTRIBUTE_VALUE_LENGTH',
    0x0E: 'UNLIKELY_ERROR',
    0x0F: 'INSUFFICIENT_ENCRYPTION',
    0x10: 'UNSUPPORTED_GROUP_TYPE',
    0x11: 'INSUFFICIENT_RESOURCES',
    0x12: 'DATABASE_OUT_OF_SYNC',
    0x13: 'VALUE_NOT_ALLOWED',
}


class CaptureError(Exception):
    pass


def read_records(data):
    """Yields (record number, flags, packet bytes) of an H4 btsnoop file."""
    if len(data) < 16 or data[:8] != BTSNOOP_MAGIC:
        raise CaptureError('not a btsnoop file (no "btsnoop\\0" identification pattern)')
    version, datalink = struct.unpack_from('>II', data, 8)
    if version != 1:
        raise CaptureError(f'btsnoop version {version}, expected 1')
    if datalink != DATALINK_H4:
        raise CaptureError(f'datalink {datalink}, expected {DATALINK_H4} (H4)')
    offset = 16
    number = 0
    while offset < len(data):
        if offset + 24 > len(data):
            raise CaptureError(f'record {number + 1}: header cut short at byte {offset}')
        _original, included, flags, _drops, _time = struct.unpack_from('>IIIIq', data, offset)
        offset += 24
        if offset + included > len(data):
            raise CaptureError(f'record {number + 1}: {included} bytes announced, '
                               f'{len(data) - offset} left')
        number += 1
        yield number, flags, data[offset:offset + included]
        offset += included


def uuid_text(raw):
    """A UUID in the order people write it (attribute values carry it little-endian)."""
    if len(raw) == 2:
        return f'{raw[1]:02X}{raw[0]:02X}'
    if len(raw) == 16:
        h = bytes(reversed(raw)).hex()
        return f'{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}'
    return raw.hex()


def u16(pdu, offset):
    return struct.unpack_from('<H', pdu, offset)[0]


def describe(pdu):
    """A one-line decode of an ATT PDU for the trace comments (never raises)."""
    opcode = pdu[0]
    name = OPCODES.get(opcode, f'opcode 0x{opcode:02x}')
    try:
        return name + _details(opcode, pdu[1:])
    except (struct.error, IndexError, ValueError):
        return f'{name} (malformed, {len(pdu)} bytes)'


def _list(entries):
    return ', [' + ', '.join(entries) + ']'


def _details(opcode, p):
    if opcode == 0x01:
        request = OPCODES.get(p[0], f'0x{p[0]:02x}')
        code = ERROR_CODES.get(p[3], f'0x{p[3]:02x}')
        return f', for {request}, handle 0x{u16(p, 1):04x}, {code}'
    if opcode in (0x02, 0x03):
        role = 'client' if opcode == 0x02 else 'server'
        return f', {role} Rx MTU {u16(p, 0)}'
    if opcode == 0x04:
        return f', 0x{u16(p, 0):04x}-0x{u16(p, 2):04x}'
    if opcode == 0x05:
        width = 2 if p[0] == 1 else 16
        step = 2 + width
        return _list(f'0x{u16(p, i):04x} {uuid_text(p[i + 2:i + step])}'
                     for i in range(1, len(p) - step + 1, step))
    if opcode == 0x06:
        return (f', 0x{u16(p, 0):04x}-0x{u16(p, 2):04x}, type {uuid_text(p[4:6])}, '
                f'value {uuid_text(p[6:]) if len(p[6:]) in (2, 16) else p[6:].hex()}')
    if opcode == 0x07:
        return _list(f'0x{u16(p, i):04x}-0x{u16(p, i + 2):04x}' for i in range(0, len(p) - 3, 4))
    if opcode in (0x08, 0x10):
        return f', 0x{u16(p, 0):04x}-0x{u16(p, 2):04x}, type {uuid_text(p[4:])}'
    if opcode == 0x09:
        step = p[0]
        entries = []
        for i in range(1, len(p) - step + 1, step):
            handle, value = u16(p, i), p[i + 2:i + step]
            if step in (7, 21):  # a characteristic declaration: properties, value handle, UUID
                entries.append(f'0x{handle:04x} props 0x{value[0]:02x} value 0x{u16(value, 1):04x} '
                               f'{uuid_text(value[3:])}')
            else:
                entries.append(f'0x{handle:04x} {value.hex()}')
        return _list(entries)
    if opcode == 0x11:
        step = p[0]
        return _list(f'0x{u16(p, i):04x}-0x{u16(p, i + 2):04x} {uuid_text(p[i + 4:i + step])}'
                     for i in range(1, len(p) - step + 1, step))
    if opcode == 0x0A:
        return f', handle 0x{u16(p, 0):04x}'
    if opcode == 0x0C:
        return f', handle 0x{u16(p, 0):04x}, offset {u16(p, 2)}'
    if opcode in (0x0B, 0x0D):
        return f', value {p.hex()}'
    if opcode in (0x12, 0x52, 0x1B, 0x1D):
        return f', handle 0x{u16(p, 0):04x}, value {p[2:].hex()}'
    if opcode in (0x0E, 0x20):
        return _list(f'0x{u16(p, i):04x}' for i in range(0, len(p) - 1, 2))
    if opcode in (0x16, 0x17):
        return f', handle 0x{u16(p, 0):04x}, offset {u16(p, 2)}, value {p[4:].hex()}'
    if opcode == 0x18:
        return f', flags 0x{p[0]:02x}'
    return ''


def extract(data, handle=None, warn=None):
    """The ATT PDUs of a capture: a list of (record number, '>' or '<', PDU bytes)."""
    warn = warn or (lambda message: print(f'btsnoop_to_trace: {message}', file=sys.stderr))
    partial = {}  # (handle, direction) -> (record of the start fragment, bytearray)
    pdus = []
    for number, flags, packet in read_records(data):
        if not packet:
            raise CaptureError(f'record {number}: empty packet')
        direction = '<' if flags & 1 else '>'
        if packet[0] == H4_EVENT:
            if len(packet) >= 7 and packet[1] == EVENT_DISCONNECTION_COMPLETE and packet[3] == 0:
                gone = u16(packet, 4) & 0x0FFF
                for key in [key for key in partial if key[0] == gone]:
                    start, _ = partial.pop(key)
                    warn(f'record {number}: disconnection drops the partial PDU started in '
                         f'record {start}')
            continue
        if packet[0] != H4_ACL:
            continue
        if len(packet) < 5:
            raise CaptureError(f'record {number}: ACL header cut short')
        header, length = struct.unpack_from('<HH', packet, 1)
        payload = packet[5:]
        if len(payload) != length:
            raise CaptureError(f'record {number}: ACL length {length}, {len(payload)} bytes follow')
        connection = header & 0x0FFF
        boundary = (header >> 12) & 0b11
        key = (connection, direction)
        if boundary == 0b01:
            if key not in partial:
                warn(f'record {number}: continuation fragment without a start, dropped')
                continue
            partial[key][1].extend(payload)
        else:
            if key in partial:
                warn(f'record {number}: new start fragment drops the partial PDU started in '
                     f'record {partial[key][0]}')
            partial[key] = (number, bytearray(payload))
        buffer = partial[key][1]
        if len(buffer) < 4:
            continue
        sdu_length, cid = struct.unpack_from('<HH', buffer, 0)
        if len(buffer) < 4 + sdu_length:
            continue
        del partial[key]
        if len(buffer) > 4 + sdu_length:
            warn(f'record {number}: {len(buffer) - 4 - sdu_length} bytes past the L2CAP PDU, dropped')
        if cid != ATT_CID or sdu_length == 0:
            continue
        if handle is not None and connection != handle:
            continue
        pdus.append((number, connection, direction, bytes(buffer[4:4 + sdu_length])))
    for (connection, direction), (start, _) in partial.items():
        warn(f'end of capture drops the partial PDU started in record {start}')
    if not pdus:
        warn('no ATT PDU (L2CAP CID 0x0004) in the capture'
             + (f' on handle 0x{handle:04x}' if handle is not None else ''))
    handles = sorted({pdu[1] for pdu in pdus})
    if len(handles) > 1:
        raise CaptureError('ATT on several connection handles ('
                           + ', '.join(f'0x{h:04x}' for h in handles) + '): pick one with --handle')
    return [(number, direction, pdu) for number, _, direction, pdu in pdus]


def render(pdus, header_lines=()):
    lines = [f'# {line}'.rstrip() for line in header_lines]
    if lines:
        lines.append('')
    for number, direction, pdu in pdus:
        lines.append(f'# frame {number}: {describe(pdu)}')
        lines.append(f'{direction} {pdu.hex()}')
    return '\n'.join(lines) + '\n'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('capture', help='H4 btsnoop file (datalink 1002)')
    parser.add_argument('-o', '--output', help='write the trace here instead of stdout')
    parser.add_argument('--handle', type=lambda text: int(text, 0),
                        help='connection handle to keep (decimal or 0x hex)')
    parser.add_argument('--header', action='append', default=[],
                        help='a header comment line (repeatable)')
    args = parser.parse_args(argv)
    try:
        with open(args.capture, 'rb') as source:
            pdus = extract(source.read(), handle=args.handle)
    except (OSError, CaptureError) as error:
        print(f'btsnoop_to_trace: {args.capture}: {error}', file=sys.stderr)
        return 1
    text = render(pdus, args.header)
    if args.output:
        with open(args.output, 'w') as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
