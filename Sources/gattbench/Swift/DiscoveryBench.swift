import ATT
import Bluetooth
import GATT

/// ATT requests our GATT procedures need against a CC2650 SensorTag-like database (the 11
/// services of /work/shared/notes/devices.md: GAP, GATT, Device Information, Battery, five TI
/// sensors, IO, Simple Keys), served by a minimal in-process ATT server at server MTU 23 and 517.
/// Counts include the Exchange MTU request, as the floors (54, 28) and Bumble's figures
/// (64, 47) do. The database is rebuilt from the notes, not copied from the Bumble peer, so
/// those references are close but not the same database.
struct DiscoveryBenchmark {
    struct Attribute {
        var handle: UInt16
        var type: BluetoothUUID
        var value: [UInt8]
    }

    /// Serves discovery, reads and writes from a static attribute table (Vol 3 Part F §3.4).
    struct Server {
        var attributes: [Attribute] = []
        var groupEnds: [UInt16: UInt16] = [:]
        var mtu = 23

        static func tiUUID(_ short: UInt16) -> BluetoothUUID {
            // F000xxxx-0451-4000-B000-000000000000
            .bit128(UInt128(0xF000_0000_0451_4000_B000_0000_0000_0000) | UInt128(short) << 96)
        }

        static func uuidBytes(_ uuid: BluetoothUUID) -> [UInt8] {
            var writer = ByteWriter()
            switch uuid {
            case .bit16(let v): writer.writeUInt16LE(v)
            case .bit32(let v): writer.writeUInt32LE(v)
            case .bit128(let v): writer.writeUInt128LE(v)
            }
            return writer.bytes
        }

        mutating func add(_ type: BluetoothUUID, _ value: [UInt8]) -> UInt16 {
            let handle = UInt16(attributes.count + 1)
            attributes.append(Attribute(handle: handle, type: type, value: value))
            return handle
        }

        /// properties: 0x02 read, 0x08 write, 0x10 notify, 0x20 indicate.
        mutating func characteristic(_ uuid: BluetoothUUID, properties: UInt8, description: String?) {
            let declaration = UInt16(attributes.count + 1)
            let valueHandle = declaration + 1
            _ = add(.bit16(0x2803), [properties, UInt8(valueHandle & 0xFF), UInt8(valueHandle >> 8)] + Self.uuidBytes(uuid))
            _ = add(uuid, [0x00, 0x00])
            if properties & 0x30 != 0 { _ = add(.bit16(0x2902), [0x00, 0x00]) }
            if let description { _ = add(.bit16(0x2901), Array(description.utf8)) }
        }

        mutating func service(_ uuid: BluetoothUUID, _ body: (inout Server) -> Void) {
            let start = add(.bit16(0x2800), Self.uuidBytes(uuid))
            body(&self)
            groupEnds[start] = UInt16(attributes.count)
        }

        static func sensorTag() -> Server {
            var s = Server()
            s.service(.bit16(0x1800)) {
                $0.characteristic(.bit16(0x2A00), properties: 0x02, description: nil)
                $0.characteristic(.bit16(0x2A01), properties: 0x02, description: nil)
                $0.characteristic(.bit16(0x2A04), properties: 0x02, description: nil)
            }
            s.service(.bit16(0x1801)) { $0.characteristic(.bit16(0x2A05), properties: 0x20, description: nil) }
            s.service(.bit16(0x180A)) {
                for uuid: UInt16 in [0x2A23, 0x2A24, 0x2A25, 0x2A26, 0x2A27, 0x2A28, 0x2A29, 0x2A2A, 0x2A50] {
                    $0.characteristic(.bit16(uuid), properties: 0x02, description: nil)
                }
            }
            s.service(.bit16(0x180F)) { $0.characteristic(.bit16(0x2A19), properties: 0x12, description: nil) }
            for (base, name) in [(UInt16(0xAA00), "IR Temp"), (0xAA20, "Humidity"), (0xAA40, "Barometer"), (0xAA70, "Light"), (0xAA80, "Movement")] {
                s.service(tiUUID(base)) {
                    $0.characteristic(tiUUID(base + 1), properties: 0x12, description: "\(name). Data")
                    $0.characteristic(tiUUID(base + 2), properties: 0x0A, description: "\(name). Conf.")
                    $0.characteristic(tiUUID(base == 0xAA40 ? base + 4 : base + 3), properties: 0x0A, description: "\(name). Period")
                }
            }
            s.service(tiUUID(0xAA64)) {
                $0.characteristic(tiUUID(0xAA65), properties: 0x0A, description: "IO Data")
                $0.characteristic(tiUUID(0xAA66), properties: 0x0A, description: "IO Config")
            }
            s.service(.bit16(0xFFE0)) { $0.characteristic(.bit16(0xFFE1), properties: 0x10, description: "Key Press State") }
            return s
        }

