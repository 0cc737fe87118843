import Bluetooth
import HCI
import L2CAP
import Synchronization

/// The peripheral role of the virtual controller: legacy advertising by our host, seen on the
/// link as one more ``VirtualPeripheral``, and the connections a central makes to it.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.5–§7.8.9; Vol 6, Part B, §4.4.2
extension VirtualController {
    func setAdvertisingParameters(_ command: LESetAdvertisingParametersCommand) async {
        guard advertiser == nil else {
            await complete(LESetAdvertisingParametersCommand.self, StatusReturnParameters(status: .commandDisallowed))
            return
        }
        let directed =
            command.advertisingType == .connectableDirectedHighDuty
            || command.advertisingType == .connectableDirectedLowDuty
        let intervalsValid =
            directed
            || (command.advertisingIntervalMin <= command.advertisingIntervalMax
                && (0x0020...0x4000).contains(command.advertisingIntervalMin)
                && (0x0020...0x4000).contains(command.advertisingIntervalMax))
        guard intervalsValid, !command.advertisingChannelMap.isEmpty else {
            await complete(
                LESetAdvertisingParametersCommand.self, StatusReturnParameters(status: .invalidHCICommandParameters))
            return
        }
        // Directed advertising, privacy and filter accept lists are not emulated.
        guard !directed, command.advertisingFilterPolicy == .acceptAll,
            command.ownAddressType == .public || command.ownAddressType == .random
        else {
            await complete(
                LESetAdvertisingParametersCommand.self,
                StatusReturnParameters(status: .unsupportedFeatureOrParameterValue))
            return
        }
        advertisingParameters = command
        await complete(LESetAdvertisingParametersCommand.self, StatusReturnParameters())
    }

    func setAdvertisingEnable(_ enable: Bool) async {
        guard enable else {
            stopAdvertising()
            await complete(LESetAdvertisingEnableCommand.self, StatusReturnParameters())
            return
        }
        let random = advertisingParameters.ownAddressType == .random
        if random, randomAddress == nil {
            await complete(
                LESetAdvertisingEnableCommand.self, StatusReturnParameters(status: .invalidHCICommandParameters))
            return
        }
        if advertiser == nil {
            let type = advertisingParameters.advertisingType
            let proxy = HostAdvertiser(
                controller: self,
                state: .init(
                    address: random ? (randomAddress ?? configuration.address) : configuration.address,
                    addressType: random ? .random : .public, advertisingData: advertisingData,
                    scanResponseData: scanResponseData,
                    // ADV_SCAN_IND answers scan requests; ADV_NONCONN_IND neither.
                    isConnectable: type == .connectableUndirected,
                    isScannable: type != .nonConnectableUndirected))
            advertiser = proxy
            link.add(proxy)
        }
        await complete(LESetAdvertisingEnableCommand.self, StatusReturnParameters())
    }

    /// Takes our advertiser off the link.
    func stopAdvertising() {
        guard let proxy = advertiser else { return }
        advertiser = nil
        link.remove(proxy)
    }

    /// A central connected to our advertising: advertising stops (Vol 6 Part B §4.4.2) and our
    /// host gets LE Connection Complete in the peripheral role.
    func acceptConnection(_ remote: VirtualLinkConnection, at proxy: HostAdvertiser) async -> UInt16? {
        guard advertiser === proxy else { return nil }
        let extendedSet = proxy.extendedSet
        advertisingSet?.durationTimer?.cancel()
        advertisingSet?.durationTimer = nil
        stopAdvertising()
        let handle = nextHandle
        nextHandle = nextHandle >= 0x0EFF ? 0x0040 : nextHandle + 1
        let parameters =
            await remote.parameters()
            ?? VirtualLinkConnection.Parameters(interval: 24, latency: 0, supervisionTimeout: 400)
        connections[handle] = Connection(remote: .central(remote), parameters: parameters)
        let peerType: LEAddressType = remote.centralAddressType == .public ? .public : .random
        let legacyUnmasked = leEventMask.rawValue & 1 == 1
        let enhancedUnmasked = leEventMask.rawValue >> 9 & 1 == 1
        if enhancedUnmasked, extendedSet != nil || !legacyUnmasked {
            await emit(
                .leMeta(
                    .enhancedConnectionComplete(
                        LEEnhancedConnectionCompleteEvent(
                            status: .success, connectionHandle: handle, role: .peripheral, peerAddressType: peerType,
                            peerAddress: remote.centralAddress, connectionInterval: parameters.interval,
                            peripheralLatency: parameters.latency, supervisionTimeout: parameters.supervisionTimeout,
                            centralClockAccuracy: 0x00))))
        } else {
            await emit(
                .leMeta(
                    .connectionComplete(
                        LEConnectionCompleteEvent(
                            status: .success, connectionHandle: handle, role: .peripheral, peerAddressType: peerType,
                            peerAddress: remote.centralAddress, connectionInterval: parameters.interval,
                            peripheralLatency: parameters.latency, supervisionTimeout: parameters.supervisionTimeout,
                            centralClockAccuracy: 0x00))))
        }
        if let extendedSet {
            await emitAdvertisingSetTerminated(status: .success, handle: extendedSet, connectionHandle: handle)
        }
        return handle
    }

