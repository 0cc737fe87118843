import Bluetooth
import Testing

#if canImport(Glibc)
import Glibc
#endif

@testable import HCI
@testable import Capture

/// A packet to write and expect back.
struct CapturePacketFixture: Sendable, CustomStringConvertible {
    var type: HCIPacketType
    var bytes: [UInt8]
    var direction: CaptureDirection
    var timestamp: Int64
    var index: UInt16 = 0
    var original: Int? = nil
    var description: String { "\(type) \(direction) \(Hex.encode(bytes))" }
}

let capturePackets: [CapturePacketFixture] = [
    // HCI_Reset
    .init(type: .command, bytes: [0x03, 0x0C, 0x00], direction: .sent, timestamp: 1_612_526_400_123_456),
    // Command Complete (Reset, success)
    .init(type: .event, bytes: [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00], direction: .received, timestamp: 1_612_526_400_123_999),
    // ATT Read Request handle 0x0003 on handle 0x0040, then its response
    .init(type: .acl, bytes: [0x40, 0x00, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x0A, 0x03, 0x00], direction: .sent, timestamp: 1_612_526_401_000_000),
    .init(type: .acl, bytes: [0x40, 0x20, 0x06, 0x00, 0x02, 0x00, 0x04, 0x00, 0x0B, 0x41], direction: .received, timestamp: 1_612_526_401_000_500),
    .init(type: .sco, bytes: [0x01, 0x00, 0x02, 0xAA, 0xBB], direction: .received, timestamp: 0),
    .init(type: .iso, bytes: [0x02, 0x00, 0x01, 0x00, 0x55], direction: .sent, timestamp: -1),
    // Truncated: only the header kept of a 27-octet ACL packet.
    .init(type: .acl, bytes: [0x40, 0x20, 0x17, 0x00], direction: .received, timestamp: 1_700_000_000_000_000, original: 27),
]

func captureWrite(_ packets: [CapturePacketFixture], datalink: BTSnoopDatalink) throws -> [UInt8] {
    var writer = try BTSnoopWriter(datalink: datalink)
    for p in packets {
        try writer.append(p.type, p.bytes, direction: p.direction, timestamp: p.timestamp, controllerIndex: p.index, originalLength: p.original)
    }
    return writer.takeBytes()
}

@Suite struct CaptureBTSnoopTests {
    @Test(arguments: [BTSnoopDatalink.h4, .monitor])
    func roundTripIsExact(datalink: BTSnoopDatalink) throws {
        var packets = capturePackets
        if datalink == .monitor {
            for i in packets.indices { packets[i].index = UInt16(i % 3) }
        }
        let file = try captureWrite(packets, datalink: datalink)
        var reader = try CaptureReader(bytes: file)
        #expect(reader.format == .btsnoop(datalink))
        let records = try reader.readAll()
        #expect(records.count == packets.count)
        for (i, (record, packet)) in zip(records, packets).enumerated() {
            #expect(record.number == i + 1)
            #expect(record.kind == .packet(packet.type))
            #expect(record.packetType == packet.type)
            #expect(Array(record.bytes) == packet.bytes)
            #expect(record.direction == packet.direction)
            #expect(record.timestamp == packet.timestamp)
            #expect(record.controllerIndex == packet.index)
            #expect(record.originalLength == packet.original ?? packet.bytes.count)
            #expect(record.isTruncated == (packet.original != nil))
        }
        #expect(reader.damage == nil)
        // Re-encoding what was read gives the same file.
        var copy = try BTSnoopWriter(datalink: datalink)
        for record in records { try copy.append(record) }
        #expect(copy.takeBytes() == file)
    }

    @Test func h4FileBytesMatchTheFormat() throws {
        var writer = try BTSnoopWriter(datalink: .h4)
        try writer.append(.command, [0x03, 0x0C, 0x00], direction: .sent, timestamp: 0)
        try writer.append(.acl, [0x01, 0x20, 0x00, 0x00], direction: .received, timestamp: 1)
        let expected = Hex.decode(
            "6274736e6f6f7000 00000001 000003ea"
                + "00000004 00000004 00000002 00000000 00dcddb30f2f8000 01030c00"
                + "00000005 00000005 00000001 00000000 00dcddb30f2f8001 0201200000")!
        #expect(writer.bytes == expected)
    }

