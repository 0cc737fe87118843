#!/usr/bin/env python3
"""Builds the seed corpora of every fuzz target from the project's fixtures.

Usage: fuzz/make_seeds.py OUTDIR   (run.sh calls it; standard library only)

Sources: Fixtures/*.btsnoop (H4, datalink 1002) and Fixtures/traces/*.trace (ATT SDUs). Each
target gets seeds in the input layout its harness reads (see fuzz/Sources/BLEFuzz).
The pcap and pcapng seeds are the btsnoop records rewritten as link type 201
(H4 with a 4-octet direction header).
"""
import hashlib
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def btsnoop_records(data):
    """(flags, packet) for each record of an H4 btsnoop file."""
    if data[:8] != b"btsnoop\0":
        return []
    offset, records = 16, []
    while offset + 24 <= len(data):
        _, included, flags, _, _ = struct.unpack(">IIIIq", data[offset:offset + 24])
        offset += 24
        records.append((flags, data[offset:offset + included]))
        offset += included
    return records


def trace_sdus(text):
    """(direction, SDU) per line of an ATT trace."""
    sdus = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line[:1] in (">", "<"):
            hexdigits = "".join(c for c in line[1:] if c in "0123456789abcdefABCDEF")
            if hexdigits:
                sdus.append((line[0], bytes.fromhex(hexdigits)))
    return sdus


def l2cap_frames(records):
    """Whole L2CAP frames (cid, payload) by naive per-handle reassembly of ACL packets."""
    partial, frames = {}, []
    for _, packet in records:
        if len(packet) < 5 or packet[0] != 2:
            continue
        handle_flags, length = struct.unpack("<HH", packet[1:5])
        handle, boundary = handle_flags & 0x0FFF, (handle_flags >> 12) & 3
        data = packet[5:5 + length]
        buffer = data if boundary != 1 else partial.get(handle, b"") + data
        partial[handle] = buffer
        if len(buffer) >= 4:
            l2len, cid = struct.unpack("<HH", buffer[:4])
            if len(buffer) >= 4 + l2len:
                frames.append((cid, buffer[4:4 + l2len]))
                partial[handle] = b""
    return frames


def chunk(data):  # one-octet length prefix
    data = data[:255]
    return bytes([len(data)]) + data


def long_chunk(data):  # two-octet little-endian length prefix
    return struct.pack("<H", len(data)) + data


def pcap(records):
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 201)
    for i, (flags, packet) in enumerate(records):
        body = struct.pack(">I", flags & 1) + packet
        out += struct.pack("<IIII", i, 0, len(body), len(body)) + body
    return out


def pcapng(records):
    def block(kind, body):
        body += b"\0" * (-len(body) % 4)
        length = 12 + len(body)
        return struct.pack("<II", kind, length) + body + struct.pack("<I", length)
    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    out += block(1, struct.pack("<HHI", 201, 0, 65535))
    for i, (flags, packet) in enumerate(records):
        body = struct.pack(">I", flags & 1) + packet
        out += block(6, struct.pack("<IIIII", 0, 0, i, len(body), len(body)) + body)
    return out


