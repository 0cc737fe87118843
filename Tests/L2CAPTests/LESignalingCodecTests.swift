import TestSupport
import Bluetooth
import HCI
import Testing

@testable import L2CAP

/// One signaling vector: the C-frame payload and the command it carries.
struct LESignalingVector: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]
    let identifier: UInt8
    let command: LESignalingCommand
    /// Octets of the Data field before a CID list (nil: no list).
    let fixedDataLength: Int?

    init(_ name: String, _ hex: String, id: UInt8, _ command: LESignalingCommand, listAfter fixed: Int? = nil) {
        self.name = name
        self.bytes = leBytes(hex)
        self.identifier = id
        self.command = command
        self.fixedDataLength = fixed
    }

    var testDescription: String { name }
}

let leSignalingVectors: [LESignalingVector] = [
    .init("Command Reject, not understood", "01 07 02 00 00 00", id: 7, .commandReject(.commandNotUnderstood)),
    .init(
        "Command Reject, MTU exceeded", "01 08 04 00 01 00 17 00", id: 8,
        .commandReject(.signalingMTUExceeded(actualMTU: 23))),
    .init(
        "Command Reject, invalid CID", "01 09 06 00 02 00 40 00 41 00", id: 9,
        .commandReject(.invalidCIDInRequest(localCID: 0x40, remoteCID: 0x41))),
    .init(
        "Command Reject, unknown reason", "01 0a 04 00 03 00 aa bb", id: 10,
        .commandReject(.other(reason: CommandRejectReason(rawValue: 3), data: [0xAA, 0xBB]))),
    .init(
        "Disconnection Request", "06 01 04 00 40 00 41 00", id: 1,
        .disconnectionRequest(.init(destinationCID: 0x40, sourceCID: 0x41))),
    .init(
        "Disconnection Response", "07 02 04 00 40 00 41 00", id: 2,
        .disconnectionResponse(.init(destinationCID: 0x40, sourceCID: 0x41))),
    .init(
        "Connection Parameter Update Request", "12 03 08 00 18 00 28 00 00 00 f4 01", id: 3,
        .connectionParameterUpdateRequest(
            .init(intervalMin: 24, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 500))),
    .init(
        "Connection Parameter Update Response, accepted", "13 03 02 00 00 00", id: 3,
        .connectionParameterUpdateResponse(.init(result: .accepted))),
    .init(
        "Connection Parameter Update Response, rejected", "13 04 02 00 01 00", id: 4,
        .connectionParameterUpdateResponse(.init(result: .rejected))),
    .init(
        "LE Credit Based Connection Request", "14 05 0a 00 80 00 40 00 00 02 f7 00 0a 00", id: 5,
        .leCreditBasedConnectionRequest(.init(spsm: 0x80, sourceCID: 0x40, mtu: 512, mps: 247, initialCredits: 10))),
    .init(
        "LE Credit Based Connection Response, refused", "15 05 0a 00 00 00 00 00 00 00 00 00 02 00", id: 5,
        .leCreditBasedConnectionResponse(.refused(.spsmNotSupported))),
    .init(
        "LE Credit Based Connection Response, success", "15 06 0a 00 41 00 17 00 17 00 01 00 00 00", id: 6,
        .leCreditBasedConnectionResponse(
            .init(destinationCID: 0x41, mtu: 23, mps: 23, initialCredits: 1, result: .successful))),
    .init(
        "Flow Control Credit Indication", "16 06 04 00 40 00 05 00", id: 6,
        .flowControlCreditIndication(.init(cid: 0x40, credits: 5))),
    .init(
        "Credit Based Connection Request, one CID", "17 07 0a 00 27 00 00 02 f7 00 0a 00 40 00", id: 7,
        .creditBasedConnectionRequest(.init(spsm: 0x27, mtu: 512, mps: 247, initialCredits: 10, sourceCIDs: [0x40])),
        listAfter: 8),
    .init(
        "Credit Based Connection Request, three CIDs", "17 07 0e 00 27 00 00 02 f7 00 0a 00 40 00 41 00 42 00", id: 7,
        .creditBasedConnectionRequest(
            .init(spsm: 0x27, mtu: 512, mps: 247, initialCredits: 10, sourceCIDs: [0x40, 0x41, 0x42])),
        listAfter: 8),
    .init(
        "Credit Based Connection Request, five CIDs",
        "17 08 12 00 27 00 40 00 40 00 01 00 40 00 41 00 42 00 43 00 44 00",
        id: 8,
        .creditBasedConnectionRequest(
            .init(spsm: 0x27, mtu: 64, mps: 64, initialCredits: 1, sourceCIDs: [0x40, 0x41, 0x42, 0x43, 0x44])),
        listAfter: 8),
    .init(
        "Credit Based Connection Response, refused", "18 07 0e 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00", id: 7,
        .creditBasedConnectionResponse(
            .init(mtu: 0, mps: 0, initialCredits: 0, result: .spsmNotSupported, destinationCIDs: [0, 0, 0])),
        listAfter: 8),
    .init(
        "Credit Based Connection Response, two channels", "18 09 0c 00 00 02 f7 00 05 00 00 00 50 00 51 00", id: 9,
        .creditBasedConnectionResponse(
            .init(mtu: 512, mps: 247, initialCredits: 5, result: .successful, destinationCIDs: [0x50, 0x51])),
        listAfter: 8),
    .init(
        "Credit Based Reconfigure Request", "19 08 08 00 00 02 f7 00 40 00 41 00", id: 8,
        .creditBasedReconfigureRequest(.init(mtu: 512, mps: 247, destinationCIDs: [0x40, 0x41])), listAfter: 4),
    .init(
        "Credit Based Reconfigure Response", "1a 08 02 00 03 00", id: 8,
        .creditBasedReconfigureResponse(.init(result: .invalidDestinationCID))),
]

