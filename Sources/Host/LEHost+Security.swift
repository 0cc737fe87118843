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

    /// Encrypts `connection` as central (HCI_LE_Enable_Encryption, §7.8.24) with a Long Term
    /// Key (least significant octet first) and the EDIV and Rand that name it, and waits,
    /// bounded by `configuration.encryptionTimeout`, for Encryption Change or Encryption Key
    /// Refresh Complete.
    public func encrypt(
        _ connection: LEConnection, longTermKey: [UInt8], ediv: UInt16, rand: UInt64
    ) async throws(LEHostError) -> LEEncryptionOutcome {
        try checkOpen()
        guard connection.isConnected else { throw .notConnected(handle: connection.handle) }
        guard connection.role == .central else {
            throw .invalidArgument("only the central starts encryption (the peripheral answers the LTK request)")
        }
        let handle = connection.handle
        expect(.encryption(handle))
        defer { expectations[.encryption(handle)] = nil }
        do throws(HCIError) {
            _ = try await driver.sendAccepted(
                LEEnableEncryptionCommand(
                    connectionHandle: handle, randomNumber: rand, encryptedDiversifier: ediv, longTermKey: longTermKey))
        } catch {
            throw .hci(error)
        }
        switch await wait(for: .encryption(handle), timeout: configuration.encryptionTimeout, cancellable: false) {
        case .encryption(let outcome): return outcome
        case .disconnected(let complete): throw .l2cap(.disconnected(handle: handle, reason: complete.reason))
        case .closed(let reason): throw .closed(reason)
        default: throw .timeout("Encryption Change for handle 0x\(String(handle, radix: 16))")
        }
    }

    func encryptionChanged(_ change: EncryptionChangeEvent) {
        let handle = change.connectionHandle
        let outcome = LEEncryptionOutcome(
            status: change.status, enabled: change.status == .success && change.encryptionEnabled != 0,
            keySize: change.encryptionKeySize.map(Int.init))
        if change.status == .success { connections[handle]?.encryptionChanged(enabled: outcome.enabled, keySize: outcome.keySize) }
        connections[handle]?.reportEncryption(outcome)
        signal(.encryption(handle), .encryption(outcome))
    }

    func keyRefreshed(_ refresh: EncryptionKeyRefreshCompleteEvent) {
        let handle = refresh.connectionHandle
        let encrypted = connections[handle]?.encryptionKeySize != nil
        let outcome = LEEncryptionOutcome(status: refresh.status, enabled: encrypted, keySize: nil)
        connections[handle]?.reportEncryption(outcome)
        signal(.encryption(handle), .encryption(outcome))
    }

    /// Who answers LE Long Term Key Request on connections where we are peripheral: the key for
    /// the connection, EDIV and Rand (least significant octet first), or nil (a negative reply:
    /// the central gets PIN or Key Missing). Without a provider every request is refused.
    public typealias LongTermKeyProvider = @Sendable (_ connection: LEConnection, _ rand: UInt64, _ ediv: UInt16) async -> [UInt8]?

    public func setLongTermKeyProvider(_ provider: LongTermKeyProvider?) {
        longTermKeyProvider = provider
    }

    /// LE Long Term Key Request (§7.7.65.5): the provider's key, or a negative reply.
    func longTermKeyRequested(_ request: LELongTermKeyRequestEvent) {
        let handle = request.connectionHandle
        guard let connection = connections[handle], let provider = longTermKeyProvider else {
            control.yield(.longTermKeyReply(handle: handle, key: nil))
            return
        }
        let control = control
        Task {
            let key = await provider(connection, request.randomNumber, request.encryptedDiversifier)
            control.yield(.longTermKeyReply(handle: handle, key: key))
        }
    }
}
