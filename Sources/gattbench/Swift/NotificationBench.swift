import ATT
import Bluetooth
import CGattBenchMalloc
import HCI
import L2CAP

/// Notifications through the whole user-space stack: H4 bytes in → `H4Framer` → ACL data
/// packet → `UserSpaceL2CAP` (reassembly, ATT fixed channel) → `ATTConnection` (bearer) →
/// `inbound` element out to the consumer. CPU per notification by
/// `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)` (every thread of the process), with the check that
/// nothing is lost or reordered.
struct NotificationBenchmark {
    var count: Int
    /// Notifications fed before the consumer drains them (below the channel's 1024-SDU buffer).
    var batch = 256
    /// One in `fragmentedEvery` notifications is longer than one 27-octet ACL packet.
    var fragmentedEvery = 8

    struct Result {
        var stage: String
        var cpuNanoseconds: UInt64
        var wallNanoseconds: UInt64
        var allocations: UInt64
        var count: Int

        var cpuPerNotification: Double { Double(cpuNanoseconds) / Double(count) }
        var wallPerNotification: Double { Double(wallNanoseconds) / Double(count) }
        var allocationsPerNotification: Double { Double(allocations) / Double(count) }
    }

    static let handles: [UInt16] = [0x0021, 0x0029, 0x0031]

    /// H4 stream of `count` notifications, batched; value starts with the sequence number.
    func h4Batches() -> [[UInt8]] {
        var batches: [[UInt8]] = []
        var current: [UInt8] = []
        for sequence in 0..<count {
            var value: [UInt8] = withUnsafeBytes(of: UInt32(sequence).littleEndian, Array.init)
            let length = sequence % fragmentedEvery == fragmentedEvery - 1 ? 60 : 16
            value += (0..<length).map { UInt8(truncatingIfNeeded: $0 &+ sequence) }
            let pdu = HandleValueNotification(handle: Self.handles[sequence % Self.handles.count], value: value).encoded
            var frame: [UInt8] = []
            frame += withUnsafeBytes(of: UInt16(pdu.count).littleEndian, Array.init)
            frame += [0x04, 0x00]
            frame += pdu
            var offset = 0
            while offset < frame.count {
                let end = min(offset + 27, frame.count)
                let boundary: UInt16 = offset == 0 ? 0b10 : 0b01
                current.append(HCIPacketType.acl.rawValue)
                current += withUnsafeBytes(of: (boundary << 12).littleEndian, Array.init)
                current += withUnsafeBytes(of: UInt16(end - offset).littleEndian, Array.init)
                current += frame[offset..<end]
                offset = end
            }
            if (sequence + 1) % batch == 0 || sequence == count - 1 {
                batches.append(current)
                current = []
            }
        }
        return batches
    }

    /// Feeds one batch of H4 bytes through the framer into `l2cap`.
    static func feed(_ bytes: [UInt8], framer: inout H4Framer, into l2cap: UserSpaceL2CAP?) throws -> Int {
        framer.append(bytes)
        var packets = 0
        while let (type, packet) = try framer.nextPacket() {
            guard type == .acl else { throw BenchError("unexpected \(type) packet") }
            var reader = ByteReader(packet)
            let acl = try ACLDataPacket(parsing: &reader)
            packets += 1
            if let l2cap { l2cap.receive(acl) } else { blackHole(acl) }
        }
        return packets
    }

    static func check(_ pdu: ATTPDU?, sequence: Int, stage: String) throws {
        guard case .handleValueNotification(let notification)? = pdu else {
            throw BenchError("\(stage): notification \(sequence): got \(String(describing: pdu))")
        }
        let got = notification.value.prefix(4).enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
        guard got == sequence & 0xFFFF_FFFF, notification.handle == handles[sequence % handles.count] else {
            throw BenchError("\(stage): notification \(sequence) lost or out of order (got sequence \(got))")
        }
    }