        func error(_ request: ATTOpcode, _ handle: UInt16, _ code: ATTErrorCode) -> ATTPDU {
            .errorResponse(ErrorResponse(requestOpcode: request, handle: handle, errorCode: code))
        }

        func inRange(_ start: UInt16, _ end: UInt16) -> ArraySlice<Attribute> {
            guard start >= 1, start <= end, Int(start) <= attributes.count else { return [] }
            return attributes[Int(start - 1)..<min(attributes.count, Int(end))]
        }

        func answer(_ pdu: ATTPDU) -> ATTPDU {
            switch pdu {
            case .exchangeMTURequest:
                return .exchangeMTUResponse(ExchangeMTUResponse(serverRxMTU: UInt16(mtu)))
            case .readByGroupTypeRequest(let r):
                guard r.startingHandle != 0, r.startingHandle <= r.endingHandle else {
                    return error(.readByGroupTypeRequest, r.startingHandle, .invalidHandle)
                }
                var entries: [ReadByGroupTypeResponse.AttributeData] = []
                for a in inRange(r.startingHandle, r.endingHandle) where a.type == r.attributeGroupType {
                    let length = entries.first?.value.count ?? a.value.count
                    guard a.value.count == length, 2 + (entries.count + 1) * (4 + length) <= mtu else { break }
                    entries.append(.init(handle: a.handle, endGroupHandle: groupEnds[a.handle] ?? a.handle, value: a.value))
                }
                // The last service's group runs to 0xFFFF, as TI's stack reports it.
                if let last = entries.last, Int(last.endGroupHandle) == attributes.count {
                    entries[entries.count - 1].endGroupHandle = 0xFFFF
                }
                return entries.isEmpty
                    ? error(.readByGroupTypeRequest, r.startingHandle, .attributeNotFound)
                    : .readByGroupTypeResponse(ReadByGroupTypeResponse(entries: entries))
            case .readByTypeRequest(let r):
                guard r.startingHandle != 0, r.startingHandle <= r.endingHandle else {
                    return error(.readByTypeRequest, r.startingHandle, .invalidHandle)
                }
                var entries: [ReadByTypeResponse.AttributeData] = []
                for a in inRange(r.startingHandle, r.endingHandle) where a.type == r.attributeType {
                    let value = Array(a.value.prefix(mtu - 4))
                    let length = entries.first?.value.count ?? value.count
                    guard value.count == length, 2 + (entries.count + 1) * (2 + length) <= mtu else { break }
                    entries.append(.init(handle: a.handle, value: value))
                }
                return entries.isEmpty
                    ? error(.readByTypeRequest, r.startingHandle, .attributeNotFound)
                    : .readByTypeResponse(ReadByTypeResponse(entries: entries))
            case .findInformationRequest(let r):
                guard r.startingHandle != 0, r.startingHandle <= r.endingHandle else {
                    return error(.findInformationRequest, r.startingHandle, .invalidHandle)
                }
                var entries: [FindInformationResponse.Information] = []
                for a in inRange(r.startingHandle, r.endingHandle) {
                    let width = a.type.byteWidth == 2 ? 2 : 16
                    let firstWidth = entries.first.map { $0.uuid.byteWidth == 2 ? 2 : 16 } ?? width
                    guard width == firstWidth, 2 + (entries.count + 1) * (2 + width) <= mtu else { break }
                    entries.append(.init(handle: a.handle, uuid: a.type))
                }
                return entries.isEmpty
                    ? error(.findInformationRequest, r.startingHandle, .attributeNotFound)
                    : .findInformationResponse(FindInformationResponse(entries: entries))
            case .readRequest(let r):
                guard let a = inRange(r.handle, r.handle).first else { return error(.readRequest, r.handle, .invalidHandle) }
                return .readResponse(ReadResponse(value: Array(a.value.prefix(mtu - 1))))
            case .writeRequest(let r):
                guard !inRange(r.handle, r.handle).isEmpty else { return error(.writeRequest, r.handle, .invalidHandle) }
                return .writeResponse(WriteResponse())
            default:
                return error(pdu.opcode, 0, .requestNotSupported)
            }
        }
    }

