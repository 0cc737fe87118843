import ATT
import Bluetooth
import HCI
import L2CAP

/// What `LEHost.advertise(_:)` puts on the air.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.5–§7.8.9 (legacy), §7.8.53–§7.8.56 (extended)
public struct LEAdvertisingParameters: Hashable, Sendable {
    /// AdvData (at most 31 octets: legacy PDUs are used on both command sets).
    public var advertisingData: [UInt8]
    /// ScanRspData (at most 31 octets).
    public var scanResponseData: [UInt8]
    /// Advertising_Interval_Min/Max in 0.625 ms units (0x0020–0x4000); 100–150 ms by default.
    public var intervalMin: UInt16 = 0x00A0
    public var intervalMax: UInt16 = 0x00F0
    /// ADV_IND when true (a central may connect); else ADV_SCAN_IND with scan response data,
    /// ADV_NONCONN_IND without.
    public var connectable = true
    /// Advertise from this random (static) address instead of the controller's public one.
    public var randomAddress: BluetoothAddress?
    /// Connections accepted at once; advertising resumes while fewer are up.
    public var maximumConnections = 1

    public init(advertisingData: [UInt8], scanResponseData: [UInt8] = []) {
        self.advertisingData = advertisingData
        self.scanResponseData = scanResponseData
    }

    /// Why the controller would refuse these parameters, `nil` when they are valid.
    public var invalidity: String? {
        if advertisingData.count > 31 { return "advertising data is \(advertisingData.count) octets (at most 31)" }
        if scanResponseData.count > 31 { return "scan response data is \(scanResponseData.count) octets (at most 31)" }
        guard (0x0020...0x4000).contains(intervalMin), (0x0020...0x4000).contains(intervalMax),
            intervalMin <= intervalMax
        else { return "advertising interval \(intervalMin)–\(intervalMax) outside 0x0020–0x4000 or reversed" }
        if maximumConnections < 1 { return "maximum connections must be at least 1" }
        return nil
    }

    /// The legacy advertising type these parameters ask for.
    var legacyType: LEAdvertisingType {
        if connectable { return .connectableUndirected }
        return scanResponseData.isEmpty ? .nonConnectableUndirected : .scannableUndirected
    }

    /// The same PDUs as legacy advertising event properties of an extended set.
    var extendedProperties: LEAdvertisingEventProperties {
        if connectable { return [.connectable, .scannable, .useLegacyPDUs] }
        return scanResponseData.isEmpty ? [.useLegacyPDUs] : [.scannable, .useLegacyPDUs]
    }
}

extension LEHost {
    /// The advertising set used with the extended commands.
    static let advertisingSetHandle: UInt8 = 0

    /// The peripheral role while advertising: where accepted connections go.
    struct AdvertisingSession {
        let id: UInt64
        let parameters: LEAdvertisingParameters
        let continuation: AsyncStream<LEConnection>.Continuation
        /// Connections accepted in this session that are still up.
        var accepted: Set<UInt16> = []
    }

    /// Whether advertising uses the extended commands (LE Set Extended Advertising *): when the
    /// host chose the extended command set (a controller refuses legacy advertising commands
    /// once extended ones were used) and the controller claims them.
    public nonisolated var usesExtendedAdvertising: Bool {
        guard usesExtendedCommands, let commands = info.supportedCommands else { return false }
        return commands.supports(.leSetExtendedAdvertisingParametersV1) == true
            && commands.supports(.leSetExtendedAdvertisingData) == true
            && commands.supports(.leSetExtendedScanResponseData) == true
            && commands.supports(.leSetExtendedAdvertisingEnable) == true
    }

    /// Whether the host is advertising (or accepting connections between advertising runs).
    public var isAdvertising: Bool { advertising != nil }

