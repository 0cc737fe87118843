import Capture
import ATT
import Bluetooth
import HCI

/// SplitMix64: a small seeded generator, so every capture is the same for a given seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }
    }
}

/// Writes a realistic H4 btsnoop capture: ≈40% legacy advertising report events (1–3 reports
/// each, varied AD), ≈10% extended advertising report events, ≈40% ACL/ATT on connection
/// handle 0x0000 (mostly notifications, some fragmented; discovery, reads, writes, errors,
/// MTU exchange, indications), ≈10% HCI commands and their Command Complete / Command Status,
/// plus Number Of Completed Packets for the ACL packets we sent.
///
/// The traffic is on handle 0x0000 because btmon 5.66 crashes decoding characteristic
/// discovery on a connection it did not see created; it does not track handle 0.
struct CaptureGenerator {
    /// LE default ACL payload: longer ATT PDUs are fragmented over several ACL packets.
    static let aclPayloadLength = 27
    static let connectionHandle: UInt16 = 0x0000

    private var random: SeededGenerator
    private var writer: BTSnoopWriter
    private var timestamp: Int64 = 1_767_225_600_000_000  // 2026-01-01 00:00:00 UTC
    private(set) var records = 0
    private var advertisers: [(BluetoothAddress, LEAddressType, [UInt8], [UInt8])] = []
    private var unackedACL = 0
    /// Position in the scripted GATT conversation (discovery, reads, writes, ...).
    private var conversationStep = 0
    private var notificationCounter: UInt16 = 0

    init(seed: UInt64) throws(HCIError) {
        random = SeededGenerator(seed: seed)
        writer = try BTSnoopWriter(datalink: .h4)
        for index in 0..<1000 { advertisers.append(makeAdvertiser(index)) }
    }

    /// Generates `count` records and returns the btsnoop bytes.
    mutating func generate(records count: Int, chunk: (inout [UInt8]) throws -> Void) throws {
        while records < count {
            // Near the end only single-record items, so the file has exactly `count` records.
            // Weights in items; an ATT item averages ≈1.5 records (responses, fragments) and a
            // command item ≈1.7, so records come out ≈40/10/40/10.
            let roll = count - records < 8 ? 0 : random.below(83)
            switch roll {
            case 0..<40: try legacyAdvertising()
            case 40..<50: try extendedAdvertising()
            case 50..<77: try att(limit: count - records)
            default: try commandAndCompletion(limit: count - records)
            }
            if writer.bytes.count > 1 << 20 {
                var bytes = writer.takeBytes()
                try chunk(&bytes)
            }
        }
        var bytes = writer.takeBytes()
        try chunk(&bytes)
    }

    // MARK: advertising

    private mutating func makeAdvertiser(_ index: Int) -> (BluetoothAddress, LEAddressType, [UInt8], [UInt8]) {
        let raw = random.next() & 0xFFFF_FFFF_FFFF
        let addressType: LEAddressType = index % 3 == 0 ? .public : .random
        let address = BluetoothAddress(rawValue: addressType == .random ? raw | 0xC000_0000_0000 : raw)!
        var ad: [UInt8] = [0x02, 0x01, 0x06]  // Flags: LE General Discoverable, BR/EDR not supported
        switch index % 6 {
        case 0:  // Complete Local Name + 16-bit service UUIDs
            let name = Array("Sensor \(index)".utf8)
            ad += [UInt8(name.count + 1), 0x09] + name
            ad += [0x05, 0x03, 0x0F, 0x18, 0x0A, 0x18]
        case 1:  // Manufacturer Specific Data (Apple iBeacon-like)
            ad += [0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15] + random.bytes(20) + [0xC5]
        case 2:  // 128-bit service UUID + TX power
            ad += [0x11, 0x07] + random.bytes(16) + [0x02, 0x0A, 0xF4]
        case 3:  // Service Data (16-bit UUID) + Shortened Local Name
            ad += [0x07, 0x16, 0xAA, 0xFE] + random.bytes(4)
            ad += [0x05, 0x08] + Array("Tag\(index % 10)".utf8)
        case 4:  // Appearance + Incomplete List of 16-bit UUIDs
            ad += [0x03, 0x19, 0x40, 0x02, 0x03, 0x02, 0x0D, 0x18]
        default:  // Manufacturer data, short
            ad += [0x09, 0xFF, 0x59, 0x00] + random.bytes(6)
        }
        let name = Array("Device-\(index)".utf8)
        let scanResponse: [UInt8] = [UInt8(name.count + 1), 0x09] + name + [0x02, 0x0A, 0x00]
        return (address, addressType, Array(ad.prefix(31)), Array(scanResponse.prefix(31)))
    }

