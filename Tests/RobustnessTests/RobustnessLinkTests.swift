import ATT
import Bluetooth
import HCI
import L2CAP
import Testing
import TestSupport

@Suite("Robustness: hostile link and controller")
struct RobustnessLinkTests {
    static let handle: UInt16 = 0x0040

    func multiplexer() throws -> LEL2CAPMultiplexer {
        var multiplexer = LEL2CAPMultiplexer(
            bufferSize: try ACLBufferSize(packetLength: 27, packetCount: 4), maximumFrameLength: 1024)
        try multiplexer.connectionOpened(handle: Self.handle, role: .central)
        return multiplexer
    }

    func reports(_ actions: [LEL2CAPMultiplexer.Action]) -> [LEL2CAPReport] {
        actions.compactMap { if case .report(_, let report) = $0 { return report } else { return nil } }
    }

    func delivered(_ actions: [LEL2CAPMultiplexer.Action]) -> [[UInt8]] {
        actions.compactMap { if case .deliverATT(_, let sdu) = $0 { return sdu } else { return nil } }
    }

    /// An L2CAP B-frame header + payload on the ATT channel.
    func frame(_ payload: [UInt8], length: Int? = nil) -> [UInt8] {
        let length = length ?? payload.count
        return [UInt8(length & 0xFF), UInt8(length >> 8), 0x04, 0x00] + payload
    }

    @Test("fragments that never complete: nothing delivered, the partial frame replaced by the next start")
    func fragmentsNeverComplete() throws {
        var multiplexer = try multiplexer()
        var actions: [LEL2CAPMultiplexer.Action] = []
        // A start announcing 500 octets, then a trickle that never reaches it.
        multiplexer.receive(
            ACLDataPacket(handle: Self.handle, packetBoundary: .firstFlushable, data: frame(Array(repeating: 1, count: 23), length: 500)),
            into: &actions)
        for _ in 0..<10 {
            multiplexer.receive(
                ACLDataPacket(handle: Self.handle, packetBoundary: .continuingFragment, data: Array(repeating: 2, count: 27)),
                into: &actions)
        }
        #expect(delivered(actions).isEmpty)
        // The peer gives up and starts a complete frame: the stale one is dropped and reported.
        actions.removeAll()
        multiplexer.receive(
            ACLDataPacket(handle: Self.handle, packetBoundary: .firstFlushable, data: frame([0x0A, 0x03, 0x00])), into: &actions)
        #expect(delivered(actions) == [[0x0A, 0x03, 0x00]])
        #expect(reports(actions).contains { if case .reassemblyDrop(.interruptedByNewStart) = $0 { return true } else { return false } })
    }

    @Test("a frame announcing more than the limit is dropped at its first fragment, not buffered")
    func frameLongerThanTheLimit() throws {
        var multiplexer = try multiplexer()
        var actions: [LEL2CAPMultiplexer.Action] = []
        multiplexer.receive(
            ACLDataPacket(handle: Self.handle, packetBoundary: .firstFlushable, data: frame(Array(repeating: 1, count: 23), length: 65_535)),
            into: &actions)
        for _ in 0..<3000 {
            multiplexer.receive(
                ACLDataPacket(handle: Self.handle, packetBoundary: .continuingFragment, data: Array(repeating: 2, count: 27)),
                into: &actions)
        }
        #expect(delivered(actions).isEmpty)
        #expect(reports(actions).contains { if case .reassemblyDrop(.tooLong) = $0 { return true } else { return false } })
    }

    @Test("the reassembler bounds partial frames across many handles")
    func partialFramesAcrossHandles() {
        var reassembler = L2CAPReassembler(maximumLength: 1024, maximumPartialFrames: 8)
        var drops = 0
        for handle in UInt16(0)..<0x0EFF {
            let output = reassembler.receive(handle: handle, packetBoundary: 0b10, data: frame([1, 2], length: 100)[...])
            if output.drop != nil { drops += 1 }
            #expect(reassembler.partialFrameCount <= 8)
        }
        #expect(drops > 0)
    }

    @Test("ACL data for an unknown handle is reported and dropped; the open connection is unaffected")
    func unknownHandle() throws {
        var multiplexer = try multiplexer()
        var actions: [LEL2CAPMultiplexer.Action] = []
        for handle: UInt16 in [0x0000, 0x0041, 0x0EFF] {
            multiplexer.receive(
                ACLDataPacket(handle: handle, packetBoundary: .firstFlushable, data: frame([0x0A, 0x03, 0x00])), into: &actions)
        }
        #expect(delivered(actions).isEmpty)
        #expect(reports(actions).count == 3)
        #expect(reports(actions).allSatisfy { $0 == .unknownConnection })
        actions.removeAll()
        multiplexer.receive(
            ACLDataPacket(handle: Self.handle, packetBoundary: .firstFlushable, data: frame([0x0A, 0x03, 0x00])), into: &actions)
        #expect(delivered(actions) == [[0x0A, 0x03, 0x00]])
    }

    @Test("UserSpaceL2CAP: unknown-handle ACL and unfinished fragments never reach the ATT channel")
    func userSpaceL2CAP() async throws {
        let host = UserSpaceL2CAP(bufferSize: try ACLBufferSize(packetLength: 27, packetCount: 4))
        let channel = try host.connectionOpened(handle: Self.handle, role: .central)
        host.receive(ACLDataPacket(handle: 0x0123, packetBoundary: .firstFlushable, data: frame([0x0A, 0x01, 0x00])))
        host.receive(ACLDataPacket(handle: Self.handle, packetBoundary: .firstFlushable, data: frame([0x1B, 0x03], length: 200)))
        host.receive(ACLDataPacket(handle: Self.handle, packetBoundary: .firstFlushable, data: frame([0x1B, 0x03, 0x00, 0x2A])))
        let first = try await withTimeout(10, "the one complete SDU") { () async throws -> [UInt8]? in
            for try await sdu in channel.incoming { return sdu }
            return nil
        }
        #expect(first == [0x1B, 0x03, 0x00, 0x2A])
        host.shutDown("test over")
    }

    @Test("a controller that stops answering: every command fails with commandTimeout in bounded time")
    func silentController() async throws {
        let (host, controller) = InMemoryTransport.makePair()
        // Reads every command and answers none (a wedged controller; the driver cannot tell
        // it from one that answered before, and the earlier answer would only make the test
        // depend on scheduling).
        let fake = Task {
            var commands = 0
            do {
                for try await packet in controller.packets where packet.type == .command { commands += 1 }
            } catch {}
            return commands
        }
        defer { fake.cancel() }
        let driver = HCIControllerDriver(transport: host, commandTimeout: .seconds(1))
        await driver.start()
        let started = ContinuousClock.now
        for _ in 0..<3 {
            await #expect(throws: HCIError.commandTimeout(opcode: HCIOpcode(rawValue: 0x1009))) {
                _ = try await withTimeout(30, "a command to a silent controller") { try await driver.send(ReadBDADDRCommand()) }
            }
        }
        await #expect(throws: HCIError.self) {
            _ = try await withTimeout(30, "initialization against a silent controller") { try await driver.initialize() }
        }
        #expect(ContinuousClock.now - started < .seconds(60), "bounded even on a loaded machine")
        await driver.close()
        host.close(reason: "test over")
        let seen = try await withTimeout(10, "the silent controller's stream ending") { await fake.value }
        #expect(seen >= 4, "every command reached the controller")
    }
}
