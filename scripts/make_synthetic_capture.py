#!/usr/bin/env python3
"""Write Fixtures/synthetic-att-adv.btsnoop: a hand-built H4 btsnoop covering what the shared
real-world captures leave out, so that the Wireshark comparison runs on a fresh clone.

It holds multi-report legacy LE Advertising Report events (ADV_IND, SCAN_RSP, ADV_NONCONN_IND,
ADV_SCAN_IND, ADV_DIRECT_IND), AD edge cases (zero-length padding, a length running past the
end), Directed Advertising Reports, Extended Advertising Reports (several per event, and a
chain of fragments), a connection, and every ATT PDU of Core 5.4 Vol 3 Part F on CID 4 in both
directions (with one PDU split over three ACL fragments and an L2CAP signaling PDU that is not
ATT). The bytes are written from the spec's field layouts by this script, independently of the
Swift encoder under test. Wireshark's decoding is saved beside it with
`python3 ../shared/tools/tshark_att.py --no-ws FILE > FILE.oracle.jsonl`.
"""
import struct
import sys

BTSNOOP_EPOCH_DELTA = 0x00DCDDB30F2F8000
START = 1_764_000_000_000_000  # microseconds since the Unix epoch


class Capture:
    def __init__(self):
        self.records = []
        self.t = START

    def add(self, h4_type, payload, received):
        self.t += 1000
        packet = bytes([h4_type]) + payload
        flags = (1 if received else 0) | (2 if h4_type in (1, 4) else 0)
        self.records.append(struct.pack('>IIIIq', len(packet), len(packet), flags, 0,
                                        self.t + BTSNOOP_EPOCH_DELTA) + packet)

    def command(self, opcode, params):
        self.add(1, struct.pack('<HB', opcode, len(params)) + params, False)

    def event(self, code, params):
        self.add(4, bytes([code, len(params)]) + params, True)

    def le_meta(self, subevent, params):
        self.event(0x3E, bytes([subevent]) + params)

    def acl(self, handle, pb, data, received):
        self.add(2, struct.pack('<HH', handle | (pb << 12), len(data)) + data, received)

    def att(self, pdu, received, handle=0x0040, cid=4):
        self.acl(handle, 0b10 if received else 0b00, struct.pack('<HH', len(pdu), cid) + pdu, received)

    def write(self, path):
        with open(path, 'wb') as out:
            out.write(b'btsnoop\0' + struct.pack('>II', 1, 1002))
            for record in self.records:
                out.write(record)


def addr(text):
    return bytes(reversed(bytes.fromhex(text.replace(':', ''))))


def ad(type_, data):
    return bytes([len(data) + 1, type_]) + data


def legacy_reports(reports):
    # Core 5.4 Vol 4 Part E 7.7.65.2: Num_Reports, then each report in turn.
    out = bytes([len(reports)])
    for event_type, address_type, address, data, rssi in reports:
        out += bytes([event_type, address_type]) + addr(address) + bytes([len(data)]) + data
        out += struct.pack('<b', rssi)
    return out


def extended_reports(reports):
    out = bytes([len(reports)])
    for r in reports:
        out += struct.pack('<HB', r['event_type'], r['address_type']) + addr(r['address'])
        out += bytes([r.get('primary_phy', 1), r.get('secondary_phy', 0), r.get('sid', 0xFF)])
        out += struct.pack('<bbH', r.get('tx_power', 127), r['rssi'], r.get('interval', 0))
        out += bytes([r.get('direct_type', 0)]) + addr(r.get('direct', '00:00:00:00:00:00'))
        out += bytes([len(r['data'])]) + r['data']
    return out


def uuid128(text):
    return bytes(reversed(bytes.fromhex(text.replace('-', ''))))


