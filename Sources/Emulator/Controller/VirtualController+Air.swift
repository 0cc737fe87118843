import Bluetooth
import HCI

/// The virtual controller's link layer: advertising events of the peripherals, what a scanner
/// and an initiator make of them, and connections.
/// - SeeAlso: Core Spec 5.4, Vol 6, Part B, §4.4 (advertising, scanning, initiating), §5.1
extension VirtualController {
    /// Keeps one advertising-event timer running while scanning or initiating.
    func scheduleAdvertisingEvents() {
        guard scanning || initiating != nil else {
            tick?.cancel()
            tick = nil
            return
        }
        guard tick == nil else { return }
        let expected = generation
        tick = clock.schedule(after: configuration.advertisingInterval) { [weak self] in
            await self?.advertisingEvent(generation: expected)
        }
    }

    /// One advertising event of every peripheral not connected: the initiator connects to the
    /// one it waits for if it advertises connectably; the scanner reports the others.
    func advertisingEvent(generation expected: Int) async {
        guard expected == generation else { return }
        tick = nil
        let connected = Set(connections.values.compactMap { $0.peripheral.map(ObjectIdentifier.init) })
        let own = advertiser.map(ObjectIdentifier.init)
        for peripheral in link.peripherals
        where !connected.contains(ObjectIdentifier(peripheral)) && ObjectIdentifier(peripheral) != own {
            if let request = initiating, peripheral.isConnectable, matches(request, peripheral) {
                await connect(peripheral, request)
                continue
            }
            if scanning { await report(peripheral) }
        }
        scheduleAdvertisingEvents()
    }

    func matches(_ request: LECreateConnectionCommand, _ peripheral: any VirtualPeripheral) -> Bool {
        if request.initiatorFilterPolicy == .filterAcceptList {
            let type: LEFilterAcceptListAddressType = peripheral.addressType == .public ? .public : .random
            return filterAcceptList.contains(FilterAcceptListEntry(type: type, address: peripheral.address))
        }
        guard request.peerAddress == peripheral.address else { return false }
        switch request.peerAddressType {
        case .public, .publicIdentity: return peripheral.addressType == .public
        case .random, .randomIdentity: return peripheral.addressType == .random
        }
    }

    /// The advertising report(s) a scanner makes of one advertising event: the advertising PDU,
    /// then, when scanning actively and the PDU is scannable, the scan response.
    func report(_ peripheral: any VirtualPeripheral) async {
        let scannable = peripheral.isConnectable || peripheral.isScannable
        let eventType: LEAdvertisingEventType =
            peripheral.isConnectable ? .advInd : (scannable ? .advScanInd : .advNonconnInd)
        await deliver(peripheral, eventType, peripheral.advertisingData)
        if scanParameters.leScanType == LEScanType.active, scannable {
            await deliver(peripheral, .scanRsp, peripheral.scanResponseData)
        }
    }

    func deliver(_ peripheral: any VirtualPeripheral, _ eventType: LEAdvertisingEventType, _ data: [UInt8]) async {
        if filterDuplicates {
            let key = ReportKey(
                address: peripheral.address, type: peripheral.addressType, eventType: eventType.rawValue)
            guard reported.insert(key).inserted else { return }
        }
        let report = LEAdvertisingReport(
            eventType: eventType, addressType: peripheral.addressType == .public ? .public : .random,
            address: peripheral.address, data: Array(data.prefix(LEAdvertisingReport.maxDataLength)),
            rssi: peripheral.rssi)
        if extendedReports {
            let extended = extendedReport(report, connectable: peripheral.isConnectable)
            await emit(.leMeta(.extendedAdvertisingReport(LEExtendedAdvertisingReportEvent(reports: [extended]))))
        } else {
            await emit(.leMeta(.advertisingReport(LEAdvertisingReportEvent(reports: [report]))))
        }
    }

    // MARK: Initiating

    /// The Filter Accept List may change unless it is in use: by an initiator with filter policy
    /// 0x01 (Vol 4, Part E, §7.8.16; scanning and advertising here never use it).
    var filterAcceptListChangeAllowed: Bool {
        initiating?.initiatorFilterPolicy != .filterAcceptList
    }

