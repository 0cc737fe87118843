import Bluetooth

/// L2CAP_LE_CREDIT_BASED_CONNECTION_REQ: opens one LE credit-based channel on an SPSM.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.22
public struct LECreditBasedConnectionRequest: L2CAPSignalingCommandBody {
    public static let code = L2CAPSignalingCode.leCreditBasedConnectionRequest
    static let context = "L2CAP_LE_CREDIT_BASED_CONNECTION_REQ"

    public var spsm: UInt16
    public var sourceCID: UInt16
    public var mtu: UInt16
    public var mps: UInt16
    public var initialCredits: UInt16

    public init(spsm: UInt16, sourceCID: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16) {
        self.spsm = spsm
        self.sourceCID = sourceCID
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
    }

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Self.context
        spsm = try reader.l2capUInt16(c)
        sourceCID = try reader.l2capUInt16(c)
        mtu = try reader.l2capUInt16(c)
        mps = try reader.l2capUInt16(c)
        initialCredits = try reader.l2capUInt16(c)
        try reader.l2capExpectEnd(c)
    }

    public var encodedLength: Int { 10 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(spsm)
        writer.writeUInt16LE(sourceCID)
        writer.writeUInt16LE(mtu)
        writer.writeUInt16LE(mps)
        writer.writeUInt16LE(initialCredits)
    }
}

/// L2CAP_LE_CREDIT_BASED_CONNECTION_RSP. When Result is not success, the other fields are 0.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.23
public struct LECreditBasedConnectionResponse: L2CAPSignalingCommandBody {
    public static let code = L2CAPSignalingCode.leCreditBasedConnectionResponse
    static let context = "L2CAP_LE_CREDIT_BASED_CONNECTION_RSP"

    public var destinationCID: UInt16
    public var mtu: UInt16
    public var mps: UInt16
    public var initialCredits: UInt16
    public var result: CreditBasedConnectionResult

    public init(
        destinationCID: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16, result: CreditBasedConnectionResult
    ) {
        self.destinationCID = destinationCID
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
        self.result = result
    }

    /// A refusal: every field but Result is 0.
    public static func refused(_ result: CreditBasedConnectionResult) -> Self {
        Self(destinationCID: 0, mtu: 0, mps: 0, initialCredits: 0, result: result)
    }

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Self.context
        destinationCID = try reader.l2capUInt16(c)
        mtu = try reader.l2capUInt16(c)
        mps = try reader.l2capUInt16(c)
        initialCredits = try reader.l2capUInt16(c)
        result = CreditBasedConnectionResult(rawValue: try reader.l2capUInt16(c))
        try reader.l2capExpectEnd(c)
    }

    public var encodedLength: Int { 10 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(destinationCID)
        writer.writeUInt16LE(mtu)
        writer.writeUInt16LE(mps)
        writer.writeUInt16LE(initialCredits)
        writer.writeUInt16LE(result.rawValue)
    }
}

/// L2CAP_FLOW_CONTROL_CREDIT_IND: more credits for a credit-based channel.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.24
public struct FlowControlCreditIndication: L2CAPSignalingCommandBody {
    public static let code = L2CAPSignalingCode.flowControlCreditIndication
    static let context = "L2CAP_FLOW_CONTROL_CREDIT_IND"

    public var cid: UInt16
    public var credits: UInt16

    public init(cid: UInt16, credits: UInt16) {
        self.cid = cid
        self.credits = credits
    }

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        cid = try reader.l2capUInt16(Self.context)
        credits = try reader.l2capUInt16(Self.context)
        try reader.l2capExpectEnd(Self.context)
    }

    public var encodedLength: Int { 4 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(cid)
        writer.writeUInt16LE(credits)
    }
}
