import TestSupport
import Bluetooth
import HCI
import Testing

@testable import L2CAP

@Suite struct LESignalingResponderTests {
    static let central = LESignalingResponder(role: .central)
    static let peripheral = LESignalingResponder(role: .peripheral)

    static func responseBytes(_ outcome: LESignalingResponder.Outcome) throws -> [UInt8]? {
        try outcome.response?.encode()
    }

    /// Requests and the exact answer a Central sends.
    static let answers: [(String, String, String)] = [
        ("valid Connection Parameter Update Request", "12 03 08 00 18 00 28 00 00 00 f4 01", "13 03 02 00 00 00"),
        ("invalid Connection Parameter Update Request", "12 04 08 00 28 00 18 00 00 00 f4 01", "13 04 02 00 01 00"),
        ("Disconnection Request", "06 05 04 00 40 00 41 00", "01 05 06 00 02 00 40 00 41 00"),
        ("Disconnection Request for the ATT channel", "06 06 04 00 04 00 04 00", "01 06 06 00 02 00 04 00 04 00"),
        (
            "LE Credit Based Connection Request", "14 05 0a 00 80 00 40 00 00 02 f7 00 0a 00",
            "15 05 0a 00 00 00 00 00 00 00 00 00 02 00"
        ),
        (
            "Credit Based Connection Request (EATT), three CIDs",
            "17 07 0e 00 27 00 00 02 f7 00 0a 00 40 00 41 00 42 00",
            "18 07 0e 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00"
        ),
        (
            "Credit Based Connection Request, one CID", "17 08 0a 00 27 00 40 00 40 00 01 00 40 00",
            "18 08 0a 00 00 00 00 00 00 00 02 00 00 00"
        ),
        ("Credit Based Reconfigure Request", "19 08 08 00 00 02 f7 00 40 00 41 00", "1a 08 02 00 03 00"),
        ("Information Request (BR/EDR only)", "0a 04 02 00 02 00", "01 04 02 00 00 00"),
        ("Echo Request (BR/EDR only)", "08 0b 01 00 ff", "01 0b 02 00 00 00"),
        ("Connection Request (BR/EDR only)", "02 0c 04 00 01 00 40 00", "01 0c 02 00 00 00"),
        ("unassigned code", "7f 0d 00 00", "01 0d 02 00 00 00"),
        ("Connection Parameter Update Request of 6 octets", "12 0e 06 00 18 00 28 00 00 00", "01 0e 02 00 00 00"),
        ("LE Credit Based Connection Request of 8 octets", "14 0f 08 00 80 00 40 00 00 02 f7 00", "01 0f 02 00 00 00"),
        ("Credit Based Connection Request without CIDs", "17 10 08 00 27 00 00 02 f7 00 0a 00", "01 10 02 00 00 00"),
        ("Disconnection Request of 2 octets", "06 11 02 00 40 00", "01 11 02 00 00 00"),
        ("C-frame over MTUsig", "12 09 14 00" + String(repeating: " 00", count: 20), "01 09 04 00 01 00 17 00"),
    ]

    @Test(arguments: 0..<answers.count)
    func centralAnswersExactly(index: Int) throws {
        let (name, request, answer) = Self.answers[index]
        let outcome = Self.central.receive(leBytes(request)[...])
        #expect(try Self.responseBytes(outcome) == leBytes(answer), "\(name)")
    }

