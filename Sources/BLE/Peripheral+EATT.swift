import ATT
import GATT
import Host
import L2CAP

/// Enhanced ATT on a ``Peripheral``'s link (our host in user space, `sim`): bearers on L2CAP
/// enhanced credit-based channels beside the unenhanced one, so independent operations — reads
/// and writes of concurrent tasks, the parts of a discovery — proceed side by side, one request
/// outstanding per bearer.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §5.3, §5.4
extension Peripheral {
    /// Opens up to `count` (1…5) Enhanced ATT bearers. EATT needs an encrypted link: the link is
    /// encrypted first (with the bond, else by pairing). Their ATT_MTU is the smaller of the two
    /// L2CAP MTUs (no Exchange MTU on them). Returns how many the peer opened (it may open fewer).
    /// - Throws: a usage error on the kernel path (its enhanced channels are off by default) and
    ///   in a replay; when the peer opens none (it has no EATT: SPSM Not Supported), or pairing fails.
    @discardableResult
    public func openEnhancedBearers(_ count: Int) async throws(BLEError) -> Int {
        try await openEnhancedBearers(count, trace: nil)
    }

    /// ``openEnhancedBearers(_:)`` with `-v` tracing of every bearer's PDUs.
    @discardableResult
    package func openEnhancedBearers(_ count: Int, trace: (@Sendable (_ sent: Bool, _ sdu: [UInt8]) -> Void)? = nil) async throws(BLEError) -> Int {
        guard (1...5).contains(count) else {
            throw BLEError("--eatt \(count): 1 to 5 bearers", kind: "usage", exitCode: .usage)
        }
        guard let open = session.link.openEnhancedBearers else {
            throw BLEError(
                "Enhanced ATT: \(type(of: session.central).linkControlRefusal)", kind: "usage", exitCode: .usage)
        }
        if securityLevel < .encrypted, !session.link.encryptionRecorded {
            do {
                try await ensureSecurity(.encrypted)
            } catch {
                // Enhanced ATT needs an encrypted link; one that cannot be had is the peer's
                // answer to Enhanced ATT as much as a refused channel is.
                throw BLEError(
                    "Enhanced ATT needs an encrypted link, and \(peer)'s could not be encrypted (\(error.message))", kind: "eattRefused")
            }
        }
        let channels: [EnhancedBearerChannel]
        do {
            channels = try await open(count)
        } catch let error as BLEError {
            throw error
        } catch LEHostError.l2cap(.refused(_, let result)) {
            // The peer answered at once that it serves no Enhanced ATT (or not now).
            throw BLEError(
                "\(peer) refused Enhanced ATT bearers (\(result.name.map { $0 + ", " } ?? "")0x\(String(result.rawValue, radix: 16, uppercase: true)))",
                kind: "eattRefused")
        } catch {
            throw BLEError("opening \(count) Enhanced ATT bearer(s) to \(peer): \(error)", kind: "eatt")
        }
        let bearers = channels.map { opened -> ATTConnection in
            var carried = opened.channel
            if let trace { carried = ObservedATTChannel(carried, onReceive: { trace(false, $0) }, onSend: { trace(true, $0) }) }
            return ATTConnection(
                channel: carried, configuration: ATTBearer.Configuration(rxMTU: opened.mtu, enhancedMTU: opened.mtu))
        }
        await client.addEnhancedBearers(bearers)
        return bearers.count
    }

    /// How many Enhanced ATT bearers the link has beside the unenhanced one.
    public var enhancedBearerCount: Int {
        get async { await client.enhancedBearerCount }
    }
}
