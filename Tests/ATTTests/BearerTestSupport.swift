import Bluetooth
import Testing

@testable import ATT

/// Shorthands for the bearer tests.
enum BearerFixtures {
    static func read(_ handle: UInt16) -> ATTPDU { .readRequest(ReadRequest(handle: handle)) }
    static func readResponse(_ value: [UInt8]) -> ATTPDU { .readResponse(ReadResponse(value: value)) }
    static func write(_ handle: UInt16, _ value: [UInt8]) -> ATTPDU {
        .writeRequest(WriteRequest(handle: handle, value: value))
    }
    static func notification(_ handle: UInt16, _ value: [UInt8]) -> ATTPDU {
        .handleValueNotification(HandleValueNotification(handle: handle, value: value))
    }
    static func indication(_ handle: UInt16, _ value: [UInt8]) -> ATTPDU {
        .handleValueIndication(HandleValueIndication(handle: handle, value: value))
    }
    static func errorResponse(_ request: ATTOpcode, _ handle: UInt16, _ code: ATTErrorCode) -> ATTPDU {
        .errorResponse(ErrorResponse(requestOpcode: request, handle: handle, errorCode: code))
    }
    static let timeout = Duration.seconds(30)
}

extension ATTPDU {
    /// The PDU's octets (test vectors are always within ATT_MTU).
    var bytes: [UInt8] { encoded }
}

extension ATTBearer.Action {
    /// The failure carried by a `failTransaction`, if this is one.
    var failure: ATTError? {
        if case .failTransaction(_, let error) = self { return error }
        return nil
    }
}

extension Array where Element == ATTBearer.Action {
    /// The SDUs of the `send` actions, in order.
    var sentSDUs: [[UInt8]] {
        compactMap { if case .send(let sdu) = $0 { return sdu } else { return nil } }
    }
}

extension ATTError {
    var isProtocolError: Bool {
        if case .protocolError = self { return true }
        return false
    }
    var isBearerClosed: Bool {
        if case .bearerClosed = self { return true }
        return false
    }
}
