import Bluetooth
import Testing

@testable import HCI

private func bytes(_ text: String) -> [UInt8] { Hex.decode(text)! }

/// A vector: whole event (no H4 indicator) and the value it decodes to.
struct EventVector: CustomTestStringConvertible, Sendable {
    var name: String
    var hex: String
    var event: HCIEvent
    var testDescription: String { name }
}

private let addr = BluetoothAddress("01:23:45:67:89:AB")!

let hciEventVectors: [EventVector] = [
    EventVector(
        name: "Command Complete (HCI_Reset)", hex: "0e0401030c00",
        event: .commandComplete(CommandCompleteEvent(numHCICommandPackets: 1, opcode: HCIOpcode(rawValue: 0x0C03), returnParameters: [0]))),
    EventVector(
        name: "Command Status (LE Create Connection)", hex: "0f0400010d20",
        event: .commandStatus(CommandStatusEvent(status: .success, numHCICommandPackets: 1, opcode: HCIOpcode(rawValue: 0x200D)))),
    EventVector(
        name: "Disconnection Complete (smartpen capture)", hex: "050400020008",
        event: .disconnectionComplete(DisconnectionCompleteEvent(status: .success, connectionHandle: 0x0002, reason: HCIStatus(rawValue: 0x08)))),
    EventVector(
        name: "Number Of Completed Packets, 1 handle", hex: "1305014000 0200",
        event: .numberOfCompletedPackets(NumberOfCompletedPacketsEvent(entries: [.init(connectionHandle: 0x40, numCompletedPackets: 2)]))),
    EventVector(
        name: "Number Of Completed Packets, 3 handles", hex: "130d03 40000100 41000300 ef0e ffff",
        event: .numberOfCompletedPackets(NumberOfCompletedPacketsEvent(entries: [
            .init(connectionHandle: 0x40, numCompletedPackets: 1), .init(connectionHandle: 0x41, numCompletedPackets: 3),
            .init(connectionHandle: 0x0EEF, numCompletedPackets: 0xFFFF),
        ]))),
    EventVector(name: "Hardware Error", hex: "100105", event: .hardwareError(HardwareErrorEvent(hardwareCode: 5))),
    EventVector(
        name: "Encryption Change v1", hex: "080400400001",
        event: .encryptionChange(EncryptionChangeEvent(status: .success, connectionHandle: 0x40, encryptionEnabled: 1))),
    EventVector(
        name: "Encryption Change v2", hex: "59050040000110",
        event: .encryptionChange(EncryptionChangeEvent(status: .success, connectionHandle: 0x40, encryptionEnabled: 1, encryptionKeySize: 16))),
    EventVector(name: "Data Buffer Overflow", hex: "1a0101", event: .dataBufferOverflow(DataBufferOverflowEvent(linkType: 1))),
    EventVector(
        name: "unknown: Read Remote Version Information Complete (horizon capture)", hex: "0c08000002070d00a21b",
        event: .unknown(code: HCIEventCode(rawValue: 0x0C), parameters: bytes("000002070d00a21b"))),
    EventVector(
        name: "unknown: vendor event with no parameters", hex: "ff00",
        event: .unknown(code: .vendorSpecific, parameters: [])),
    EventVector(
        name: "LE Connection Complete", hex: "3e13010040000001ab8967452301180000 00c80005",
        event: .leMeta(.connectionComplete(LEConnectionCompleteEvent(
            status: .success, connectionHandle: 0x40, role: .central, peerAddressType: .random, peerAddress: addr,
            connectionInterval: 0x18, peripheralLatency: 0, supervisionTimeout: 0xC8, centralClockAccuracy: 5)))),
    EventVector(
        name: "LE Enhanced Connection Complete v1 (horizon capture)",
        hex: "3e1f0a0000020001092024e3e4fa00000000000000000000000018000000f40100",
        event: .leMeta(.enhancedConnectionComplete(LEEnhancedConnectionCompleteEvent(
            status: .success, connectionHandle: 0x0200, role: .central, peerAddressType: .random,
            peerAddress: BluetoothAddress("FA:E4:E3:24:20:09")!, connectionInterval: 0x18, peripheralLatency: 0,
            supervisionTimeout: 0x1F4, centralClockAccuracy: 0)))),
    EventVector(
        name: "LE Enhanced Connection Complete v2",
        hex: "3e222900400000 03 ab8967452301 112233445566 000000000000 2800 0100 9001 01 02 ffff",
        event: .leMeta(.enhancedConnectionComplete(LEEnhancedConnectionCompleteEvent(
            status: .success, connectionHandle: 0x40, role: .central, peerAddressType: .randomIdentity, peerAddress: addr,
            localResolvablePrivateAddress: BluetoothAddress("66:55:44:33:22:11")!, connectionInterval: 0x28,
            peripheralLatency: 1, supervisionTimeout: 0x190, centralClockAccuracy: 1,
            version2: .init(advertisingHandle: 2, syncHandle: 0xFFFF))))),
    EventVector(
        name: "LE Connection Update Complete (horizon capture)", hex: "3e0a0300000206000000f401",
        event: .leMeta(.connectionUpdateComplete(LEConnectionUpdateCompleteEvent(
            status: .success, connectionHandle: 0x0200, connectionInterval: 6, peripheralLatency: 0, supervisionTimeout: 0x1F4)))),
    EventVector(
        name: "LE Read Remote Features Complete (horizon capture)", hex: "3e0c040000020100000000000000",
        event: .leMeta(.readRemoteFeaturesComplete(LEReadRemoteFeaturesCompleteEvent(status: .success, connectionHandle: 0x0200, leFeatures: 1)))),
    EventVector(
        name: "LE Remote Connection Parameter Request", hex: "3e0b0640000600 0c000000c800",
        event: .leMeta(.remoteConnectionParameterRequest(LERemoteConnectionParameterRequestEvent(
            connectionHandle: 0x40, intervalMin: 6, intervalMax: 12, maxLatency: 0, timeout: 200)))),
    EventVector(
        name: "LE Data Length Change (smartpen capture)", hex: "3e0b0702001b004801c800b006",
        event: .leMeta(.dataLengthChange(LEDataLengthChangeEvent(
            connectionHandle: 2, maxTXOctets: 27, maxTXTime: 0x148, maxRXOctets: 200, maxRXTime: 0x6B0)))),
    EventVector(
        name: "LE PHY Update Complete", hex: "3e060c00400002 03",
        event: .leMeta(.phyUpdateComplete(LEPHYUpdateCompleteEvent(status: .success, connectionHandle: 0x40, txPHY: .le2M, rxPHY: .leCoded)))),
    EventVector(
        name: "LE Channel Selection Algorithm (smartpen capture)", hex: "3e0414020000",
        event: .leMeta(.channelSelectionAlgorithm(LEChannelSelectionAlgorithmEvent(connectionHandle: 2, channelSelectionAlgorithm: 0)))),
    EventVector(
        name: "LE unknown subevent: Long Term Key Request", hex: "3e0d054000 0102030405060708 3412",
        event: .leMeta(.unknown(subevent: .longTermKeyRequest, parameters: bytes("40000102030405060708 3412")))),
]