@Suite struct LESignalingCodecTests {
    @Test(arguments: leSignalingVectors)
    func decodesAndReencodes(vector: LESignalingVector) throws {
        let packet = try L2CAPSignalingPacket(bytes: vector.bytes[...])
        #expect(packet.identifier == vector.identifier)
        #expect(packet.code == vector.command.code)
        #expect(try packet.command() == vector.command)

        let built = try L2CAPSignalingPacket(identifier: vector.identifier, command: vector.command)
        #expect(try built.encode() == vector.bytes)
        #expect(built.encodedLength == vector.bytes.count)
        #expect(vector.command.encodedLength == vector.bytes.count - 4)
    }

    @Test(arguments: leSignalingVectors)
    func everyStrictPrefixIsRejected(vector: LESignalingVector) {
        for length in 0..<vector.bytes.count {
            #expect(throws: L2CAPError.self, "prefix of \(length) octets") {
                try L2CAPSignalingPacket(bytes: vector.bytes[..<length])
            }
        }
    }

    /// The header made consistent with a shortened Data field: the body itself must refuse
    /// every cut through a fixed field or a CID, and every empty CID list.
    @Test(arguments: leSignalingVectors.filter { if case .commandReject(.other) = $0.command { false } else { true } })
    func everyTruncatedDataFieldIsRejected(vector: LESignalingVector) throws {
        let data = vector.bytes[4...]
        for length in 0..<data.count {
            let shortened = L2CAPSignalingPacket(
                code: vector.command.code, identifier: vector.identifier, data: data.prefix(length))
            if let fixed = vector.fixedDataLength, length >= fixed + 2, (length - fixed) % 2 == 0 {
                // A shorter, still valid list.
                #expect(throws: Never.self) { try shortened.command() }
                continue
            }
            if case .creditBasedConnectionResponse(let response) = vector.command, response.result != .successful,
                let fixed = vector.fixedDataLength, length == fixed
            {
                // The named tolerance (Bumble 0.0.236): a refusal of every channel with no
                // Destination_CID list is read as no channel opened.
                #expect(throws: Never.self) { try shortened.command() }
                continue
            }
            #expect(throws: L2CAPError.self, "data of \(length) octets") { try shortened.command() }
        }
    }

    @Test func truncatedHeaderSaysWhatWasMissing() {
        #expect(
            throws: L2CAPError.malformed(
                context: "L2CAP signaling packet", reason: .truncated(needed: 2, available: 1), offset: 2)
        ) {
            try L2CAPSignalingPacket(bytes: [0x12, 0x01, 0x08])
        }
    }

    static let malformed: [(String, [UInt8], L2CAPError)] = [
        (
            "Identifier 0x00", leBytes("13 00 02 00 00 00"),
            .malformed(
                context: "L2CAP signaling packet", reason: .invalidValue(field: "Identifier", value: 0), offset: 1)
        ),
        (
            "Length longer than the C-frame", leBytes("06 01 06 00 40 00 41 00"),
            .malformed(context: "L2CAP_DISCONNECTION_REQ", reason: .truncated(needed: 6, available: 4), offset: 2)
        ),
        (
            "Length shorter than the C-frame", leBytes("06 01 02 00 40 00 41 00"),
            .malformed(context: "L2CAP_DISCONNECTION_REQ", reason: .trailingBytes(count: 2), offset: 2)
        ),
        (
            "two commands in one LE C-frame", leBytes("13 01 02 00 00 00 13 02 02 00 00 00"),
            .malformed(context: "L2CAP_CONNECTION_PARAMETER_UPDATE_RSP", reason: .trailingBytes(count: 6), offset: 2)
        ),
    ]

    @Test(arguments: 0..<malformed.count)
    func malformedPacketsThrowTheExactError(index: Int) {
        let (name, bytes, error) = Self.malformed[index]
        #expect(throws: error, "\(name)") { try L2CAPSignalingPacket(bytes: bytes[...]) }
    }

    static let malformedCommands: [(String, [UInt8], L2CAPError)] = [
        (
            "Code LE does not use (Echo Request)", leBytes("08 01 00 00"),
            .malformed(context: "L2CAP signaling packet", reason: .invalidValue(field: "Code", value: 8), offset: 0)
        ),
        (
            "Connection Parameter Update Request of 6 octets", leBytes("12 01 06 00 18 00 28 00 00 00"),
            .malformed(
                context: "L2CAP_CONNECTION_PARAMETER_UPDATE_REQ", reason: .truncated(needed: 2, available: 0), offset: 6
            )
        ),
        (
            "Connection Parameter Update Request of 10 octets", leBytes("12 01 0a 00 18 00 28 00 00 00 f4 01 00 00"),
            .malformed(context: "L2CAP_CONNECTION_PARAMETER_UPDATE_REQ", reason: .trailingBytes(count: 2), offset: 8)
        ),
        (
            "Command Reject, not understood, with data", leBytes("01 01 03 00 00 00 ff"),
            .malformed(context: "L2CAP_COMMAND_REJECT_RSP", reason: .trailingBytes(count: 1), offset: 2)
        ),
        (
            "Command Reject, MTU exceeded, without the MTU", leBytes("01 01 02 00 01 00"),
            .malformed(context: "L2CAP_COMMAND_REJECT_RSP", reason: .truncated(needed: 2, available: 0), offset: 2)
        ),
        (
            "Credit Based Connection Request without CIDs", leBytes("17 01 08 00 27 00 00 02 f7 00 0a 00"),
            .malformed(
                context: "L2CAP_CREDIT_BASED_CONNECTION_REQ", reason: .invalidLength(field: "Source_CID", value: 0),
                offset: 8)
        ),
        (
            "Credit Based Connection Request with six CIDs",
            leBytes("17 01 14 00 27 00 00 02 f7 00 0a 00 40 00 41 00 42 00 43 00 44 00 45 00"),
            .malformed(
                context: "L2CAP_CREDIT_BASED_CONNECTION_REQ", reason: .invalidLength(field: "Source_CID", value: 6),
                offset: 8)
        ),
        (
            "Credit Based Connection Request with half a CID", leBytes("17 01 0b 00 27 00 00 02 f7 00 0a 00 40 00 41"),
            .malformed(context: "L2CAP_CREDIT_BASED_CONNECTION_REQ", reason: .trailingBytes(count: 1), offset: 10)
        ),
        (
            "Credit Based Reconfigure Request without CIDs", leBytes("19 01 04 00 00 02 f7 00"),
            .malformed(
                context: "L2CAP_CREDIT_BASED_RECONFIGURE_REQ",
                reason: .invalidLength(field: "Destination_CID", value: 0), offset: 4)
        ),
    ]

    @Test(arguments: 0..<malformedCommands.count)
    func malformedCommandsThrowTheExactError(index: Int) throws {
        let (name, bytes, error) = Self.malformedCommands[index]
        let packet = try L2CAPSignalingPacket(bytes: bytes[...])
        #expect(throws: error, "\(name)") { try packet.command() }
    }

    @Test func encodingRefusesWhatTheWireCannotCarry() {
        #expect(throws: L2CAPError.self) {
            try L2CAPSignalingPacket(identifier: 0, command: .commandReject(.commandNotUnderstood)).encode()
        }
        #expect(throws: L2CAPError.self) {
            try L2CAPSignalingPacket(
                identifier: 1,
                command: .creditBasedConnectionRequest(
                    .init(spsm: 0x27, mtu: 64, mps: 64, initialCredits: 1, sourceCIDs: Array(0x40...0x45))))
        }
        #expect(throws: L2CAPError.self) {
            try L2CAPSignalingPacket(
                identifier: 1, command: .creditBasedReconfigureRequest(.init(mtu: 64, mps: 64, destinationCIDs: [])))
        }
        #expect(throws: L2CAPError.self) {
            try L2CAPSignalingPacket(
                identifier: 1, command: .commandReject(.other(reason: .invalidCIDInRequest, data: [])))
        }
    }

    @Test func codesNameThemselvesAndKnowResponses() {
        #expect(
            L2CAPSignalingCode.connectionParameterUpdateRequest.description == "L2CAP_CONNECTION_PARAMETER_UPDATE_REQ")
        #expect(L2CAPSignalingCode(rawValue: 0x7F).description == "signaling code 0x7f")
        let responses = (0...0xFF).map { L2CAPSignalingCode(rawValue: UInt8($0)) }.filter(\.isResponse).map(\.rawValue)
        #expect(responses == [0x01, 0x07, 0x13, 0x15, 0x18, 0x1A])
    }
}
