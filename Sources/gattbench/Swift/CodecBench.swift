import ATT
import Bluetooth
import CGattBenchMalloc
import HCI

/// PDU codec micro-benchmarks: ns per decode and per encode, heap allocations per decode
/// against the decoded value's own storage (one buffer per non-empty array it holds).
struct CodecBenchmark {
    var iterations: Int
    /// Batches per figure; the figure is the median batch.
    var batches = 7

    struct Row {
        var family: String
        var pdu: String
        var octets: Int
        var decodeNanoseconds: Double
        var encodeNanoseconds: Double
        var decodeAllocations: Double
        var ownStorage: Int?
        var encodeAllocations: Double
    }

    /// Median ns per iteration of `body` over `batches` batches, and allocations per iteration.
    func measure(_ body: () -> Void) -> (nanoseconds: Double, allocations: Double) {
        for _ in 0..<min(iterations, 1000) { body() }  // warm up
        var times: [UInt64] = []
        var allocations: UInt64 = 0
        for _ in 0..<batches {
            let before = gattbench_allocation_count()
            let start = Clock.threadCPU
            for _ in 0..<iterations { body() }
            times.append(Clock.threadCPU - start)
            allocations += gattbench_allocation_count() - before
        }
        return (Double(median(times)) / Double(iterations), Double(allocations) / Double(iterations * batches))
    }

