import Bluetooth

/// L2CAP_DISCONNECTION_REQ: Destination CID (on the receiver), Source CID (on the sender).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.6
public struct DisconnectionRequest: L2CAPSignalingCommandBody {
    public static let code = L2CAPSignalingCode.disconnectionRequest
    static let context = "L2CAP_DISCONNECTION_REQ"

    public var destinationCID: UInt16
    public var sourceCID: UInt16

    public init(destinationCID: UInt16, sourceCID: UInt16) {
        self.destinationCID = destinationCID
        self.sourceCID = sourceCID
    }

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        destinationCID = try reader.l2capUInt16(Self.context)
        sourceCID = try reader.l2capUInt16(Self.context)
        try reader.l2capExpectEnd(Self.context)
    }

    public var encodedLength: Int { 4 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(destinationCID)
        writer.writeUInt16LE(sourceCID)
    }
}

/// L2CAP_DISCONNECTION_RSP: the CIDs of the request it answers.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.7
public struct DisconnectionResponse: L2CAPSignalingCommandBody {
    public static let code = L2CAPSignalingCode.disconnectionResponse
    static let context = "L2CAP_DISCONNECTION_RSP"

    public var destinationCID: UInt16
    public var sourceCID: UInt16

    public init(destinationCID: UInt16, sourceCID: UInt16) {
        self.destinationCID = destinationCID
        self.sourceCID = sourceCID
    }

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        destinationCID = try reader.l2capUInt16(Self.context)
        sourceCID = try reader.l2capUInt16(Self.context)
        try reader.l2capExpectEnd(Self.context)
    }

    public var encodedLength: Int { 4 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(destinationCID)
        writer.writeUInt16LE(sourceCID)
    }
}