    /// LE Create Connection, or LE Extended Create Connection (`extended`) translated to it.
    func createConnection(_ command: LECreateConnectionCommand, extended: Bool) async {
        let opcode = extended ? LEExtendedCreateConnectionV1Command.opcode : LECreateConnectionCommand.opcode
        guard initiating == nil else {
            await status(opcode, .commandDisallowed)
            return
        }
        if command.initiatorFilterPolicy == .filterAcceptList, filterAcceptList.isEmpty {
            // Nothing to connect to (a controller would wait forever; the host meant something).
            await status(opcode, .invalidHCICommandParameters)
            return
        }
        let parameters = command.connectionParameters
        guard parameters.connectionIntervalMin <= parameters.connectionIntervalMax,
            (0x0006...0x0C80).contains(parameters.connectionIntervalMin),
            (0x0006...0x0C80).contains(parameters.connectionIntervalMax),
            (0x000A...0x0C80).contains(parameters.supervisionTimeout),
            parameters.maxLatency <= 0x01F3
        else {
            await status(opcode, .invalidHCICommandParameters)
            return
        }
        if command.ownAddressType == .random, randomAddress == nil {
            await status(opcode, .invalidHCICommandParameters)
            return
        }
        if connections.values.contains(where: { $0.peripheral.map { matches(command, $0) } ?? false }) {
            await status(opcode, .connectionAlreadyExists)
            return
        }
        initiating = command
        initiatingExtended = extended
        await status(opcode, .success)
        scheduleAdvertisingEvents()
    }

    func cancelCreateConnection() async {
        guard let request = initiating else {
            await complete(LECreateConnectionCancelCommand.self, StatusReturnParameters(status: .commandDisallowed))
            return
        }
        initiating = nil
        scheduleAdvertisingEvents()
        await complete(LECreateConnectionCancelCommand.self, StatusReturnParameters())
        await emitConnectionComplete(
            status: .unknownConnectionIdentifier, handle: 0, request: request,
            parameters: .init(interval: 0, latency: 0, supervisionTimeout: 0))
    }

    func connect(_ peripheral: any VirtualPeripheral, _ request: LECreateConnectionCommand) async {
        initiating = nil
        let handle = nextHandle
        nextHandle = nextHandle >= 0x0EFF ? 0x0040 : nextHandle + 1
        let requested = request.connectionParameters
        let parameters = VirtualLinkConnection.Parameters(
            interval: requested.connectionIntervalMin, latency: requested.maxLatency,
            supervisionTimeout: requested.supervisionTimeout)
        connections[handle] = Connection(remote: .peripheral(peripheral), parameters: parameters, pending: .init())
        // The peripheral's side learns of the connection first (its link layer answered the
        // CONNECT_IND): once our host hears LE Connection Complete and sends its first PDU, the
        // peripheral (a host behind another virtual controller included) is ready for it. What
        // the peripheral sends meanwhile waits until our host knows the connection.
        let ownType: AddressType = request.ownAddressType == .random ? .random : .public
        let ownAddress = ownType == .random ? (randomAddress ?? configuration.address) : configuration.address
        await peripheral.connected(
            VirtualLinkConnection(
                controller: self, handle: handle, centralAddress: ownAddress, centralAddressType: ownType))
        // Through the Filter Accept List, the completion names the device that was found.
        var completed = request
        completed.peerAddress = peripheral.address
        completed.peerAddressType = peripheral.addressType == .public ? .public : .random
        await emitConnectionComplete(status: .success, handle: handle, request: completed, parameters: parameters)
        await releasePending(handle)
    }

    /// Our host knows connection `handle` now: forwards what the peripheral sent meanwhile, in
    /// order (frames that arrive while this runs join the queue), then a disconnect it asked for.
    func releasePending(_ handle: UInt16) async {
        while var connection = connections[handle], var pending = connection.pending {
            if pending.frames.isEmpty {
                connection.pending = nil
                connections[handle] = connection
                if let reason = pending.disconnect { await peripheralDisconnect(handle: handle, reason: reason) }
                return
            }
            let frame = pending.frames.removeFirst()
            connection.pending = pending
            connections[handle] = connection
            await sendFrame(handle: handle, channelID: frame.channelID, payload: frame.payload)
        }
    }

