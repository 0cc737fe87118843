import ATT
import Bluetooth
import HCI
import L2CAP

/// LE Connection Complete and LE Enhanced Connection Complete [v1/v2], as one.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.1, §7.7.65.10
struct ConnectionCompletion: Hashable, Sendable {
    var status: HCIStatus
    var handle: UInt16
    var role: LERole
    var peerAddressType: LEAddressType
    var peerAddress: BluetoothAddress
    var parameters: LEConnection.Parameters

    init(_ event: LEConnectionCompleteEvent) {
        status = event.status
        handle = event.connectionHandle
        role = event.role
        peerAddressType = event.peerAddressType
        peerAddress = event.peerAddress
        parameters = .init(
            interval: event.connectionInterval, peripheralLatency: event.peripheralLatency,
            supervisionTimeout: event.supervisionTimeout)
    }

    init(_ event: LEEnhancedConnectionCompleteEvent) {
        status = event.status
        handle = event.connectionHandle
        role = event.role
        peerAddressType = event.peerAddressType
        peerAddress = event.peerAddress
        parameters = .init(
            interval: event.connectionInterval, peripheralLatency: event.peripheralLatency,
            supervisionTimeout: event.supervisionTimeout)
    }
}

extension LEHost {
    /// What a wait is for.
    enum Awaited: Hashable, Sendable {
        case connection
        case disconnection(UInt16)
        case update(UInt16)
        case encryption(UInt16)
    }

    /// How a wait ended.
    enum Signal: Sendable {
        case connected(LEConnection)
        case connectFailed(HCIStatus)
        case disconnected(DisconnectionCompleteEvent)
        case updated(LEConnectionUpdateCompleteEvent)
        case encryption(LEEncryptionOutcome)
        case timedOut
        case cancelled
        case closed(String)
    }

    struct Waiter {
        let key: Awaited
        let continuation: CheckedContinuation<Signal, Never>
        let timer: ScheduledTimer
    }

    // MARK: - Connecting

    /// Connects to `address` as central: LE Extended Create Connection when the host uses the
    /// extended commands, else LE Create Connection; waits for the matching LE (Enhanced)
    /// Connection Complete; after `timeout` (or when the calling task is cancelled) sends LE
    /// Create Connection Cancel and waits, bounded, for the cancelled completion. Connects queue
    /// behind a pending one (one LE Create Connection per controller).
    /// - Returns: the connection, its ATT channel open on L2CAP.
    public func connect(
        to address: BluetoothAddress, type: AddressType, timeout: Duration? = nil,
        parameters: LEConnectionParameters? = nil
    ) async throws(LEHostError) -> LEConnection {
        try await connect(candidates: [(address, type)], timeout: timeout, parameters: parameters)
    }

    /// Connects to `address` as public or random device, whichever the initiator finds first:
    /// one LE Create Connection through the Filter Accept List holding both (Vol 6, Part B,
    /// §4.3.5, initiator filter policy 0x01), which this call clears and fills. Timeout and
    /// cancellation as ``connect(to:type:timeout:parameters:)``.
    public func connect(
        toEitherType address: BluetoothAddress, timeout: Duration? = nil, parameters: LEConnectionParameters? = nil
    ) async throws(LEHostError) -> LEConnection {
        try await connect(candidates: [(address, .public), (address, .random)], timeout: timeout, parameters: parameters)
    }

