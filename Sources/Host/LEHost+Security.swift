import Bluetooth
import HCI
import L2CAP

/// How LE Enable Encryption ended: Encryption Change (v1/v2) or Encryption Key Refresh Complete.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.8, §7.7.39
public struct LEEncryptionOutcome: Hashable, Sendable {
    /// Success, or why the controller or the peer refused (PIN or Key Missing 0x06 when the
    /// peer has no such key; MIC Failure 0x3D ends the link).
    public var status: HCIStatus
    /// Whether the link is encrypted now.
    public var enabled: Bool
    /// The key size the v2 event reports.
    public var keySize: Int?

    public init(status: HCIStatus, enabled: Bool, keySize: Int?) {
        self.status = status
        self.enabled = enabled
        self.keySize = keySize
    }
}

extension LEHost {
    /// Hands `connection`'s SMP (CID 0x0006) to the caller, the host's Security Manager for it:
    /// every PDU the peer sends from now on; the stream finishes when the link ends.
    public func securityManagerPDUs(_ connection: LEConnection) throws(LEHostError) -> AsyncStream<[UInt8]> {
        try checkOpen()
        do { return try l2cap.securityManagerPDUs(handle: connection.handle) } catch { throw .l2cap(error) }
    }

    /// Sends one SMP PDU on `connection`.
    public nonisolated func sendSecurityManagerPDU(_ pdu: [UInt8], on connection: LEConnection) throws(LEHostError) {
        do { try l2cap.sendSecurityManagerPDU(pdu, handle: connection.handle) } catch { throw .l2cap(error) }
    }

    /// Who answers LE Long Term Key Request on connections where we are peripheral: the key for
    /// the connection, EDIV and Rand (least significant octet first), or nil (a negative reply:
    /// the central gets PIN or Key Missing). Without a provider every request is refused.
    public typealias LongTermKeyProvider = @Sendable (_ connection: LEConnection, _ rand: UInt64, _ ediv: UInt16) async -> [UInt8]?

    public func setLongTermKeyProvider(_ provider: LongTermKeyProvider?) {
        shared.withLock { $0.longTermKeyProvider = provider }
    }
}