    /// LE Enhanced Connection Complete for a connection LE Extended Create Connection made,
    /// LE Connection Complete for LE Create Connection (as Bumble's controller does); the
    /// other one when the host masked the first (Vol 4 Part E §7.7.65.1, §7.7.65.10).
    func emitConnectionComplete(
        status: HCIStatus, handle: UInt16, request: LECreateConnectionCommand,
        parameters: VirtualLinkConnection.Parameters
    ) async {
        let peerType: LEAddressType =
            switch request.peerAddressType {
            case .public: .public
            case .random: .random
            case .publicIdentity: .publicIdentity
            case .randomIdentity: .randomIdentity
            }
        let legacyUnmasked = leEventMask.rawValue & 1 == 1
        let enhancedUnmasked = leEventMask.rawValue >> 9 & 1 == 1
        if enhancedUnmasked, initiatingExtended || !legacyUnmasked {
            await emit(
                .leMeta(
                    .enhancedConnectionComplete(
                        LEEnhancedConnectionCompleteEvent(
                            status: status, connectionHandle: handle, role: .central, peerAddressType: peerType,
                            peerAddress: request.peerAddress,
                            connectionInterval: parameters.interval, peripheralLatency: parameters.latency,
                            supervisionTimeout: parameters.supervisionTimeout, centralClockAccuracy: 0x00))))
            return
        }
        await emit(
            .leMeta(
                .connectionComplete(
                    LEConnectionCompleteEvent(
                        status: status, connectionHandle: handle, role: .central, peerAddressType: peerType,
                        peerAddress: request.peerAddress, connectionInterval: parameters.interval,
                        peripheralLatency: parameters.latency, supervisionTimeout: parameters.supervisionTimeout,
                        centralClockAccuracy: 0x00))))
    }

    // MARK: Connections

    func disconnect(_ command: DisconnectCommand) async {
        guard DisconnectCommand.permittedReasons.contains(command.reason) else {
            await status(DisconnectCommand.opcode, .invalidHCICommandParameters)
            return
        }
        guard let connection = connections.removeValue(forKey: command.connectionHandle) else {
            await status(DisconnectCommand.opcode, .unknownConnectionIdentifier)
            return
        }
        reassembler.reset(handle: command.connectionHandle)
        dropKeyRequest(handle: command.connectionHandle)
        await status(DisconnectCommand.opcode, .success)
        await emit(
            .disconnectionComplete(
                DisconnectionCompleteEvent(
                    status: .success, connectionHandle: command.connectionHandle,
                    reason: .connectionTerminatedByLocalHost)))
        await connection.remoteDisconnected(command.reason)
        scheduleAdvertisingEvents()
    }

    func updateConnection(_ command: LEConnectionUpdateCommand) async {
        guard var connection = connections[command.connectionHandle] else {
            await status(LEConnectionUpdateCommand.opcode, .unknownConnectionIdentifier)
            return
        }
        let requested = command.connectionParameters
        guard requested.connectionIntervalMin <= requested.connectionIntervalMax,
            (0x0006...0x0C80).contains(requested.connectionIntervalMin),
            (0x0006...0x0C80).contains(requested.connectionIntervalMax),
            (0x000A...0x0C80).contains(requested.supervisionTimeout), requested.maxLatency <= 0x01F3
        else {
            await status(LEConnectionUpdateCommand.opcode, .invalidHCICommandParameters)
            return
        }
        connection.parameters = .init(
            interval: requested.connectionIntervalMin, latency: requested.maxLatency,
            supervisionTimeout: requested.supervisionTimeout)
        connections[command.connectionHandle] = connection
        await status(LEConnectionUpdateCommand.opcode, .success)
        if let peripheral = connection.peripheral {
            await peripheral.connectionParametersChanged(connection.parameters)
        }
        await emit(
            .leMeta(
                .connectionUpdateComplete(
                    LEConnectionUpdateCompleteEvent(
                        status: .success, connectionHandle: command.connectionHandle,
                        connectionInterval: connection.parameters.interval,
                        peripheralLatency: connection.parameters.latency,
                        supervisionTimeout: connection.parameters.supervisionTimeout))))
    }
}

/// One Filter Accept List entry.
struct FilterAcceptListEntry: Hashable, Sendable {
    var type: LEFilterAcceptListAddressType
    var address: BluetoothAddress
}

extension VirtualController {
    /// The Filter Accept List's capacity (LE Read Filter Accept List Size).
    static let filterAcceptListSize = 16
}