    static let attSamples: [(String, ATTPDU)] = {
        var samples: [(String, ATTPDU)] = []
        samples.append(("Error handling", .errorResponse(ErrorResponse(requestOpcode: .readRequest, handle: 0x0021, errorCode: .readNotPermitted))))
        samples.append(("MTU exchange", .exchangeMTURequest(ExchangeMTURequest(clientRxMTU: 517))))
        samples.append(("MTU exchange", .exchangeMTUResponse(ExchangeMTUResponse(serverRxMTU: 247))))
        samples.append(("Find Information", .findInformationRequest(FindInformationRequest(startingHandle: 0x0022, endingHandle: 0x0030))))
        samples.append(("Find Information", .findInformationResponse(FindInformationResponse(entries: (0..<4).map { (i: UInt16) -> FindInformationResponse.Information in .init(handle: 0x22 + i, uuid: .bit16(0x2902 + i)) }))))
        samples.append(("Find By Type Value", .findByTypeValueRequest(FindByTypeValueRequest(startingHandle: 1, endingHandle: 0xFFFF, attributeType: 0x2800, attributeValue: [0x0F, 0x18]))))
        samples.append(("Find By Type Value", .findByTypeValueResponse(FindByTypeValueResponse(entries: [.init(foundAttributeHandle: 0x1F, groupEndHandle: 0x26), .init(foundAttributeHandle: 0x40, groupEndHandle: 0x48)]))))
        samples.append(("Read By Type", .readByTypeRequest(ReadByTypeRequest(startingHandle: 1, endingHandle: 0xFFFF, attributeType: .bit16(0x2803)))))
        samples.append(("Read By Type", .readByTypeResponse(ReadByTypeResponse(entries: (0..<3).map { (i: UInt16) -> ReadByTypeResponse.AttributeData in .init(handle: 2 + 2 * i, value: [0x02, UInt8(3 + 2 * i), 0x00, 0x00, 0x2A]) }))))
        samples.append(("Read", .readRequest(ReadRequest(handle: 0x0003))))
        samples.append(("Read", .readResponse(ReadResponse(value: Array(0..<20)))))
        samples.append(("Read Blob", .readBlobRequest(ReadBlobRequest(handle: 0x0003, offset: 22))))
        samples.append(("Read Blob", .readBlobResponse(ReadBlobResponse(value: Array(0..<22)))))
        samples.append(("Read Multiple", .readMultipleRequest(ReadMultipleRequest(handles: [0x0003, 0x0021, 0x0025]))))
        samples.append(("Read Multiple", .readMultipleResponse(ReadMultipleResponse(values: Array(0..<12)))))
        samples.append(("Read Multiple Variable", .readMultipleVariableRequest(ReadMultipleVariableRequest(handles: [0x0003, 0x0021]))))
        samples.append(("Read Multiple Variable", .readMultipleVariableResponse(ReadMultipleVariableResponse(entries: [.init(value: [1, 2, 3]), .init(value: [4, 5])]))))
        samples.append(("Read By Group Type", .readByGroupTypeRequest(ReadByGroupTypeRequest(startingHandle: 1, endingHandle: 0xFFFF, attributeGroupType: .bit16(0x2800)))))
        samples.append(("Read By Group Type", .readByGroupTypeResponse(ReadByGroupTypeResponse(entries: (0..<4).map { (i: UInt16) -> ReadByGroupTypeResponse.AttributeData in .init(handle: 1 + 8 * i, endGroupHandle: 7 + 8 * i, value: [UInt8(i), 0x18]) }))))
        samples.append(("Write", .writeRequest(WriteRequest(handle: 0x002A, value: [0x01, 0x00]))))
        samples.append(("Write", .writeResponse(WriteResponse())))
        samples.append(("Write", .writeCommand(WriteCommand(handle: 0x0024, value: Array(0..<20)))))
        samples.append(("Write", .signedWriteCommand(SignedWriteCommand(handle: 0x0024, value: [1, 2, 3, 4], signCounter: 7, mac: 0x1122_3344_5566_7788))))
        samples.append(("Queued writes", .prepareWriteRequest(PrepareWriteRequest(handle: 0x0030, offset: 0, value: Array(0..<18)))))
        samples.append(("Queued writes", .prepareWriteResponse(PrepareWriteResponse(handle: 0x0030, offset: 0, value: Array(0..<18)))))
        samples.append(("Queued writes", .executeWriteRequest(ExecuteWriteRequest(flags: .writeAll))))
        samples.append(("Queued writes", .executeWriteResponse(ExecuteWriteResponse())))
        samples.append(("Server initiated", .handleValueNotification(HandleValueNotification(handle: 0x0021, value: Array(0..<20)))))
        samples.append(("Server initiated", .handleValueIndication(HandleValueIndication(handle: 0x0009, value: [0x01, 0x00, 0xFF, 0xFF]))))
        samples.append(("Server initiated", .handleValueConfirmation(HandleValueConfirmation())))
        samples.append(("Server initiated", .multipleHandleValueNotification(MultipleHandleValueNotification(entries: [.init(handle: 0x21, value: [1, 2]), .init(handle: 0x29, value: [3, 4, 5])]))))
        return samples
    }()

    /// Heap buffers the decoded value itself owns: one per non-empty array.
    static func ownStorage(_ pdu: ATTPDU) -> Int {
        func array<T>(_ a: [T]) -> Int { a.isEmpty ? 0 : 1 }
        switch pdu {
        case .findInformationResponse(let p): return array(p.entries)
        case .findByTypeValueRequest(let p): return array(p.attributeValue)
        case .findByTypeValueResponse(let p): return array(p.entries)
        case .readByTypeResponse(let p): return array(p.entries) + p.entries.reduce(0) { $0 + array($1.value) }
        case .readResponse(let p): return array(p.value)
        case .readBlobResponse(let p): return array(p.value)
        case .readMultipleRequest(let p): return array(p.handles)
        case .readMultipleResponse(let p): return array(p.values)
        case .readMultipleVariableRequest(let p): return array(p.handles)
        case .readMultipleVariableResponse(let p): return array(p.entries) + p.entries.reduce(0) { $0 + array($1.value) }
        case .readByGroupTypeResponse(let p): return array(p.entries) + p.entries.reduce(0) { $0 + array($1.value) }
        case .writeRequest(let p): return array(p.value)
        case .writeCommand(let p): return array(p.value)
        case .signedWriteCommand(let p): return array(p.value)
        case .prepareWriteRequest(let p): return array(p.value)
        case .prepareWriteResponse(let p): return array(p.value)
        case .handleValueNotification(let p): return array(p.value)
        case .handleValueIndication(let p): return array(p.value)
        case .multipleHandleValueNotification(let p): return array(p.entries) + p.entries.reduce(0) { $0 + array($1.value) }
        case .unknown(_, let parameters): return array(parameters)
        default: return 0
        }
    }

