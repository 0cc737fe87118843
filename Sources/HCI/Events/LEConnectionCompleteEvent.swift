import Bluetooth

/// HCI_LE_Connection_Complete: a new LE connection was created (or creating it failed).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.1
public struct LEConnectionCompleteEvent: Hashable, Sendable, CustomStringConvertible {
    public static let subeventCode = LESubeventCode.connectionComplete
    static let context = "HCI_LE_Connection_Complete"

    public var status: HCIStatus
    /// Connection_Handle (0x0000–0x0EFF).
    public var connectionHandle: UInt16
    public var role: LERole
    /// Peer_Address_Type: public or random (0x00/0x01) in this event.
    public var peerAddressType: LEAddressType
    public var peerAddress: BluetoothAddress
    /// Connection_Interval in units of 1.25 ms (0x0006–0x0C80: 7.5 ms – 4 s).
    public var connectionInterval: UInt16
    /// Peripheral_Latency in connection events (0x0000–0x01F3).
    public var peripheralLatency: UInt16
    /// Supervision_Timeout in units of 10 ms (0x000A–0x0C80: 100 ms – 32 s).
    public var supervisionTimeout: UInt16
    /// Central_Clock_Accuracy: 0x00 = 500 ppm … 0x07 = 20 ppm.
    public var centralClockAccuracy: UInt8

    public init(
        status: HCIStatus, connectionHandle: UInt16, role: LERole, peerAddressType: LEAddressType,
        peerAddress: BluetoothAddress, connectionInterval: UInt16, peripheralLatency: UInt16,
        supervisionTimeout: UInt16, centralClockAccuracy: UInt8
    ) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.role = role
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
        self.centralClockAccuracy = centralClockAccuracy
    }

    /// Parses the subevent parameters (after the subevent code).
    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let c = Self.context
        status = HCIStatus(rawValue: try reader.hciUInt8(c))
        connectionHandle = try reader.hciConnectionHandle(c)
        role = LERole(rawValue: try reader.hciUInt8(c))
        peerAddressType = LEAddressType(rawValue: try reader.hciUInt8(c))
        peerAddress = try reader.hciAddress(c)
        connectionInterval = try reader.hciUInt16(c)
        peripheralLatency = try reader.hciUInt16(c)
        supervisionTimeout = try reader.hciUInt16(c)
        centralClockAccuracy = try reader.hciUInt8(c)
        try reader.hciExpectEnd(c)
    }

    public static let encodedLength = 18

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(status.rawValue)
        writer.writeUInt16LE(connectionHandle)
        writer.writeUInt8(role.rawValue)
        writer.writeUInt8(peerAddressType.rawValue)
        peerAddress.write(littleEndian: &writer)
        writer.writeUInt16LE(connectionInterval)
        writer.writeUInt16LE(peripheralLatency)
        writer.writeUInt16LE(supervisionTimeout)
        writer.writeUInt8(centralClockAccuracy)
    }

    public var description: String {
        "LE Connection Complete: \(status) handle \(connectionHandle) \(role) peer \(peerAddress) (\(peerAddressType))"
            + " " + hciConnectionParametersText(connectionInterval, peripheralLatency, supervisionTimeout)
    }
}

/// HCI_LE_Enhanced_Connection_Complete [v1] (0x0A) and [v2] (0x29): LE Connection Complete plus
/// the resolvable private addresses in use; v2 adds Advertising_Handle and Sync_Handle.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65.10
public struct LEEnhancedConnectionCompleteEvent: Hashable, Sendable, CustomStringConvertible {
    public var status: HCIStatus
    /// Connection_Handle (0x0000–0x0EFF).
    public var connectionHandle: UInt16
    public var role: LERole
    /// Peer_Address_Type: 0x00–0x03 (0x02/0x03: identity address resolved by the controller).
    public var peerAddressType: LEAddressType
    public var peerAddress: BluetoothAddress
    /// Local_Resolvable_Private_Address (all zero when not used).
    public var localResolvablePrivateAddress: BluetoothAddress
    /// Peer_Resolvable_Private_Address (all zero when not used).
    public var peerResolvablePrivateAddress: BluetoothAddress
    /// Connection_Interval in units of 1.25 ms.
    public var connectionInterval: UInt16
    /// Peripheral_Latency in connection events.
    public var peripheralLatency: UInt16
    /// Supervision_Timeout in units of 10 ms.
    public var supervisionTimeout: UInt16
    /// Central_Clock_Accuracy: 0x00 = 500 ppm … 0x07 = 20 ppm.
    public var centralClockAccuracy: UInt8
    /// v2 only: Advertising_Handle and Sync_Handle (0xFF / 0xFFFF when not applicable).
    public var version2: Version2Fields?