def main():
    outdir = sys.argv[1]
    seeds = {}

    def add(target, data):
        if data:
            seeds.setdefault(target, set()).add(bytes(data))

    captures = sorted(os.path.join(ROOT, "Fixtures", f) for f in os.listdir(os.path.join(ROOT, "Fixtures")) if f.endswith(".btsnoop"))
    traces = sorted(os.path.join(ROOT, "Fixtures", "traces", f) for f in os.listdir(os.path.join(ROOT, "Fixtures", "traces")) if f.endswith(".trace"))
    all_sdus = []
    for path in traces:
        with open(path) as f:
            all_sdus.append(trace_sdus(f.read()))

    for path in captures:
        data = open(path, "rb").read()
        records = btsnoop_records(data)
        add("capture", data)
        add("capture", pcap(records))
        add("capture", pcapng(records))
        raw = b"".join(packet for _, packet in records)[:4096]
        add("h4", b"".join(bytes([63]) + raw[i:i + 64] for i in range(0, len(raw), 64)))
        add("h4", b"".join(bytes([0]) + raw[i:i + 1] for i in range(0, min(len(raw), 600))))
        acl = b""
        for flags, packet in records:
            if not packet:
                continue
            if packet[0] == 4:
                add("hci-event", packet[1:])  # event header + parameters
                add("hci-event", packet)  # as an H4 packet
                event_code, plen = packet[1], packet[2] if len(packet) > 2 else 0
                if event_code == 0x3E and len(packet) > 3:
                    sub = packet[3]
                    if sub == 0x0D:
                        add("ext-adv", long_chunk(packet[4:]) * 3)
                    if sub in (0x02, 0x0D):
                        # AD data of the first report: legacy data starts at offset 9+1, extended at 24+1
                        params = packet[4:]
                        if sub == 0x02 and len(params) > 10:
                            add("ad", params[10:10 + params[9]])
                        if sub == 0x0D and len(params) > 25:
                            add("ad", params[25:25 + params[24]])
            elif packet[0] == 2 and len(packet) >= 5:
                handle_flags, length = struct.unpack("<HH", packet[1:5])
                boundary = (handle_flags >> 12) & 3
                acl += bytes([(boundary << 4) | (flags & 1)]) + long_chunk(packet[5:5 + length])
        add("acl-l2cap", acl[:4096])
        for cid, payload in l2cap_frames(records):
            if cid == 4:
                add("att-pdu", payload)
            elif cid == 5:
                add("le-signaling", bytes([0, 0]) + long_chunk(payload))
            elif cid == 6:
                add("smp", payload)

    for sdus in all_sdus:
        for direction, sdu in sdus:
            add("att-pdu", sdu)
        # Bearer, client role: our request (op 4) then each peer SDU (op 0).
        script = bytes([100])
        for direction, sdu in sdus:
            script += bytes([4, 1, 0]) if direction == ">" else bytes([0]) + chunk(sdu)
        add("att-bearer-client", script)
        # Bearer, server role: peer SDUs, answered (op 7).
        script = bytes([100])
        for direction, sdu in sdus:
            script += (bytes([0]) + chunk(sdu)) if direction == "<" else (bytes([0x07]) + chunk(sdu))
        add("att-bearer-server", script)
        # Server: the peer's SDUs that are requests.
        add("gatt-server", bytes([3, 1, 224]) + b"".join(long_chunk(s) for d, s in sdus))
        # Client procedures: each procedure against the trace's answers.
        answers = b"".join(bytes([0]) + long_chunk(s) for d, s in sdus if d == "<")
        for selector in range(16):
            add("gatt-client", bytes([selector, 224, 1, 0, 0]) + b"\xff\xff" + answers)

    # SMP: a Pairing Request, a Security Request, a Pairing Failed, an empty PDU.
    add("smp", bytes.fromhex("01030000100707"))
    add("smp", bytes.fromhex("0b01"))
    add("smp", bytes.fromhex("0505"))
    add("smp-codec", bytes.fromhex("01030000100707"))
    add("smp-codec", bytes.fromhex("0c" + "01" * 64))
    add("smp-codec", bytes.fromhex("0701020304050607080910"))
    # The pairing target: our options octet, then length-prefixed peer PDUs (a Pairing Response).
    add("pairing", bytes.fromhex("03" + "07" + "02030009100303"))
    add("pairing", bytes.fromhex("04" + "07" + "0204000d100303" + "41" + "0c" + "00" * 64))
    # The responder: a central's Pairing Request, then its public key.
    add("pairing-responder", bytes.fromhex("03" + "07" + "0103000d100303"))
    add("pairing-responder", bytes.fromhex("03" + "07" + "01030009100303" + "41" + "0c" + "00" * 64))
    # LE signaling: Connection Parameter Update Request, LE Credit Based Connection Request,
    # Disconnection Request, Command Reject, Enhanced Credit Based Connection Request.
    for hex_packet in ("1201080006000c0000008000", "14020a0080004000f700f7000a00", "06030400400040", "0104020000",
                       "170508002700f700f7000a004000"):
        add("le-signaling", bytes([0, 0]) + long_chunk(bytes.fromhex(hex_packet)))
    # Enhanced credit-based channels: configuration (MTU, MPS, credits, server encryption, link
    # encrypted), then steps: the peer opens two channels on SPSM 0x0027 (MTU 100, MPS 64, 5
    # credits, CIDs 0x0050/0x0051); a K-frame on 0x0040 (SDU of 3 octets); we open two; we send.
    ecfc = bytes([0, 0, 4, 1, 0])
    ecfc += bytes([0]) + long_chunk(bytes.fromhex("17010c002700640040000500" + "50005100"))
    ecfc += bytes([1, 0]) + long_chunk(bytes.fromhex("0300" + "0a0300"))
    ecfc += bytes([2, 1])
    ecfc += bytes([3]) + long_chunk(bytes(range(120)))
    add("ecfc", ecfc)
    add("ecfc", bytes([0, 0, 4, 1, 0]) + bytes([0]) + long_chunk(bytes.fromhex("1902060064004000" + "5000")))
    # AD: flags + complete name + 16-bit UUIDs + manufacturer data.
    add("ad", bytes.fromhex("020106") + bytes([5, 9]) + b"Fuzz" + bytes.fromhex("0303 0f18".replace(" ", "")) + bytes.fromhex("05ff4c000215"))
    # CLI: NUL-separated argument vectors.
    for argv in (["services", "--transport", "hci0"], ["read", "--conn", "0x0040", "--handle", "0x0003"],
                 ["--json", "dump", "capture.btsnoop", "--summary"], ["write", "--handle=0x0010", "0102"],
                 ["monitor", "--duration", "5"], ["--help"], ["scan", "--timeout", "10"]):
        add("cli", b"\0".join(a.encode() for a in argv))

    for target, items in seeds.items():
        directory = os.path.join(outdir, target)
        os.makedirs(directory, exist_ok=True)
        for item in items:
            name = hashlib.sha1(item).hexdigest()
            with open(os.path.join(directory, name), "wb") as f:
                f.write(item)
    for target in sorted(seeds):
        print(f"{target}: {len(seeds[target])} seeds")


if __name__ == "__main__":
    main()
