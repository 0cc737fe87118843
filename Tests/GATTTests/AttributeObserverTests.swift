import ATT
import Bluetooth
import Testing

@testable import GATT

/// The observer names handles from the discovery it watched: services by range, a value by its
/// declaration, a descriptor by the nearest declaration before it in its service.
@Suite struct AttributeObserverTests {
    static func pdu(_ bytes: [UInt8]) throws -> ATTPDU { try ATTPDU(decoding: bytes[...]) }

    /// Two services (0x0001–0x0007 GAP, 0x0008–0x0010 Battery), two characteristics in the
    /// second (Battery Level at 0x0009/0x000A, 0x2A1A at 0x000C/0x000D), a CCCD and a user
    /// description after them.
    static func observer() throws -> AttributeObserver {
        var observer = AttributeObserver()
        observer.learn(
            request: try pdu([0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28]),
            response: try pdu([0x11, 0x06, 0x01, 0x00, 0x07, 0x00, 0x00, 0x18, 0x08, 0x00, 0x10, 0x00, 0x0F, 0x18]))
        observer.learn(
            request: try pdu([0x08, 0x08, 0x00, 0x10, 0x00, 0x03, 0x28]),
            response: try pdu([
                0x09, 0x07, 0x09, 0x00, 0x12, 0x0A, 0x00, 0x19, 0x2A, 0x0C, 0x00, 0x02, 0x0D, 0x00, 0x1A, 0x2A,
            ]))
        observer.learn(
            request: try pdu([0x04, 0x0B, 0x00, 0x10, 0x00]),
            response: try pdu([0x05, 0x01, 0x0B, 0x00, 0x02, 0x29, 0x0E, 0x00, 0x01, 0x29]))
        return observer
    }

    @Test func handlesAreNamedByWhatWasDiscovered() throws {
        let observer = try Self.observer()
        typealias Context = AttributeObserver.Context
        let battery = BluetoothUUID.bit16(0x180F)
        let level = BluetoothUUID.bit16(0x2A19)
        let other = BluetoothUUID.bit16(0x2A1A)
        #expect(observer.context(of: 0x000A) == Context(service: battery, characteristic: level, descriptor: nil, isValue: true))
        #expect(observer.context(of: 0x0009) == Context(service: battery, characteristic: level, descriptor: .bit16(0x2803), isValue: false))
        // Descriptors: the highest declaration below them, within their service.
        #expect(observer.context(of: 0x000B) == Context(service: battery, characteristic: level, descriptor: .bit16(0x2902), isValue: false))
        #expect(observer.context(of: 0x000E) == Context(service: battery, characteristic: other, descriptor: .bit16(0x2901), isValue: false))
        // The service declaration itself, and a handle of a service with no characteristic known.
        #expect(observer.context(of: 0x0008) == Context(service: battery, characteristic: nil, descriptor: nil, isValue: false))
        #expect(observer.context(of: 0x0005) == Context(service: .bit16(0x1800), characteristic: nil, descriptor: nil, isValue: false))
        // Outside every service: the nearest declaration below, from the first handle.
        #expect(observer.context(of: 0x0020) == Context(service: nil, characteristic: other, descriptor: nil, isValue: false))
        #expect(AttributeObserver().context(of: 1) == Context(service: nil, characteristic: nil, descriptor: nil, isValue: false))
    }
}