    @Test func acceptedParametersAskForAnLEConnectionUpdate() throws {
        let outcome = Self.central.receive(leBytes("12 03 08 00 18 00 28 00 00 00 f4 01")[...])
        #expect(
            outcome.connectionParameterUpdate
                == .init(intervalMin: 24, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 500))
        #expect(outcome.report == nil)
    }

    @Test func rejectedParametersAreReportedAndNotApplied() {
        let outcome = Self.central.receive(leBytes("12 04 08 00 28 00 18 00 00 00 f4 01")[...])
        #expect(outcome.connectionParameterUpdate == nil)
        guard case .rejectedConnectionParameters(let request, let reason)? = outcome.report else {
            Issue.record("expected a rejection report, got \(String(describing: outcome.report))")
            return
        }
        #expect(request.intervalMin == 40)
        #expect(reason.contains("Interval Min"))
    }

    @Test func aPeripheralRejectsParameterUpdatesAsNotUnderstood() throws {
        let outcome = Self.peripheral.receive(leBytes("12 03 08 00 18 00 28 00 00 00 f4 01")[...])
        #expect(try Self.responseBytes(outcome) == leBytes("01 03 02 00 00 00"))
        #expect(outcome.connectionParameterUpdate == nil)
        #expect(
            outcome.report
                == .rejectedSignaling(code: .connectionParameterUpdateRequest, identifier: 3, reason: .peripheralRole))
    }

    /// Interval Min, Interval Max, Peripheral Latency, Timeout Multiplier, valid.
    static let parameterTable: [(UInt16, UInt16, UInt16, UInt16, Bool)] = [
        (24, 40, 0, 500, true),
        (6, 6, 0, 10, true),
        (3200, 3200, 0, 3200, true),
        (6, 6, 499, 3200, true),
        (40, 40, 0, 11, true),  // 110 ms > 2 × 50 ms
        (40, 40, 0, 10, false),  // 100 ms is not above 2 × 50 ms
        (40, 40, 4, 51, true),  // 510 ms > 5 × 50 ms × 2
        (40, 40, 4, 50, false),
        (5, 40, 0, 500, false),
        (6, 3201, 0, 3200, false),
        (41, 40, 0, 500, false),
        (24, 40, 500, 3200, false),
        (24, 40, 0, 9, false),
        (24, 40, 0, 3201, false),
        (0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, false),
        (0, 0, 0, 0, false),
    ]

    @Test(arguments: 0..<parameterTable.count)
    func parameterValidityFollowsTheSpecRanges(index: Int) throws {
        let (min, max, latency, timeout, valid) = Self.parameterTable[index]
        let request = ConnectionParameterUpdateRequest(
            intervalMin: min, intervalMax: max, peripheralLatency: latency, timeoutMultiplier: timeout)
        #expect(request.isValid == valid, "\(request): \(request.invalidity ?? "valid")")
        let packet = try L2CAPSignalingPacket(identifier: 0x21, command: .connectionParameterUpdateRequest(request))
        let outcome = Self.central.receive(try packet.encode()[...])
        #expect(try Self.responseBytes(outcome) == [0x13, 0x21, 0x02, 0x00, valid ? 0x00 : 0x01, 0x00])
        #expect((outcome.connectionParameterUpdate != nil) == valid)
    }

    @Test(arguments: leSignalingVectors.filter { $0.command.code.isResponse })
    func responsesAreNeverAnswered(vector: LESignalingVector) {
        let outcome = Self.central.receive(vector.bytes[...])
        #expect(outcome.response == nil)
        #expect(
            outcome.report
                == .ignoredSignaling(
                    code: vector.command.code, identifier: vector.identifier, reason: .unsolicitedResponse))
    }

    @Test func creditsForAChannelWeDoNotHaveAreIgnored() {
        let outcome = Self.central.receive(leBytes("16 06 04 00 40 00 05 00")[...])
        #expect(outcome.response == nil)
        #expect(
            outcome.report
                == .ignoredSignaling(code: .flowControlCreditIndication, identifier: 6, reason: .unknownChannel(0x40)))
    }

    @Test func refusalsAreReported() {
        #expect(
            Self.central.receive(leBytes("14 05 0a 00 80 00 40 00 00 02 f7 00 0a 00")[...]).report
                == .refusedChannel(spsm: 0x80, count: 1))
        #expect(
            Self.central.receive(leBytes("17 07 0e 00 27 00 00 02 f7 00 0a 00 40 00 41 00 42 00")[...]).report
                == .refusedChannel(spsm: 0x27, count: 3))
    }

    /// C-frames whose Identifier cannot be trusted are dropped unanswered.
    static let dropped: [String] = [
        "",
        "12",
        "12 03 08",
        "12 00 08 00 18 00 28 00 00 00 f4 01",
        "12 03 09 00 18 00 28 00 00 00 f4 01",
        "12 03 07 00 18 00 28 00 00 00 f4 01",
    ]

    @Test(arguments: dropped)
    func brokenHeadersAreDroppedUnanswered(hex: String) {
        let outcome = Self.central.receive(leBytes(hex)[...])
        #expect(outcome.response == nil)
        #expect(outcome.connectionParameterUpdate == nil)
        guard case .malformedSignaling? = outcome.report else {
            Issue.record("expected a malformed report, got \(String(describing: outcome.report))")
            return
        }
    }

    @Test func malformedResponsesAndOversizedResponsesAreIgnored() {
        let malformed = Self.central.receive(leBytes("13 01 03 00 00 00 00")[...])
        #expect(malformed.response == nil)
        guard
            case .ignoredSignaling(code: .connectionParameterUpdateResponse, identifier: 1, reason: .malformed)? =
                malformed.report
        else {
            Issue.record("expected an ignored malformed response, got \(String(describing: malformed.report))")
            return
        }
        let oversized = Self.central.receive(leBytes("01 02 16 00" + String(repeating: " 00", count: 22))[...])
        #expect(oversized.response == nil)
        #expect(
            oversized.report == .ignoredSignaling(code: .commandReject, identifier: 2, reason: .overSignalingMTU(26)))
    }

    @Test func aLargerMTUsigAcceptsLongerCFrames() throws {
        let responder = LESignalingResponder(role: .central, signalingMTU: 64)
        let outcome = responder.receive(leBytes("12 09 14 00" + String(repeating: " 00", count: 20))[...])
        #expect(try Self.responseBytes(outcome) == leBytes("01 09 02 00 00 00"), "read, and not understood")
    }
}
