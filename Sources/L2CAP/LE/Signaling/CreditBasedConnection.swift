import Bluetooth

/// The CID list closing the enhanced credit-based commands: 1 to 5 CIDs.
enum CreditBasedCIDList {
    static let maximumCount = 5

    static func read(_ reader: inout ByteReader, field: String, context: String) throws(L2CAPError) -> [UInt16] {
        let offset = reader.offset
        let remaining = reader.remainingCount
        guard remaining % 2 == 0 else {
            throw L2CAPError.malformed(
                context: context, reason: .trailingBytes(count: 1), offset: offset + remaining - 1)
        }
        let count = remaining / 2
        guard (1...maximumCount).contains(count) else {
            throw L2CAPError.malformed(
                context: context, reason: .invalidLength(field: field, value: count), offset: offset)
        }
        var cids: [UInt16] = []
        cids.reserveCapacity(count)
        for _ in 0..<count { cids.append(try reader.l2capUInt16(context)) }
        return cids
    }

    static func check(_ cids: [UInt16], field: String, context: String) throws(L2CAPError) {
        guard (1...maximumCount).contains(cids.count) else {
            throw L2CAPError.invalidArgument(context: context, reason: "\(cids.count) \(field) entries, 1 to 5")
        }
    }
}

/// L2CAP_CREDIT_BASED_CONNECTION_REQ: opens up to five enhanced credit-based channels (EATT
/// uses it with SPSM 0x0027).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.25
public struct CreditBasedConnectionRequest: L2CAPSignalingCommandBody {
    public static let code = L2CAPSignalingCode.creditBasedConnectionRequest
    static let context = "L2CAP_CREDIT_BASED_CONNECTION_REQ"

    public var spsm: UInt16
    public var mtu: UInt16
    public var mps: UInt16
    public var initialCredits: UInt16
    /// 1 to 5 Source CIDs.
    public var sourceCIDs: [UInt16]

    public init(spsm: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16, sourceCIDs: [UInt16]) {
        self.spsm = spsm
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
        self.sourceCIDs = sourceCIDs
    }

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Self.context
        spsm = try reader.l2capUInt16(c)
        mtu = try reader.l2capUInt16(c)
        mps = try reader.l2capUInt16(c)
        initialCredits = try reader.l2capUInt16(c)
        sourceCIDs = try CreditBasedCIDList.read(&reader, field: "Source_CID", context: c)
    }

    public var encodedLength: Int { 8 + 2 * sourceCIDs.count }

    public func write(to writer: inout ByteWriter) throws(L2CAPError) {
        try CreditBasedCIDList.check(sourceCIDs, field: "Source_CID", context: Self.context)
        writer.writeUInt16LE(spsm)
        writer.writeUInt16LE(mtu)
        writer.writeUInt16LE(mps)
        writer.writeUInt16LE(initialCredits)
        for cid in sourceCIDs { writer.writeUInt16LE(cid) }
    }
}

/// L2CAP_CREDIT_BASED_CONNECTION_RSP: one Destination CID per requested channel, 0x0000 for
/// each channel refused.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.26
public struct CreditBasedConnectionResponse: L2CAPSignalingCommandBody {
    public static let code = L2CAPSignalingCode.creditBasedConnectionResponse
    static let context = "L2CAP_CREDIT_BASED_CONNECTION_RSP"

    public var mtu: UInt16
    public var mps: UInt16
    public var initialCredits: UInt16
    public var result: CreditBasedConnectionResult
    /// 1 to 5 Destination CIDs.
    public var destinationCIDs: [UInt16]

    public init(
        mtu: UInt16, mps: UInt16, initialCredits: UInt16, result: CreditBasedConnectionResult, destinationCIDs: [UInt16]
    ) {
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
        self.result = result
        self.destinationCIDs = destinationCIDs
    }

    /// Every channel of `request` refused: MTU, MPS and credits 0, a 0x0000 CID for each.
    public static func refusingAll(_ request: CreditBasedConnectionRequest, result: CreditBasedConnectionResult) -> Self
    {
        Self(
            mtu: 0, mps: 0, initialCredits: 0, result: result,
            destinationCIDs: Array(repeating: 0, count: request.sourceCIDs.count))
    }

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Self.context
        mtu = try reader.l2capUInt16(c)
        mps = try reader.l2capUInt16(c)
        initialCredits = try reader.l2capUInt16(c)
        result = CreditBasedConnectionResult(rawValue: try reader.l2capUInt16(c))
        // Tolerance (Bumble 0.0.236): a refusal of every channel sent with no Destination_CID
        // list at all (the Core Specification has one zero entry per channel asked for). It
        // refuses them all either way; read as no channel opened rather than dropped, which left
        // the request waiting for its 30 s timeout.
        if reader.remainingCount == 0, result != .successful {
            destinationCIDs = []
            return
        }
        destinationCIDs = try CreditBasedCIDList.read(&reader, field: "Destination_CID", context: c)
    }

    public var encodedLength: Int { 8 + 2 * destinationCIDs.count }

    public func write(to writer: inout ByteWriter) throws(L2CAPError) {
        try CreditBasedCIDList.check(destinationCIDs, field: "Destination_CID", context: Self.context)
        writer.writeUInt16LE(mtu)
        writer.writeUInt16LE(mps)
        writer.writeUInt16LE(initialCredits)
        writer.writeUInt16LE(result.rawValue)
        for cid in destinationCIDs { writer.writeUInt16LE(cid) }
    }
}

/// L2CAP_CREDIT_BASED_RECONFIGURE_REQ: new MTU and MPS for up to five channels.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.27
public struct CreditBasedReconfigureRequest: L2CAPSignalingCommandBody {
    public static let code = L2CAPSignalingCode.creditBasedReconfigureRequest
    static let context = "L2CAP_CREDIT_BASED_RECONFIGURE_REQ"

    public var mtu: UInt16
    public var mps: UInt16
    /// 1 to 5 Destination CIDs.
    public var destinationCIDs: [UInt16]

    public init(mtu: UInt16, mps: UInt16, destinationCIDs: [UInt16]) {
        self.mtu = mtu
        self.mps = mps
        self.destinationCIDs = destinationCIDs
    }

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        let c = Self.context
        mtu = try reader.l2capUInt16(c)
        mps = try reader.l2capUInt16(c)
        destinationCIDs = try CreditBasedCIDList.read(&reader, field: "Destination_CID", context: c)
    }

    public var encodedLength: Int { 4 + 2 * destinationCIDs.count }

    public func write(to writer: inout ByteWriter) throws(L2CAPError) {
        try CreditBasedCIDList.check(destinationCIDs, field: "Destination_CID", context: Self.context)
        writer.writeUInt16LE(mtu)
        writer.writeUInt16LE(mps)
        for cid in destinationCIDs { writer.writeUInt16LE(cid) }
    }
}

/// L2CAP_CREDIT_BASED_RECONFIGURE_RSP.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4.28
public struct CreditBasedReconfigureResponse: L2CAPSignalingCommandBody {
    public static let code = L2CAPSignalingCode.creditBasedReconfigureResponse
    static let context = "L2CAP_CREDIT_BASED_RECONFIGURE_RSP"

    public var result: CreditBasedReconfigureResult

    public init(result: CreditBasedReconfigureResult) { self.result = result }

    public init(parsing reader: inout ByteReader) throws(L2CAPError) {
        result = CreditBasedReconfigureResult(rawValue: try reader.l2capUInt16(Self.context))
        try reader.l2capExpectEnd(Self.context)
    }

    public var encodedLength: Int { 2 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt16LE(result.rawValue)
    }
}