    private mutating func legacyAdvertising() throws {
        let count = [1, 1, 1, 2, 2, 3][random.below(6)]
        var reports: [LEAdvertisingReport] = []
        for _ in 0..<count {
            let (address, addressType, ad, scanResponse) = advertisers[random.below(advertisers.count)]
            let kind = random.below(10)
            let eventType: LEAdvertisingEventType
            var data = ad
            switch kind {
            case 0..<5: eventType = .advInd
            case 5: eventType = .advScanInd
            case 6, 7: eventType = .advNonconnInd
            case 8: eventType = .advDirectInd; data = []
            default: eventType = .scanRsp; data = scanResponse
            }
            reports.append(
                LEAdvertisingReport(
                    eventType: eventType, addressType: addressType, address: address, data: data,
                    rssi: Int8(-30 - random.below(70))))
        }
        var packet = ByteWriter(capacity: 64)
        packet.writeUInt8(0x3E)
        packet.writeUInt8(0)
        try LEMetaEvent.advertisingReport(LEAdvertisingReportEvent(reports: reports)).write(to: &packet)
        try event(packet)
    }

    private mutating func extendedAdvertising() throws {
        let count = random.below(4) == 0 ? 2 : 1
        var reports: [LEExtendedAdvertisingReport] = []
        for _ in 0..<count {
            let (address, addressType, ad, _) = advertisers[random.below(advertisers.count)]
            if random.below(3) == 0 {
                reports.append(
                    LEExtendedAdvertisingReport(
                        eventType: .legacyAdvInd, addressType: addressType, address: address,
                        rssi: Int8(-40 - random.below(60)), data: ad))
            } else {
                // An extended advertisement on LE 1M / 2M, sometimes with more than 31 octets.
                var data = ad
                if random.below(2) == 0 {
                    let extra = random.bytes(20 + random.below(40))
                    data += [UInt8(extra.count + 3), 0xFF, 0x31, 0x01] + extra
                }
                let status: UInt16 = random.below(10) == 0 ? 0x20 : 0  // some "incomplete, more data"
                reports.append(
                    LEExtendedAdvertisingReport(
                        eventType: LEExtendedAdvertisingEventType(rawValue: 0x01 | status), addressType: addressType,
                        address: address, primaryPHY: .le1M, secondaryPHY: random.below(2) == 0 ? .le2M : .le1M,
                        advertisingSID: UInt8(random.below(16)), txPower: Int8(-random.below(20)),
                        rssi: Int8(-40 - random.below(60)), periodicAdvertisingInterval: 0, data: data))
            }
        }
        var packet = ByteWriter(capacity: 128)
        packet.writeUInt8(0x3E)
        packet.writeUInt8(0)
        try LEMetaEvent.extendedAdvertisingReport(LEExtendedAdvertisingReportEvent(reports: reports)).write(to: &packet)
        try event(packet)
    }

    // MARK: ATT

    /// Notification handles of a SensorTag-like database.
    private static let notifyHandles: [UInt16] = [0x0021, 0x0029, 0x0031, 0x0039, 0x0041, 0x0049, 0x0061]

    private mutating func att(limit: Int) throws {
        if random.below(100) < 72 {
            notificationCounter &+= 1
            let handle = Self.notifyHandles[random.below(Self.notifyHandles.count)]
            // Mostly sensor-sized values; 1 in 8 longer than one ACL packet can carry.
            let length = random.below(8) == 0 ? 30 + random.below(90) : 2 + random.below(16)
            var value = random.bytes(length)
            value[0] = UInt8(truncatingIfNeeded: notificationCounter)
            try sendATT(.handleValueNotification(HandleValueNotification(handle: handle, value: value)), received: true)
            return
        }
        try conversation(limit: limit)
    }

