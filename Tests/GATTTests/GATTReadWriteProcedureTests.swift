import ATT
import Bluetooth
import Testing

@testable import GATT

/// `count` octets counting up from `start`, as hex.
private func run(_ count: Int, from start: Int = 0) -> String {
    Hex.encode((0..<count).map { UInt8(truncatingIfNeeded: start + $0) })
}

private func bytes(_ count: Int, from start: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: start + $0) }
}

@Suite("GATT read and write procedures: action tables")
struct GATTReadWriteProcedureTests {
    static let read: [Exchange<[UInt8]>] = [
        .init("value", replies: ["0b 010203"], sent: ["0a 2100"], .done([1, 2, 3])),
        .init("empty value", replies: ["0b"], sent: ["0a 2100"], .done([])),
        .init("longest value at ATT_MTU 23", replies: ["0b" + run(22)], sent: ["0a 2100"], .done(bytes(22))),
        .init(
            "a value over ATT_MTU", replies: ["0b" + run(23)], sent: ["0a 2100"],
            .fail(.invalidResponse(opcode: .readResponse, reason: .exceedsMTU(length: 24, mtu: 23)))),
        .init(
            "read not permitted", replies: ["01 0a 2100 02"], sent: ["0a 2100"],
            .fail(.peerError(request: .readRequest, handle: 0x21, code: .readNotPermitted))),
        .init(
            "application error 0x80 kept", replies: ["01 0a 2100 80"], sent: ["0a 2100"],
            .fail(.peerError(request: .readRequest, handle: 0x21, code: ATTErrorCode(0x80)))),
        .init(
            "a Read Blob Response instead", replies: ["0d 01"], sent: ["0a 2100"],
            .fail(.unexpectedResponse(request: .readRequest, received: .readBlobResponse))),
    ]

    @Test(arguments: read)
    func readCharacteristicValue(_ exchange: Exchange<[UInt8]>) {
        exchange.check(ReadCharacteristicValue(handle: 0x21))
    }

    static let readLong: [Exchange<[UInt8]>] = [
        .init("a short value takes one request", replies: ["0b 010203"], sent: ["0a 2100"], .done([1, 2, 3])),
        .init(
            "three parts", replies: ["0b" + run(22), "0d" + run(22, from: 22), "0d" + run(5, from: 44)],
            sent: ["0a 2100", "0c 2100 1600", "0c 2100 2c00"], .done(bytes(49))),
        .init(
            "a whole number of parts ends with an empty blob", replies: ["0b" + run(22), "0d"],
            sent: ["0a 2100", "0c 2100 1600"], .done(bytes(22))),
        .init(
            "Attribute Not Long after a full first part", replies: ["0b" + run(22), "01 0c 2100 0b"],
            sent: ["0a 2100", "0c 2100 1600"], .done(bytes(22))),
        .init(
            "Invalid Offset on a later part is an error", replies: ["0b" + run(22), "01 0c 2100 07"],
            sent: ["0a 2100", "0c 2100 1600"],
            .fail(.peerError(request: .readBlobRequest, handle: 0x21, code: .invalidOffset))),
        .init(
            "a part over ATT_MTU", replies: ["0b" + run(22), "0d" + run(23)],
            sent: ["0a 2100", "0c 2100 1600"],
            .fail(.invalidResponse(opcode: .readBlobResponse, reason: .exceedsMTU(length: 24, mtu: 23)))),
        .init(
            "a Read Response to a Read Blob Request", replies: ["0b" + run(22), "0b 01"],
            sent: ["0a 2100", "0c 2100 1600"],
            .fail(.unexpectedResponse(request: .readBlobRequest, received: .readResponse))),
        .init(
            "the first read refused", replies: ["01 0a 2100 05"], sent: ["0a 2100"],
            .fail(.peerError(request: .readRequest, handle: 0x21, code: .insufficientAuthentication))),
        .init(
            "a value growing past 512 octets",
            replies: (0..<24).map { "0" + ($0 == 0 ? "b" : "d") + run(22, from: $0 * 22) },
            sent: ["0a 2100"]
                + (1..<24).map { "0c 2100 " + Hex.encode([UInt8($0 * 22 & 0xFF), UInt8(($0 * 22) >> 8)]) },
            .fail(.invalidResponse(opcode: .readBlobResponse, reason: .valueTooLong(length: 528, maximum: 512)))),
    ]

    @Test(arguments: readLong)
    func readLongCharacteristicValues(_ exchange: Exchange<[UInt8]>) {
        exchange.check(ReadLongCharacteristicValues(handle: 0x21))
    }

    @Test func readLongFromOffset() {
        Exchange<[UInt8]>(
            "from offset 10", replies: ["0d" + run(22), "0d 01"], sent: ["0c 2100 0a00", "0c 2100 2000"],
            .done(bytes(22) + [1])
        ).check(ReadLongCharacteristicValues(handle: 0x21, offset: 10))
        // Attribute Not Long at a non-zero start offset means the value cannot be read there.
        Exchange<[UInt8]>(
            "not long", replies: ["01 0c 2100 0b"], sent: ["0c 2100 0a00"],
            .fail(.peerError(request: .readBlobRequest, handle: 0x21, code: .attributeNotLong))
        ).check(ReadLongCharacteristicValues(handle: 0x21, offset: 10))
        var past = ReadLongCharacteristicValues(handle: 0x21, offset: 513)
        #expect(past.start() == .fail(.invalidParameter("offset 513 is past the longest attribute value")))
    }

