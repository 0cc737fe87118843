import ATT
import Bluetooth
import Testing

@testable import GATT

@Suite("GATT includes, read by UUID, read multiple, reliable writes, commands: action tables")
struct GATTMoreProcedureTests {
    static let includes: [Exchange<[IncludedService]>] = [
        .init(
            "16-bit and 128-bit includes; the 128-bit UUID is read before the search goes on",
            replies: [
                "09 08 1100 2000 2500 0f18", "09 06 1200 3000 3500", "0b 9ecadc240ee5a9e093f3a3b50100406e",
                "01 08 1300 0a",
            ],
            sent: ["08 1000 1f00 0228", "08 1200 1f00 0228", "0a 3000", "08 1300 1f00 0228"],
            .done([
                IncludedService(handle: 0x11, startHandle: 0x20, endHandle: 0x25, uuid: 0x180F),
                IncludedService(
                    handle: 0x12, startHandle: 0x30, endHandle: 0x35,
                    uuid: BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!),
            ])),
        .init(
            "an include at the range end needs no further request",
            replies: ["09 08 1f00 2000 2500 0f18"], sent: ["08 1000 1f00 0228"],
            .done([IncludedService(handle: 0x1F, startHandle: 0x20, endHandle: 0x25, uuid: 0x180F)])),
        .init(
            "a 2-octet answer where a 128-bit UUID is due",
            replies: ["09 06 1200 3000 3500", "0b 0f18"], sent: ["08 1000 1f00 0228", "0a 3000"],
            .fail(.invalidAttributeValue(type: 0x2800, handle: 0x30, reason: .invalidLength(2, allowed: [16])))),
        .init(
            "an include value of 5 octets",
            replies: ["09 07 1200 3000 3500 01"], sent: ["08 1000 1f00 0228"],
            .fail(.invalidAttributeValue(type: 0x2802, handle: 0x12, reason: .invalidLength(5, allowed: [4, 6])))),
        .init(
            "the UUID read refused",
            replies: ["09 06 1200 3000 3500", "01 0a 3000 02"], sent: ["08 1000 1f00 0228", "0a 3000"],
            .fail(.peerError(request: .readRequest, handle: 0x30, code: .readNotPermitted))),
        .init(
            "an include outside the service",
            replies: ["09 08 2000 2000 2500 0f18"], sent: ["08 1000 1f00 0228"],
            .fail(.invalidResponse(opcode: .readByTypeResponse, reason: .handleOutOfRange(0x20, range: 0x10...0x1F)))),
        .init("no includes", replies: ["01 08 1000 0a"], sent: ["08 1000 1f00 0228"], .done([])),
    ]

    @Test(arguments: includes)
    func findIncludedServices(_ exchange: Exchange<[IncludedService]>) {
        exchange.check(FindIncludedServices(service: Service(uuid: 0x1800, startHandle: 0x10, endHandle: 0x1F)))
    }

    static let byUUID: [Exchange<[ReadByTypeResponse.AttributeData]>] = [
        .init(
            "two rounds", replies: ["09 04 1200 6400 1600 6500", "01 08 1700 0a"],
            sent: ["08 1000 1f00 192a", "08 1700 1f00 192a"],
            .done([.init(handle: 0x12, value: [0x64, 0x00]), .init(handle: 0x16, value: [0x65, 0x00])])),
        .init(
            "nothing found is the server's error", replies: ["01 08 1000 0a"], sent: ["08 1000 1f00 192a"],
            .fail(.peerError(request: .readByTypeRequest, handle: 0x10, code: .attributeNotFound))),
        .init(
            "a handle going backwards", replies: ["09 04 1200 6400", "09 04 1100 6400"],
            sent: ["08 1000 1f00 192a", "08 1300 1f00 192a"],
            .fail(.invalidResponse(opcode: .readByTypeResponse, reason: .handleNotAdvancing(0x11, previous: 0x12)))),
    ]

    @Test(arguments: byUUID)
    func readUsingCharacteristicUUID(_ exchange: Exchange<[ReadByTypeResponse.AttributeData]>) {
        exchange.check(ReadUsingCharacteristicUUID(uuid: 0x2A19, range: 0x10...0x1F))
    }

    @Test func discoverCharacteristicsByUUID() {
        Exchange<[Characteristic]>(
            "filtered, end handles from all declarations",
            replies: ["09 07 1100 02 1200 192a 1400 12 1500 002a 1700 12 1800 192a", "01 08 1800 0a"],
            sent: ["08 1000 1f00 0328", "08 1800 1f00 0328"],
            .done([
                Characteristic(
                    uuid: 0x2A19, declarationHandle: 0x11, valueHandle: 0x12, endHandle: 0x13, properties: .read),
                Characteristic(
                    uuid: 0x2A19, declarationHandle: 0x17, valueHandle: 0x18, endHandle: 0x1F,
                    properties: [.read, .notify]),
            ])
        ).check(DiscoverCharacteristicsByUUID(uuid: 0x2A19, range: 0x10...0x1F))
    }