    /// Reference: one `AsyncStream` hop alone (producer yields a batch, a consumer task drains
    /// it and hands each element to this task through a second stream): the cost of the two
    /// stream hops and the task switches the whole stack makes, without any protocol work.
    func streamHops() async throws -> Result {
        let (first, firstIn) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .unbounded)
        let (second, secondIn) = AsyncStream<[UInt8]>.makeStream(bufferingPolicy: .unbounded)
        let relay = Task {
            for await element in first { secondIn.yield(element) }
            secondIn.finish()
        }
        var iterator = second.makeAsyncIterator()
        let element: [UInt8] = Array(0..<23)
        var received = 0
        let allocations = gattbench_allocation_count()
        let cpu = Clock.processCPU
        let wall = Clock.monotonic
        while received < count {
            let end = min(received + batch, count)
            for _ in received..<end { firstIn.yield(element) }
            while received < end {
                guard await iterator.next() != nil else { throw BenchError("stream ended") }
                received += 1
            }
        }
        let result = Result(
            stage: "reference: 2 AsyncStream hops + 1 relay task, no protocol", cpuNanoseconds: Clock.processCPU - cpu,
            wallNanoseconds: Clock.monotonic - wall, allocations: gattbench_allocation_count() - allocations, count: count)
        firstIn.finish()
        await relay.value
        return result
    }

    /// Stage 1: H4 framing and ACL parsing only.
    func framingOnly(_ batches: [[UInt8]]) throws -> Result {
        var framer = H4Framer()
        let allocations = gattbench_allocation_count()
        let cpu = Clock.processCPU
        let wall = Clock.monotonic
        for bytes in batches { _ = try Self.feed(bytes, framer: &framer, into: nil) }
        return Result(
            stage: "H4 framer + ACL parse", cpuNanoseconds: Clock.processCPU - cpu, wallNanoseconds: Clock.monotonic - wall,
            allocations: gattbench_allocation_count() - allocations, count: count)
    }

    /// Stage 2: up to the ATT channel's SDU stream (no bearer).
    func throughL2CAP(_ batches: [[UInt8]]) async throws -> Result {
        let l2cap = UserSpaceL2CAP(bufferSize: try ACLBufferSize(packetLength: 27, packetCount: 8))
        let channel = try l2cap.connectionOpened(handle: 0, role: .central)
        var iterator = channel.incoming.makeAsyncIterator()
        var framer = H4Framer()
        var sequence = 0
        let allocations = gattbench_allocation_count()
        let cpu = Clock.processCPU
        let wall = Clock.monotonic
        for bytes in batches {
            _ = try Self.feed(bytes, framer: &framer, into: l2cap)
            let end = min(sequence + batch, count)
            while sequence < end {
                guard let sdu = try await iterator.next() else { throw BenchError("channel ended at \(sequence)") }
                try Self.check(try ATTPDU(decoding: sdu), sequence: sequence, stage: "L2CAP")
                sequence += 1
            }
        }
        let result = Result(
            stage: "… + UserSpaceL2CAP → ATT channel SDU (+ ATT decode)", cpuNanoseconds: Clock.processCPU - cpu,
            wallNanoseconds: Clock.monotonic - wall, allocations: gattbench_allocation_count() - allocations, count: count)
        l2cap.shutDown("benchmark done")
        return result
    }

    /// Stage 3: the whole stack, to the consumer of `ATTConnection.inbound`.
    func wholeStack(_ batches: [[UInt8]]) async throws -> Result {
        let l2cap = UserSpaceL2CAP(bufferSize: try ACLBufferSize(packetLength: 27, packetCount: 8))
        let channel = try l2cap.connectionOpened(handle: 0, role: .central)
        let connection = ATTConnection(channel: channel)
        var iterator = connection.inbound.makeAsyncIterator()
        var framer = H4Framer()
        // The peer raises ATT_MTU first (its notifications are longer than 23 octets); the
        // bearer answers on its own and applies the MTU before it reads the next PDU.
        let exchange = ExchangeMTURequest(clientRxMTU: 247).encoded
        let request: [UInt8] = [HCIPacketType.acl.rawValue, 0x00, 0x20, UInt8(exchange.count + 4), 0x00,
                                UInt8(exchange.count), 0x00, 0x04, 0x00] + exchange
        _ = try Self.feed(request, framer: &framer, into: l2cap)
        var sequence = 0
        let allocations = gattbench_allocation_count()
        let cpu = Clock.processCPU
        let wall = Clock.monotonic
        for bytes in batches {
            _ = try Self.feed(bytes, framer: &framer, into: l2cap)
            let end = min(sequence + batch, count)
            while sequence < end {
                try Self.check(await iterator.next(), sequence: sequence, stage: "whole stack")
                sequence += 1
            }
        }
        let result = Result(
            stage: "whole stack: … + ATTConnection → inbound", cpuNanoseconds: Clock.processCPU - cpu,
            wallNanoseconds: Clock.monotonic - wall, allocations: gattbench_allocation_count() - allocations, count: count)
        let mtu = await connection.mtu
        guard mtu >= 67 else { throw BenchError("ATT_MTU is \(mtu) after the exchange") }
        await connection.close()
        l2cap.shutDown("benchmark done")
        return result
    }

    func run() async throws -> [Result] {
        print("\n== notifications through the user-space stack: \(grouped(count)) notifications, batches of \(batch) ==")
        print("(1 in \(fragmentedEvery) spans 3 ACL packets; CPU = CLOCK_PROCESS_CPUTIME_ID, all threads; each result")
        print(" is the median of 3 runs; every notification checked for order and content)\n")
        let batches = h4Batches()
        var results: [Result] = []
        var framing: [Result] = []
        var l2cap: [Result] = []
        var whole: [Result] = []
        var hops: [Result] = []
        for _ in 0..<3 {
            hops.append(try await streamHops())
            framing.append(try framingOnly(batches))
            l2cap.append(try await throughL2CAP(batches))
            whole.append(try await wholeStack(batches))
        }
        for runs in [framing, l2cap, whole, hops] {
            results.append(runs.sorted { $0.cpuNanoseconds < $1.cpuNanoseconds }[1])
        }
        printTable(
            ["stage", "CPU/notification", "wall/notification", "allocs/notification"],
            results.map {
                [$0.stage, perItem($0.cpuPerNotification), perItem($0.wallPerNotification), fixed($0.allocationsPerNotification, 2)]
            })
        let total = results[2]
        print(
            "\nCPU per notification through the whole stack: \(perItem(total.cpuPerNotification)) (target under 2 µs): "
                + (total.cpuPerNotification < 2000 ? "MET" : "MISSED by \(fixed(total.cpuPerNotification / 2000, 2))x"))
        print("no loss, order kept: checked for all \(grouped(count)) notifications in every run")
        return results
    }
}
