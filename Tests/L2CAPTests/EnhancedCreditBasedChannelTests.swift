import Bluetooth
import HCI
import Testing
@testable import L2CAP

/// Issue 24: L2CAP enhanced credit-based flow control mode as a state machine — two ends wired
/// back to back: opening, K-frame segmentation and reassembly, credits, reconfiguration,
/// disconnection, refusals and the peer's rule breaking.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §3.4.3, §4.25–§4.28, §10.2
@Suite("L2CAP: enhanced credit-based channels")
struct EnhancedCreditBasedChannelTests {
    typealias Channels = EnhancedCreditBasedChannels
    static let eatt: UInt16 = 0x0027

    /// Two ends and what each reported (everything but frames), with frames carried across.
    struct Pair {
        var a: Channels
        var b: Channels
        var aEvents: [Channels.Action] = []
        var bEvents: [Channels.Action] = []
        /// Every frame that crossed, in order (from A: true).
        var frames: [(fromA: Bool, frame: L2CAPBasicFrame)] = []
        /// Frames from A not yet delivered to B when `hold` is set (to test credits).
        var holdFromA = false
        var held: [L2CAPBasicFrame] = []

        init(a: Channels.Configuration = .init(), b: Channels.Configuration = .init(servers: [eatt: .init(requiresEncryption: true)])) {
            self.a = Channels(configuration: a)
            self.b = Channels(configuration: b)
            self.b.encryptionKeySize = 16
        }

        mutating func fromA(_ actions: [Channels.Action]) { route(actions, fromA: true) }
        mutating func fromB(_ actions: [Channels.Action]) { route(actions, fromA: false) }

        mutating func route(_ actions: [Channels.Action], fromA: Bool) {
            for action in actions {
                guard case .send(let frame) = action else {
                    if fromA { aEvents.append(action) } else { bEvents.append(action) }
                    continue
                }
                frames.append((fromA, frame))
                if fromA, holdFromA, frame.channelID != L2CAPBasicFrame.leSignalingCID {
                    held.append(frame)
                    continue
                }
                deliver(frame, toB: fromA)
            }
        }

        mutating func deliver(_ frame: L2CAPBasicFrame, toB: Bool) {
            var out: [Channels.Action] = []
            if frame.channelID == L2CAPBasicFrame.leSignalingCID {
                let packet = try! L2CAPSignalingPacket(bytes: frame.payload)
                // What an end does not take (an unsolicited response) goes to the connection's
                // responder, which ignores it.
                if toB, b.handles(packet) {
                    b.receive(packet, into: &out)
                } else if !toB, a.handles(packet) {
                    a.receive(packet, into: &out)
                }
            } else if toB {
                b.receive(localCID: frame.channelID, payload: frame.payload, into: &out)
            } else {
                a.receive(localCID: frame.channelID, payload: frame.payload, into: &out)
            }
            route(out, fromA: !toB)
        }

        mutating func releaseHeld() {
            let frames = held
            held = []
            for frame in frames { deliver(frame, toB: true) }
        }

        /// A opens `count` channels; the channels each side sees.
        mutating func open(_ count: Int, spsm: UInt16 = eatt) throws -> [Channels.Channel] {
            var out: [Channels.Action] = []
            try a.connect(spsm: spsm, count: count, into: &out)
            fromA(out)
            guard case .opened(_, _, let requested, let channels, _)? = aEvents.last else {
                Issue.record("no answer: \(aEvents)")
                return []
            }
            #expect(requested == count)
            return channels
        }

        mutating func sendFromA(_ sdu: [UInt8], on cid: UInt16) throws {
            var out: [Channels.Action] = []
            try a.send(sdu, localCID: cid, into: &out)
            fromA(out)
        }

        var sdusAtB: [[UInt8]] { bEvents.compactMap { if case .sdu(_, let sdu) = $0 { sdu } else { nil } } }
    }