    public struct Version2Fields: Hashable, Sendable {
        public var advertisingHandle: UInt8
        public var syncHandle: UInt16
        public init(advertisingHandle: UInt8, syncHandle: UInt16) {
            self.advertisingHandle = advertisingHandle
            self.syncHandle = syncHandle
        }
    }

    public init(
        status: HCIStatus, connectionHandle: UInt16, role: LERole, peerAddressType: LEAddressType,
        peerAddress: BluetoothAddress, localResolvablePrivateAddress: BluetoothAddress = .zero,
        peerResolvablePrivateAddress: BluetoothAddress = .zero, connectionInterval: UInt16,
        peripheralLatency: UInt16, supervisionTimeout: UInt16, centralClockAccuracy: UInt8,
        version2: Version2Fields? = nil
    ) {
        self.status = status
        self.connectionHandle = connectionHandle
        self.role = role
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.localResolvablePrivateAddress = localResolvablePrivateAddress
        self.peerResolvablePrivateAddress = peerResolvablePrivateAddress
        self.connectionInterval = connectionInterval
        self.peripheralLatency = peripheralLatency
        self.supervisionTimeout = supervisionTimeout
        self.centralClockAccuracy = centralClockAccuracy
        self.version2 = version2
    }

    /// The subevent code this value is sent with.
    public var subeventCode: LESubeventCode { version2 == nil ? .enhancedConnectionCompleteV1 : .enhancedConnectionCompleteV2 }

    /// Parses the parameters of the v1 (`version2 == false`) or v2 subevent.
    public init(parsing reader: inout ByteReader, version2 isVersion2: Bool) throws(HCIError) {
        let c = isVersion2 ? "HCI_LE_Enhanced_Connection_Complete_v2" : "HCI_LE_Enhanced_Connection_Complete_v1"
        status = HCIStatus(rawValue: try reader.hciUInt8(c))
        connectionHandle = try reader.hciConnectionHandle(c)
        role = LERole(rawValue: try reader.hciUInt8(c))
        peerAddressType = LEAddressType(rawValue: try reader.hciUInt8(c))
        peerAddress = try reader.hciAddress(c)
        localResolvablePrivateAddress = try reader.hciAddress(c)
        peerResolvablePrivateAddress = try reader.hciAddress(c)
        connectionInterval = try reader.hciUInt16(c)
        peripheralLatency = try reader.hciUInt16(c)
        supervisionTimeout = try reader.hciUInt16(c)
        centralClockAccuracy = try reader.hciUInt8(c)
        if isVersion2 {
            let advertisingHandle = try reader.hciUInt8(c)
            version2 = Version2Fields(advertisingHandle: advertisingHandle, syncHandle: try reader.hciUInt16(c))
        } else {
            version2 = nil
        }
        try reader.hciExpectEnd(c)
    }

    public var encodedLength: Int { version2 == nil ? 30 : 33 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(status.rawValue)
        writer.writeUInt16LE(connectionHandle)
        writer.writeUInt8(role.rawValue)
        writer.writeUInt8(peerAddressType.rawValue)
        peerAddress.write(littleEndian: &writer)
        localResolvablePrivateAddress.write(littleEndian: &writer)
        peerResolvablePrivateAddress.write(littleEndian: &writer)
        writer.writeUInt16LE(connectionInterval)
        writer.writeUInt16LE(peripheralLatency)
        writer.writeUInt16LE(supervisionTimeout)
        writer.writeUInt8(centralClockAccuracy)
        if let v2 = version2 {
            writer.writeUInt8(v2.advertisingHandle)
            writer.writeUInt16LE(v2.syncHandle)
        }
    }

    public var description: String {
        var text = "LE Enhanced Connection Complete\(version2 == nil ? "" : " v2"): \(status) handle \(connectionHandle) \(role)"
            + " peer \(peerAddress) (\(peerAddressType))"
        if localResolvablePrivateAddress != .zero { text += " local RPA \(localResolvablePrivateAddress)" }
        if peerResolvablePrivateAddress != .zero { text += " peer RPA \(peerResolvablePrivateAddress)" }
        text += " " + hciConnectionParametersText(connectionInterval, peripheralLatency, supervisionTimeout)
        if let v2 = version2 { text += " adv handle \(hciHexString(v2.advertisingHandle, 2)) sync handle \(hciHexString(v2.syncHandle, 4))" }
        return text
    }
}

/// `interval 30.00 ms latency 0 timeout 720 ms` from 1.25 ms / 10 ms units.
func hciConnectionParametersText(_ interval: UInt16, _ latency: UInt16, _ timeout: UInt16) -> String {
    "interval \(hciMillisecondsText(Int(interval) * 125, scale: 100)) latency \(latency) timeout \(Int(timeout) * 10) ms"
}

/// `value / scale` ms with two decimals, without Foundation.
func hciMillisecondsText(_ value: Int, scale: Int) -> String {
    var text: [UInt8] = []
    writeMilliseconds(value, scale: scale, to: &text)
    return text.asText
}