    /// One request/response (or command) of a GATT conversation, in an order a client follows.
    private mutating func conversation(limit: Int) throws {
        let step = conversationStep % 16
        conversationStep += 1
        switch step {
        case 0:
            try sendATT(.exchangeMTURequest(ExchangeMTURequest(clientRxMTU: 517)), received: false)
            try sendATT(.exchangeMTUResponse(ExchangeMTUResponse(serverRxMTU: 247)), received: true)
        case 1:
            try sendATT(
                .readByGroupTypeRequest(
                    ReadByGroupTypeRequest(startingHandle: 1, endingHandle: 0xFFFF, attributeGroupType: .bit16(0x2800))),
                received: false)
            try sendATT(
                .readByGroupTypeResponse(
                    ReadByGroupTypeResponse(entries: [
                        .init(handle: 0x0001, endGroupHandle: 0x0007, value: [0x00, 0x18]),
                        .init(handle: 0x0008, endGroupHandle: 0x000B, value: [0x01, 0x18]),
                        .init(handle: 0x000C, endGroupHandle: 0x001E, value: [0x0A, 0x18]),
                        .init(handle: 0x001F, endGroupHandle: 0x0026, value: [0x0F, 0x18]),
                    ])), received: true)
        case 2:
            try sendATT(
                .readByGroupTypeRequest(
                    ReadByGroupTypeRequest(startingHandle: 0x0027, endingHandle: 0xFFFF, attributeGroupType: .bit16(0x2800))),
                received: false)
            try sendATT(
                .readByGroupTypeResponse(
                    ReadByGroupTypeResponse(entries: [
                        .init(handle: 0x0027, endGroupHandle: 0x002F, value: random.bytes(16)),
                        .init(handle: 0x0030, endGroupHandle: 0xFFFF, value: random.bytes(16)),
                    ])), received: true)
        case 3:
            try sendATT(
                .readByTypeRequest(
                    ReadByTypeRequest(startingHandle: 0x0001, endingHandle: 0x0007, attributeType: .bit16(0x2803))),
                received: false)
            try sendATT(
                .readByTypeResponse(
                    ReadByTypeResponse(entries: [
                        .init(handle: 0x0002, value: [0x02, 0x03, 0x00, 0x00, 0x2A]),
                        .init(handle: 0x0004, value: [0x02, 0x05, 0x00, 0x01, 0x2A]),
                        .init(handle: 0x0006, value: [0x02, 0x07, 0x00, 0x04, 0x2A]),
                    ])), received: true)
        case 4:
            try sendATT(
                .readByTypeRequest(
                    ReadByTypeRequest(startingHandle: 0x0027, endingHandle: 0x002F, attributeType: .bit16(0x2803))),
                received: false)
            try sendATT(
                .readByTypeResponse(
                    ReadByTypeResponse(entries: [.init(handle: 0x0028, value: [0x12, 0x29, 0x00] + random.bytes(16))])),
                received: true)
        case 5:
            try sendATT(
                .readByTypeRequest(
                    ReadByTypeRequest(startingHandle: 0x002A, endingHandle: 0x002F, attributeType: .bit16(0x2803))),
                received: false)
            try sendATT(
                .errorResponse(
                    ErrorResponse(requestOpcode: .readByTypeRequest, handle: 0x002A, errorCode: .attributeNotFound)),
                received: true)
        case 6:
            try sendATT(.findInformationRequest(FindInformationRequest(startingHandle: 0x002A, endingHandle: 0x002F)), received: false)
            try sendATT(
                .findInformationResponse(
                    FindInformationResponse(entries: [
                        .init(handle: 0x002A, uuid: .bit16(0x2902)), .init(handle: 0x002B, uuid: .bit16(0x2901)),
                    ])), received: true)
        case 7:
            try sendATT(.readRequest(ReadRequest(handle: 0x0003)), received: false)
            try sendATT(.readResponse(ReadResponse(value: Array("SensorTag 2.0".utf8))), received: true)
        case 8:
            try sendATT(.readRequest(ReadRequest(handle: 0x0025)), received: false)
            try sendATT(
                .errorResponse(ErrorResponse(requestOpcode: .readRequest, handle: 0x0025, errorCode: .readNotPermitted)),
                received: true)
        case 9:
            try sendATT(.writeRequest(WriteRequest(handle: 0x002A, value: [0x01, 0x00])), received: false)
            try sendATT(.writeResponse(WriteResponse()), received: true)
        case 10:
            try sendATT(.writeCommand(WriteCommand(handle: 0x0024, value: random.bytes(1 + random.below(19)))), received: false)
        case 11:
            try sendATT(.readBlobRequest(ReadBlobRequest(handle: 0x0003, offset: 22)), received: false)
            try sendATT(.readBlobResponse(ReadBlobResponse(value: random.bytes(40))), received: true)
        case 12:
            try sendATT(
                .findByTypeValueRequest(
                    FindByTypeValueRequest(
                        startingHandle: 1, endingHandle: 0xFFFF, attributeType: 0x2800, attributeValue: [0x0F, 0x18])),
                received: false)
            try sendATT(
                .findByTypeValueResponse(FindByTypeValueResponse(entries: [.init(foundAttributeHandle: 0x001F, groupEndHandle: 0x0026)])),
                received: true)
        case 13:
            try sendATT(.handleValueIndication(HandleValueIndication(handle: 0x0009, value: [0x01, 0x00, 0xFF, 0xFF])), received: true)
            try sendATT(.handleValueConfirmation(HandleValueConfirmation()), received: false)
        case 14:
            try sendATT(.writeRequest(WriteRequest(handle: 0x0030, value: [0x01])), received: false)
            try sendATT(
                .errorResponse(ErrorResponse(requestOpcode: .writeRequest, handle: 0x0030, errorCode: .writeNotPermitted)),
                received: true)
        default:
            try sendATT(.readMultipleRequest(ReadMultipleRequest(handles: [0x0003, 0x0021])), received: false)
            try sendATT(.readMultipleResponse(ReadMultipleResponse(values: random.bytes(12))), received: true)
        }
    }