    @Test func fiveChannelsOpenWithTheirParameters() throws {
        var pair = Pair(a: .init(mtu: 517, mps: 247, initialCredits: 10), b: .init(mtu: 300, mps: 100, initialCredits: 5, servers: [Self.eatt: .init(requiresEncryption: true)]))
        let opened = try pair.open(5)
        #expect(opened.map(\.localCID) == [0x40, 0x41, 0x42, 0x43, 0x44])
        #expect(opened.allSatisfy { $0.remoteMTU == 300 && $0.remoteMPS == 100 && $0.txCredits == 5 && $0.rxCredits == 10 && $0.opener == .local })
        let accepted = pair.bEvents.compactMap { if case .accepted(let channel) = $0 { channel } else { nil } }
        #expect(accepted.count == 5)
        #expect(accepted.allSatisfy { $0.remoteMTU == 517 && $0.remoteMPS == 247 && $0.txCredits == 10 && $0.opener == .remote })
        #expect(Set(accepted.map(\.remoteCID)) == Set(opened.map(\.localCID)))
        #expect(Set(opened.map(\.remoteCID)) == Set(accepted.map(\.localCID)))
        // The request on the air: SPSM, MTU, MPS, credits, five source CIDs.
        let request = try #require(pair.frames.first)
        #expect(Array(request.frame.payload.prefix(12)) == [0x17, 0x01, 18, 0, 0x27, 0, 0x05, 0x02, 247, 0, 10, 0])
    }

    @Test func anSDUIsCutIntoKFramesWithinTheMPSAndReassembled() throws {
        var pair = Pair(b: .init(mtu: 600, mps: 64, initialCredits: 20, servers: [Self.eatt: .init(requiresEncryption: false)]))
        let channel = try #require(try pair.open(1).first)
        let sdu = (0..<517).map { UInt8($0 & 0xFF) }
        try pair.sendFromA(sdu, on: channel.localCID)
        let kFrames = pair.frames.filter { $0.fromA && $0.frame.channelID == channel.remoteCID }.map(\.frame)
        // 517 + 2 octets of SDU Length in frames of at most 64: 9 frames, the first 62 + 2.
        #expect(kFrames.count == 9)
        #expect(kFrames.allSatisfy { $0.payload.count <= 64 })
        #expect(Array(kFrames[0].payload.prefix(2)) == [0x05, 0x02])
        #expect(pair.sdusAtB == [sdu])
        // An SDU over the peer's MTU is refused before anything is sent.
        #expect(throws: L2CAPError.self) { try pair.sendFromA([UInt8](repeating: 1, count: 601), on: channel.localCID) }
    }

    @Test func framesWaitForCreditsAndTheReceiverGivesThemBack() throws {
        var pair = Pair(b: .init(mtu: 600, mps: 64, initialCredits: 4, servers: [Self.eatt: .init(requiresEncryption: false)]))
        let channel = try #require(try pair.open(1).first)
        pair.holdFromA = true
        try pair.sendFromA([UInt8](repeating: 7, count: 500), on: channel.localCID)
        // 500 + 2 octets in frames of 64: 8; 4 credits: 4 out, 4 waiting.
        #expect(pair.held.count == 4)
        #expect(pair.a.queuedFrames(channel.localCID) == 4)
        #expect(pair.a.channel(channel.localCID)?.txCredits == 0)
        pair.holdFromA = false
        pair.releaseHeld()
        // B gave credits back at half, A sent the rest as they came.
        #expect(pair.sdusAtB == [[UInt8](repeating: 7, count: 500)])
        #expect(pair.a.queuedFrames(channel.localCID) == 0)
        let indications = pair.frames.filter { !$0.fromA && $0.frame.payload.first == 0x16 }
        #expect(!indications.isEmpty)
    }

