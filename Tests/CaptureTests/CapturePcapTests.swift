import Bluetooth
import Testing

@testable import HCI
@testable import Capture

/// Builds pcap and pcapng files in either byte order.
struct CaptureFileBuilder {
    var bytes: [UInt8] = []
    var bigEndian: Bool

    mutating func u16(_ v: UInt16) { append(UInt64(v), 2) }
    mutating func u32(_ v: UInt32) { append(UInt64(v), 4) }
    mutating func u64(_ v: UInt64) { append(v, 8) }
    mutating func raw(_ data: [UInt8]) { bytes += data }
    private mutating func append(_ v: UInt64, _ n: Int) {
        for i in 0..<n {
            let shift = bigEndian ? (n - 1 - i) * 8 : i * 8
            bytes.append(UInt8(truncatingIfNeeded: v >> shift))
        }
    }

    // Classic pcap.
    mutating func pcapHeader(linkType: UInt32, nanosecond: Bool = false, major: UInt16 = 2) {
        u32(nanosecond ? 0xA1B2_3C4D : 0xA1B2_C3D4)
        u16(major)
        u16(4)
        u32(0)
        u32(0)
        u32(65_535)
        u32(linkType)
    }

    mutating func pcapRecord(seconds: UInt32, fraction: UInt32, data: [UInt8], original: Int? = nil) {
        u32(seconds)
        u32(fraction)
        u32(UInt32(data.count))
        u32(UInt32(original ?? data.count))
        raw(data)
    }

    // pcapng blocks.
    mutating func block(_ type: UInt32, _ body: (inout CaptureFileBuilder) -> Void) {
        var inner = CaptureFileBuilder(bigEndian: bigEndian)
        body(&inner)
        while inner.bytes.count % 4 != 0 { inner.bytes.append(0) }
        let total = UInt32(inner.bytes.count + 12)
        u32(type)
        u32(total)
        raw(inner.bytes)
        u32(total)
    }

    mutating func sectionHeader() {
        block(0x0A0D_0D0A) { b in
            b.u32(0x1A2B_3C4D)
            b.u16(1)
            b.u16(0)
            b.u64(.max)  // section length unknown
        }
    }

    mutating func interface(linkType: UInt16, snapLength: UInt32 = 0, options: [(UInt16, [UInt8])] = []) {
        block(1) { b in
            b.u16(linkType)
            b.u16(0)
            b.u32(snapLength)
            for (code, value) in options {
                b.u16(code)
                b.u16(UInt16(value.count))
                b.raw(value)
                while b.bytes.count % 4 != 0 { b.bytes.append(0) }
            }
            if !options.isEmpty { b.u32(0) }  // opt_endofopt
        }
    }

    mutating func enhancedPacket(interface: UInt32, ticks: UInt64, data: [UInt8], original: Int? = nil) {
        block(6) { b in
            b.u32(interface)
            b.u32(UInt32(ticks >> 32))
            b.u32(UInt32(truncatingIfNeeded: ticks))
            b.u32(UInt32(data.count))
            b.u32(UInt32(original ?? data.count))
            b.raw(data)
        }
    }

    mutating func simplePacket(data: [UInt8], original: Int? = nil) {
        block(3) { b in
            b.u32(UInt32(original ?? data.count))
            b.raw(data)
        }
    }

    mutating func obsoletePacket(interface: UInt16, ticks: UInt64, data: [UInt8]) {
        block(2) { b in
            b.u16(interface)
            b.u16(0)
            b.u32(UInt32(ticks >> 32))
            b.u32(UInt32(truncatingIfNeeded: ticks))
            b.u32(UInt32(data.count))
            b.u32(UInt32(data.count))
            b.raw(data)
        }
    }
}

/// H4 with the 4-octet big-endian direction pseudo-header of link type 201.
func capturePHDR(_ received: Bool, _ type: HCIPacketType, _ packet: [UInt8]) -> [UInt8] {
    [0, 0, 0, received ? 1 : 0] + H4.frame(type: type, packet: packet)
}

