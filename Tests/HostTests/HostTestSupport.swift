import Host
import Bluetooth
import HCI
import L2CAP
import Synchronization
import TestSupport

/// A scripted controller on the far end of an `InMemoryTransport` pair: it answers the
/// initialisation commands and the LE commands `LEHost` sends (Command Complete / Command
/// Status, success), reports every command it gets on `commands`, and lets the test inject
/// events and ACL data. Connection outcomes are the test's to inject.
final class HostScriptedController: Sendable {
    let hostTransport: InMemoryTransport
    private let controller: InMemoryTransport
    /// Every command the host sent, in order, read by one iterator.
    private let log: CommandLog
    /// Every opcode received, in order (not consumed by `next`).
    private let seen = SeenOpcodes()
    private let reader: Task<Void, Never>
    /// The B-frames the host sent (CID, payload), read by one iterator.
    private let frames: FrameLog

    /// How the scripted controller answers a command other than with its defaults.
    enum Answer: Sendable {
        /// Command Status, success (the command's own event is the test's to inject).
        case commandStatus
    }

    /// - Parameter extended: claim the LE Extended Advertising feature and the extended
    ///   scanning/initiating commands, so `LEHost` uses them.
    /// `refusingCreateConnectionWhileScanning`: LE Create Connection is answered Command
    /// Disallowed while scanning is enabled (a controller that cannot scan and initiate at once).
    /// `withholdingCompletions`: no Number Of Completed Packets for the host's ACL data (the
    /// test sends them with `event`).
    init(
        extended: Bool = false, refusingCreateConnectionWhileScanning: Bool = false, answering: [HCIOpcode: Answer] = [:],
        withholdingCompletions: Bool = false
    ) {
        let (host, controller) = InMemoryTransport.makePair()
        hostTransport = host
        self.controller = controller
        let (commands, sink) = AsyncStream.makeStream(of: (HCIOpcode, [UInt8]).self)
        log = CommandLog(commands.makeAsyncIterator())
        let (acl, aclSink) = AsyncStream.makeStream(of: (UInt16, [UInt8]).self)
        frames = FrameLog(acl.makeAsyncIterator())
        let seen = seen
        reader = Task {
            var scanning = false
            do {
                for try await packet in controller.packets {
                    if packet.type == .acl {
                        // One whole B-frame per packet here (the signaling answers are short).
                        let bytes = packet.bytes
                        guard bytes.count >= 8 else { continue }
                        let handle = UInt16(bytes[0]) | UInt16(bytes[1] & 0x0F) << 8
                        aclSink.yield((UInt16(bytes[6]) | UInt16(bytes[7]) << 8, Array(bytes[8...])))
                        // Number of Completed Packets: the buffer is free again.
                        if !withholdingCompletions {
                            try await controller.send(.event, [0x13, 5, 0x01] + Self.le16(handle) + [0x01, 0x00])
                        }
                        continue
                    }
                    guard packet.type == .command, packet.bytes.count >= 3 else { continue }
                    let opcode = HCIOpcode(rawValue: UInt16(packet.bytes[0]) | UInt16(packet.bytes[1]) << 8)
                    let parameters = Array(packet.bytes[3...])
                    seen.opcodes.withLock { $0.append(opcode) }
                    sink.yield((opcode, parameters))
                    if opcode.rawValue == 0x200C, let enable = parameters.first { scanning = enable == 1 }
                    if refusingCreateConnectionWhileScanning, scanning, opcode.rawValue == 0x200D {
                        try await controller.send(.event, [0x0F, 4, 0x0C, 0x01, 0x0D, 0x20])  // Command Disallowed
                        continue
                    }
                    if case .commandStatus? = answering[opcode] {
                        try await controller.send(
                            .event, [0x0F, 4, 0x00, 0x01, UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8)])
                        continue
                    }
                    try await controller.send(.event, Self.answer(opcode, parameters, extended: extended))
                }
            } catch {}
            sink.finish()
            aclSink.finish()
        }
    }

    /// Waits (bounded) for the next B-frame the host sent on `cid`, skipping others; its payload.
    func nextACL(cid: UInt16, seconds: Double = 30) async throws -> [UInt8] {
        let frames = frames
        return try await withTimeout(seconds) {
            guard let payload = await frames.next(cid) else { throw HostStreamEnded(what: "ACL on CID \(cid): stream ended") }
            return payload
        }
    }

    deinit { reader.cancel() }

    func event(_ bytes: [UInt8]) async throws {
        try await controller.send(.event, bytes)
    }

    func acl(_ bytes: [UInt8]) async throws {
        try await controller.send(.acl, bytes)
    }

    func close() { controller.close(reason: "test controller closed") }

    /// Waits (bounded) for the next command with `opcode`, skipping others.
    func next(_ opcode: HCIOpcode, seconds: Double = 30) async throws -> [UInt8] {
        let log = log
        return try await withTimeout(seconds) {
            guard let parameters = await log.next(opcode) else {
                throw HostStreamEnded(what: "\(opcode): command stream ended")
            }
            return parameters
        }
    }

    /// How many commands with `opcode` were received so far.
    func count(_ opcode: HCIOpcode) -> Int { seen.opcodes.withLock { $0.filter { $0 == opcode }.count } }

    static func answer(_ opcode: HCIOpcode, _ parameters: [UInt8], extended: Bool) -> [UInt8] {
        func complete(_ returns: [UInt8]) -> [UInt8] {
            [0x0E, UInt8(3 + returns.count), 0x01, UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8)] + returns
        }
        let status: [UInt8] = [0x0E, 4, 0x01, UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8), 0x00]
        let accepted: [UInt8] = [0x0F, 4, 0x00, 0x01, UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8)]
        switch opcode.rawValue {
        case 0x1001: return complete([0x00, 0x0D, 0x00, 0x00, 0x0D, 0x5F, 0x00, 0x00, 0x00])
        case 0x1002:
            var supported = [UInt8](repeating: 0, count: 64)
            if extended {
                for (octet, bit) in [(37, 5), (37, 6), (37, 7)] { supported[octet] |= 1 << bit }
            }
            return complete([0x00] + supported)
        case 0x1003: return complete([0x00, 0, 0, 0, 0, 0x60, 0, 0, 0])
        case 0x1009: return complete([0x00, 0xF5, 0xF4, 0xF3, 0xF2, 0xF1, 0xF0])
        case 0x2002: return complete([0x00, 27, 0, 4])
        case 0x2003: return complete([0x00, 0x01, extended ? 0x10 : 0x00, 0, 0, 0, 0, 0, 0])
        case 0x0C03, 0x0C01, 0x2001, 0x200B, 0x200C, 0x200E, 0x2041, 0x2042: return status
        case 0x2020, 0x2021: return complete([0x00, parameters[0], parameters[1]])
        case 0x200D, 0x2043, 0x0406, 0x2013: return accepted
        default: return complete([0x01])
        }
    }

    // MARK: - Events

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    static func connectionComplete(
        status: UInt8 = 0, handle: UInt16, peer: BluetoothAddress, peerType: UInt8, role: UInt8 = 0,
        interval: UInt16 = 40, latency: UInt16 = 0, timeout: UInt16 = 400
    ) -> [UInt8] {
        [0x3E, 19, 0x01, status] + le16(handle) + [role, peerType] + peer.littleEndianBytes + le16(interval)
            + le16(latency) + le16(timeout) + [0x00]
    }

    static func enhancedConnectionCompleteV2(
        status: UInt8 = 0, handle: UInt16, peer: BluetoothAddress, peerType: UInt8, interval: UInt16 = 40
    ) -> [UInt8] {
        [0x3E, 34, 0x29, status] + le16(handle) + [0x00, peerType] + peer.littleEndianBytes
            + [UInt8](repeating: 0, count: 12)
            + le16(interval) + le16(0) + le16(400) + [0x00, 0xFF] + le16(0xFFFF)
    }

    static func disconnectionComplete(handle: UInt16, reason: UInt8) -> [UInt8] {
        [0x05, 4, 0x00] + le16(handle) + [reason]
    }

    static func remoteParameterRequest(handle: UInt16, min: UInt16, max: UInt16, latency: UInt16, timeout: UInt16)
        -> [UInt8]
    {
        [0x3E, 11, 0x06] + le16(handle) + le16(min) + le16(max) + le16(latency) + le16(timeout)
    }

    static func connectionUpdateComplete(handle: UInt16, interval: UInt16, latency: UInt16, timeout: UInt16)
        -> [UInt8]
    {
        [0x3E, 10, 0x03, 0x00] + le16(handle) + le16(interval) + le16(latency) + le16(timeout)
    }

    /// An ACL data packet (PB first flushable) carrying one B-frame on `cid`.
    static func aclFrame(handle: UInt16, cid: UInt16, _ payload: [UInt8]) -> [UInt8] {
        let frame = le16(UInt16(payload.count)) + le16(cid) + payload
        return le16(handle | 0x2000) + le16(UInt16(frame.count)) + frame
    }
}

