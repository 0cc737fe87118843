import Bluetooth
import HCI

/// The management channel for a process that stays on it: commands are answered asynchronously
/// while the kernel's unsolicited events (pairing requests, new keys) arrive on `events`.
/// Readiness-driven (`HCISocket.packets()`): no thread blocks, nothing polls.
///
/// `ManagementSocket.request` suits the few set-up commands before any I/O loop; this actor is
/// for a pairing agent, where Pair Device may take as long as a user needs to type a passkey and
/// the events that ask for it must be answered meanwhile.
public actor ManagementChannel {
    /// Every event that answers no command of ours, in order (the kernel broadcasts other
    /// processes' Command Complete events too: those are dropped).
    public nonisolated let events: AsyncStream<ManagementEventPacket>
    private let eventSink: AsyncStream<ManagementEventPacket>.Continuation
    private let socket: HCISocket
    private var pending: [(id: Int, transaction: ManagementTransaction, continuation: CheckedContinuation<[UInt8], any Error>)] = []
    private var nextID = 0
    private var reader: Task<Void, Never>?
    private var failure: KernelBluetoothError?

    init(socket: HCISocket) {
        self.socket = socket
        (events, eventSink) = AsyncStream.makeStream(of: ManagementEventPacket.self, bufferingPolicy: .unbounded)
    }

    /// Opens the management channel and starts reading it. Events that change nothing need no
    /// privilege; pairing requests and new keys reach only a process with CAP_NET_ADMIN.
    public static func open() throws(KernelBluetoothError) -> ManagementChannel {
        let channel = ManagementChannel(socket: try HCISocket.open(device: nil, channel: .control))
        Task { await channel.start() }
        return channel
    }

    /// Starts reading (tests call it after adopting a socketpair).
    func start() {
        guard reader == nil else { return }
        let packets = socket.packets(maximumLength: 6 + 65_535)
        reader = Task { [weak self] in
            do {
                for try await bytes in packets {
                    guard let self else { return }
                    await self.received(bytes)
                }
                await self?.ended(.closed(operation: .hciReceive(channel: .control, device: nil)))
            } catch let error as KernelBluetoothError {
                await self?.ended(error)
            } catch {
                await self?.ended(.closed(operation: .hciReceive(channel: .control, device: nil)))
            }
        }
    }

    private func received(_ bytes: [UInt8]) {
        guard let packet = try? ManagementEventPacket(bytes: bytes) else { return }
        for (position, entry) in pending.enumerated() {
            let outcome: ManagementTransaction.Outcome?
            do {
                outcome = try entry.transaction.receive(packet)
            } catch {
                pending.remove(at: position)
                entry.continuation.resume(throwing: KernelBluetoothError.malformedManagementReply(opcode: entry.transaction.opcode, error))
                return
            }
            switch outcome {
            case .none: continue
            case .completed(let parameters)?:
                pending.remove(at: position)
                entry.continuation.resume(returning: parameters)
                return
            case .failed(let status)?:
                pending.remove(at: position)
                entry.continuation.resume(
                    throwing: KernelBluetoothError.managementFailed(
                        opcode: entry.transaction.opcode, index: entry.transaction.index, status: status))
                return
            }
        }
        // Answers to commands of other processes are not events for us.
        if packet.code == .commandComplete || packet.code == .commandStatus { return }
        eventSink.yield(packet)
    }

    private func ended(_ error: KernelBluetoothError) {
        failure = error
        let waiting = pending
        pending.removeAll()
        for entry in waiting { entry.continuation.resume(throwing: error) }
        eventSink.finish()
    }

    /// Sends `command` to adapter `index` and waits at most `timeout` for its answer.
    /// - Throws: `.managementFailed` with the kernel's status, `.system(…, .timedOut)`, `.closed`.
    public func request<Command: ManagementCommand>(
        _ command: Command, index: UInt16, timeout: Duration = ManagementSocket.defaultTimeout
    ) async throws(KernelBluetoothError) -> Command.Response {
        let packet = ManagementCommandPacket(command, index: index)
        let operation = KernelOperation.managementCommand(opcode: packet.opcode, index: index)
        if let failure { throw failure }
        nextID += 1
        let id = nextID
        let bytes: [UInt8]
        do {
            bytes = try packet.encoded()
        } catch {
            throw .malformedManagementReply(opcode: packet.opcode, error)
        }
        let parameters: [UInt8]
        do {
            parameters = try await withCheckedThrowingContinuation { continuation in
                pending.append((id, ManagementTransaction(packet), continuation))
                do throws(KernelBluetoothError) {
                    try socket.send(bytes)
                } catch {
                    expire(id, with: error)
                    return
                }
                Task { [weak self] in
                    try? await Task.sleep(for: timeout)
                    await self?.expire(id, with: .system(operation: operation, errno: .timedOut))
                }
            }
        } catch let error as KernelBluetoothError {
            throw error
        } catch {
            throw .closed(operation: operation)
        }
        var reader = ByteReader(parameters)
        do {
            return try Command.parseResponse(&reader)
        } catch {
            throw .malformedManagementReply(opcode: Command.opcode, error)
        }
    }

    /// Sends `command` without waiting for its answer (replies to the kernel's requests: a
    /// refused reply changes nothing the caller could act on). Its Command Complete is dropped.
    public func send<Command: ManagementCommand>(_ command: Command, index: UInt16) throws(KernelBluetoothError) {
        let packet = ManagementCommandPacket(command, index: index)
        let bytes: [UInt8]
        do {
            bytes = try packet.encoded()
        } catch {
            throw .malformedManagementReply(opcode: packet.opcode, error)
        }
        try socket.send(bytes)
    }

    private func expire(_ id: Int, with error: KernelBluetoothError) {
        guard let position = pending.firstIndex(where: { $0.id == id }) else { return }
        pending.remove(at: position).continuation.resume(throwing: error)
    }

    /// Closes the channel: waiting requests fail, `events` finishes.
    public func close() {
        reader?.cancel()
        socket.close()
        ended(.closed(operation: .hciReceive(channel: .control, device: nil)))
    }
}