    /// Starts advertising as `parameters` say and returns the connections centrals make to us
    /// (role peripheral, their ATT channel open on L2CAP), in order. The controller stops
    /// advertising when a central connects; the host advertises again while fewer than
    /// `maximumConnections` accepted connections are up, and after every disconnect.
    ///
    /// The stream finishes on `stopAdvertising()` or when the host closes; ending its iteration
    /// stops advertising. Accepted connections stay up until the caller (or the peer) ends them.
    /// - Throws: `.invalidArgument` for bad parameters or when already advertising, `.hci` when
    ///   the controller refuses a command.
    public func advertise(_ parameters: LEAdvertisingParameters) async throws(LEHostError) -> AsyncStream<LEConnection> {
        try checkOpen()
        if let why = parameters.invalidity { throw .invalidArgument(why) }
        guard advertising == nil else { throw .invalidArgument("already advertising") }
        let id = nextWaiterID
        nextWaiterID += 1
        let (stream, continuation) = AsyncStream.makeStream(of: LEConnection.self, bufferingPolicy: .bufferingOldest(8))
        continuation.onTermination = { [weak self] _ in
            Task { await self?.advertisingStreamEnded(id) }
        }
        advertising = AdvertisingSession(id: id, parameters: parameters, continuation: continuation)
        do throws(HCIError) {
            try await configureAdvertising(parameters)
            try await setAdvertisingEnabled(true)
        } catch {
            if advertising?.id == id { advertising = nil }
            continuation.finish()
            throw .hci(error)
        }
        logger.info(
            "advertising (\(usesExtendedAdvertising ? "extended set, legacy PDUs" : "legacy"), \(parameters.legacyType))"
        )
        return stream
    }

    /// Stops advertising (LE Set (Extended) Advertising Enable off) and finishes the stream of
    /// connections. Connections already accepted stay up.
    public func stopAdvertising() async throws(LEHostError) {
        guard let session = advertising else { return }
        advertising = nil
        session.continuation.finish()
        try checkOpen()
        do throws(HCIError) {
            try await setAdvertisingEnabled(false)
        } catch {
            throw .hci(error)
        }
    }

    // MARK: - Commands

    private func configureAdvertising(_ parameters: LEAdvertisingParameters) async throws(HCIError) {
        let handle = Self.advertisingSetHandle
        if usesExtendedAdvertising {
            _ = try await driver.send(
                LESetExtendedAdvertisingParametersV1Command(
                    advertisingHandle: handle, advertisingEventProperties: parameters.extendedProperties,
                    primaryAdvertisingIntervalMin: UInt32(parameters.intervalMin),
                    primaryAdvertisingIntervalMax: UInt32(parameters.intervalMax),
                    ownAddressType: parameters.randomAddress == nil ? .public : .random))
            if let random = parameters.randomAddress {
                _ = try await driver.send(
                    LESetAdvertisingSetRandomAddressCommand(advertisingHandle: handle, randomAddress: random))
            }
            _ = try await driver.send(
                LESetExtendedAdvertisingDataCommand(advertisingHandle: handle, advertisingData: parameters.advertisingData))
            if parameters.connectable || !parameters.scanResponseData.isEmpty {
                _ = try await driver.send(
                    LESetExtendedScanResponseDataCommand(
                        advertisingHandle: handle, scanResponseData: parameters.scanResponseData))
            }
        } else {
            if let random = parameters.randomAddress {
                _ = try await driver.send(LESetRandomAddressCommand(randomAddress: random))
            }
            _ = try await driver.send(
                LESetAdvertisingParametersCommand(
                    advertisingIntervalMin: parameters.intervalMin, advertisingIntervalMax: parameters.intervalMax,
                    advertisingType: parameters.legacyType,
                    ownAddressType: parameters.randomAddress == nil ? .public : .random))
            _ = try await driver.send(LESetAdvertisingDataCommand(advertisingData: parameters.advertisingData))
            _ = try await driver.send(LESetScanResponseDataCommand(scanResponseData: parameters.scanResponseData))
        }
    }