@Suite("HCI events: byte vectors")
struct EventVectorTests {
    @Test(arguments: hciEventVectors)
    func decodeAndReencode(_ vector: EventVector) throws {
        let wire = bytes(vector.hex)
        let event = try HCIEvent(bytes: wire)
        #expect(event == vector.event)
        #expect(try event.encoded() == wire)
        #expect(try vector.event.encoded() == wire)
        #expect(!event.description.isEmpty)
    }

    @Test(arguments: hciEventVectors)
    func viaH4Packet(_ vector: EventVector) throws {
        let wire = [HCIPacketType.event.rawValue] + bytes(vector.hex)
        let packet = try HCIPacket(h4: wire)
        #expect(packet == .event(vector.event))
        #expect(try packet.h4Encoded() == wire)
    }

    /// Every strict prefix of every vector throws a malformed error (the length field disagrees
    /// or the header is incomplete), never traps.
    @Test(arguments: hciEventVectors)
    func truncationSweep(_ vector: EventVector) {
        let wire = bytes(vector.hex)
        for count in 0..<wire.count {
            #expect(throws: HCIError.self) { try HCIEvent(bytes: Array(wire[..<count])) }
        }
    }

    /// Prefixes of the parameters with a consistent Parameter_Total_Length: the event decoder
    /// itself must reject them (strict field-by-field), except for the raw kinds.
    @Test(arguments: hciEventVectors.filter {
        if case .unknown = $0.event { return false }
        if case .leMeta(.unknown) = $0.event { return false }
        if case .commandComplete = $0.event { return false }
        return true
    })
    func truncatedParametersWithConsistentLength(_ vector: EventVector) {
        let wire = bytes(vector.hex)
        for count in 2..<wire.count {
            var shortened = Array(wire[..<count])
            shortened[1] = UInt8(count - 2)
            #expect(throws: HCIError.self, "\(count) octets") { try HCIEvent(bytes: shortened) }
        }
    }

