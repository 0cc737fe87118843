import ATT
import Bluetooth
import HCI

/// Extended advertising with one advertising set and legacy PDUs (what an LE peripheral host
/// needs to be connected and scanned by centrals of every kind): parameters, data and scan
/// response data (fragment operations joined), the set's random address, enable with a
/// duration, removal, and LE Advertising Set Terminated when a central connects or the
/// duration ends.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.52–§7.8.60; §7.7.65.18
extension VirtualController {
    /// One advertising set as the host configured it.
    struct AdvertisingSet {
        var handle: UInt8
        var properties: LEAdvertisingEventProperties
        var ownAddressType: LEOwnAddressType
        var randomAddress: BluetoothAddress?
        var advertisingData: [UInt8] = []
        var scanResponseData: [UInt8] = []
        /// Fragments of an operation in progress.
        var pendingData: [UInt8]?
        var pendingScanResponse: [UInt8]?
        var durationTimer: ScheduledTimer?
    }

    /// Legacy PDUs carry at most 31 octets.
    static let legacyDataLength = 31

    func setExtendedAdvertisingParameters(_ command: LESetExtendedAdvertisingParametersV1Command) async {
        typealias C = LESetExtendedAdvertisingParametersV1Command
        if let set = advertisingSet, set.handle != command.advertisingHandle {
            await complete(opcode: C.opcode, returnParameters: [HCIStatus.limitReached.rawValue])
            return
        }
        guard advertisingSet?.durationTimer == nil, !(advertisingSetEnabled) else {
            await complete(opcode: C.opcode, returnParameters: [HCIStatus.commandDisallowed.rawValue])
            return
        }
        let properties = command.advertisingEventProperties
        // Legacy PDUs only, undirected: ADV_IND, ADV_SCAN_IND, ADV_NONCONN_IND.
        let legacy: [LEAdvertisingEventProperties] = [
            [.useLegacyPDUs, .connectable, .scannable], [.useLegacyPDUs, .scannable], [.useLegacyPDUs],
        ]
        guard legacy.contains(properties), command.advertisingFilterPolicy == .acceptAll,
            command.ownAddressType == .public || command.ownAddressType == .random,
            command.primaryAdvertisingPHY == .le1M
        else {
            await complete(opcode: C.opcode, returnParameters: [HCIStatus.unsupportedFeatureOrParameterValue.rawValue])
            return
        }
        guard command.primaryAdvertisingIntervalMin <= command.primaryAdvertisingIntervalMax,
            command.primaryAdvertisingIntervalMin >= 0x20, !command.primaryAdvertisingChannelMap.isEmpty
        else {
            await complete(opcode: C.opcode, returnParameters: [HCIStatus.invalidHCICommandParameters.rawValue])
            return
        }
        var set =
            advertisingSet
            ?? AdvertisingSet(
                handle: command.advertisingHandle, properties: properties, ownAddressType: command.ownAddressType)
        set.properties = properties
        set.ownAddressType = command.ownAddressType
        advertisingSet = set
        await complete(C.self, .init(selectedTxPower: 0))
    }

    func setAdvertisingSetRandomAddress(_ command: LESetAdvertisingSetRandomAddressCommand) async {
        guard var set = advertisingSet, set.handle == command.advertisingHandle else {
            await complete(
                LESetAdvertisingSetRandomAddressCommand.self,
                StatusReturnParameters(status: .unknownAdvertisingIdentifier))
            return
        }
        set.randomAddress = command.randomAddress
        advertisingSet = set
        await complete(LESetAdvertisingSetRandomAddressCommand.self, StatusReturnParameters())
    }

    /// Joins one data operation into `current`/`pending`; the status to answer.
    static func apply(
        _ operation: LEAdvertisingDataOperation, _ fragment: [UInt8], to current: inout [UInt8],
        pending: inout [UInt8]?
    ) -> HCIStatus {
        switch operation {
        case .complete:
            pending = nil
            guard fragment.count <= legacyDataLength else { return .invalidHCICommandParameters }
            current = fragment
        case .firstFragment:
            pending = fragment
        case .intermediateFragment:
            guard pending != nil else { return .invalidHCICommandParameters }
            pending? += fragment
        case .lastFragment:
            guard let joined = pending.map({ $0 + fragment }) else { return .invalidHCICommandParameters }
            pending = nil
            guard joined.count <= legacyDataLength else { return .invalidHCICommandParameters }
            current = joined
        case .unchanged:
            guard fragment.isEmpty else { return .invalidHCICommandParameters }
        }
        return .success
    }