    private func setAdvertisingEnabled(_ enabled: Bool) async throws(HCIError) {
        do throws(HCIError) {
            if usesExtendedAdvertising {
                _ = try await driver.send(
                    LESetExtendedAdvertisingEnableCommand(
                        enable: enabled,
                        sets: [LEExtendedAdvertisingSetEnable(advertisingHandle: Self.advertisingSetHandle)]))
            } else {
                _ = try await driver.send(LESetAdvertisingEnableCommand(advertisingEnable: enabled))
            }
        } catch {
            // Disabling what the controller already stopped (a connection was made) is fine.
            if !enabled, case .commandFailed(_, let status) = error, status == .commandDisallowed { return }
            throw error
        }
    }

    // MARK: - Connections (called from LEHost+Connect.swift)

    /// Whether a successful connection complete event belongs to our advertising.
    func acceptsPeripheralConnection(_ completion: ConnectionCompletion) -> Bool {
        completion.role == .peripheral && advertising?.parameters.connectable == true
    }

    /// A central connected to our advertising: open L2CAP, hand the connection to the stream,
    /// and advertise again while there is room for more.
    func acceptPeripheralConnection(_ completion: ConnectionCompletion) {
        guard var session = advertising else { return }
        let connection: LEConnection
        do throws(L2CAPError) {
            // Opened here, while the inbound pump waits, so no ACL data of this link is missed.
            let channel = try l2cap.connectionOpened(handle: completion.handle, role: .peripheral)
            connection = LEConnection(
                handle: completion.handle, peerAddress: completion.peerAddress,
                peerAddressType: completion.peerAddressType, role: .peripheral,
                parameters: completion.parameters, channel: channel)
        } catch {
            logger.error("L2CAP refused connection 0x\(String(completion.handle, radix: 16)): \(error)")
            control.yield(.disconnect(handle: completion.handle, .remoteUserTerminatedConnection))
            resumeAdvertisingLater()
            return
        }
        connections[completion.handle] = connection
        logger.info("\(connection) accepted: \(completion.parameters)")
        if case .dropped = session.continuation.yield(connection) {
            logger.warning("\(connection): nobody takes the connections; disconnecting")
            control.yield(.disconnect(handle: completion.handle, .remoteUserTerminatedConnection))
        } else {
            session.accepted.insert(completion.handle)
            advertising = session
        }
        if session.accepted.count < session.parameters.maximumConnections { resumeAdvertisingLater() }
    }

    /// A connection ended: one accepted while advertising frees its place.
    func peripheralConnectionEnded(handle: UInt16) {
        guard var session = advertising, session.accepted.remove(handle) != nil else { return }
        advertising = session
        resumeAdvertisingLater()
    }

    /// The host ended: the stream of connections finishes.
    func advertisingEnded() {
        advertising?.continuation.finish()
        advertising = nil
    }

    private func resumeAdvertisingLater() {
        guard let id = advertising?.id else { return }
        Task { [weak self] in await self?.resumeAdvertising(id) }
    }

    /// Enables advertising again (the controller stopped when a central connected).
    private func resumeAdvertising(_ id: UInt64) async {
        guard closedReason == nil, let session = advertising, session.id == id,
            session.accepted.count < session.parameters.maximumConnections
        else { return }
        do throws(HCIError) {
            try await setAdvertisingEnabled(true)
            logger.debug("advertising again")
        } catch {
            // Already advertising (a second resume): Command Disallowed, harmless.
            if case .commandFailed(_, let status) = error, status == .commandDisallowed { return }
            if case .transportClosed = error { return }
            logger.warning("could not advertise again: \(error)")
            counters.withLock { $0.failedCommands += 1 }
        }
        // Stopped while the enable was on its way: switch it off again.
        if advertising?.id != id, closedReason == nil { try? await setAdvertisingEnabled(false) }
    }

    private func advertisingStreamEnded(_ id: UInt64) async {
        guard advertising?.id == id, closedReason == nil else { return }
        try? await stopAdvertising()
    }
}