    @Test func readLongStopsAt512() {
        // ATT_MTU 257: two parts of 256 fill the longest value; no third request.
        let first = "0b" + run(256)
        let second = "0d" + run(256, from: 256)
        Exchange<[UInt8]>("512", replies: [first, second], sent: ["0a 2100", "0c 2100 0001"], .done(bytes(512)))
            .check(ReadLongCharacteristicValues(handle: 0x21, mtu: 257))
    }

    static let write: [Exchange<Int>] = [
        .init("value", replies: ["13"], sent: ["12 2500 0102"], .done(2)),
        .init(
            "write not permitted", replies: ["01 12 2500 03"], sent: ["12 2500 0102"],
            .fail(.peerError(request: .writeRequest, handle: 0x25, code: .writeNotPermitted))),
        .init(
            "an error for another request", replies: ["01 0a 2500 03"], sent: ["12 2500 0102"],
            .fail(.unexpectedResponse(request: .writeRequest, received: .readRequest))),
        .init(
            "a notification is not an answer", replies: ["1b 2500 01"], sent: ["12 2500 0102"],
            .fail(.unexpectedResponse(request: .writeRequest, received: .handleValueNotification))),
    ]

    @Test(arguments: write)
    func writeCharacteristicValue(_ exchange: Exchange<Int>) {
        exchange.check(WriteCharacteristicValue(handle: 0x25, value: [1, 2]))
    }

    @Test func writeLimits() {
        Exchange<Int>("20 octets fit ATT_MTU 23", replies: ["13"], sent: ["12 2500" + run(20)], .done(20))
            .check(WriteCharacteristicValue(handle: 0x25, value: bytes(20)))
        var long = WriteCharacteristicValue(handle: 0x25, value: bytes(21))
        #expect(long.start() == .fail(.valueTooLong(length: 21, maximum: 20)))
        var huge = WriteCharacteristicValue(handle: 0x25, value: bytes(513), mtu: 600)
        #expect(huge.start() == .fail(.valueTooLong(length: 513, maximum: 512)))
    }

    static let writeLong: [Exchange<Int>] = [
        .init(
            "three parts of at most 18 octets, then execute",
            replies: [
                "17 2500 0000" + run(18), "17 2500 1200" + run(18, from: 18), "17 2500 2400" + run(4, from: 36), "19",
            ],
            sent: [
                "16 2500 0000" + run(18), "16 2500 1200" + run(18, from: 18), "16 2500 2400" + run(4, from: 36),
                "18 01",
            ],
            .done(40)),
        .init(
            "an error cancels the queue, then fails with it",
            replies: ["17 2500 0000" + run(18), "01 16 2500 09", "19"],
            sent: ["16 2500 0000" + run(18), "16 2500 1200" + run(18, from: 18), "18 00"],
            .fail(.peerError(request: .prepareWriteRequest, handle: 0x25, code: .prepareQueueFull))),
        .init(
            "a differing echo cancels the queue",
            replies: ["17 2500 0000" + run(17) + "ff", "19"],
            sent: ["16 2500 0000" + run(18), "18 00"],
            .fail(.invalidResponse(opcode: .prepareWriteResponse, reason: .echoMismatch(handle: 0x25, offset: 0)))),
        .init(
            "an echo at another offset cancels the queue",
            replies: ["17 2500 0100" + run(18), "19"],
            sent: ["16 2500 0000" + run(18), "18 00"],
            .fail(.invalidResponse(opcode: .prepareWriteResponse, reason: .echoMismatch(handle: 0x25, offset: 1)))),
        .init(
            "the cancel refused too: the first failure is reported",
            replies: ["01 16 2500 03", "01 18 0000 0e"],
            sent: ["16 2500 0000" + run(18), "18 00"],
            .fail(.peerError(request: .prepareWriteRequest, handle: 0x25, code: .writeNotPermitted))),
        .init(
            "execute refused",
            replies: [
                "17 2500 0000" + run(18), "17 2500 1200" + run(18, from: 18), "17 2500 2400" + run(4, from: 36),
                "01 18 0000 0d",
            ],
            sent: [
                "16 2500 0000" + run(18), "16 2500 1200" + run(18, from: 18), "16 2500 2400" + run(4, from: 36),
                "18 01",
            ],
            .fail(.peerError(request: .executeWriteRequest, handle: 0, code: .invalidAttributeValueLength))),
        .init(
            "a Write Response instead of the echo cancels the queue",
            replies: ["13", "19"], sent: ["16 2500 0000" + run(18), "18 00"],
            .fail(.unexpectedResponse(request: .prepareWriteRequest, received: .writeResponse))),
    ]

    @Test(arguments: writeLong)
    func writeLongCharacteristicValues(_ exchange: Exchange<Int>) {
        exchange.check(WriteLongCharacteristicValues(handle: 0x25, value: bytes(40)))
    }

    @Test func writeLongEdges() {
        Exchange<Int>("empty value", replies: ["17 2500 0000", "19"], sent: ["16 2500 0000", "18 01"], .done(0))
            .check(WriteLongCharacteristicValues(handle: 0x25, value: []))
        Exchange<Int>(
            "at an offset", replies: ["17 2500 0a00 0102", "19"], sent: ["16 2500 0a00 0102", "18 01"], .done(2)
        ).check(WriteLongCharacteristicValues(handle: 0x25, value: [1, 2], offset: 10))
        var tooLong = WriteLongCharacteristicValues(handle: 0x25, value: bytes(503), offset: 10)
        #expect(tooLong.start() == .fail(.valueTooLong(length: 503, maximum: 502)))
        var pastEnd = WriteLongCharacteristicValues(handle: 0x25, value: [1], offset: 600)
        #expect(pastEnd.start() == .fail(.valueTooLong(length: 1, maximum: 0)))
    }
}