    @Test func codesAndNames() throws {
        #expect(HCIEventCode.leMeta.description == "LE Meta Event")
        #expect(HCIEventCode(rawValue: 0x42).description == "Event 0x42")
        #expect(LESubeventCode.extendedAdvertisingReport.description == "LE Extended Advertising Report")
        let event = try HCIEvent(bytes: bytes("590500400001 07"))
        #expect(event.eventCode == .encryptionChangeV2)
        #expect(event.description == "Encryption Change: Success (0x00) handle 64 encryption on key size 7")
        let update = try HCIEvent(bytes: bytes("3e0a0300000206000000f401"))
        #expect(update.description == "LE Connection Update Complete: Success (0x00) handle 512 interval 7.50 ms latency 0 timeout 5000 ms")
    }
}

/// Malformed events: each entry expects one specific error.
struct EventMalformedEntry: CustomTestStringConvertible, Sendable {
    var name: String
    var hex: String
    var error: HCIError
    var testDescription: String { name }
}

let eventMalformedEntries: [EventMalformedEntry] = [
    EventMalformedEntry(
        name: "length longer than bytes", hex: "050500400013",
        error: .malformed(context: "Disconnection Complete event", reason: .truncated(needed: 5, available: 4), offset: 1)),
    EventMalformedEntry(
        name: "length shorter than bytes", hex: "05030040001300",
        error: .malformed(context: "Disconnection Complete event", reason: .trailingBytes(count: 2), offset: 1)),
    EventMalformedEntry(
        name: "Disconnection Complete with an extra octet", hex: "05050040001300",
        error: .malformed(context: "HCI_Disconnection_Complete", reason: .trailingBytes(count: 1), offset: 6)),
    EventMalformedEntry(
        name: "Disconnection Complete handle over 0x0EFF", hex: "050400ff0f13",
        error: .malformed(context: "HCI_Disconnection_Complete", reason: .invalidValue(field: "Connection_Handle", value: 0x0FFF), offset: 3)),
    EventMalformedEntry(
        name: "Number Of Completed Packets: Num_Handles 2, one entry", hex: "1305024000 0100",
        error: .malformed(context: "HCI_Number_Of_Completed_Packets", reason: .invalidLength(field: "Num_Handles", value: 2), offset: 2)),
    EventMalformedEntry(
        name: "Number Of Completed Packets: Num_Handles 0 with an entry", hex: "1305004000 0100",
        error: .malformed(context: "HCI_Number_Of_Completed_Packets", reason: .invalidLength(field: "Num_Handles", value: 0), offset: 2)),
    EventMalformedEntry(
        name: "Encryption Change v2 without key size", hex: "590400400001",
        error: .malformed(context: "HCI_Encryption_Change_v2", reason: .truncated(needed: 1, available: 0), offset: 6)),
    EventMalformedEntry(
        name: "Command Status with an extra octet", hex: "0f0500010d2000",
        error: .malformed(context: "HCI_Command_Status", reason: .trailingBytes(count: 1), offset: 6)),
    EventMalformedEntry(
        name: "LE Meta without subevent code", hex: "3e00",
        error: .malformed(context: "HCI_LE_Meta", reason: .truncated(needed: 1, available: 0), offset: 2)),
    EventMalformedEntry(
        name: "LE Channel Selection Algorithm with extra octet", hex: "3e051402000000",
        error: .malformed(context: "HCI_LE_Channel_Selection_Algorithm", reason: .trailingBytes(count: 1), offset: 6)),
    EventMalformedEntry(
        name: "LE Connection Complete one octet short", hex: "3e12010040000001ab8967452301180000 00c800",
        error: .malformed(context: "HCI_LE_Connection_Complete", reason: .truncated(needed: 1, available: 0), offset: 20)),
]

