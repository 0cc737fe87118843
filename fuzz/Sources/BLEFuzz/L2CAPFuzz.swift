import ATT
import Bluetooth
import HCI
import L2CAP
import Security

/// Targets over L2CAP: ACL reassembly, LE signaling, SMP.
enum L2CAPFuzz {
    static let maximumLength = 1024
    static let maximumPartialFrames = 4

    /// ACL + L2CAP reassembly (L2CAPReassembler, CreditBasedChannelTracker, UserSpaceL2CAP):
    /// no trap, partial frames and frame length bounded.
    static func aclReassembly(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        var reassembler = L2CAPReassembler(maximumLength: maximumLength, maximumPartialFrames: maximumPartialFrames)
        var tracker = CreditBasedChannelTracker()
        // A user-space L2CAP with one open connection (0x0040); everything else is an unknown handle.
        guard let bufferSize = try? ACLBufferSize(packetLength: 27, packetCount: 4) else { return }
        let host = UserSpaceL2CAP(bufferSize: bufferSize, maximumBufferedSDUs: 8, securityManager: SecurityManagerResponder())
        // Enhanced ATT bearers accepted, so the peer's credit-based requests and K-frames reach them.
        host.setCreditBasedServer(spsm: 0x0027, EnhancedCreditBasedChannels.Server(requiresEncryption: false))
        let channel = try? host.connectionOpened(handle: 0x0040, role: .peripheral)
        var steps = 0
        while !input.isEmpty && steps < 512 {
            steps += 1
            let selector = input.byte()
            let handle: UInt16 = selector & 0x80 == 0 ? 0x0040 : UInt16(input.byte() & 0x0F) << 8 | UInt16(input.byte())
            let boundary = (selector >> 4) & 0b11
            let data = input.longChunk(limit: 300)
            let output = reassembler.receive(handle: handle, packetBoundary: boundary, data: data[...])
            require(reassembler.partialFrameCount <= maximumPartialFrames, "partial frames \(reassembler.partialFrameCount)")
            if let frame = output.frame {
                require(frame.payload.count <= maximumLength, "frame of \(frame.payload.count) octets")
                let direction: CreditBasedChannelTracker.Direction = selector & 1 == 0 ? .outgoing : .incoming
                switch frame.channelID {
                case L2CAPBasicFrame.leSignalingCID:
                    tracker.signaling(frame.payload, handle: handle, direction: direction)
                case L2CAPBasicFrame.attributeProtocolCID:
                    _ = try? ATTPDU(decoding: frame.payload)
                default:
                    if tracker.carriesATT(handle: handle, direction: direction, cid: frame.channelID),
                        case .sdu(let sdu) = tracker.kFrame(frame.payload, handle: handle, direction: direction, cid: frame.channelID)
                    {
                        require(sdu.count <= 65_535, "SDU of \(sdu.count) octets")
                    }
                }
            }
            if selector & 0x0F == 0x0F { _ = reassembler.reset(handle: handle) }
            // The same fragment, as a packet, through the user-space L2CAP.
            host.receive(
                ACLDataPacket(handle: handle, packetBoundary: ACLPacketBoundaryFlag(rawValue: boundary), data: data))
        }
        host.shutDown("fuzz input done")
        _ = channel
    }

    /// LE signaling codec + responder + credit-based tracker: typed error, responses fit the signaling MTU.
    static func signaling(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let role: LERole = input.byte() & 1 == 0 ? .central : .peripheral
        let mtu = 23 + Int(input.byte())
        let responder = LESignalingResponder(role: role, signalingMTU: mtu)
        var tracker = CreditBasedChannelTracker()
        while !input.isEmpty {
            let payload = input.longChunk(limit: 600)
            if let packet = try? L2CAPSignalingPacket(bytes: payload[...]) {
                _ = packet.description
                if let command = try? LESignalingCommand(code: packet.code, data: packet.data) {
                    var writer = ByteWriter()
                    if (try? command.write(to: &writer)) != nil {
                        let again = try? LESignalingCommand(code: packet.code, data: writer.bytes[...])
                        require(again == command, "signaling command re-decode differs")
                    }
                }
            }
            let outcome = responder.receive(payload[...])
            if let response = outcome.response {
                let encoded = try? response.encode()
                require(encoded != nil, "the responder produced an unencodable response")
                require((encoded?.count ?? 0) <= mtu, "signaling response of \(encoded?.count ?? 0) octets over MTU \(mtu)")
            }
            tracker.signaling(payload[...], handle: 0x0040, direction: .incoming)
        }
    }