    private func connect(
        candidates: [(address: BluetoothAddress, type: AddressType)], timeout: Duration?,
        parameters: LEConnectionParameters?
    ) async throws(LEHostError) -> LEConnection {
        try checkOpen()
        guard let address = candidates.first?.address else { throw .invalidArgument("no device to connect to") }
        let parameters =
            parameters
            ?? configuration.intervalPerLink.map {
                ConnectionParameterPolicy.scaled(configuration.connectionParameters, links: connections.count + 1, perLink: $0)
            } ?? configuration.connectionParameters
        if let why = ConnectionParameterPolicy.invalidity(
            intervalMin: parameters.connectionIntervalMin, intervalMax: parameters.connectionIntervalMax,
            latency: parameters.maxLatency, timeout: parameters.supervisionTimeout)
        {
            throw .invalidArgument("connection parameters: \(why)")
        }
        await acquireConnectSlot()
        defer { releaseConnectSlot() }
        try checkOpen()

        let filter = candidates.count > 1
        pendingConnect = candidates
        expect(.connection)
        defer {
            pendingConnect = nil
            expectations[.connection] = nil
        }
        let peerType: LEPeerAddressType = candidates[0].type == .public ? .public : .random
        let policy: LEInitiatorFilterPolicy = filter ? .filterAcceptList : .peerAddress
        var paused = false
        do throws(HCIError) {
            if filter {
                _ = try await driver.send(LEClearFilterAcceptListCommand())
                for candidate in candidates {
                    _ = try await driver.send(
                        LEAddDeviceToFilterAcceptListCommand(
                            addressType: candidate.type == .public ? .public : .random, address: candidate.address))
                }
            }
            do {
                try await createConnection(policy: policy, peerType: peerType, address: filter ? .zero : address, parameters: parameters)
            } catch .commandFailed(let opcode, .commandDisallowed) {
                // A controller that cannot initiate while it scans: the scan pauses for the
                // attempt and resumes after it.
                guard await pauseScanning() else { throw HCIError.commandFailed(opcode: opcode, status: .commandDisallowed) }
                paused = true
                try await createConnection(policy: policy, peerType: peerType, address: filter ? .zero : address, parameters: parameters)
            }
        } catch {
            if paused { await resumeScanning() }
            throw .hci(error)
        }
        do {
            let connection = try await completeConnection(to: address, timeout: timeout)
            if paused { await resumeScanning() }
            return connection
        } catch {
            if paused { await resumeScanning() }
            throw error
        }
    }

    /// LE Extended Create Connection when the host uses the extended commands, else LE Create
    /// Connection; Command Status only.
    private func createConnection(
        policy: LEInitiatorFilterPolicy, peerType: LEPeerAddressType, address: BluetoothAddress,
        parameters: LEConnectionParameters
    ) async throws(HCIError) {
        if usesExtendedCommands {
            let phy = LEInitiatingPHYParameters(
                scanInterval: configuration.initiatorScanInterval, scanWindow: configuration.initiatorScanWindow,
                connectionParameters: parameters)
            _ = try await driver.sendAccepted(
                LEExtendedCreateConnectionV1Command(
                    initiatorFilterPolicy: policy, peerAddressType: peerType, peerAddress: address, le1M: phy))
        } else {
            _ = try await driver.sendAccepted(
                LECreateConnectionCommand(
                    leScanInterval: configuration.initiatorScanInterval, leScanWindow: configuration.initiatorScanWindow,
                    initiatorFilterPolicy: policy, peerAddressType: peerType, peerAddress: address,
                    connectionParameters: parameters))
        }
    }

    /// Waits for the LE Connection Complete of the attempt sent; after `timeout` (or the calling
    /// task's cancellation) cancels it and waits, bounded, for the cancelled completion.
    private func completeConnection(to address: BluetoothAddress, timeout: Duration?) async throws(LEHostError) -> LEConnection {
        let timeout = timeout ?? configuration.connectTimeout
        let first = await wait(for: .connection, timeout: timeout, cancellable: true)
        switch first {
        case .connected(let connection): return connection
        case .connectFailed(let status): throw .connectionFailed(address: address, status: status)
        case .closed(let reason): throw .closed(reason)
        case .timedOut, .cancelled:
            logger.info("connecting to \(address): \(first == .cancelled ? "cancelled" : "timed out"); cancelling")
            do throws(HCIError) {
                _ = try await driver.send(LECreateConnectionCancelCommand())
            } catch {
                // Command Disallowed: the connection completed before the cancel; its event follows.
                logger.debug("LE Create Connection Cancel: \(error)")
                if case .transportClosed(let reason) = error { throw .closed(reason) }
            }
            let after = await wait(for: .connection, timeout: configuration.cancelTimeout, cancellable: false)
            switch after {
            case .connected(let connection):
                logger.info("connected to \(address) as the attempt was being cancelled")
                return connection
            case .connectFailed:
                if first == .cancelled { throw .connectCancelled(address: address) }
                throw .connectTimeout(address: address, timeout: timeout)
            case .closed(let reason):
                throw .closed(reason)
            case .timedOut, .cancelled, .disconnected, .updated, .encryption:
                throw .timeout("the cancelled LE Connection Complete for \(address)")
            }
        case .disconnected, .updated, .encryption:
            throw .timeout("LE Connection Complete for \(address)")
        }
    }