    @Test func refusalsNameTheirCause() throws {
        // No server on the SPSM.
        var pair = Pair()
        var out: [Channels.Action] = []
        try pair.a.connect(spsm: 0x0081, count: 2, into: &out)
        pair.fromA(out)
        #expect(pair.aEvents.last == .opened(identifier: 1, spsm: 0x0081, requested: 2, channels: [], result: .spsmNotSupported))
        // EATT needs encryption.
        var plain = Pair()
        plain.b.encryptionKeySize = nil
        _ = try plain.open(1)
        guard case .opened(_, _, _, let none, let result)? = plain.aEvents.last else { throw L2CAPError.timeout("answer") }
        #expect(none.isEmpty && result == .insufficientEncryption)
        // More than the server allows: the rest refused for resources.
        var limited = Pair(b: .init(servers: [Self.eatt: .init(requiresEncryption: false, maximumChannels: 2)]))
        let two = try limited.open(5)
        #expect(two.count == 2)
        guard case .opened(_, _, _, _, let partial)? = limited.aEvents.last else { throw L2CAPError.timeout("answer") }
        #expect(partial == .noResourcesAvailable)
        // An MTU under 64.
        var small = Pair(a: .init(mtu: 23, mps: 23))
        _ = try small.open(1)
        guard case .opened(_, _, _, _, let unacceptable)? = small.aEvents.last else { throw L2CAPError.timeout("answer") }
        #expect(unacceptable == .unacceptableParameters)
    }

    @Test func theRuleBreakerLosesTheChannel() throws {
        var pair = Pair(b: .init(mtu: 100, mps: 64, initialCredits: 2, servers: [Self.eatt: .init(requiresEncryption: false)]))
        let channel = try #require(try pair.open(1).first)
        let bCID = channel.remoteCID
        var out: [Channels.Action] = []
        // Over B's MPS.
        pair.b.receive(localCID: bCID, payload: [UInt8](repeating: 0, count: 65)[...], into: &out)
        #expect(out.contains(.closed(localCID: bCID, .violation("a K-frame of 65 octets over our MPS 64"))))
        #expect(pair.b.channel(bCID) == nil)
        // B's Disconnection Request reaches A, which closes its end.
        pair.fromB(out)
        #expect(pair.aEvents.contains(.closed(localCID: channel.localCID, .remote)))

        var second = Pair(b: .init(mtu: 100, mps: 64, initialCredits: 1, servers: [Self.eatt: .init(requiresEncryption: false)]))
        let other = try #require(try second.open(1).first)
        out.removeAll()
        // An SDU Length over B's MTU.
        second.b.receive(localCID: other.remoteCID, payload: [0xFF, 0x00, 1, 2][...], into: &out)
        #expect(out.contains(.closed(localCID: other.remoteCID, .violation("an SDU of 255 octets over our MTU 100"))))

        var third = Pair(b: .init(mtu: 100, mps: 64, initialCredits: 8, servers: [Self.eatt: .init(requiresEncryption: false)]))
        let overrun = try #require(try third.open(1).first)
        out.removeAll()
        // An SDU announced as 4 octets that brings 5.
        third.b.receive(localCID: overrun.remoteCID, payload: [0x04, 0x00, 1, 2, 3][...], into: &out)
        third.b.receive(localCID: overrun.remoteCID, payload: [4, 5][...], into: &out)
        #expect(out.contains(.closed(localCID: overrun.remoteCID, .violation("an SDU longer than its SDU Length 4"))))

        // A K-frame when B gave no credit (initial credits 0: the peer may send nothing yet).
        var stingy = Pair(b: .init(mtu: 100, mps: 64, initialCredits: 0, servers: [Self.eatt: .init(requiresEncryption: false)]))
        let uncredited = try #require(try stingy.open(1).first)
        #expect(uncredited.txCredits == 0)
        #expect(throws: Never.self) { try stingy.sendFromA([1, 2], on: uncredited.localCID) }
        #expect(stingy.a.queuedFrames(uncredited.localCID) == 1, "A waits for credits")
        out.removeAll()
        stingy.b.receive(localCID: uncredited.remoteCID, payload: [0x02, 0x00, 1, 2][...], into: &out)
        #expect(out.contains(.closed(localCID: uncredited.remoteCID, .violation("a K-frame without a credit"))))

        // Credits above 65535 from the peer.
        var fourth = Pair()
        let flooded = try #require(try fourth.open(1).first)
        let indication = Channels.signalingFrame(
            .flowControlCreditIndication(FlowControlCreditIndication(cid: flooded.remoteCID, credits: 65_535)), identifier: 9)
        fourth.deliver(indication, toB: false)
        #expect(fourth.aEvents.contains(.closed(localCID: flooded.localCID, .violation("credits above 65535"))))
    }