    func attRows() throws -> [Row] {
        var rows: [Row] = []
        for (family, pdu) in Self.attSamples {
            let bytes = pdu.encoded
            let slice = bytes[...]
            let check = try ATTPDU(decoding: slice)
            guard check == pdu else { throw BenchError("\(pdu.opcode) does not round-trip") }
            let decode = measure {
                do { blackHole(try ATTPDU(decoding: slice)) } catch { fatalError("\(error)") }
            }
            var writer = ByteWriter(capacity: 600)
            let encode = measure {
                writer.bytes.removeAll(keepingCapacity: true)
                pdu.write(to: &writer)
                blackHole(writer.bytes.count)
            }
            rows.append(
                Row(
                    family: family, pdu: "\(pdu.opcode)", octets: bytes.count, decodeNanoseconds: decode.nanoseconds,
                    encodeNanoseconds: encode.nanoseconds, decodeAllocations: decode.allocations,
                    ownStorage: Self.ownStorage(pdu), encodeAllocations: encode.allocations))
        }
        return rows
    }

    /// HCI-level rows: advertising report events (legacy multi-report, extended), AD parsing,
    /// an ACL data packet.
    func hciRows() throws -> [Row] {
        let address = BluetoothAddress(rawValue: 0xC1_22_33_44_55_66)!
        let ad: [UInt8] = [0x02, 0x01, 0x06, 0x0B, 0x09] + Array("Sensor 123".utf8) + [0x05, 0x03, 0x0F, 0x18, 0x0A, 0x18]
        let legacy = LEAdvertisingReportEvent(reports: [
            LEAdvertisingReport(eventType: .advInd, addressType: .random, address: address, data: ad, rssi: -60),
            LEAdvertisingReport(eventType: .scanRsp, addressType: .random, address: address, data: [0x02, 0x0A, 0x00], rssi: -61),
            LEAdvertisingReport(eventType: .advNonconnInd, addressType: .public, address: address, data: Array(ad.prefix(14)), rssi: -80),
        ])
        let extended = LEExtendedAdvertisingReportEvent(reports: [
            LEExtendedAdvertisingReport(
                eventType: LEExtendedAdvertisingEventType(rawValue: 0x01), addressType: .random, address: address,
                primaryPHY: .le1M, secondaryPHY: .le2M, advertisingSID: 3, txPower: -4, rssi: -55,
                data: ad + [0x15, 0xFF, 0x31, 0x01] + Array(0..<18)),
        ])
        var rows: [Row] = []
        for (name, meta, own) in [
            ("LE Advertising Report, 3 reports", LEMetaEvent.advertisingReport(legacy), 1 + 3),
            ("LE Extended Advertising Report, 1 report", LEMetaEvent.extendedAdvertisingReport(extended), 1 + 1),
        ] {
            let event = HCIEvent.leMeta(meta)
            let bytes = try event.encoded()
            let slice = bytes[...]
            guard try HCIEvent(bytes: bytes) == event else { throw BenchError("\(name) does not round-trip") }
            let decode = measure {
                var reader = ByteReader(slice)
                do { blackHole(try HCIEvent(parsing: &reader)) } catch { fatalError("\(error)") }
            }
            var writer = ByteWriter(capacity: 300)
            let encode = measure {
                writer.bytes.removeAll(keepingCapacity: true)
                do { try event.write(to: &writer) } catch { fatalError("\(error)") }
                blackHole(writer.bytes.count)
            }
            rows.append(
                Row(
                    family: "HCI LE Meta", pdu: name, octets: bytes.count, decodeNanoseconds: decode.nanoseconds,
                    encodeNanoseconds: encode.nanoseconds, decodeAllocations: decode.allocations, ownStorage: own,
                    encodeAllocations: encode.allocations))
        }
        // AD structures of one report (what scan and dump do per report).
        let adDecode = measure { blackHole(AdvertisingData(ad)) }
        let parsed = AdvertisingData(ad)
        rows.append(
            Row(
                family: "AD", pdu: "AdvertisingData, \(parsed.elements.count) structures", octets: ad.count,
                decodeNanoseconds: adDecode.nanoseconds, encodeNanoseconds: .nan, decodeAllocations: adDecode.allocations,
                ownStorage: nil, encodeAllocations: .nan))
        // An ACL data packet carrying a notification.
        let acl = ACLDataPacket(handle: 0, packetBoundary: .firstFlushable, data: [0x07, 0x00, 0x04, 0x00, 0x1B, 0x21, 0x00, 1, 2, 3, 4])
        var aclWriter = ByteWriter()
        try acl.write(to: &aclWriter)
        let aclBytes = aclWriter.bytes[...]
        let aclDecode = measure {
            var reader = ByteReader(aclBytes)
            do { blackHole(try ACLDataPacket(parsing: &reader)) } catch { fatalError("\(error)") }
        }
        var writer = ByteWriter(capacity: 64)
        let aclEncode = measure {
            writer.bytes.removeAll(keepingCapacity: true)
            do { try acl.write(to: &writer) } catch { fatalError("\(error)") }
            blackHole(writer.bytes.count)
        }
        rows.append(
            Row(
                family: "HCI ACL", pdu: "ACL data packet (notification)", octets: aclBytes.count,
                decodeNanoseconds: aclDecode.nanoseconds, encodeNanoseconds: aclEncode.nanoseconds,
                decodeAllocations: aclDecode.allocations, ownStorage: 1, encodeAllocations: aclEncode.allocations))
        return rows
    }

