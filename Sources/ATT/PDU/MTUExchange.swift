import Bluetooth

/// ATT_EXCHANGE_MTU_REQ: the client's receive MTU (Client Rx MTU).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.2.1
public struct ExchangeMTURequest: ATTPDUCodable {
    public static let opcode = ATTOpcode.exchangeMTURequest

    /// Client Rx MTU: the largest ATT PDU the client can receive.
    public var clientRxMTU: UInt16

    public init(clientRxMTU: UInt16) { self.clientRxMTU = clientRxMTU }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        clientRxMTU = try reader.readUInt16LE(op, "Client Rx MTU")
        try reader.expectEnd(op, "Client Rx MTU")
    }

    public var encodedLength: Int { 3 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt16LE(clientRxMTU)
    }
}

/// ATT_EXCHANGE_MTU_RSP: the server's receive MTU (Server Rx MTU).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.2.2
public struct ExchangeMTUResponse: ATTPDUCodable {
    public static let opcode = ATTOpcode.exchangeMTUResponse

    /// Server Rx MTU: the largest ATT PDU the server can receive.
    public var serverRxMTU: UInt16

    public init(serverRxMTU: UInt16) { self.serverRxMTU = serverRxMTU }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        serverRxMTU = try reader.readUInt16LE(op, "Server Rx MTU")
        try reader.expectEnd(op, "Server Rx MTU")
    }

    public var encodedLength: Int { 3 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt16LE(serverRxMTU)
    }
}

extension ExchangeMTURequest {
    /// ATT_MTU after the exchange: the smaller of the two Rx MTUs, and never below the LE
    /// default 23 (an Rx MTU below 23 leaves ATT_MTU unchanged).
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.2.2
    public static func negotiatedMTU(clientRxMTU: UInt16, serverRxMTU: UInt16) -> Int {
        let mtu = Int(min(clientRxMTU, serverRxMTU))
        return max(mtu, ATTPDU.defaultLEMTU)
    }
}