    func setExtendedAdvertisingData(_ command: LESetExtendedAdvertisingDataCommand) async {
        guard var set = advertisingSet, set.handle == command.advertisingHandle else {
            await complete(
                LESetExtendedAdvertisingDataCommand.self, StatusReturnParameters(status: .unknownAdvertisingIdentifier))
            return
        }
        let status = Self.apply(
            command.operation, command.advertisingData, to: &set.advertisingData, pending: &set.pendingData)
        advertisingSet = set
        advertiser?.update(advertisingData: set.advertisingData)
        await complete(LESetExtendedAdvertisingDataCommand.self, StatusReturnParameters(status: status))
    }

    func setExtendedScanResponseData(_ command: LESetExtendedScanResponseDataCommand) async {
        guard var set = advertisingSet, set.handle == command.advertisingHandle else {
            await complete(
                LESetExtendedScanResponseDataCommand.self, StatusReturnParameters(status: .unknownAdvertisingIdentifier)
            )
            return
        }
        let status = Self.apply(
            command.operation, command.scanResponseData, to: &set.scanResponseData, pending: &set.pendingScanResponse)
        advertisingSet = set
        advertiser?.update(scanResponseData: set.scanResponseData)
        await complete(LESetExtendedScanResponseDataCommand.self, StatusReturnParameters(status: status))
    }

    func setExtendedAdvertisingEnable(_ command: LESetExtendedAdvertisingEnableCommand) async {
        typealias C = LESetExtendedAdvertisingEnableCommand
        guard command.enable else {
            // Disable: all sets when none is named.
            if command.sets.isEmpty || command.sets.contains(where: { $0.advertisingHandle == advertisingSet?.handle })
            {
                stopExtendedAdvertising()
            }
            await complete(C.self, StatusReturnParameters())
            return
        }
        guard command.sets.count == 1, let entry = command.sets.first, let set = advertisingSet,
            set.handle == entry.advertisingHandle
        else {
            await complete(C.self, StatusReturnParameters(status: .unknownAdvertisingIdentifier))
            return
        }
        guard entry.maxExtendedAdvertisingEvents == 0 else {
            await complete(C.self, StatusReturnParameters(status: .unsupportedFeatureOrParameterValue))
            return
        }
        let random = set.ownAddressType == .random
        guard !random || set.randomAddress != nil else {
            await complete(C.self, StatusReturnParameters(status: .invalidHCICommandParameters))
            return
        }
        if advertiser == nil {
            let proxy = HostAdvertiser(
                controller: self,
                state: .init(
                    address: random ? set.randomAddress! : configuration.address,
                    addressType: random ? .random : .public,
                    advertisingData: set.advertisingData, scanResponseData: set.scanResponseData,
                    isConnectable: set.properties.contains(.connectable),
                    isScannable: set.properties.contains(.scannable), extendedSet: set.handle))
            advertiser = proxy
            link.add(proxy)
        }
        advertisingSet?.durationTimer?.cancel()
        advertisingSet?.durationTimer = nil
        if entry.duration != 0 {
            let expected = generation
            advertisingSet?.durationTimer = clock.schedule(after: .milliseconds(10 * Int(entry.duration))) {
                [weak self] in
                await self?.advertisingDurationElapsed(generation: expected)
            }
        }
        await complete(C.self, StatusReturnParameters())
    }

    /// Whether the advertising set is being advertised.
    var advertisingSetEnabled: Bool { advertiser?.extendedSet != nil }

    func stopExtendedAdvertising() {
        advertisingSet?.durationTimer?.cancel()
        advertisingSet?.durationTimer = nil
        if advertisingSetEnabled { stopAdvertising() }
    }

    func advertisingDurationElapsed(generation expected: Int) async {
        guard expected == generation, let set = advertisingSet, set.durationTimer != nil else { return }
        stopExtendedAdvertising()
        await emitAdvertisingSetTerminated(status: .advertisingTimeout, handle: set.handle, connectionHandle: 0)
    }

    func removeAdvertisingSet(_ handle: UInt8?) async -> HCIStatus {
        guard let set = advertisingSet, handle == nil || handle == set.handle else {
            return handle == nil ? .success : .unknownAdvertisingIdentifier
        }
        guard !advertisingSetEnabled else { return .commandDisallowed }
        advertisingSet = nil
        return .success
    }

    /// LE Advertising Set Terminated (subevent 0x12): Status, Advertising_Handle,
    /// Connection_Handle, Num_Completed_Extended_Advertising_Events.
    func emitAdvertisingSetTerminated(status: HCIStatus, handle: UInt8, connectionHandle: UInt16) async {
        let parameters: [UInt8] = [
            status.rawValue, handle, UInt8(connectionHandle & 0xFF), UInt8(connectionHandle >> 8), 0x00,
        ]
        await emit(.leMeta(.unknown(subevent: LESubeventCode(rawValue: 0x12), parameters: parameters)))
    }
}
