/// The controller's buffers for LE ACL data: the most data octets one ACL data packet may carry
/// to it, and how many such packets it holds at once.
///
/// Taken from HCI_LE_Read_Buffer_Size; when the controller returns 0 there, LE shares the BR/EDR
/// buffers and the values come from HCI_Read_Buffer_Size.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.2 (LE Read Buffer Size), §7.4.5 (Read Buffer Size)
///   and §4.1.1 (Host to Controller data flow control)
public struct ACLBufferSize: Hashable, Sendable, CustomStringConvertible {
    /// The smallest LE_ACL_Data_Packet_Length a controller may report (0x001B).
    public static let minimumLEPacketLength = 27

    /// Largest Data_Total_Length of an ACL data packet sent to the controller.
    public let packetLength: Int
    /// Number of ACL data packets the controller can hold (the host's credits).
    public let packetCount: Int
    /// Whether the values came from HCI_Read_Buffer_Size (buffers shared with BR/EDR).
    public let isShared: Bool

    /// Values checked against the spec ranges: a length of at least 27 and a count of at least 1.
    public init(packetLength: Int, packetCount: Int, isShared: Bool = false) throws(L2CAPError) {
        guard packetLength >= Self.minimumLEPacketLength, packetLength <= Int(UInt16.max) else {
            throw L2CAPError.invalidBufferSize("ACL data packet length \(packetLength), needs 27 to 65535")
        }
        guard packetCount >= 1 else {
            throw L2CAPError.invalidBufferSize("the controller holds no ACL data packets")
        }
        self.packetLength = packetLength
        self.packetCount = packetCount
        self.isShared = isShared
    }

    /// Resolves the LE buffers from the return parameters of HCI_LE_Read_Buffer_Size and, when
    /// either LE value is 0, of HCI_Read_Buffer_Size (`nil` when that command was not sent: then
    /// a 0 in the LE values throws).
    public init(
        leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8,
        aclDataPacketLength: UInt16?, totalNumACLDataPackets: UInt16?
    ) throws(L2CAPError) {
        if leACLDataPacketLength != 0 && totalNumLEACLDataPackets != 0 {
            try self.init(packetLength: Int(leACLDataPacketLength), packetCount: Int(totalNumLEACLDataPackets))
            return
        }
        guard let length = aclDataPacketLength, let count = totalNumACLDataPackets else {
            throw L2CAPError.invalidBufferSize(
                "LE Read Buffer Size returned length \(leACLDataPacketLength), count \(totalNumLEACLDataPackets)"
                    + " and no Read Buffer Size values were given")
        }
        try self.init(packetLength: Int(length), packetCount: Int(count), isShared: true)
    }

    /// Whether HCI_Read_Buffer_Size must be sent: the LE values say the buffers are shared.
    public static func needsSharedBufferSize(leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8) -> Bool {
        leACLDataPacketLength == 0 || totalNumLEACLDataPackets == 0
    }

    public var description: String {
        "\(packetCount) × \(packetLength) octets" + (isShared ? " (shared with BR/EDR)" : "")
    }
}