    struct Count {
        var requests = 0
        var server: Server
        /// Prints every request and answer (`gattbench discovery --trace`).
        var trace = false

        /// Runs a procedure to its end against the server; returns its result.
        mutating func run<P: GATTClientProcedure>(_ procedure: P) throws -> P.Result {
            var procedure = procedure
            var action = procedure.start()
            while true {
                switch action {
                case .send(let request):
                    requests += 1
                    let answer = server.answer(request)
                    if trace { print("    > \(request)\n    < \(answer)") }
                    action = procedure.receive(answer)
                case .done(let result): return result
                case .fail(let error): throw BenchError("procedure failed: \(error)")
                }
            }
        }
    }

    /// Negotiated ATT_MTU for our client's 517 against `serverMTU`, after one Exchange MTU.
    var trace = false

    func session(serverMTU: Int) -> (Count, Int) {
        var server = Server.sensorTag()
        server.mtu = serverMTU
        var count = Count(server: server, trace: trace)
        count.requests = 1  // ATT_EXCHANGE_MTU_REQ
        return (count, min(517, serverMTU))
    }

    func run() throws {
        print("\n== discovery: ATT requests against a CC2650-like database (Exchange MTU counted) ==")
        let attributes = Server.sensorTag().attributes.count
        print("database: 11 services, \(attributes) attributes, rebuilt from shared/notes/devices.md (TI firmware 1.4x)\n")
        var rows: [[String]] = []
        for (serverMTU, floor, bumble) in [(23, 54, 64), (517, 28, 47)] {
            var (count, mtu) = session(serverMTU: serverMTU)
            let database = try count.run(DatabaseDiscovery(mtu: mtu, findIncludes: true))
            guard database.services.count == 11, database.characteristics.count == 32 else {
                throw BenchError("discovery found \(database.services.count) services, \(database.characteristics.count) characteristics")
            }
            let full = count.requests
            (count, mtu) = session(serverMTU: serverMTU)
            _ = try count.run(DatabaseDiscovery(mtu: mtu, findIncludes: false))
            let noIncludes = count.requests
            // `read ADDR UUID`: Read Using Characteristic UUID (§4.8.2) on the IR temperature data.
            (count, mtu) = session(serverMTU: serverMTU)
            _ = try count.run(ReadUsingCharacteristicUUID(uuid: Server.tiUUID(0xAA01), mtu: mtu))
            let read = count.requests
            // `subscribe ADDR UUID`: find the characteristic and its descriptors, write the CCCD.
            (count, mtu) = session(serverMTU: serverMTU)
            var found = try count.run(DiscoverCharacteristicsByUUID(uuid: Server.tiUUID(0xAA01), range: 0x0001...0xFFFF, mtu: mtu))
            for index in found.indices {
                if let range = found[index].descriptorRange {
                    found[index].descriptors = try count.run(DiscoverAllCharacteristicDescriptors(range: range, mtu: mtu))
                }
            }
            guard let cccd = found.first?.clientConfigurationHandle else { throw BenchError("no CCCD found for AA01") }
            _ = try count.run(WriteCharacteristicValue(handle: cccd, value: [0x01, 0x00], mtu: mtu))
            let subscribe = count.requests
            rows.append([
                "\(serverMTU)", "\(full)", "\(noIncludes)", "\(floor)", "\(bumble)",
                fixed(Double(full) / Double(floor), 2) + "x", "\(read)", "\(subscribe)",
            ])
        }
        printTable(
            ["server MTU", "discovery", "no include search", "floor (issue)", "Bumble", "÷floor", "read UUID", "subscribe UUID"],
            rows)
    }
}
