import Bluetooth

/// ATT_ERROR_RSP: a request could not be performed; says which request, handle and why.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.4.1.1
public struct ErrorResponse: ATTPDUCodable {
    public static let opcode = ATTOpcode.errorResponse

    /// Request Opcode In Error: the opcode of the request that failed.
    public var requestOpcode: ATTOpcode
    /// Attribute Handle In Error: the handle that caused the error, 0x0000 when none applies.
    public var handle: UInt16
    /// Error Code.
    public var errorCode: ATTErrorCode

    public init(requestOpcode: ATTOpcode, handle: UInt16, errorCode: ATTErrorCode) {
        self.requestOpcode = requestOpcode
        self.handle = handle
        self.errorCode = errorCode
    }

    public init(parsing reader: inout ByteReader) throws(ATTError) {
        let op = Self.opcode
        try reader.readOpcode(op)
        requestOpcode = ATTOpcode(try reader.readUInt8(op, "Request Opcode In Error"))
        handle = try reader.readUInt16LE(op, "Attribute Handle In Error")
        errorCode = ATTErrorCode(try reader.readUInt8(op, "Error Code"))
        try reader.expectEnd(op, "Error Code")
    }

    public var encodedLength: Int { 5 }

    public func write(to writer: inout ByteWriter) {
        writer.writeUInt8(Self.opcode.rawValue)
        writer.writeUInt8(requestOpcode.rawValue)
        writer.writeUInt16LE(handle)
        writer.writeUInt8(errorCode.rawValue)
    }
}

extension ATTError {
    /// The peer refused a request: `.peerError` with the response's opcode, handle and code.
    public init(_ response: ErrorResponse) {
        self = .peerError(request: response.requestOpcode, handle: response.handle, code: response.errorCode)
    }
}