    @Test func monitorFileBytesMatchTheFormat() throws {
        var writer = try BTSnoopWriter(datalink: .monitor)
        try writer.append(.event, [0x0E, 0x01, 0x01], direction: .received, timestamp: 0, controllerIndex: 2)
        try writer.appendNote(.systemNote, payload: Array("hi\0".utf8), timestamp: 0, controllerIndex: 0xFFFF)
        let expected = Hex.decode(
            "6274736e6f6f7000 00000001 000007d1"
                + "00000003 00000003 00020003 00000000 00dcddb30f2f8000 0e0101"
                + "00000003 00000003 ffff000c 00000000 00dcddb30f2f8000 686900")!
        #expect(writer.bytes == expected)
    }

    @Test func monitorNotesRoundTrip() throws {
        var writer = try BTSnoopWriter(datalink: .monitor)
        let newIndex: [UInt8] = [0x00, 0x01, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11] + Array("hci0\0\0\0\0".utf8)
        try writer.appendNote(.newIndex, payload: newIndex, timestamp: 5, controllerIndex: 0)
        try writer.appendNote(.openIndex, payload: [], timestamp: 6, controllerIndex: 0)
        try writer.append(.command, [0x03, 0x0C, 0x00], direction: .unknown, timestamp: 7)
        try writer.appendNote(MonitorOpcode(rawValue: 0x1234), payload: [0x99], timestamp: 8, controllerIndex: 1)
        try writer.appendNote(.userLogging, payload: [0x06, 0x03, 0x61, 0x62, 0x00], timestamp: 9, controllerIndex: 0xFFFF)
        var reader = try CaptureReader(bytes: writer.takeBytes())
        let records = try reader.readAll()
        #expect(records.map(\.kind) == [.note(.newIndex), .note(.openIndex), .packet(.command), .note(MonitorOpcode(rawValue: 0x1234)), .note(.userLogging)])
        #expect(records.map(\.direction) == [.unknown, .unknown, .sent, .unknown, .unknown])
        #expect(Array(records[0].bytes) == newIndex)
        #expect(records[1].bytes.isEmpty)
        #expect(records[3].controllerIndex == 1)
        #expect(records[4].controllerIndex == 0xFFFF)
        #expect(records.map(\.timestamp) == [5, 6, 7, 8, 9])
        #expect(MonitorOpcode(rawValue: 0x1234).description == "monitor opcode 0x1234")
        #expect(MonitorOpcode.systemNote.description == "System Note")
    }

    @Test func recordsShareTheFileBuffer() throws {
        let file = try captureWrite(capturePackets, datalink: .h4)
        let reader = try CaptureReader(bytes: file)
        for record in reader {
            // A slice of the file: its indices are file offsets.
            #expect(Array(file[record.bytes.indices]) == Array(record.bytes))
        }
    }

    /// Every strict prefix of a valid file: records wholly present are returned, then the
    /// damage names the next record and its header's offset (or the header itself fails).
    @Test(arguments: [BTSnoopDatalink.h4, .monitor])
    func truncationAtEveryOffset(datalink: BTSnoopDatalink) throws {
        let packets = Array(capturePackets.prefix(4))
        let file = try captureWrite(packets, datalink: datalink)
        var recordStarts: [Int] = []
        var position = 16
        for p in packets {
            recordStarts.append(position)
            position += 24 + p.bytes.count + (datalink == .h4 ? 1 : 0)
        }
        #expect(position == file.count)
        for length in 0..<file.count {
            let prefix = Array(file.prefix(length))
            guard length >= 16 else {
                #expect(throws: HCIError.self) { try CaptureReader(bytes: prefix) }
                continue
            }
            var reader = try CaptureReader(bytes: prefix)
            var count = 0
            while reader.next() != nil { count += 1 }
            let wholeRecords = recordStarts.enumerated().filter { i, start in
                let end = (i + 1 < recordStarts.count) ? recordStarts[i + 1] : file.count
                return end <= length
            }.count
            #expect(count == wholeRecords, "prefix \(length)")
            if length == 16 || recordStarts.contains(length) {
                #expect(reader.damage == nil, "prefix \(length) ends on a record boundary")
            } else {
                let damage = try #require(reader.damage, "prefix \(length)")
                #expect(damage.recordNumber == wholeRecords + 1)
                #expect(damage.offset == recordStarts[wholeRecords])
                var again = try CaptureReader(bytes: prefix)
                _ = again.readAllIgnoringDamage()
                #expect(throws: HCIError.captureFile(damage.description)) { try again.nextRecord() }
            }
        }
    }