def main(path):
    c = Capture()
    c.command(0x0C03, b'')                                   # Reset
    c.event(0x0E, bytes([1]) + struct.pack('<H', 0x0C03) + b'\x00')
    c.command(0x200B, bytes([1]) + struct.pack('<HH', 0x10, 0x10) + bytes([0, 0]))  # LE Set Scan Parameters
    c.event(0x0E, bytes([1]) + struct.pack('<H', 0x200B) + b'\x00')
    c.command(0x200C, bytes([1, 0]))                         # LE Set Scan Enable
    c.event(0x0F, bytes([0, 1]) + struct.pack('<H', 0x200C))  # Command Status (unusual but legal shape)

    tag = ad(0x01, b'\x06') + ad(0x03, b'\x0f\x18\x00\xaa') + ad(0x0A, b'\x00')
    rsp = ad(0x09, b'CC2650 SensorTag') + ad(0x12, struct.pack('<HH', 8, 0x320))
    beacon = ad(0xFF, b'\x0d\x00\x01\x02\x03') + ad(0x16, b'\xaa\xfe\x10\x00')
    nus = ad(0x01, b'\x06') + ad(0x07, uuid128('6E400001-B5A3-F393-E0A9-E50E24DCCA9E'))
    c.le_meta(0x02, legacy_reports([
        (0x00, 0, '54:6C:0E:12:34:56', tag, -60),
        (0x04, 0, '54:6C:0E:12:34:56', rsp, -61),
        (0x03, 1, 'D1:22:33:44:55:66', beacon, -80),
    ]))
    c.le_meta(0x02, legacy_reports([
        (0x00, 1, 'E7:01:02:03:04:05', nus, -45),
        (0x02, 1, '7A:01:02:03:04:05', ad(0x19, b'\xc1\x03') + ad(0x08, b'Robot'), -70),
    ]))
    c.le_meta(0x02, legacy_reports([(0x01, 1, 'C0:FF:EE:00:00:01', b'', -50)]))
    # AD edge cases: zero-length padding after a structure; a length running past the end.
    c.le_meta(0x02, legacy_reports([(0x00, 0, '00:1B:DC:00:00:01', ad(0x01, b'\x06') + b'\x00\x00', -55)]))
    c.le_meta(0x02, legacy_reports([(0x00, 0, '00:1B:DC:00:00:02', ad(0x01, b'\x06') + b'\x09\x09ab', -56)]))
    c.le_meta(0x02, legacy_reports([(0x00, 1, '40:00:00:00:00:03', ad(0x09, b'x') + b'\x05\x16\x0f', -57)]))
    # Directed Advertising Report, two reports.
    directed = bytes([2])
    for address, rssi in (('42:11:22:33:44:55', -66), ('43:11:22:33:44:56', -67)):
        directed += bytes([0x01, 1]) + addr(address) + bytes([1]) + addr('C0:11:22:33:44:55')
        directed += struct.pack('<b', rssi)
    c.le_meta(0x0B, directed)
    # Extended reports: two in one event, then a chain of three fragments.
    c.le_meta(0x0D, extended_reports([
        dict(event_type=0x13, address_type=0, address='54:6C:0E:AB:CD:EF', rssi=-59, sid=0xFF, data=tag),
        dict(event_type=0x01, address_type=1, address='F0:01:02:03:04:05', rssi=-72, sid=3,
             primary_phy=1, secondary_phy=2, tx_power=-4, data=nus),
    ]))
    long_data = ad(0xFF, bytes([0x59, 0x00]) + bytes(range(100)))  # 104 octets
    c.le_meta(0x0D, extended_reports([dict(event_type=0x01 | (0b01 << 5), address_type=1,
                                           address='F0:01:02:03:04:06', rssi=-70, sid=4,
                                           secondary_phy=2, data=long_data[:50])]))
    c.le_meta(0x0D, extended_reports([dict(event_type=0x01 | (0b01 << 5), address_type=1,
                                           address='F0:01:02:03:04:06', rssi=-70, sid=4,
                                           secondary_phy=2, data=long_data[50:100])]))
    c.le_meta(0x0D, extended_reports([dict(event_type=0x01, address_type=1,
                                           address='F0:01:02:03:04:06', rssi=-70, sid=4,
                                           secondary_phy=2, data=long_data[100:])]))
    c.command(0x200C, bytes([0, 0]))
    c.event(0x0E, bytes([1]) + struct.pack('<H', 0x200C) + b'\x00')

    # LE Connection Complete, handle 0x0040, central, peer 54:6C:0E:12:34:56 public.
    c.command(0x200D, struct.pack('<HHB', 0x60, 0x60, 0) + bytes([0]) + addr('54:6C:0E:12:34:56')
              + bytes([0]) + struct.pack('<HHHHHH', 24, 40, 0, 400, 0, 0))
    c.event(0x0F, bytes([0, 1]) + struct.pack('<H', 0x200D))
    c.le_meta(0x01, bytes([0]) + struct.pack('<H', 0x0040) + bytes([0, 0]) + addr('54:6C:0E:12:34:56')
              + struct.pack('<HHH', 39, 0, 400) + bytes([0]))

    s, r = False, True
    base = uuid128('F000AA01-0451-4000-B000-000000000000')
    c.att(bytes([0x02]) + struct.pack('<H', 247), s)                       # Exchange MTU Request
    c.att(bytes([0x03]) + struct.pack('<H', 23), r)
    c.att(bytes([0x10]) + struct.pack('<HHH', 1, 0xFFFF, 0x2800), s)        # Read By Group Type
    c.att(bytes([0x11, 6]) + struct.pack('<HHH', 1, 7, 0x1800) + struct.pack('<HHH', 8, 11, 0x1801)
          + struct.pack('<HHH', 12, 15, 0x180F), r)
    c.att(bytes([0x10]) + struct.pack('<HHH', 16, 0xFFFF, 0x2800), s)
    c.att(bytes([0x11, 20]) + struct.pack('<HH', 16, 0xFFFF) + uuid128('F000AA00-0451-4000-B000-000000000000'), r)
    c.att(bytes([0x06]) + struct.pack('<HHH', 1, 0xFFFF, 0x2800) + struct.pack('<H', 0x180F), s)  # Find By Type Value
    c.att(bytes([0x07]) + struct.pack('<HHHH', 12, 15, 40, 44), r)
    c.att(bytes([0x08]) + struct.pack('<HHH', 1, 11, 0x2803), s)            # Read By Type
    c.att(bytes([0x09, 7]) + struct.pack('<HBHH', 2, 0x02, 3, 0x2A00) + struct.pack('<HBHH', 4, 0x02, 5, 0x2A01), r)
    c.att(bytes([0x08]) + struct.pack('<HH', 16, 0xFFFF) + uuid128('00002803-0000-1000-8000-00805F9B34FB'), s)
    c.att(bytes([0x09, 21]) + struct.pack('<HBH', 17, 0x12, 18) + base, r)
    c.att(bytes([0x04]) + struct.pack('<HH', 19, 20), s)                    # Find Information
    c.att(bytes([0x05, 1]) + struct.pack('<HHHH', 19, 0x2902, 20, 0x2901), r)
    c.att(bytes([0x04]) + struct.pack('<HH', 21, 21), s)
    c.att(bytes([0x05, 2]) + struct.pack('<H', 21) + base, r)
    c.att(bytes([0x0A]) + struct.pack('<H', 3), s)                          # Read
    c.att(bytes([0x0B]) + b'CC2650 SensorTag', r)
    c.att(bytes([0x0C]) + struct.pack('<HH', 3, 22), s)                     # Read Blob
    c.att(bytes([0x0D]) + b'Tag', r)
    c.att(bytes([0x0E]) + struct.pack('<HHH', 3, 5, 14), s)                 # Read Multiple
    c.att(bytes([0x0F]) + b'CC\x00\x00\x5c', r)
    c.att(bytes([0x20]) + struct.pack('<HH', 3, 14), s)                     # Read Multiple Variable
    c.att(bytes([0x21]) + struct.pack('<H', 2) + b'CC' + struct.pack('<H', 1) + b'\x5c', r)
    c.att(bytes([0x12]) + struct.pack('<H', 19) + b'\x01\x00', s)           # Write Request
    c.att(bytes([0x13]), r)
    c.att(bytes([0x52]) + struct.pack('<H', 23) + b'F', s)                  # Write Command
    c.att(bytes([0xD2]) + struct.pack('<H', 23) + b'\x01\x02' + struct.pack('<I', 7) + bytes(range(8)), s)
    c.att(bytes([0x16]) + struct.pack('<HH', 30, 0) + b'hello ', s)         # Prepare Write
    c.att(bytes([0x17]) + struct.pack('<HH', 30, 0) + b'hello ', r)
    c.att(bytes([0x16]) + struct.pack('<HH', 30, 6) + b'world', s)
    c.att(bytes([0x17]) + struct.pack('<HH', 30, 6) + b'world', r)
    c.att(bytes([0x18, 0x01]), s)                                           # Execute Write
    c.att(bytes([0x19]), r)
    c.att(bytes([0x18, 0x00]), s)
    c.att(bytes([0x01, 0x18]) + struct.pack('<H', 0) + b'\x0d', r)          # Error: Invalid Attribute Value Length? (0x0d)
    c.att(bytes([0x0A]) + struct.pack('<H', 99), s)
    c.att(bytes([0x01, 0x0A]) + struct.pack('<H', 99) + b'\x01', r)          # Invalid Handle
    c.att(bytes([0x12]) + struct.pack('<H', 18) + b'\x00', s)
    c.att(bytes([0x01, 0x12]) + struct.pack('<H', 18) + b'\x80', r)          # application error
    c.att(bytes([0x12]) + struct.pack('<H', 19) + b'\x02\x00', s)
    c.att(bytes([0x01, 0x12]) + struct.pack('<H', 19) + b'\xfd', r)          # CCCD improperly configured
    c.att(bytes([0x1B]) + struct.pack('<H', 18) + b'\x68\x0b\x40\x0c', r)    # Notification
    c.att(bytes([0x1D]) + struct.pack('<H', 9) + struct.pack('<HH', 1, 0xFFFF), r)  # Indication
    c.att(bytes([0x1E]), s)
    c.att(bytes([0x23]) + struct.pack('<HH', 18, 4) + b'\x68\x0b\x40\x0c' + struct.pack('<HH', 14, 1) + b'\x5b', r)
    c.att(bytes([0x3F, 0x01, 0x02]), s)                                      # unknown opcode
    # A 68-octet Read Response split over three ACL fragments (first 27, then 27, then the rest).
    c.att(bytes([0x0C]) + struct.pack('<HH', 3, 0), s)
    frame = struct.pack('<HH', 69, 4) + bytes([0x0D]) + bytes(range(0x20, 0x20 + 68))
    c.acl(0x0040, 0b10, frame[:27], r)
    c.acl(0x0040, 0b01, frame[27:54], r)
    c.acl(0x0040, 0b01, frame[54:], r)
    # LE signaling on CID 5 (Connection Parameter Update Request): not ATT.
    c.att(bytes([0x12, 0x01, 0x08, 0x00]) + struct.pack('<HHHH', 24, 40, 0, 400), r, cid=5)
    # EATT: an L2CAP Credit Based Connection Request for SPSM 0x0027 opening two channels (our
    # CIDs 0x0040 and 0x0041), the peer's response (its CIDs 0x0080 and 0x0081), then ATT on
    # them: each SDU carried in K-frames (SDU length first), one SDU segmented over two K-frames.
    c.att(bytes([0x17, 0x07]) + struct.pack('<H', 12) + struct.pack('<HHHHHH', 0x0027, 64, 23, 10, 0x0040, 0x0041), s, cid=5)
    c.att(bytes([0x18, 0x07]) + struct.pack('<H', 12) + struct.pack('<HHHHHH', 64, 23, 10, 0, 0x0080, 0x0081), r, cid=5)

    def kframes(sdu, cid, received, mps=23):
        payload = struct.pack('<H', len(sdu)) + sdu
        first = True
        while payload:
            chunk, payload = payload[:mps], payload[mps:]
            c.att(chunk, received, cid=cid)
            first = False

    kframes(bytes([0x0A]) + struct.pack('<H', 3), 0x0080, s)                 # Read Request on EATT
    kframes(bytes([0x0B]) + b'CC2650 SensorTag, EATT bearer one', 0x0040, r)  # 35-octet SDU: two K-frames
    kframes(bytes([0x1B]) + struct.pack('<H', 18) + b'\x68\x0b\x40\x0c', 0x0041, r)
    kframes(bytes([0x52]) + struct.pack('<H', 23) + b'L', 0x0081, s)
    c.event(0x13, bytes([1]) + struct.pack('<HH', 0x0040, 3))               # Number Of Completed Packets
    c.command(0x0406, struct.pack('<H', 0x0040) + b'\x13')                  # Disconnect
    c.event(0x0F, bytes([0, 1]) + struct.pack('<H', 0x0406))
    c.event(0x05, bytes([0]) + struct.pack('<H', 0x0040) + b'\x16')
    c.write(path)


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else 'Fixtures/synthetic-att-adv.btsnoop')