    /// Disconnects (HCI_Disconnect) and waits, bounded, for Disconnection Complete.
    /// - Returns: the reason reported by Disconnection Complete.
    @discardableResult
    public func disconnect(
        _ connection: LEConnection, reason: HCIStatus = .remoteUserTerminatedConnection
    ) async throws(LEHostError) -> HCIStatus {
        if let reason = connection.disconnectionReason { return reason }
        try checkOpen()
        let handle = connection.handle
        expect(.disconnection(handle))
        defer { expectations[.disconnection(handle)] = nil }
        do throws(HCIError) {
            _ = try await driver.sendAccepted(DisconnectCommand(connectionHandle: handle, reason: reason))
        } catch {
            if let reason = connection.disconnectionReason { return reason }
            // A disconnect already under way (the ATT channel's close asks for one too): the
            // controller refuses this one; its Disconnection Complete is still awaited below.
            guard case .commandFailed(_, let status) = error,
                status == .commandDisallowed || status == .unknownConnectionIdentifier
            else { throw .hci(error) }
        }
        switch await wait(for: .disconnection(handle), timeout: configuration.disconnectTimeout, cancellable: false) {
        case .disconnected(let complete):
            guard complete.status == .success else {
                throw .hci(.commandFailed(opcode: DisconnectCommand.opcode, status: complete.status))
            }
            return complete.reason
        case .closed(let reason): throw .closed(reason)
        default: throw .timeout("Disconnection Complete for handle 0x\(String(handle, radix: 16))")
        }
    }

    /// Asks for new connection parameters (HCI_LE_Connection_Update) and waits, bounded, for
    /// LE Connection Update Complete.
    public func updateParameters(
        _ connection: LEConnection, _ parameters: LEConnectionParameters
    ) async throws(LEHostError) -> LEConnection.Parameters {
        try checkOpen()
        guard connection.isConnected else { throw .notConnected(handle: connection.handle) }
        if let why = ConnectionParameterPolicy.invalidity(
            intervalMin: parameters.connectionIntervalMin, intervalMax: parameters.connectionIntervalMax,
            latency: parameters.maxLatency, timeout: parameters.supervisionTimeout)
        {
            throw .invalidArgument("connection parameters: \(why)")
        }
        let handle = connection.handle
        expect(.update(handle))
        defer { expectations[.update(handle)] = nil }
        do throws(HCIError) {
            _ = try await driver.sendAccepted(
                LEConnectionUpdateCommand(connectionHandle: handle, connectionParameters: parameters))
        } catch {
            throw .hci(error)
        }
        switch await wait(for: .update(handle), timeout: configuration.updateTimeout, cancellable: false) {
        case .updated(let complete):
            guard complete.status == .success else {
                throw .hci(.commandFailed(opcode: LEConnectionUpdateCommand.opcode, status: complete.status))
            }
            return connection.parameters
        case .disconnected(let complete): throw .l2cap(.disconnected(handle: handle, reason: complete.reason))
        case .closed(let reason): throw .closed(reason)
        default: throw .timeout("LE Connection Update Complete for handle 0x\(String(handle, radix: 16))")
        }
    }

    // MARK: - Events

    func connectionCompleted(_ completion: ConnectionCompletion) {
        let matches =
            pendingConnect.map { pending in
                completion.status != .success
                    || (completion.role == .central
                        && pending.contains {
                            completion.peerAddress == $0.address && completion.peerAddressType.addressType == $0.type
                        })
            } ?? false
        if completion.status == .success, acceptsPeripheralConnection(completion) {
            acceptPeripheralConnection(completion)
            return
        }
        guard completion.status == .success else {
            if matches {
                signal(.connection, .connectFailed(completion.status))
            } else {
                logger.info("connection complete \(completion.status) with no connect pending")
            }
            return
        }
        guard matches, expectations.keys.contains(.connection) else {
            // Not ours to keep (we are not advertising; the attempt was abandoned): drop it.
            logger.warning(
                "unexpected LE connection 0x\(String(completion.handle, radix: 16)) to \(completion.peerAddress) (\(completion.role)); disconnecting"
            )
            counters.withLock { $0.unexpectedConnections += 1 }
            control.yield(.disconnect(handle: completion.handle, .remoteUserTerminatedConnection))
            return
        }
        do throws(L2CAPError) {
            // Opened here, while the inbound pump waits, so no ACL data of this link is missed.
            let channel = try l2cap.connectionOpened(handle: completion.handle, role: completion.role)
            let connection = LEConnection(
                handle: completion.handle, peerAddress: completion.peerAddress,
                peerAddressType: completion.peerAddressType, role: completion.role,
                parameters: completion.parameters, channel: channel)
            connections[completion.handle] = connection
            logger.info("\(connection) up: \(completion.parameters)")
            signal(.connection, .connected(connection))
        } catch {
            logger.error("L2CAP refused connection 0x\(String(completion.handle, radix: 16)): \(error)")
            control.yield(.disconnect(handle: completion.handle, .remoteUserTerminatedConnection))
            signal(.connection, .connectFailed(.unspecifiedError))
        }
    }