let captureReset: [UInt8] = [0x03, 0x0C, 0x00]
let captureResetComplete: [UInt8] = [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]
let captureACL: [UInt8] = [0x40, 0x20, 0x05, 0x00, 0x01, 0x00, 0x04, 0x00, 0x13]

@Suite struct CapturePcapTests {
    @Test(arguments: [(false, false), (true, false), (false, true), (true, true)])
    func pcapBothByteOrdersAndResolutions(bigEndian: Bool, nanosecond: Bool) throws {
        var b = CaptureFileBuilder(bigEndian: bigEndian)
        b.pcapHeader(linkType: 201, nanosecond: nanosecond)
        let scale: UInt32 = nanosecond ? 1000 : 1
        b.pcapRecord(seconds: 1_612_526_400, fraction: 123_456 * scale, data: capturePHDR(false, .command, captureReset))
        b.pcapRecord(seconds: 1_612_526_400, fraction: 999_999 * scale, data: capturePHDR(true, .event, captureResetComplete))
        b.pcapRecord(seconds: 1_612_526_401, fraction: 0, data: capturePHDR(true, .acl, Array(captureACL.prefix(4))), original: 4 + 1 + captureACL.count)
        var reader = try CaptureReader(bytes: b.bytes)
        #expect(reader.format == .pcap(.bluetoothHCIH4WithPHDR, nanosecond: nanosecond, bigEndian: bigEndian))
        let records = try reader.readAll()
        #expect(records.map(\.number) == [1, 2, 3])
        #expect(records.map(\.kind) == [.packet(.command), .packet(.event), .packet(.acl)])
        #expect(records.map(\.direction) == [.sent, .received, .received])
        #expect(records.map { Array($0.bytes) } == [captureReset, captureResetComplete, Array(captureACL.prefix(4))])
        #expect(records.map(\.timestamp) == [1_612_526_400_123_456, 1_612_526_400_999_999, 1_612_526_401_000_000])
        #expect(records[2].isTruncated && records[2].originalLength == captureACL.count)
        #expect(!records[0].isTruncated)
    }

    @Test func pcapH4WithoutDirectionAndLinuxMonitor() throws {
        var h4 = CaptureFileBuilder(bigEndian: false)
        h4.pcapHeader(linkType: 187)
        h4.pcapRecord(seconds: 1, fraction: 2, data: H4.frame(type: .event, packet: captureResetComplete))
        h4.pcapRecord(seconds: 1, fraction: 3, data: [])
        var reader = try CaptureReader(bytes: h4.bytes)
        var records = try reader.readAll()
        #expect(records.map(\.kind) == [.packet(.event), .empty])
        #expect(records.map(\.direction) == [.unknown, .unknown])
        #expect(records[0].timestamp == 1_000_002)

        var monitor = CaptureFileBuilder(bigEndian: true)
        monitor.pcapHeader(linkType: 254)
        monitor.pcapRecord(seconds: 0, fraction: 0, data: [0x00, 0x01, 0x00, 0x05] + captureACL)
        monitor.pcapRecord(seconds: 0, fraction: 0, data: [0xFF, 0xFF, 0x00, 0x0C] + Array("note\0".utf8))
        monitor.pcapRecord(seconds: 0, fraction: 0, data: [0x00, 0x00])
        reader = try CaptureReader(bytes: monitor.bytes)
        records = try reader.readAll()
        #expect(records.map(\.kind) == [.packet(.acl), .note(.systemNote), .empty])
        #expect(records.map(\.direction) == [.received, .unknown, .unknown])
        #expect(records.map(\.controllerIndex) == [1, 0xFFFF, 0])
        #expect(Array(records[0].bytes) == captureACL)
        #expect(String(decoding: records[1].bytes, as: UTF8.self) == "note\0")
    }