    func run() throws -> [Row] {
        guard gattbench_malloc_counter_active() != 0 else {
            throw BenchError("the malloc counter is not interposed; allocation figures would be wrong")
        }
        print("\n== PDU codec: median of \(batches) batches of \(grouped(iterations)) (thread CPU time) ==")
        print("allocations: calls to malloc/calloc/realloc/aligned allocators, counted by gattbench's own")
        print("interposed allocator (Sources/gattbench/CMallocCounter) forwarding to glibc's __libc_malloc.")
        print("own storage: heap buffers the decoded value holds (one per non-empty array); the target.\n")
        let rows = try attRows() + hciRows()
        printTable(
            ["family", "PDU", "octets", "decode", "encode", "allocs/decode", "own storage", "extra", "allocs/encode"],
            rows.map { row in
                let extra = row.ownStorage.map { fixed(row.decodeAllocations - Double($0), 2) } ?? "-"
                return [
                    row.family, row.pdu, "\(row.octets)", perItem(row.decodeNanoseconds),
                    row.encodeNanoseconds.isNaN ? "-" : perItem(row.encodeNanoseconds), fixed(row.decodeAllocations, 2),
                    row.ownStorage.map(String.init) ?? "-", extra,
                    row.encodeAllocations.isNaN ? "-" : fixed(row.encodeAllocations, 2),
                ]
            })
        let over = rows.filter { row in row.ownStorage.map { row.decodeAllocations > Double($0) + 0.01 } ?? false }
        print(
            over.isEmpty
                ? "\nallocations target (none beyond the value's own storage): MET for every PDU"
                : "\nallocations target MISSED for: " + over.map(\.pdu).joined(separator: ", "))
        return rows
    }
}