extension VirtualController {
    /// The largest data length this controller and every emulated peer support (the Core's
    /// maximum: 251 octets, 2120 µs on LE 1M).
    static let maximumDataLength = (octets: UInt16(251), time: UInt16(2120))

    /// The PHY the link layer picks from a host's preference: LE 2M when allowed (faster), else
    /// LE 1M, else LE Coded; the current one when the host has no preference. Every emulated peer
    /// supports all three.
    static func choosePHY(_ mask: LEPHYMask, noPreference: Bool, current: LEPHY) -> LEPHY {
        if noPreference || mask.isEmpty { return current }
        if mask.contains(.le2M) { return .le2M }
        if mask.contains(.le1M) { return .le1M }
        if mask.contains(.leCoded) { return .leCoded }
        return current
    }

    /// HCI_LE_Set_PHY: Command Status, then the PHY update procedure's outcome as LE PHY Update
    /// Complete, also when neither PHY changes (the host asked).
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.49, §7.7.65.12; Vol 6, Part B, §5.1.10
    func setPHY(_ command: LESetPHYCommand) async {
        guard var connection = connections[command.connectionHandle] else {
            await status(LESetPHYCommand.opcode, .unknownConnectionIdentifier)
            return
        }
        let known: LEPHYMask = [.le1M, .le2M, .leCoded]
        let noTX = command.allPHYs.contains(.noTXPreference)
        let noRX = command.allPHYs.contains(.noRXPreference)
        // A preference naming no PHY, or one this controller does not know (bits 3–7 reserved).
        guard (noTX || !command.txPHYs.isEmpty) && (noRX || !command.rxPHYs.isEmpty),
            command.txPHYs.isSubset(of: known), command.rxPHYs.isSubset(of: known)
        else {
            await status(LESetPHYCommand.opcode, .unsupportedFeatureOrParameterValue)
            return
        }
        await status(LESetPHYCommand.opcode, .success)
        connection.txPHY = Self.choosePHY(command.txPHYs, noPreference: noTX, current: connection.txPHY)
        connection.rxPHY = Self.choosePHY(command.rxPHYs, noPreference: noRX, current: connection.rxPHY)
        connections[command.connectionHandle] = connection
        await emit(
            .leMeta(
                .phyUpdateComplete(
                    LEPHYUpdateCompleteEvent(
                        status: .success, connectionHandle: command.connectionHandle, txPHY: connection.txPHY,
                        rxPHY: connection.rxPHY))))
    }

    /// HCI_LE_Set_Data_Length: Command Complete, then — when the largest payload or time either
    /// way changed — LE Data Length Change. The peer (every emulated one supports 251 octets)
    /// answers the data length update procedure with its own maximum, so our receive side grows
    /// to it along with our transmit side.
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.33, §7.7.65.7; Vol 6, Part B, §4.5.10, §5.1.9
    func setDataLength(_ command: LESetDataLengthCommand) async {
        guard var connection = connections[command.connectionHandle] else {
            await complete(
                LESetDataLengthCommand.self, .init(status: .unknownConnectionIdentifier, connectionHandle: command.connectionHandle))
            return
        }
        guard (27...251).contains(command.txOctets), (328...17040).contains(command.txTime) else {
            await complete(
                LESetDataLengthCommand.self,
                .init(status: .unsupportedFeatureOrParameterValue, connectionHandle: command.connectionHandle))
            return
        }
        await complete(LESetDataLengthCommand.self, .init(connectionHandle: command.connectionHandle))
        let before = (connection.maxTXOctets, connection.maxTXTime, connection.maxRXOctets, connection.maxRXTime)
        connection.maxTXOctets = min(command.txOctets, Self.maximumDataLength.octets)
        connection.maxTXTime = min(command.txTime, Self.maximumDataLength.time)
        connection.maxRXOctets = Self.maximumDataLength.octets
        connection.maxRXTime = Self.maximumDataLength.time
        connections[command.connectionHandle] = connection
        guard before != (connection.maxTXOctets, connection.maxTXTime, connection.maxRXOctets, connection.maxRXTime) else { return }
        await emit(
            .leMeta(
                .dataLengthChange(
                    LEDataLengthChangeEvent(
                        connectionHandle: command.connectionHandle, maxTXOctets: connection.maxTXOctets,
                        maxTXTime: connection.maxTXTime, maxRXOctets: connection.maxRXOctets,
                        maxRXTime: connection.maxRXTime))))
    }
}