    /// A frame from the central, for our host.
    func receivedFromCentral(handle: UInt16, _ frame: L2CAPBasicFrame) async {
        guard let connection = connections[handle], case .central = connection.remote else { return }
        await sendFrame(handle: handle, channelID: frame.channelID, payload: Array(frame.payload))
    }

    /// The central updated the connection parameters: our host hears LE Connection Update Complete.
    func centralUpdatedParameters(handle: UInt16, _ parameters: VirtualLinkConnection.Parameters) async {
        guard var connection = connections[handle], case .central = connection.remote else { return }
        connection.parameters = parameters
        connections[handle] = connection
        await emit(
            .leMeta(
                .connectionUpdateComplete(
                    LEConnectionUpdateCompleteEvent(
                        status: .success, connectionHandle: handle, connectionInterval: parameters.interval,
                        peripheralLatency: parameters.latency, supervisionTimeout: parameters.supervisionTimeout))))
    }

    /// The central ended the connection.
    func centralDisconnected(handle: UInt16, reason: HCIStatus) async {
        guard let connection = connections[handle], case .central = connection.remote else { return }
        connections[handle] = nil
        dropKeyRequest(handle: handle)
        reassembler.reset(handle: handle)
        await emit(
            .disconnectionComplete(
                DisconnectionCompleteEvent(status: .success, connectionHandle: handle, reason: reason)))
    }
}

/// Our host's advertising as the link sees it: a ``VirtualPeripheral`` whose connections end
/// in the advertising controller. One object per advertising enable, so a later advertising
/// set never takes over an earlier connection.
final class HostAdvertiser: VirtualPeripheral {
    struct State: Sendable {
        var address: BluetoothAddress
        var addressType: AddressType
        var advertisingData: [UInt8]
        var scanResponseData: [UInt8]
        var isConnectable: Bool
        var isScannable: Bool
        /// The advertising set when advertising by the extended commands.
        var extendedSet: UInt8? = nil
        /// The advertising controller's handle once a central connected.
        var handle: UInt16?
    }

    private struct Box: Sendable {
        weak var controller: VirtualController?
    }

    private let state: Mutex<State>
    private let box: Box

    init(controller: VirtualController, state: State) {
        self.box = Box(controller: controller)
        self.state = Mutex(state)
    }

    var address: BluetoothAddress { state.withLock { $0.address } }
    var addressType: AddressType { state.withLock { $0.addressType } }
    var advertisingData: [UInt8] { state.withLock { $0.advertisingData } }
    var scanResponseData: [UInt8] { state.withLock { $0.scanResponseData } }
    var isConnectable: Bool { state.withLock { $0.isConnectable } }
    var extendedSet: UInt8? { state.withLock { $0.extendedSet } }
    /// A scannable advertiser answers every scan request, if need be with no data.
    var isScannable: Bool { state.withLock { $0.isScannable } }

    func update(advertisingData: [UInt8]) { state.withLock { $0.advertisingData = advertisingData } }
    func update(scanResponseData: [UInt8]) { state.withLock { $0.scanResponseData = scanResponseData } }

    func connected(_ link: VirtualLinkConnection) async {
        guard let controller = box.controller else {
            await link.disconnect(reason: .remoteDeviceTerminatedConnectionDueToPowerOff)
            return
        }
        guard let handle = await controller.acceptConnection(link, at: self) else {
            await link.disconnect(reason: .remoteDeviceTerminatedConnectionDueToPowerOff)
            return
        }
        state.withLock { $0.handle = handle }
    }

    func received(_ frame: L2CAPBasicFrame) async {
        guard let handle = state.withLock({ $0.handle }) else { return }
        await box.controller?.receivedFromCentral(handle: handle, frame)
    }

    func disconnected(reason: HCIStatus) async {
        guard let handle = state.withLock({ $0.handle }) else { return }
        await box.controller?.centralDisconnected(handle: handle, reason: reason)
    }

    func connectionParametersChanged(_ parameters: VirtualLinkConnection.Parameters) async {
        guard let handle = state.withLock({ $0.handle }) else { return }
        await box.controller?.centralUpdatedParameters(handle: handle, parameters)
    }

    func longTermKeyRequested(rand: UInt64, ediv: UInt16) async -> [UInt8]? {
        guard let handle = state.withLock({ $0.handle }) else { return nil }
        return await box.controller?.longTermKeyRequest(handle: handle, rand: rand, ediv: ediv)
    }

    func encryptionChanged(refreshed: Bool) async {
        guard let handle = state.withLock({ $0.handle }) else { return }
        await box.controller?.peripheralEncryptionChanged(handle: handle, refreshed: refreshed)
    }
}