    @Test func pcapPseudoHeaderShorterThanFourOctetsIsEmpty() throws {
        var b = CaptureFileBuilder(bigEndian: false)
        b.pcapHeader(linkType: 201)
        b.pcapRecord(seconds: 0, fraction: 0, data: [0, 0])
        b.pcapRecord(seconds: 0, fraction: 0, data: [0, 0, 0, 1])
        b.pcapRecord(seconds: 0, fraction: 0, data: [0, 0, 0, 1, 0x09, 0x77])
        var reader = try CaptureReader(bytes: b.bytes)
        let records = try reader.readAll()
        #expect(records.map(\.kind) == [.empty, .empty, .unknown(indicator: 0x09)])
        #expect(records[1].direction == .received)
        #expect(Array(records[2].bytes) == [0x77])
    }

    @Test(arguments: [
        (UInt32(256) as UInt32, "link type 256 (BLUETOOTH_LE_LL_WITH_PHDR) is not supported: " + HCIError.supportedCaptures
            + "; this is an over-the-air sniffer capture of the link layer, not HCI"),
        (UInt32(1) as UInt32, "link type 1 (ETHERNET) is not supported: " + HCIError.supportedCaptures),
        (UInt32(9999) as UInt32, "link type 9999 is not supported: " + HCIError.supportedCaptures),
    ] as [(UInt32, String)])
    func unsupportedLinkTypes(linkType: UInt32, message: String) throws {
        var pcap = CaptureFileBuilder(bigEndian: false)
        pcap.pcapHeader(linkType: linkType)
        #expect(throws: HCIError.captureFile(message)) { try CaptureReader(bytes: pcap.bytes) }
        var pcapng = CaptureFileBuilder(bigEndian: true)
        pcapng.sectionHeader()
        pcapng.interface(linkType: UInt16(linkType))
        pcapng.enhancedPacket(interface: 0, ticks: 0, data: [1, 2, 3])
        #expect(throws: HCIError.captureFile(message)) { try CaptureReader(bytes: pcapng.bytes) }
    }