final class SeenOpcodes: Sendable {
    let opcodes = Mutex<[HCIOpcode]>([])
}

actor CommandLog {
    private var iterator: AsyncStream<(HCIOpcode, [UInt8])>.Iterator

    init(_ iterator: AsyncStream<(HCIOpcode, [UInt8])>.Iterator) { self.iterator = iterator }

    func next(_ opcode: HCIOpcode) async -> [UInt8]? {
        while true {
            var copy = iterator
            let command = await copy.next(isolation: self)
            iterator = copy
            guard let (seen, parameters) = command else { return nil }
            if seen == opcode { return parameters }
        }
    }
}

actor FrameLog {
    private var iterator: AsyncStream<(UInt16, [UInt8])>.Iterator

    init(_ iterator: AsyncStream<(UInt16, [UInt8])>.Iterator) { self.iterator = iterator }

    func next(_ cid: UInt16) async -> [UInt8]? {
        while true {
            var copy = iterator
            let frame = await copy.next(isolation: self)
            iterator = copy
            guard let (seen, payload) = frame else { return nil }
            if seen == cid { return payload }
        }
    }
}

/// A scripted stream ended before what the test waited for.
struct HostStreamEnded: Error, CustomStringConvertible {
    var what: String
    var description: String { "stream ended: \(what)" }
}
