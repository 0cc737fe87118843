import Bluetooth
import HCI
import Testing
@testable import L2CAP

/// Issue 24: the peripheral's L2CAP Connection Parameter Update Request (Vol 3, Part A, §4.20)
/// and its answer, and the central's policy for such requests.
@Suite("L2CAP: connection parameter requests")
struct ParameterRequestTests {
    static let request = ConnectionParameterUpdateRequest(intervalMin: 40, intervalMax: 56, peripheralLatency: 0, timeoutMultiplier: 500)

    static func frame(_ payload: [UInt8]) -> L2CAPBasicFrame {
        L2CAPBasicFrame(channelID: L2CAPBasicFrame.leSignalingCID, payload: payload[...])
    }

    @Test func thePeripheralAsksOnceAndMatchesTheAnswerByIdentifier() throws {
        var connection = LEL2CAPConnection(handle: 0x0040, role: .peripheral)
        let sent = try connection.requestConnectionParameters(Self.request)
        #expect(sent.channelID == 5)
        #expect(Array(sent.payload) == [0x12, 0x01, 0x08, 0x00, 40, 0, 56, 0, 0, 0, 0xF4, 0x01])
        #expect(throws: L2CAPError.self) { _ = try connection.requestConnectionParameters(Self.request) }
        var actions: [LEL2CAPConnection.Action] = []
        // A response with another identifier is not ours: the responder ignores it.
        connection.receive(Self.frame([0x13, 0x09, 0x02, 0x00, 0x00, 0x00]), into: &actions)
        #expect(!actions.contains(.parameterRequestAnswered(accepted: true)))
        #expect(connection.hasPendingParameterRequest)
        actions.removeAll()
        connection.receive(Self.frame([0x13, 0x01, 0x02, 0x00, 0x00, 0x00]), into: &actions)
        #expect(actions == [.parameterRequestAnswered(accepted: true)])
        // The next request takes the next identifier; a Command Reject answers it (not understood).
        let second = try connection.requestConnectionParameters(Self.request)
        #expect(second.payload[second.payload.startIndex + 1] == 0x02)
        actions.removeAll()
        connection.receive(Self.frame([0x01, 0x02, 0x02, 0x00, 0x00, 0x00]), into: &actions)
        #expect(actions == [.parameterRequestAnswered(accepted: false)])
    }

    @Test func theCentralAndInvalidParametersAreRefused() {
        var central = LEL2CAPConnection(handle: 0x0040, role: .central)
        #expect(throws: L2CAPError.self) { _ = try central.requestConnectionParameters(Self.request) }
        var peripheral = LEL2CAPConnection(handle: 0x0040, role: .peripheral)
        let invalid = ConnectionParameterUpdateRequest(intervalMin: 56, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 500)
        #expect(throws: L2CAPError.self) { _ = try peripheral.requestConnectionParameters(invalid) }
    }

    @Test func thePolicyNarrowsOrRefuses() {
        let policy = ConnectionParameterRequestPolicy(intervals: 24...40, maximumLatency: 2, supervisionTimeouts: 100...600)
        let wide = ConnectionParameterUpdateRequest(intervalMin: 6, intervalMax: 80, peripheralLatency: 0, timeoutMultiplier: 500)
        #expect(
            policy.decide(wide)
                == .success(ConnectionParameterUpdateRequest(intervalMin: 24, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 500)))
        let slow = ConnectionParameterUpdateRequest(intervalMin: 24, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 700)
        #expect(policy.decide(slow) == .failure(.init(reason: "supervision timeout 7000 ms outside 1000–6000 ms")))
        #expect(ConnectionParameterRequestPolicy.refuseAll.decide(wide) == .failure(.init(reason: "this host refuses every parameter request")))
        let responder = LESignalingResponder(role: .central, parameterPolicy: .refuseAll)
        let outcome = responder.receive([0x12, 0x07, 0x08, 0x00, 40, 0, 56, 0, 0, 0, 0xF4, 0x01][...])
        #expect(outcome.connectionParameterUpdate == nil)
        #expect(outcome.response.map { Array($0.data) } == [0x01, 0x00])
    }
}