    /// Sends `pdu` on the ATT fixed channel as one L2CAP B-frame, fragmented into ACL packets
    /// of at most 27 octets.
    private mutating func sendATT(_ pdu: ATTPDU, received: Bool) throws {
        var frame = ByteWriter(capacity: pdu.encodedLength + 4)
        frame.writeUInt16LE(UInt16(pdu.encodedLength))
        frame.writeUInt16LE(0x0004)
        pdu.write(to: &frame)
        var offset = 0
        while offset < frame.bytes.count {
            let end = min(offset + Self.aclPayloadLength, frame.bytes.count)
            let boundary: UInt16 = offset == 0 ? (received ? 0b10 : 0b00) : 0b01
            var packet = ByteWriter(capacity: end - offset + 4)
            packet.writeUInt16LE(Self.connectionHandle | boundary << 12)
            packet.writeUInt16LE(UInt16(end - offset))
            packet.writeBytes(frame.bytes[offset..<end])
            try record(.acl, packet.bytes, direction: received ? .received : .sent)
            if !received { unackedACL += 1 }
            offset = end
        }
    }

    // MARK: commands

    private mutating func commandAndCompletion(limit: Int) throws {
        if unackedACL > 0, random.below(2) == 0 {
            // Number Of Completed Packets for the ACL packets we sent.
            var packet = ByteWriter(capacity: 8)
            packet.writeUInt8(0x13)
            packet.writeUInt8(5)
            packet.writeUInt8(1)
            packet.writeUInt16LE(Self.connectionHandle)
            packet.writeUInt16LE(UInt16(unackedACL))
            unackedACL = 0
            try event(packet)
            return
        }
        switch random.below(5) {
        case 0:  // LE Set Scan Enable → Command Complete
            try command(0x200C, [UInt8(random.below(2)), 0x01])
            try commandComplete(0x200C, [0x00])
        case 1:  // LE Set Scan Parameters → Command Complete
            try command(0x200B, [0x01, 0x10, 0x00, 0x10, 0x00, 0x00, 0x00])
            try commandComplete(0x200B, [0x00])
        case 2:  // Read RSSI → Command Complete (status, handle, RSSI)
            try command(0x1405, [0x00, 0x00])
            try commandComplete(0x1405, [0x00, 0x00, 0x00, UInt8(bitPattern: Int8(-40 - random.below(40)))])
        case 3:  // LE Connection Update → Command Status
            try command(0x2013, [0x00, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01, 0x00, 0x00, 0x00, 0x00])
            var packet = ByteWriter(capacity: 6)
            packet.writeUInt8(0x0F)
            packet.writeUInt8(4)
            packet.writeUInt8(0x00)
            packet.writeUInt8(0x01)
            packet.writeUInt16LE(0x2013)
            try event(packet)
        default:  // LE Read Channel Map → Command Complete
            try command(0x2015, [0x00, 0x00])
            try commandComplete(0x2015, [0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F])
        }
    }

    private mutating func command(_ opcode: UInt16, _ parameters: [UInt8]) throws {
        var packet = ByteWriter(capacity: parameters.count + 3)
        packet.writeUInt16LE(opcode)
        packet.writeUInt8(UInt8(parameters.count))
        packet.writeBytes(parameters)
        try record(.command, packet.bytes, direction: .sent)
    }

    private mutating func commandComplete(_ opcode: UInt16, _ returnParameters: [UInt8]) throws {
        var packet = ByteWriter(capacity: returnParameters.count + 5)
        packet.writeUInt8(0x0E)
        packet.writeUInt8(UInt8(returnParameters.count + 3))
        packet.writeUInt8(1)
        packet.writeUInt16LE(opcode)
        packet.writeBytes(returnParameters)
        try event(packet)
    }

    // MARK: records

    /// Writes an event whose second octet (Parameter_Total_Length) is filled in here.
    private mutating func event(_ packet: ByteWriter) throws {
        var bytes = packet.bytes
        bytes[1] = UInt8(bytes.count - 2)
        try record(.event, bytes, direction: .received)
    }

    private mutating func record(_ type: HCIPacketType, _ packet: [UInt8], direction: CaptureDirection) throws {
        timestamp += Int64(200 + random.below(1800))
        try writer.append(type, packet, direction: direction, timestamp: timestamp)
        records += 1
    }
}
