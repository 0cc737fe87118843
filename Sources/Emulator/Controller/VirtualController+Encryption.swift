import Bluetooth
import HCI

/// The link-layer encryption procedure between virtual controllers: LE Enable Encryption from
/// the central's host → the peripheral's key (its host's answer to LE Long Term Key Request, or
/// an emulated device's) → Encryption Change (or Encryption Key Refresh Complete) on both sides
/// when the keys match, MIC Failure (0x3D) ending the link when they differ, PIN or Key Missing
/// (0x06) when the peripheral has no key. Payloads are not actually encrypted.
/// - SeeAlso: Core Spec 5.4, Vol 6, Part B, §5.1.3; Vol 4, Part E, §7.8.24–§7.8.26
extension VirtualController {
    /// How long the peripheral's host may take to answer LE Long Term Key Request.
    static let longTermKeyRequestTimeout = Duration.seconds(30)

    func enableEncryption(_ command: LEEnableEncryptionCommand) async {
        let handle = command.connectionHandle
        guard let connection = connections[handle], let peripheral = connection.peripheral else {
            await status(LEEnableEncryptionCommand.opcode, connections[handle] == nil ? .unknownConnectionIdentifier : .commandDisallowed)
            return
        }
        await status(LEEnableEncryptionCommand.opcode, .success)
        let wasEncrypted = connection.encrypted
        // The peripheral's answer comes asynchronously; commands go on meanwhile.
        let key = await peripheral.longTermKeyRequested(rand: command.randomNumber, ediv: command.encryptedDiversifier)
        guard connections[handle] != nil else { return }
        guard let key else {
            // LL_REJECT_IND with PIN or Key Missing: the link stays, unencrypted (or as it was).
            await emit(
                .encryptionChange(
                    EncryptionChangeEvent(
                        status: .pinOrKeyMissing, connectionHandle: handle, encryptionEnabled: wasEncrypted ? 1 : 0)))
            return
        }
        guard key == command.longTermKey else {
            // Each side decrypts the other's first packet with its own key: MIC Failure ends it.
            connections[handle] = nil
            reassembler.reset(handle: handle)
            await emit(
                .disconnectionComplete(
                    DisconnectionCompleteEvent(
                        status: .success, connectionHandle: handle, reason: .connectionTerminatedDueToMICFailure)))
            await connection.remoteDisconnected(.connectionTerminatedDueToMICFailure)
            return
        }
        connections[handle]?.encrypted = true
        if wasEncrypted {
            await emit(.unknown(code: .encryptionKeyRefreshComplete, parameters: [0x00] + Self.handleOctets(handle)))
        } else {
            await emit(.encryptionChange(EncryptionChangeEvent(status: .success, connectionHandle: handle, encryptionEnabled: 1)))
        }
        await peripheral.encryptionChanged(refreshed: wasEncrypted)
    }

    static func handleOctets(_ handle: UInt16) -> [UInt8] { [UInt8(truncatingIfNeeded: handle), UInt8(handle >> 8)] }

    // MARK: Peripheral side (our host advertised; a central encrypts)

    /// The central asks for a key: our host gets LE Long Term Key Request and answers with a
    /// reply or a negative reply; nil when it gives none (bounded).
    func longTermKeyRequest(handle: UInt16, rand: UInt64, ediv: UInt16) async -> [UInt8]? {
        guard connections[handle] != nil else { return nil }
        let event = LELongTermKeyRequestEvent(connectionHandle: handle, randomNumber: rand, encryptedDiversifier: ediv)
        return await withCheckedContinuation { (continuation: CheckedContinuation<[UInt8]?, Never>) in
            if let superseded = keyRequests.removeValue(forKey: handle) {
                superseded.timer.cancel()
                superseded.continuation.resume(returning: nil)
            }
            let timer = clock.schedule(after: Self.longTermKeyRequestTimeout) { [weak self] in
                await self?.answerLongTermKeyRequest(handle: handle, key: nil, fromHost: false)
            }
            keyRequests[handle] = (continuation, timer)
            Task { await self.emit(.leMeta(event.metaEvent)) }
        }
    }

    /// Our host's LE Long Term Key Request Reply (or Negative Reply, `key` nil).
    func answerLongTermKeyRequest(handle: UInt16, key: [UInt8]?, fromHost: Bool = true) async {
        let opcode = key == nil ? HCIOpcode.leLongTermKeyRequestNegativeReply : HCIOpcode.leLongTermKeyRequestReply
        guard let waiting = keyRequests.removeValue(forKey: handle) else {
            if fromHost { await complete(opcode: opcode, returnParameters: [HCIStatus.commandDisallowed.rawValue] + Self.handleOctets(handle)) }
            return
        }
        waiting.timer.cancel()
        if fromHost { await complete(opcode: opcode, returnParameters: [0x00] + Self.handleOctets(handle)) }
        waiting.continuation.resume(returning: key)
    }

    /// Encryption started on a connection our host serves as peripheral.
    func peripheralEncryptionChanged(handle: UInt16, refreshed: Bool) async {
        guard connections[handle] != nil else { return }
        let wasEncrypted = connections[handle]?.encrypted ?? false
        connections[handle]?.encrypted = true
        if refreshed || wasEncrypted {
            await emit(.unknown(code: .encryptionKeyRefreshComplete, parameters: [0x00] + Self.handleOctets(handle)))
        } else {
            await emit(.encryptionChange(EncryptionChangeEvent(status: .success, connectionHandle: handle, encryptionEnabled: 1)))
        }
    }

    /// A key request that can no longer be answered (the link or the transport went) ends empty.
    func dropKeyRequest(handle: UInt16) {
        guard let waiting = keyRequests.removeValue(forKey: handle) else { return }
        waiting.timer.cancel()
        waiting.continuation.resume(returning: nil)
    }
}