    @Test func pcapHeaderErrors() throws {
        var b = CaptureFileBuilder(bigEndian: false)
        b.pcapHeader(linkType: 201, major: 3)
        #expect(throws: HCIError.captureFile("pcap version 3.4 is not supported (expected 2.x)")) { try CaptureReader(bytes: b.bytes) }
        #expect(throws: HCIError.captureFile("truncated pcap file header: 20 of 24 octets")) {
            try CaptureReader(bytes: Array(b.bytes.prefix(20)))
        }
    }

    @Test func pcapTruncationAtEveryOffset() throws {
        var b = CaptureFileBuilder(bigEndian: true)
        b.pcapHeader(linkType: 201)
        var starts: [Int] = []
        for data in [capturePHDR(false, .command, captureReset), capturePHDR(true, .acl, captureACL)] {
            starts.append(b.bytes.count)
            b.pcapRecord(seconds: 7, fraction: 0, data: data)
        }
        starts.append(b.bytes.count)
        for length in 24..<b.bytes.count {
            var reader = try CaptureReader(bytes: Array(b.bytes.prefix(length)))
            let whole = starts.filter { $0 <= length }.count - 1
            #expect(reader.readAllIgnoringDamage() == whole)
            if starts.contains(length) {
                #expect(reader.damage == nil)
            } else {
                #expect(reader.damage?.recordNumber == whole + 1)
                #expect(reader.damage?.offset == starts[whole])
            }
        }
    }

    @Test func pcapOverLargeCapturedLengthIsDamage() throws {
        var b = CaptureFileBuilder(bigEndian: false)
        b.pcapHeader(linkType: 201)
        b.pcapRecord(seconds: 0, fraction: 0, data: capturePHDR(false, .command, captureReset))
        b.u32(0)
        b.u32(0)
        b.u32(0x7FFF_FFFF)
        b.u32(0x7FFF_FFFF)
        var reader = try CaptureReader(bytes: b.bytes)
        #expect(reader.readAllIgnoringDamage() == 1)
        #expect(reader.damage == CaptureDamage(recordNumber: 2, offset: 24 + 16 + 8, reason: .lengthTooLarge(field: "captured length", value: 0x7FFF_FFFF, maximum: 65_544)))
    }

    @Test(arguments: [false, true])
    func pcapngBlocksResolutionsAndSections(bigEndian: Bool) throws {
        var b = CaptureFileBuilder(bigEndian: bigEndian)
        b.sectionHeader()
        b.interface(linkType: 201, options: [(2, Array("hci0".utf8)), (9, [9])])  // if_name, nanoseconds
        b.interface(linkType: 1)  // Ethernet: packets skipped
        b.interface(linkType: 201, options: [(9, [0x80 | 10]), (14, [0, 0, 0, 0, 0, 0, 0, 100].maybeReversed(!bigEndian))])  // 2^-10 s, +100 s
        b.enhancedPacket(interface: 0, ticks: 1_612_526_400_123_456_789, data: capturePHDR(false, .command, captureReset))
        b.block(0x0000_0BAD) { $0.raw([1, 2, 3, 4, 5]) }  // custom block: skipped
        b.enhancedPacket(interface: 1, ticks: 0, data: [0xFF, 0xFF])
        b.enhancedPacket(interface: 2, ticks: 1024 * 5 + 512, data: capturePHDR(true, .event, captureResetComplete))
        b.simplePacket(data: capturePHDR(true, .acl, captureACL))
        b.obsoletePacket(interface: 0, ticks: 2_000_000_000, data: capturePHDR(false, .acl, captureACL))
        // A second section in the other byte order resets the interfaces.
        var other = CaptureFileBuilder(bigEndian: !bigEndian)
        other.sectionHeader()
        other.interface(linkType: 187)
        other.enhancedPacket(interface: 0, ticks: 42, data: H4.frame(type: .iso, packet: [0x01, 0x00, 0x00, 0x00]))
        b.raw(other.bytes)

        var reader = try CaptureReader(bytes: b.bytes)
        #expect(reader.format == .pcapng)
        let records = try reader.readAll()
        #expect(records.map(\.number) == [1, 3, 4, 5, 6])
        #expect(reader.skippedCount == 1 && reader.recordCount == 6)
        #expect(records.map(\.kind) == [.packet(.command), .packet(.event), .packet(.acl), .packet(.acl), .packet(.iso)])
        #expect(records.map(\.direction) == [.sent, .received, .received, .sent, .unknown])
        #expect(records.map(\.timestamp) == [1_612_526_400_123_456, 100_000_000 + 5_500_000, 0, 2_000_000, 42])
        #expect(Array(records[2].bytes) == captureACL)
        #expect(Array(records[4].bytes) == [0x01, 0x00, 0x00, 0x00])
    }

    @Test func pcapngSimplePacketHonoursSnapLength() throws {
        var b = CaptureFileBuilder(bigEndian: false)
        b.sectionHeader()
        b.interface(linkType: 201, snapLength: 8)
        b.simplePacket(data: Array(capturePHDR(true, .acl, captureACL).prefix(8)), original: 4 + 1 + captureACL.count)
        var reader = try CaptureReader(bytes: b.bytes)
        let record = try #require(try reader.nextRecord())
        #expect(Array(record.bytes) == Array(captureACL.prefix(3)))
        #expect(record.isTruncated && record.originalLength == captureACL.count)
    }

    @Test func pcapngDamage() throws {
        var head = CaptureFileBuilder(bigEndian: false)
        head.sectionHeader()
        head.interface(linkType: 201)
        head.enhancedPacket(interface: 0, ticks: 0, data: capturePHDR(false, .command, captureReset))
        let goodLength = head.bytes.count
        func damaged(_ build: (inout CaptureFileBuilder) -> Void) throws -> CaptureDamage? {
            var b = head
            build(&b)
            var reader = try CaptureReader(bytes: b.bytes)
            #expect(reader.next()?.number == 1)
            #expect(reader.next() == nil)
            return reader.damage
        }
        var epb = CaptureFileBuilder(bigEndian: false)
        epb.enhancedPacket(interface: 0, ticks: 0, data: capturePHDR(false, .command, captureReset))
        let cases: [((inout CaptureFileBuilder) -> Void, CaptureDamage.Reason)] = [
            ({ $0.raw(Array(epb.bytes.prefix(10))) }, .truncatedHeader(needed: 12, available: 10)),
            ({ $0.raw(Array(epb.bytes.prefix(30))) }, .truncatedData(needed: epb.bytes.count, available: 30)),
            ({ var e = epb.bytes; e[e.count - 4] ^= 4; $0.raw(e) }, .invalidBlock("block trailing length \(epb.bytes.count ^ 4) differs from its total length \(epb.bytes.count)")),
            ({ $0.u32(6); $0.u32(14); $0.u32(0); $0.u32(0) }, .invalidBlock("block total length 14 is not a multiple of 4 of at least 12")),
            ({ $0.enhancedPacket(interface: 3, ticks: 0, data: []) }, .invalidBlock("packet on interface 3, but the section describes 1")),
            ({ var e = epb.bytes; e[20] = 0xFF; $0.raw(e) }, .invalidBlock("captured length 255 overruns its \(epb.bytes.count)-octet block")),
            ({ $0.enhancedPacket(interface: 0, ticks: 0, data: [0, 0, 0, 0, 1, 3, 0x0C, 0], original: 2) }, .includedExceedsOriginal(included: 8, original: 2)),
            ({ $0.interface(linkType: 201, options: [(9, [6, 6])]) }, .invalidBlock("if_tsresol option of 2 octets (expected 1)")),
            ({ $0.block(0x0A0D_0D0A) { s in s.u32(0x1122_3344); s.u32(0) } }, .invalidBlock("section header block has byte-order magic 0x44332211")),
            ({ $0.block(0x0A0D_0D0A) { s in s.u32(0x1A2B_3C4D); s.u16(2); s.u16(0); s.u64(0) } }, .invalidBlock("pcapng version 2.0 is not supported (expected 1.x)")),
        ]
        for (build, reason) in cases {
            let damage = try damaged(build)
            #expect(damage == CaptureDamage(recordNumber: 2, offset: goodLength, reason: reason))
        }
    }

    @Test func pcapngBrokenFirstSectionHeaderFailsToOpen() throws {
        var b = CaptureFileBuilder(bigEndian: false)
        b.sectionHeader()
        var bad = b.bytes
        bad[8] = 0x00  // byte-order magic
        #expect(throws: HCIError.captureFile("capture damaged at record 1 (file offset 0): section header block has byte-order magic 0x3c2b1a")) {
            try CaptureReader(bytes: bad)
        }
        #expect(throws: HCIError.captureFile("capture damaged at record 1 (file offset 0): file ends inside a record (needed 28 octets of packet data, 20 left)")) {
            try CaptureReader(bytes: Array(b.bytes.prefix(20)))
        }
    }

    @Test func pcapngWithoutInterfacesHasNoRecords() throws {
        var b = CaptureFileBuilder(bigEndian: false)
        b.sectionHeader()
        var reader = try CaptureReader(bytes: b.bytes)
        #expect(try reader.nextRecord() == nil)
        #expect(reader.damage == nil)
    }

    @Test func pcapngTimestampScales() {
        var interface = PcapNGInterface(linkType: .bluetoothHCIH4WithPHDR, snapLength: 0)
        #expect(interface.microseconds(1_234) == 1_234)
        interface.setResolution(3)
        #expect(interface.microseconds(1_234) == 1_234_000)
        interface.setResolution(9)
        #expect(interface.microseconds(1_234_567) == 1_234)
        interface.setResolution(0x80 | 20)
        #expect(interface.microseconds(1 << 20) == 1_000_000)
        interface.setResolution(0x80 | 0x7F)
        #expect(interface.microseconds(.max) == 0)
        interface.setResolution(0x7F)
        #expect(interface.microseconds(.max) == 0)
        interface.setResolution(0)
        #expect(interface.microseconds(.max) == Int64(bitPattern: UInt64.max &* 1_000_000))
    }
}

extension Array where Element == UInt8 {
    func maybeReversed(_ reverse: Bool) -> [UInt8] { reverse ? Array(reversed()) : self }
}