    @Test func readMultiple() {
        Exchange<[UInt8]>("values", replies: ["0f 0102 03"], sent: ["0e 0300 0700"], .done([1, 2, 3]))
            .check(ReadMultipleCharacteristicValues(handles: [3, 7]))
        Exchange<[UInt8]>(
            "refused", replies: ["01 0e 0700 02"], sent: ["0e 0300 0700"],
            .fail(.peerError(request: .readMultipleRequest, handle: 7, code: .readNotPermitted))
        ).check(ReadMultipleCharacteristicValues(handles: [3, 7]))
        var one = ReadMultipleCharacteristicValues(handles: [3])
        #expect(one.start() == .fail(.invalidParameter("Read Multiple needs at least two handles")))
        var many = ReadMultipleCharacteristicValues(handles: Array(1...12))
        #expect(many.start() == .fail(.invalidParameter("12 handles do not fit ATT_MTU 23")))
        var eleven = ReadMultipleCharacteristicValues(handles: Array(1...11))
        #expect(eleven.start() == .send(.readMultipleRequest(ReadMultipleRequest(handles: Array(1...11)))))
    }

    @Test func readMultipleVariable() {
        Exchange<[ReadMultipleVariableResponse.LengthValue]>(
            "two values", replies: ["21 0200 0102 0100 03"], sent: ["20 0300 0700"],
            .done([.init(value: [1, 2]), .init(value: [3])])
        ).check(ReadMultipleVariableLengthCharacteristicValues(handles: [3, 7]))
        Exchange<[ReadMultipleVariableResponse.LengthValue]>(
            "more values than handles", replies: ["21 0100 01 0100 02 0100 03"], sent: ["20 0300 0700"],
            .fail(
                .invalidResponse(opcode: .readMultipleVariableResponse, reason: .tooManyValues(count: 3, requested: 2)))
        ).check(ReadMultipleVariableLengthCharacteristicValues(handles: [3, 7]))
    }

    @Test func reliableWrites() {
        let long = (0..<20).map(UInt8.init)
        Exchange<Int>(
            "two characteristics, the second in two parts, one execute",
            replies: ["17 0700 0000 0102", "17 0900 0000" + Hex.encode(long.prefix(18)), "17 0900 1200 1213", "19"],
            sent: ["16 0700 0000 0102", "16 0900 0000" + Hex.encode(long.prefix(18)), "16 0900 1200 1213", "18 01"],
            .done(22)
        ).check(ReliableWrites(writes: [.init(handle: 7, value: [1, 2]), .init(handle: 9, value: long)]))
        Exchange<Int>(
            "a differing echo cancels everything",
            replies: ["17 0700 0000 0102", "17 0900 0000 ff", "19"],
            sent: ["16 0700 0000 0102", "16 0900 0000 05", "18 00"],
            .fail(.invalidResponse(opcode: .prepareWriteResponse, reason: .echoMismatch(handle: 9, offset: 0)))
        ).check(ReliableWrites(writes: [.init(handle: 7, value: [1, 2]), .init(handle: 9, value: [5])]))
        var none = ReliableWrites(writes: [])
        #expect(none.start() == .fail(.invalidParameter("nothing to write")))
        var tooLong = ReliableWrites(writes: [
            .init(handle: 7, value: [1]), .init(handle: 9, value: [1, 2], offset: 511),
        ])
        #expect(tooLong.start() == .fail(.valueTooLong(length: 2, maximum: 1)))
    }

    @Test func commands() throws {
        #expect(try WriteWithoutResponse.command(handle: 7, value: [1, 2, 3]).encoded == [0x52, 0x07, 0x00, 1, 2, 3])
        #expect(throws: GATTError.valueTooLong(length: 21, maximum: 20)) {
            _ = try WriteWithoutResponse.command(handle: 7, value: [UInt8](repeating: 0, count: 21))
        }
        let csrk = try #require(
            ConnectionSignatureResolvingKey(littleEndian: Hex.decode("d8515948451fea320dc05a2e88308188")!))
        let signed = try WriteWithoutResponse.signedCommand(handle: 7, value: [1, 2, 3], csrk: csrk, signCounter: 0)
        #expect(Hex.encode(signed.encoded) == "d2070001020300000000311f0acd1c3a5b0a")
        #expect(try ATTSigning.verify(csrk: csrk, signedPDU: signed.encoded))
        #expect(throws: GATTError.valueTooLong(length: 9, maximum: 8)) {
            _ = try WriteWithoutResponse.signedCommand(
                handle: 7, value: [UInt8](repeating: 0, count: 9), csrk: csrk, signCounter: 1)
        }
    }
}