    @Test func damageReasons() throws {
        let header = BTSnoopWriter.header(datalink: .h4)
        func record(original: UInt32, included: UInt32, data: [UInt8]) -> [UInt8] {
            var w = ByteWriter()
            w.writeUInt32BE(original)
            w.writeUInt32BE(included)
            w.writeUInt32BE(0)
            w.writeUInt32BE(0)
            w.writeUInt64BE(0x00dc_ddb3_0f2f_8000)
            w.writeBytes(data)
            return w.bytes
        }
        let good = record(original: 4, included: 4, data: [0x01, 0x03, 0x0C, 0x00])
        let cases: [([UInt8], CaptureDamage.Reason)] = [
            (record(original: 0xFFFF_FFFF, included: 0xFFFF_FFFF, data: []), .lengthTooLarge(field: "included length", value: 0xFFFF_FFFF, maximum: 65_540)),
            (record(original: 65_541, included: 65_541, data: []), .lengthTooLarge(field: "included length", value: 65_541, maximum: 65_540)),
            (record(original: 10, included: 10, data: [0x01, 0x02]), .truncatedData(needed: 10, available: 2)),
            (record(original: 2, included: 4, data: [0x01, 0x03, 0x0C, 0x00]), .includedExceedsOriginal(included: 4, original: 2)),
            (Array(record(original: 4, included: 4, data: []).prefix(23)), .truncatedHeader(needed: 24, available: 23)),
        ]
        for (bad, reason) in cases {
            var reader = try CaptureReader(bytes: header + good + good + bad)
            #expect(reader.next()?.number == 1)
            #expect(reader.next()?.number == 2)
            #expect(reader.next() == nil)
            #expect(reader.damage == CaptureDamage(recordNumber: 3, offset: 16 + 2 * good.count, reason: reason))
            #expect(reader.next() == nil)
        }
    }

    @Test func unknownIndicatorAndEmptyRecordsAreYielded() throws {
        let header = BTSnoopWriter.header(datalink: .h4)
        var w = ByteWriter()
        for (flags, data) in [(UInt32(1), [UInt8]([0x07, 0xAA])), (0, [])] {
            w.writeUInt32BE(UInt32(data.count))
            w.writeUInt32BE(UInt32(data.count))
            w.writeUInt32BE(flags)
            w.writeUInt32BE(0)
            w.writeUInt64BE(0x00dc_ddb3_0f2f_8000)
            w.writeBytes(data)
        }
        var reader = try CaptureReader(bytes: header + w.bytes)
        let records = try reader.readAll()
        #expect(records.map(\.kind) == [.unknown(indicator: 0x07), .empty])
        #expect(records[0].direction == .received && Array(records[0].bytes) == [0xAA])
        #expect(records[1].bytes.isEmpty && records[1].packetType == nil)
        var copy = try BTSnoopWriter(datalink: .h4)
        for record in records { try copy.append(record) }
        #expect(copy.bytes == header + w.bytes)
    }

    @Test func badHeaders() throws {
        let good = BTSnoopWriter.header(datalink: .h4)
        var badMagic = good
        badMagic[7] = 0x21
        var version2 = good
        version2[11] = 2
        let cases: [([UInt8], String)] = [
            ([], "not a capture file: only 0 octet(s), too short for any file header"),
            (Array(good.prefix(12)), "truncated btsnoop file header: 12 of 16 octets"),
            (badMagic, "not a capture file: bad btsnoop identification pattern"),
            (version2, "btsnoop version 2 is not supported (expected 1)"),
            (BTSnoopWriter.header(datalink: .hci), "btsnoop datalink 1001 (HCI un-encapsulated (H1)) is not supported: " + HCIError.supportedCaptures),
            (BTSnoopWriter.header(datalink: .threeWire), "btsnoop datalink 1004 (HCI three-wire UART (H5)) is not supported: " + HCIError.supportedCaptures),
            (BTSnoopWriter.header(datalink: BTSnoopDatalink(rawValue: 7)), "btsnoop datalink 7 (unknown) is not supported: " + HCIError.supportedCaptures),
            (Array("GIF89a..".utf8), "not a capture file: magic 0x47494638 is neither btsnoop, pcap nor pcapng"),
        ]
        for (bytes, message) in cases {
            #expect(throws: HCIError.captureFile(message)) { try CaptureReader(bytes: bytes) }
        }
        #expect(throws: HCIError.self) { try BTSnoopWriter(datalink: .bcsp) }
    }