@Suite("HCI events: malformed")
struct EventMalformedTests {
    @Test(arguments: eventMalformedEntries)
    func rejects(_ entry: EventMalformedEntry) {
        #expect(throws: entry.error) { try HCIEvent(bytes: bytes(entry.hex)) }
    }

    @Test func emptyInput() {
        #expect(throws: HCIError.malformed(context: "HCI event", reason: .truncated(needed: 1, available: 0), offset: 0)) {
            try HCIEvent(bytes: [])
        }
    }

    @Test func encodeRejectsTooManyEntries() {
        let entries = Array(repeating: NumberOfCompletedPacketsEvent.Entry(connectionHandle: 1, numCompletedPackets: 1), count: 256)
        #expect(throws: HCIError.self) { try HCIEvent.numberOfCompletedPackets(.init(entries: entries)).encoded() }
        #expect(throws: HCIError.self) { try HCIEvent.unknown(code: .vendorSpecific, parameters: Array(repeating: 0, count: 256)).encoded() }
    }
}

/// Deterministic generator for the robustness test (SplitMix64).
private struct EventSplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("HCI events: robustness")
struct EventRobustnessTests {
    /// Random events with a consistent length field and every known code / LE subevent, and
    /// single-octet mutations of every vector: decoding either succeeds and re-encodes to the
    /// same octets, or throws; it never traps.
    @Test func randomAndMutatedEventsNeverTrap() {
        var rng = EventSplitMix(state: 0x5EED)
        let codes: [UInt8] = [0x05, 0x08, 0x0E, 0x0F, 0x10, 0x13, 0x1A, 0x3E, 0x59, 0x42]
        let subevents: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x06, 0x07, 0x0A, 0x0B, 0x0C, 0x0D, 0x14, 0x29, 0x05]
        var decoded = 0
        var inputs: [[UInt8]] = []
        for _ in 0..<3000 {
            let code = codes.randomElement(using: &rng)!
            let length = Int.random(in: 0...60, using: &rng)
            var parameters = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if code == 0x3E, !parameters.isEmpty {
                parameters[0] = subevents.randomElement(using: &rng)!
                if parameters.count > 1, Bool.random(using: &rng) { parameters[1] = UInt8.random(in: 0...3, using: &rng) }
            }
            inputs.append([code, UInt8(length)] + parameters)
        }
        for vector in hciEventVectors + advertisingReportVectors.map({ EventVector(name: $0.name, hex: $0.hex, event: .leMeta($0.meta)) }) {
            let wire = Hex.decode(vector.hex)!
            for index in wire.indices.dropFirst(2) {
                var mutated = wire
                mutated[index] ^= UInt8.random(in: 1...255, using: &rng)
                inputs.append(mutated)
            }
        }
        for input in inputs {
            guard let event = try? HCIEvent(bytes: input) else { continue }
            decoded += 1
            #expect((try? event.encoded()) == input, "\(Hex.encode(input))")
        }
        #expect(decoded > 100)
    }
}
