import Bluetooth

/// An L2CAP B-frame: Length, Channel ID, and the information payload (an ATT PDU on CID 0x0004).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §3.1
public struct L2CAPBasicFrame: Hashable, Sendable {
    public var channelID: UInt16
    public var payload: ArraySlice<UInt8>

    public init(channelID: UInt16, payload: ArraySlice<UInt8>) {
        self.channelID = channelID
        self.payload = payload
    }

    /// Fixed LE channels. - SeeAlso: Core Spec 5.4, Vol 3, Part A, §2.1
    public static let attributeProtocolCID: UInt16 = 0x0004
    public static let leSignalingCID: UInt16 = 0x0005
    public static let securityManagerCID: UInt16 = 0x0006

    /// Header plus payload, ready for ACL fragmentation.
    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: 4 + payload.count)
        writer.writeUInt16LE(UInt16(truncatingIfNeeded: payload.count))
        writer.writeUInt16LE(channelID)
        writer.writeBytes(payload)
        return writer.bytes
    }
}