    /// SMP responder and PDU codecs: typed error or round-trip; never pairs.
    static func securityManager(_ bytes: [UInt8]) {
        let responder = SecurityManagerResponder()
        switch responder.receive(bytes[...]) {
        case .pairingFailed(let failed, _, _):
            var reader = ByteReader(failed.encode())
            require((try? PairingFailed(parsing: &reader)) == failed, "pairing failed re-decode differs")
        case .ignored, .empty:
            break
        }
        var reader = ByteReader(bytes)
        if let request = try? PairingRequest(parsing: &reader) {
            var writer = ByteWriter()
            request.write(to: &writer)
            var again = ByteReader(writer.bytes)
            require((try? PairingRequest(parsing: &again)) == request, "pairing request re-decode differs")
        }
        reader = ByteReader(bytes)
        if let request = try? SecurityRequest(parsing: &reader) {
            var writer = ByteWriter()
            request.write(to: &writer)
            var again = ByteReader(writer.bytes)
            require((try? SecurityRequest(parsing: &again)) == request, "security request re-decode differs")
        }
    }

    /// Enhanced credit-based channels (issue 24): our end, accepting channels on SPSM 0x0027
    /// and opening its own, driven by the peer's signaling packets and K-frames and by our
    /// sends. Invariants: no trap; channels only on dynamic CIDs, at most 5 per direction of
    /// the server; credits never above 65 535; frames out within the peer's MPS; an SDU
    /// delivered never over our MTU; what waits for credits bounded.
    static func creditBasedChannels(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let configuration = EnhancedCreditBasedChannels.Configuration(
            mtu: 64 + UInt16(input.byte()), mps: 64 + UInt16(input.byte() & 0x3F), initialCredits: UInt16(input.byte() & 0x0F),
            maximumQueuedSDUs: 8, servers: [0x0027: .init(requiresEncryption: input.byte() & 1 == 0, maximumChannels: 5)])
        var channels = EnhancedCreditBasedChannels(configuration: configuration)
        if input.byte() & 1 == 0 { channels.encryptionKeySize = 16 }
        var steps = 0
        var actions: [EnhancedCreditBasedChannels.Action] = []
        while !input.isEmpty && steps < 256 {
            steps += 1
            actions.removeAll(keepingCapacity: true)
            switch input.byte() % 6 {
            case 0:
                // A signaling packet from the peer (whatever it is, the connection routes ours here).
                let payload = input.longChunk(limit: 64)
                if let packet = try? L2CAPSignalingPacket(bytes: payload[...]), channels.handles(packet) {
                    channels.receive(packet, into: &actions)
                }
            case 1:
                // A K-frame on one of the dynamic CIDs.
                let cid = 0x0040 + UInt16(input.byte() & 0x3F)
                let payload = input.longChunk(limit: 300)
                channels.receive(localCID: cid, payload: payload[...], into: &actions)
            case 2:
                _ = try? channels.connect(spsm: 0x0027, count: 1 + Int(input.byte() % 5), into: &actions)
            case 3:
                if let open = channels.openChannels.first {
                    _ = try? channels.send(input.longChunk(limit: 600), localCID: open.localCID, into: &actions)
                }
            case 4:
                if let open = channels.openChannels.last { _ = try? channels.disconnect(localCID: open.localCID, into: &actions) }
            default:
                channels.abandon(input.byte(), into: &actions)
            }
            for channel in channels.openChannels {
                require(EnhancedCreditBasedChannels.dynamicCIDs.contains(channel.localCID), "local CID \(channel.localCID)")
                require(channel.txCredits <= 65_535 && channel.txCredits >= 0, "credits \(channel.txCredits)")
                require(channels.queuedFrames(channel.localCID) <= 8 * 700, "queued frames \(channels.queuedFrames(channel.localCID))")
            }
            require(channels.openChannels.filter { $0.opener == .remote }.count <= 5, "more remote channels than the server allows")
            for action in actions {
                switch action {
                case .send(let frame):
                    if frame.channelID != L2CAPBasicFrame.leSignalingCID,
                        let channel = channels.openChannels.first(where: { $0.remoteCID == frame.channelID })
                    {
                        require(frame.payload.count <= Int(channel.remoteMPS), "a K-frame over the peer's MPS")
                    }
                case .sdu(_, let sdu):
                    require(sdu.count <= Int(configuration.mtu), "an SDU of \(sdu.count) octets over our MTU")
                default:
                    break
                }
            }
        }
    }
}