    @Test func writerRefusesWhatTheFormatCannotHold() throws {
        var h4 = try BTSnoopWriter(datalink: .h4)
        #expect(throws: HCIError.self) { try h4.appendNote(.systemNote, payload: [0x41], timestamp: 0) }
        #expect(throws: HCIError.self) { try h4.append(.acl, [0x01, 0x00, 0x00, 0x00], direction: .unknown, timestamp: 0) }
        #expect(throws: HCIError.self) { try h4.append(.event, [0x0E, 0x00], direction: .received, timestamp: 0, controllerIndex: 1) }
        #expect(throws: HCIError.self) { try h4.append(.acl, [UInt8](repeating: 0, count: 65_540), direction: .sent, timestamp: 0) }
        #expect(throws: HCIError.self) { try h4.append(.acl, [0x01, 0x00, 0x00, 0x00], direction: .sent, timestamp: 0, originalLength: 3) }
        #expect(h4.recordCount == 0 && h4.bytes == BTSnoopWriter.header(datalink: .h4))
        // The largest ACL packet fits exactly.
        try h4.append(.acl, [0xFF, 0x0F, 0xFF, 0xFF] + [UInt8](repeating: 0x5A, count: 65_535), direction: .sent, timestamp: 0)
        var reader = try CaptureReader(bytes: h4.takeBytes())
        #expect(try reader.nextRecord()?.bytes.count == 65_539)
        var monitor = try BTSnoopWriter(datalink: .monitor)
        #expect(throws: HCIError.self) { try monitor.append(.command, [0x03, 0x0C, 0x00], direction: .received, timestamp: 0) }
        #expect(throws: HCIError.self) { try monitor.append(.event, [0x0E, 0x00], direction: .sent, timestamp: 0) }
        #expect(throws: HCIError.self) { try monitor.append(.iso, [0x01, 0x00, 0x00, 0x00], direction: .unknown, timestamp: 0) }
    }

    @Test func fileWriterWritesWhatTheReaderReads() throws {
        let path = "/tmp/capture-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).btsnoop"
        defer { unlink(path) }
        let writer = try BTSnoopFileWriter(path: path, datalink: .monitor)
        try writer.appendNote(.newIndex, payload: [UInt8](repeating: 0, count: 16), timestamp: 1)
        for p in capturePackets where p.original == nil {
            try writer.append(p.type, p.bytes, direction: p.direction, timestamp: p.timestamp)
        }
        #expect(writer.recordCount == 7)
        try writer.close()
        #expect(throws: HCIError.self) { try writer.append(.command, [0x03, 0x0C, 0x00], direction: .sent, timestamp: 0) }
        var reader = try CaptureFile.open(path: path)
        let records = try reader.readAll()
        #expect(records.count == 7)
        #expect(records.dropFirst().map { Array($0.bytes) } == capturePackets.filter { $0.original == nil }.map(\.bytes))
        #expect(throws: HCIError.self) { try CaptureFile.open(path: path + ".missing") }
        #expect(throws: HCIError.self) { try CaptureFile.open(path: "/tmp") }
    }

    @Test func timestampHelpers() {
        #expect(CaptureTime.utcString(0) == "1970-01-01 00:00:00.000000")
        #expect(CaptureTime.utcString(-1) == "1969-12-31 23:59:59.999999")
        #expect(CaptureTime.utcString(1_612_526_400_123_456) == "2021-02-05 12:00:00.123456")
        #expect(CaptureTime.utcString(951_782_400_000_000) == "2000-02-29 00:00:00.000000")
        #expect(CaptureTime.split(-1_500_000) == (seconds: -2, microseconds: 500_000))
        #expect(CaptureTime.unixMicroseconds(btsnoop: 0x00dc_ddb3_0f2f_8000) == 0)
        // btsnoop's "0 AD" offset is 719,540 days before 1970, which lands 12 days before
        // 0000-01-01 on the proleptic Gregorian calendar (the epoch is a Julian-calendar date).
        #expect(CaptureTime.utcString(CaptureTime.unixMicroseconds(btsnoop: 0)) == "-0001-12-20 00:00:00.000000")
        // Wrap-around instead of a trap on absurd values.
        #expect(CaptureTime.btsnoop(unixMicroseconds: CaptureTime.unixMicroseconds(btsnoop: .max)) == .max)
        let a = CaptureRecord(number: 1, timestamp: 1_000_000, direction: .sent, kind: .empty, bytes: [])
        let b = CaptureRecord(number: 2, timestamp: 3_500_000, direction: .sent, kind: .empty, bytes: [])
        #expect(b.seconds(since: a) == 2.5)
        #expect(b.timestampSeconds == 3.5)
        #expect(b.timestampParts == (seconds: 3, microseconds: 500_000))
        #expect(a.timestampUTC == "1970-01-01 00:00:01.000000")
        // The wall clock in microseconds agrees with time(2) in seconds.
        #expect(abs(CaptureTime.now() / 1_000_000 - Int64(time(nil))) <= 2)
    }
}

extension CaptureReader {
    /// Test helper: consumes every record, returns how many.
    mutating func readAllIgnoringDamage() -> Int {
        var count = 0
        while next() != nil { count += 1 }
        return count
    }
}