    @Test func disconnectionAndReconfigurationBothWays() throws {
        var pair = Pair()
        let opened = try pair.open(2)
        // A closes the first: B answers, both ends closed.
        var out: [Channels.Action] = []
        try pair.a.disconnect(localCID: opened[0].localCID, into: &out)
        #expect(throws: L2CAPError.self) { try pair.a.send([1], localCID: opened[0].localCID, into: &out) }
        pair.fromA(out)
        #expect(pair.aEvents.contains(.closed(localCID: opened[0].localCID, .local)))
        #expect(pair.bEvents.contains(.closed(localCID: opened[0].remoteCID, .remote)))
        #expect(pair.a.openChannels.map(\.localCID) == [opened[1].localCID])
        // A raises its MTU on the second: B learns it.
        out.removeAll()
        try pair.a.reconfigure(localCIDs: [opened[1].localCID], mtu: 1024, mps: 247, into: &out)
        pair.fromA(out)
        #expect(pair.aEvents.contains(.reconfigured(localCIDs: [opened[1].localCID], result: .successful)))
        #expect(pair.b.channel(opened[1].remoteCID)?.remoteMTU == 1024)
        #expect(pair.a.channel(opened[1].localCID)?.localMTU == 1024)
        // B may not shrink the MTU it gave: refused.
        let shrink = Channels.signalingFrame(
            .creditBasedReconfigureRequest(CreditBasedReconfigureRequest(mtu: 100, mps: 100, destinationCIDs: [opened[1].remoteCID])),
            identifier: 77)
        pair.deliver(shrink, toB: false)
        let answer = try #require(pair.frames.last)
        #expect(Array(answer.frame.payload) == [0x1A, 77, 2, 0, 0x01, 0x00])
        // Our request never answered: given up.
        out.removeAll()
        let identifier = try pair.a.connect(spsm: Self.eatt, count: 1, into: &out)
        out.removeAll()
        pair.a.abandon(identifier, into: &out)
        #expect(out == [.opened(identifier: identifier, spsm: Self.eatt, requested: 1, channels: [], result: .noResourcesAvailable)])
    }

    /// Both ends ask for three channels at once, each with room for five in all: each accepts
    /// two of the other's and refuses one for resources, so each learns of the collision with the
    /// missing channel (Vol 3, Part G, §5.4).
    @Test func aCollisionIsSaidToBothEnds() throws {
        let server = Channels.Configuration(servers: [Self.eatt: .init(requiresEncryption: false, maximumChannels: 5)])
        var a = Channels(configuration: server)
        var b = Channels(configuration: server)
        var aOut: [Channels.Action] = []
        var bOut: [Channels.Action] = []
        try a.connect(spsm: Self.eatt, count: 3, into: &aOut)
        try b.connect(spsm: Self.eatt, count: 3, into: &bOut)
        func packet(_ actions: [Channels.Action]) throws -> L2CAPSignalingPacket {
            guard case .send(let frame)? = actions.first else { throw L2CAPError.timeout("a frame") }
            return try L2CAPSignalingPacket(bytes: frame.payload)
        }
        // The requests cross: each end answers the other's before hearing its own answer.
        var bAnswer: [Channels.Action] = []
        b.receive(try packet(aOut), into: &bAnswer)
        var aAnswer: [Channels.Action] = []
        a.receive(try packet(bOut), into: &aAnswer)
        #expect(bAnswer.filter { if case .accepted = $0 { true } else { false } }.count == 2)
        var aEvents: [Channels.Action] = []
        a.receive(try packet(bAnswer), into: &aEvents)
        var bEvents: [Channels.Action] = []
        b.receive(try packet(aAnswer), into: &bEvents)
        #expect(aEvents.contains(.collision(identifier: 1, spsm: Self.eatt, missing: 1)))
        #expect(bEvents.contains(.collision(identifier: 1, spsm: Self.eatt, missing: 1)))
        #expect(a.openChannels.count == 4 && b.openChannels.count == 4, "2 asked + 2 accepted on each end")
    }
}

