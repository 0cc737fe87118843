import ATT
import Bluetooth
import Emulator
import HCI
import L2CAP
import Testing
import TestSupport

@Suite("Emulator: robustness and the peripheral's L2CAP")
struct EmulatorRobustnessTests {
    /// A small deterministic generator (xorshift), so a failure repeats.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
    }

    @Test func everyCommandIsAnsweredWhateverItsParameters() async throws {
        let (simulation, probe, clock) = try await makeController()
        var random = Generator(state: 0x5EED_1234_ABCD_0001)
        let opcodes = simulation.controller.implementedCommands + [.readLocalSupportedCommands, .leSetPHY]
        for _ in 0..<300 {
            let opcode =
                Bool.random(using: &random)
                ? opcodes.randomElement(using: &random)!
                : HCIOpcode(rawValue: UInt16.random(in: 0...0xFFFF, using: &random))
            let length = Int.random(in: 0...40, using: &random)
            let parameters = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let packet = try HCICommandPacket(opcode: opcode, parameters: parameters)
            let (answer, _) = try await probe.sendPacket(packet)
            switch answer {
            case .commandComplete(let complete): #expect(complete.opcode == opcode)
            case .commandStatus(let status): #expect(status.opcode == opcode)
            default: Issue.record("\(opcode): \(answer)")
            }
            if Int.random(in: 0..<10, using: &random) == 0 { await clock.advance(by: .milliseconds(100)) }
        }
        // Still a working controller.
        guard case .commandComplete(let complete) = try await probe.send(ReadBDADDRCommand()).answer else { return }
        #expect(complete.status == .success)
        await simulation.stop()
    }

    /// Connects the probe's host to the SensorTag; returns the handle.
    static func connectSensorTag(_ probe: HCIProbe, _ clock: ManualClock) async throws -> UInt16 {
        _ = try await probe.send(EmulatorControllerLinkTests.createSensorTag)
        await clock.advance(by: .milliseconds(100))
        guard case .leMeta(.connectionComplete(let complete)) = try await probe.nextEvent() else {
            throw TestTimeout(what: "an answer from the controller", seconds: 0)
        }
        return complete.connectionHandle
    }

    /// Sends one L2CAP frame and returns the next frame the peripheral sends back.
    static func exchange(_ probe: HCIProbe, _ handle: UInt16, channel: UInt16, _ payload: [UInt8]) async throws
        -> L2CAPBasicFrame
    {
        let frame = L2CAPBasicFrame(channelID: channel, payload: payload[...]).encode()
        try await probe.sendACL(ACLDataPacket(handle: handle, packetBoundary: .firstNonFlushable, data: frame))
        var reassembler = L2CAPReassembler()
        while true {
            guard let data = acl(try await probe.next()) else { continue }
            let output = reassembler.receive(
                handle: handle, packetBoundary: data.packetBoundary.rawValue, data: data.data[...])
            if let frame = output.frame { return frame }
        }
    }

    @Test func randomACLTrafficLeavesThePeripheralServing() async throws {
        let (simulation, probe, clock) = try await makeController(devices: [.sensortag])
        let handle = try await Self.connectSensorTag(probe, clock)
        var random = Generator(state: 0xACAC_0000_1111_2222)
        for _ in 0..<300 {
            let channel: UInt16 = [0x0004, 0x0005, 0x0006, 0x0040, 0x0001].randomElement(using: &random)!
            let length = Int.random(in: 0...23, using: &random)
            let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            var frame = L2CAPBasicFrame(channelID: channel, payload: payload[...]).encode()
            if Int.random(in: 0..<8, using: &random) == 0 { frame = Array(frame.dropLast()) }  // a lying length
            let boundary: ACLPacketBoundaryFlag = Bool.random(using: &random) ? .firstNonFlushable : .continuingFragment
            try await probe.sendACL(
                ACLDataPacket(handle: handle, packetBoundary: boundary, data: Array(frame.prefix(27))))
        }
        _ = try await probe.drain()
        // Whatever came before, a well-formed Read Request (GAP Device Name, handle 3) is
        // answered with the name (answers to earlier random requests may still come first).
        var answer = try await Self.exchange(probe, handle, channel: 0x0004, [0x0A, 0x03, 0x00])
        var reassembler = L2CAPReassembler()
        for _ in 0..<50 where Array(answer.payload) != [0x0B] + Array("CC2650 SensorTag".utf8) {
            guard let data = acl(try await probe.next()) else { continue }
            let output = reassembler.receive(
                handle: handle, packetBoundary: data.packetBoundary.rawValue, data: data.data[...])
            if let frame = output.frame { answer = frame }
        }
        #expect(Array(answer.payload) == [0x0B] + Array("CC2650 SensorTag".utf8))
        await simulation.stop()
    }

    @Test func pairingIsRefusedWithPairingNotSupported() async throws {
        let (simulation, probe, clock) = try await makeController(devices: [.sensortag])
        let handle = try await Self.connectSensorTag(probe, clock)
        // Pairing Request: IO NoInputNoOutput, no OOB, bonding, 16-octet keys.
        let answer = try await Self.exchange(
            probe, handle, channel: 0x0006, [0x01, 0x03, 0x00, 0x01, 0x10, 0x00, 0x00])
        #expect(answer.channelID == 0x0006)
        #expect(Array(answer.payload) == [0x05, 0x05])
        await simulation.stop()
    }

    @Test func signalingIsAnsweredAsAPeripheralMust() async throws {
        let (simulation, probe, clock) = try await makeController(devices: [.sensortag])
        let handle = try await Self.connectSensorTag(probe, clock)
        // An unknown code: Command Reject, not understood.
        let reject = try await Self.exchange(probe, handle, channel: 0x0005, [0x7F, 0x09, 0x00, 0x00])
        #expect(Array(reject.payload) == [0x01, 0x09, 0x02, 0x00, 0x00, 0x00])
        // LE Credit Based Connection Request for an SPSM: refused, SPSM not supported.
        let refused = try await Self.exchange(
            probe, handle, channel: 0x0005,
            [0x14, 0x0A, 0x0A, 0x00, 0x80, 0x00, 0x40, 0x00, 0x40, 0x00, 0x40, 0x00, 0x01, 0x00])
        #expect(refused.payload.first == 0x15)
        #expect(Array(refused.payload.suffix(2)) == [0x02, 0x00])
        // The ATT bearer still answers (Exchange MTU: the SensorTag's 23).
        let mtu = try await Self.exchange(probe, handle, channel: 0x0004, [0x02, 0x05, 0x02])
        #expect(Array(mtu.payload) == [0x03, 0x17, 0x00])
        await simulation.stop()
    }
}