    func disconnected(_ complete: DisconnectionCompleteEvent) {
        if complete.status == .success, let connection = connections.removeValue(forKey: complete.connectionHandle) {
            connection.ended(complete.reason)
            logger.info("\(connection) down: \(complete.reason)")
            peripheralConnectionEnded(handle: complete.connectionHandle)
            signal(.update(complete.connectionHandle), .disconnected(complete))
            signal(.encryption(complete.connectionHandle), .disconnected(complete))
        }
        signal(.disconnection(complete.connectionHandle), .disconnected(complete))
    }

    func connectionUpdated(_ complete: LEConnectionUpdateCompleteEvent) {
        if complete.status == .success, let connection = connections[complete.connectionHandle] {
            connection.updated(
                .init(
                    interval: complete.connectionInterval, peripheralLatency: complete.peripheralLatency,
                    supervisionTimeout: complete.supervisionTimeout))
            logger.debug("\(connection): \(connection.parameters)")
        }
        signal(.update(complete.connectionHandle), .updated(complete))
    }

    // MARK: - Waiting (bounded, no polling)

    /// Marks `key` as awaited: a signal that comes before the wait starts is kept for it.
    func expect(_ key: Awaited) {
        if expectations[key] == nil { expectations[key] = .some(nil) }
    }

    /// Resumes the waiters of `key`, or keeps the signal when `key` is expected and nobody waits yet.
    func signal(_ key: Awaited, _ signal: Signal) {
        let matching = waiters.filter { $0.value.key == key }
        if matching.isEmpty {
            if expectations.keys.contains(key) { expectations[key] = .some(signal) }
            return
        }
        for (id, waiter) in matching {
            waiters[id] = nil
            waiter.timer.cancel()
            waiter.continuation.resume(returning: signal)
        }
    }

    /// Waits for a signal of `key`, at most `timeout`; `cancellable` ends the wait with
    /// `.cancelled` when the calling task is cancelled.
    func wait(for key: Awaited, timeout: Duration, cancellable: Bool) async -> Signal {
        if let closedReason { return .closed(closedReason) }
        if case .some(.some(let kept)) = expectations[key] {
            expectations[key] = .some(nil)
            return kept
        }
        let id = nextWaiterID
        nextWaiterID += 1
        let body = {
            await withCheckedContinuation { (continuation: CheckedContinuation<Signal, Never>) in
                let timer = self.clock.schedule(after: timeout) { [weak self] in
                    await self?.interrupt(id, with: .timedOut)
                }
                self.waiters[id] = Waiter(key: key, continuation: continuation, timer: timer)
            }
        }
        guard cancellable else { return await body() }
        return await withTaskCancellationHandler {
            await body()
        } onCancel: {
            Task { await self.interrupt(id, with: .cancelled) }
        }
    }

    func interrupt(_ id: UInt64, with signal: Signal) {
        guard let waiter = waiters.removeValue(forKey: id) else { return }
        waiter.timer.cancel()
        waiter.continuation.resume(returning: signal)
    }

    private func acquireConnectSlot() async {
        guard connectBusy else {
            connectBusy = true
            return
        }
        await withCheckedContinuation { connectQueue.append($0) }
    }

    private func releaseConnectSlot() {
        if connectQueue.isEmpty {
            connectBusy = false
        } else {
            connectQueue.removeFirst().resume()
        }
    }
}

extension LEHost.Signal: Equatable {
    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.timedOut, .timedOut), (.cancelled, .cancelled): return true
        case (.connectFailed(let a), .connectFailed(let b)): return a == b
        case (.closed(let a), .closed(let b)): return a == b
        case (.connected(let a), .connected(let b)): return a === b
        case (.disconnected(let a), .disconnected(let b)): return a == b
        case (.updated(let a), .updated(let b)): return a == b
        default: return false
        }
    }
}