/// Issue 24: K-frames through the multiplexer's flow control — frames that do not fit the
/// connection's outgoing queue wait in the channel, with their credits, and go as the
/// controller's buffers come back; none lost, in order.
@Suite("L2CAP: enhanced credit-based channels over ACL flow control")
struct CreditBasedFlowControlTests {
    @Test func framesBeyondTheQueueWaitForRoomAndNoneIsLost() throws {
        // 1 controller buffer of 27 octets, 8 frames queued at most per connection.
        var mux = LEL2CAPMultiplexer(bufferSize: leBufferSize(count: 1), maximumQueuedFrames: 8)
        try mux.connectionOpened(handle: 0x40, role: .central)
        var actions: [LEL2CAPMultiplexer.Action] = []
        try mux.withCreditBased(handle: 0x40, into: &actions) { channels, out throws(L2CAPError) in
            _ = try channels.connect(spsm: 0x0027, count: 1, into: &out)
        }
        // The request went (one ACL packet); the controller completes it.
        #expect(actions.filter { if case .transmit = $0 { true } else { false } }.count == 1)
        actions.removeAll()
        mux.receive(.numberOfCompletedPackets(leCompleted((0x40, 1))), into: &actions)
        // The peer opens CID 0x0050 for our 0x0040: MTU 517, MPS 64, 100 credits.
        let response: [UInt8] = [0x18, 0x01, 10, 0, 0x05, 0x02, 64, 0, 100, 0, 0, 0, 0x50, 0x00]
        actions.removeAll()
        mux.receive(leIncoming(handle: 0x40, cid: 5, response), into: &actions)
        #expect(actions.contains { if case .creditBased(_, .opened(_, _, _, let channels, _)) = $0 { channels.count == 1 } else { false } })
        // A 400-octet SDU: 7 K-frames of at most 64 octets; only the room in the queue (8 less the
        // 4 kept for signaling and ATT) goes now.
        let sdu = (0..<400).map { UInt8($0 & 0xFF) }
        actions.removeAll()
        try mux.withCreditBased(handle: 0x40, into: &actions) { channels, out throws(L2CAPError) in
            try channels.send(sdu, localCID: 0x0040, into: &out)
        }
        var packets: [ACLDataPacket] = actions.compactMap { if case .transmit(let packet) = $0 { packet } else { nil } }
        #expect(mux.creditBasedChannels(handle: 0x40)?.queuedFrames(0x0040) ?? 0 > 0, "frames wait for room")
        // The controller frees its buffer packet by packet: everything goes, in order.
        for _ in 0..<200 {
            actions.removeAll()
            mux.receive(.numberOfCompletedPackets(leCompleted((0x40, 1))), into: &actions)
            let more = actions.compactMap { if case .transmit(let packet) = $0 { packet } else { nil } }
            if more.isEmpty { break }
            packets += more
        }
        #expect(mux.creditBasedChannels(handle: 0x40)?.queuedFrames(0x0040) == 0)
        // Reassemble the B-frames on CID 0x0050, then the K-frames into the SDU.
        var reassembler = L2CAPReassembler()
        var kFrames: [[UInt8]] = []
        for packet in packets {
            let output = reassembler.receive(handle: 0x40, packetBoundary: packet.packetBoundary.rawValue, data: packet.data[...])
            if let frame = output.frame, frame.channelID == 0x0050 { kFrames.append(Array(frame.payload)) }
        }
        #expect(kFrames.count == 7)
        let length = Int(kFrames[0][0]) | Int(kFrames[0][1]) << 8
        let carried = Array(kFrames[0].dropFirst(2)) + kFrames.dropFirst().flatMap { $0 }
        #expect(length == 400 && carried == sdu)
    }
}

/// Bumble 0.0.236 refuses every channel with no Destination_CID list: read as nothing opened.
@Test("a credit-based connection refusal without a Destination_CID list parses as no channel")
func refusalWithoutCIDList() throws {
    var reader = ByteReader([0x00, 0x08, 0x00, 0x08, 0x00, 0x00, 0x02, 0x00][...])
    let response = try CreditBasedConnectionResponse(parsing: &reader)
    #expect(response.result == .spsmNotSupported && response.destinationCIDs.isEmpty)
    var success = ByteReader([0x00, 0x08, 0x00, 0x08, 0x00, 0x00, 0x00, 0x00][...])
    #expect(throws: L2CAPError.self) { _ = try CreditBasedConnectionResponse(parsing: &success) }
}
