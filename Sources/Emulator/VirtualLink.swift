import Bluetooth
import HCI
import L2CAP
import Synchronization

/// A device on the virtual link that advertises and accepts connections from a virtual
/// controller: the radio side of an emulated peripheral.
///
/// The controller reads the advertising properties at every advertising event, calls
/// `connected(_:)` when a central's LE Create Connection reaches it, hands it every
/// reassembled L2CAP basic frame the central sends, and `disconnected(reason:)` when the
/// connection ends (the reason the peripheral's link layer would see).
public protocol VirtualPeripheral: AnyObject, Sendable {
    /// The device address and its type (public, or random static).
    var address: BluetoothAddress { get }
    var addressType: AddressType { get }
    /// AdvData of its advertising PDUs (at most 31 octets).
    var advertisingData: [UInt8] { get }
    /// ScanRspData it answers a SCAN_REQ with (at most 31 octets).
    var scanResponseData: [UInt8] { get }
    /// Connectable undirected (ADV_IND) when true; ADV_SCAN_IND / ADV_NONCONN_IND otherwise.
    var isConnectable: Bool { get }
    /// Whether it answers scan requests (by default: when connectable or when it has scan
    /// response data).
    var isScannable: Bool { get }
    /// The RSSI a scanner reports for it.
    var rssi: Int8 { get }

    /// A central connected; `link` sends L2CAP frames to it and disconnects.
    func connected(_ link: VirtualLinkConnection) async
    /// One L2CAP basic frame from the central.
    func received(_ frame: L2CAPBasicFrame) async
    /// The connection ended; `reason` as the peripheral sees it.
    func disconnected(reason: HCIStatus) async
    /// The central changed the connection parameters (LE Connection Update).
    func connectionParametersChanged(_ parameters: VirtualLinkConnection.Parameters) async
    /// The central starts encryption (LL_ENC_REQ): the key the peripheral has for `rand` and
    /// `ediv` (16 octets, least significant first), or nil when it has none (the central then
    /// gets PIN or Key Missing).
    /// - SeeAlso: Core Spec 5.4, Vol 6, Part B, §5.1.3
    func longTermKeyRequested(rand: UInt64, ediv: UInt16) async -> [UInt8]?
    /// Encryption started (or the key was refreshed) with the key it gave.
    func encryptionChanged(refreshed: Bool) async
}

extension VirtualPeripheral {
    public var rssi: Int8 { -55 }
    public var isScannable: Bool { isConnectable || !scanResponseData.isEmpty }
    public func connectionParametersChanged(_ parameters: VirtualLinkConnection.Parameters) async {}
    /// A device that never pairs has no key.
    public func longTermKeyRequested(rand: UInt64, ediv: UInt16) async -> [UInt8]? { nil }
    public func encryptionChanged(refreshed: Bool) async {}
}

/// The shared medium: the peripherals a virtual controller can see. Devices may be added or
/// removed at any time; the next advertising event sees the change.
public final class VirtualLink: Sendable {
    private let devices = Mutex<[any VirtualPeripheral]>([])

    public init(_ peripherals: [any VirtualPeripheral] = []) {
        devices.withLock { $0 = peripherals }
    }

    public func add(_ peripheral: any VirtualPeripheral) {
        devices.withLock { $0.append(peripheral) }
    }

    public func remove(_ peripheral: any VirtualPeripheral) {
        devices.withLock { $0.removeAll { $0 === peripheral } }
    }

    /// The peripherals on the link, in the order they were added.
    public var peripherals: [any VirtualPeripheral] {
        devices.withLock { $0 }
    }
}

/// The peripheral's end of one connection: what it uses to send L2CAP frames to the central
/// and to end the connection.
public struct VirtualLinkConnection: Sendable {
    /// The connection parameters, as the link layer uses them.
    public struct Parameters: Hashable, Sendable {
        /// Connection interval in 1.25 ms units.
        public var interval: UInt16
        public var latency: UInt16
        /// Supervision timeout in 10 ms units.
        public var supervisionTimeout: UInt16
        public init(interval: UInt16, latency: UInt16, supervisionTimeout: UInt16) {
            self.interval = interval
            self.latency = latency
            self.supervisionTimeout = supervisionTimeout
        }
    }

    let controller: VirtualController
    /// The controller's handle for the connection (what the central's host sees).
    public let handle: UInt16
    /// The central's address.
    public let centralAddress: BluetoothAddress
    public let centralAddressType: AddressType

    /// Sends one L2CAP basic frame (channel and payload) to the central. Returns false when the
    /// connection is gone.
    @discardableResult
    public func send(channelID: UInt16, payload: [UInt8]) async -> Bool {
        await controller.peripheralSend(handle: handle, channelID: channelID, payload: payload)
    }

    /// Ends the connection from the peripheral's side (the central's host gets Disconnection
    /// Complete with `reason`, by default Remote User Terminated Connection).
    public func disconnect(reason: HCIStatus = .remoteUserTerminatedConnection) async {
        await controller.peripheralDisconnect(handle: handle, reason: reason)
    }

    /// The current connection parameters, `nil` once disconnected.
    public func parameters() async -> Parameters? {
        await controller.parameters(of: handle)
    }
}

/// A virtual peripheral whose host side is a ``GATTPeripheral`` and nothing else: the link's
/// events go straight to it (the emulated SensorTag, Bluefruit, counter, heart-rate monitor).
public protocol GATTVirtualPeripheral: VirtualPeripheral {
    var peripheral: GATTPeripheral { get }
}

extension GATTVirtualPeripheral {
    public func connected(_ link: VirtualLinkConnection) async { await peripheral.connected(link) }
    public func received(_ frame: L2CAPBasicFrame) async { await peripheral.received(frame) }
    public func disconnected(reason: HCIStatus) async { await peripheral.disconnected(reason: reason) }
    public func connectionParametersChanged(_ parameters: VirtualLinkConnection.Parameters) async {
        await peripheral.connectionParametersChanged(parameters)
    }
}
