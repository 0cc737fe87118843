import ATT
import Bluetooth
import Testing

@testable import GATT
import TestSupport

/// The procedures against the cases of /work/shared/vectors/gatt-client-vectors.json that
/// exercise them (BlueZ unit/test-gatt.c, restated): each procedure must send the case's
/// client PDUs byte for byte and end as the case expects.
@Suite("GATT client procedures vs. shared BlueZ vectors", .cpuBound)
struct GATTClientVectorTests {
    static func loadCases(_ procedures: Set<String>) throws -> [SharedVectors.Case]? {
        guard let cases = try SharedVectors.clientCases() else {
            print("skipped: \(SharedVectors.missingMessage)")
            return nil
        }
        return cases.filter { procedures.contains($0.procedure) }
    }

    static func uuid(_ value: Any?) -> BluetoothUUID? { (value as? String).flatMap(BluetoothUUID.init) }
    static func int(_ value: Any?) -> Int? { value as? Int }

    @Test func discoveryHelperCases() throws {
        guard
            let cases = try Self.loadCases([
                "discover_all_primary_services", "discover_primary_services_by_uuid", "discover_characteristics",
                "discover_descriptors",
            ])
        else { return }
        #expect(cases.count == 8)
        for vector in cases {
            let script = vector.pdus(phase: "procedure")[...]
            let mtu = vector.clientMTU
            let args = vector.arguments
            let derived = vector.derivedResults
            switch vector.procedure {
            case "discover_all_primary_services":
                var procedure = DiscoverAllPrimaryServices(mtu: mtu)
                let (outcome, rest, mismatch) = play(&procedure, script: script)
                #expect(mismatch == nil && rest.isEmpty, "\(vector.id): \(mismatch ?? "PDUs left over")")
                let expected = derived.map {
                    Service(
                        uuid: Self.uuid($0["uuid"])!, startHandle: UInt16($0["start"] as! Int),
                        endHandle: UInt16($0["end"] as! Int))
                }
                #expect(outcome == .done(expected), "\(vector.id)")
            case "discover_primary_services_by_uuid":
                let uuid = try #require(Self.uuid(args["uuid"]))
                if args["uuid_on_wire"] as? String == "128-bit" { #expect(uuid.byteWidth == 16) }
                var procedure = DiscoverPrimaryServiceByServiceUUID(uuid: uuid, mtu: mtu)
                let (outcome, rest, mismatch) = play(&procedure, script: script)
                #expect(mismatch == nil && rest.isEmpty, "\(vector.id): \(mismatch ?? "PDUs left over")")
                let expected = derived.map {
                    Service(uuid: uuid, startHandle: UInt16($0["start"] as! Int), endHandle: UInt16($0["end"] as! Int))
                }
                #expect(outcome == .done(expected), "\(vector.id)")
            case "discover_characteristics":
                let range = UInt16(Self.int(args["start_handle"])!)...UInt16(Self.int(args["end_handle"])!)
                var procedure = DiscoverAllCharacteristics(range: range, mtu: mtu)
                let (outcome, rest, mismatch) = play(&procedure, script: script)
                #expect(mismatch == nil && rest.isEmpty, "\(vector.id): \(mismatch ?? "PDUs left over")")
                guard case .done(let found) = outcome else {
                    Issue.record("\(vector.id): \(String(describing: outcome))")
                    continue
                }
                #expect(found.map(\.declarationHandle) == derived.map { UInt16($0["declaration_handle"] as! Int) })
                #expect(found.map(\.valueHandle) == derived.map { UInt16($0["value_handle"] as! Int) })
                #expect(found.map(\.properties.rawValue) == derived.map { UInt8($0["properties"] as! Int) })
                #expect(found.map(\.uuid) == derived.map { Self.uuid($0["uuid"])! })
                #expect(found.last?.endHandle == range.upperBound)
            case "discover_descriptors":
                let range = UInt16(Self.int(args["start_handle"])!)...UInt16(Self.int(args["end_handle"])!)
                var procedure = DiscoverAllCharacteristicDescriptors(range: range, mtu: mtu)
                let (outcome, rest, mismatch) = play(&procedure, script: script)
                #expect(mismatch == nil && rest.isEmpty, "\(vector.id): \(mismatch ?? "PDUs left over")")
                let expected = derived.map {
                    Descriptor(handle: UInt16($0["handle"] as! Int), uuid: Self.uuid($0["uuid"])!)
                }
                #expect(outcome == .done(expected), "\(vector.id)")
            default:
                Issue.record("unhandled \(vector.procedure)")
            }
        }
    }

    /// What a case expects at the end: the value (reads) or success, or the ATT error code.
    static func check<R: Hashable>(
        _ outcome: GATTProcedureAction<R>?, _ vector: SharedVectors.Case, success: (R) -> Bool
    ) {
        let expected = vector.expected
        if expected["success"] as? Bool == true {
            guard case .done(let result) = outcome else {
                Issue.record("\(vector.id): expected success, got \(String(describing: outcome))")
                return
            }
            #expect(success(result), "\(vector.id): result \(result)")
        } else {
            let code = expected["att_ecode"] as? Int ?? -1
            guard case .fail(.peerError(_, _, let got)) = outcome else {
                Issue.record("\(vector.id): expected ATT error \(code), got \(String(describing: outcome))")
                return
            }
            #expect(Int(got.rawValue) == code, "\(vector.id)")
        }
    }

    @Test func readAndWriteCases() throws {
        guard let cases = try Self.loadCases(["read_value", "read_long_value", "write_value", "write_long_value"])
        else { return }
        #expect(cases.count == 60)
        var played = 0
        for vector in cases {
            var script = vector.pdus(phase: "procedure")[...]
            let mtu = vector.clientMTU
            let handle = UInt16(Self.int(vector.arguments["handle"])!)
            let offset = UInt16(Self.int(vector.arguments["offset"]) ?? 0)
            let value = (vector.arguments["value"] as? String).flatMap(Hex.decode) ?? []
            let expectedValue = (vector.expected["value"] as? String).flatMap(Hex.decode)
            // With auto-elevation BlueZ raises security after Insufficient Authentication and
            // runs the procedure again: our driver's job, so play the procedure twice.
            let attempts =
                vector.pdus.filter { $0.phase == "procedure" && $0.dir == "s2c" }
                    .contains { $0.bytes.count == 5 && $0.bytes[0] == 0x01 && $0.bytes[4] == 0x05 }
                    && vector.expected["success"] as? Bool == true ? 2 : 1
            for attempt in 1...attempts {
                let last = attempt == attempts
                switch vector.procedure {
                case "read_value":
                    var procedure = ReadCharacteristicValue(handle: handle, mtu: mtu)
                    let run = play(&procedure, script: script)
                    #expect(run.mismatch == nil, "\(vector.id): \(run.mismatch ?? "")")
                    script = run.rest
                    if last {
                        Self.check(run.outcome, vector) { $0 == expectedValue }
                    } else {
                        #expect(
                            run.outcome
                                == .fail(
                                    .peerError(request: .readRequest, handle: handle, code: .insufficientAuthentication)
                                ))
                    }
                case "read_long_value":
                    var procedure = ReadLongCharacteristicValues(handle: handle, offset: offset, mtu: mtu)
                    let bluezView = vector.pdus.contains { $0.asReadByBlueZ != nil }
                    let run = play(&procedure, script: script, preferBlueZView: bluezView)
                    #expect(run.mismatch == nil, "\(vector.id): \(run.mismatch ?? "")")
                    script = run.rest
                    if last {
                        Self.check(run.outcome, vector) { $0 == expectedValue }
                    } else {
                        #expect(
                            run.outcome
                                == .fail(
                                    .peerError(request: .readRequest, handle: handle, code: .insufficientAuthentication)
                                ))
                    }
                case "write_value":
                    var procedure = WriteCharacteristicValue(handle: handle, value: value, mtu: mtu)
                    let run = play(&procedure, script: script)
                    #expect(run.mismatch == nil, "\(vector.id): \(run.mismatch ?? "")")
                    script = run.rest
                    if last {
                        Self.check(run.outcome, vector) { $0 == value.count }
                    } else {
                        #expect(
                            run.outcome
                                == .fail(
                                    .peerError(
                                        request: .writeRequest, handle: handle, code: .insufficientAuthentication)))
                    }
                case "write_long_value":
                    var procedure = WriteLongCharacteristicValues(
                        handle: handle, value: value, offset: offset, mtu: mtu)
                    let run = play(&procedure, script: script)
                    #expect(run.mismatch == nil, "\(vector.id): \(run.mismatch ?? "")")
                    script = run.rest
                    Self.check(run.outcome, vector) { $0 == value.count }
                default:
                    Issue.record("unhandled \(vector.procedure)")
                }
            }
            #expect(script.isEmpty, "\(vector.id): \(script.count) PDUs not played")
            played += 1
        }
        #expect(played == cases.count)
    }

    /// The 513-octet Read Response of the /512B cases, taken literally, exceeds ATT_MTU 512:
    /// the procedure rejects it by name (README quirk 1).
    @Test func overMTUReadResponseRejected() throws {
        guard let cases = try Self.loadCases(["read_long_value"]) else { return }
        let literal = cases.filter { $0.pdus.contains { $0.asReadByBlueZ != nil } }
        #expect(literal.count == 2)
        for vector in literal {
            var procedure = ReadLongCharacteristicValues(
                handle: UInt16(Self.int(vector.arguments["handle"])!), mtu: vector.clientMTU)
            let run = play(&procedure, script: vector.pdus(phase: "procedure")[...])
            #expect(
                run.outcome
                    == .fail(.invalidResponse(opcode: .readResponse, reason: .exceedsMTU(length: 513, mtu: 512))))
        }
    }

    /// The full-client cases begin discovery with BlueZ's Discover All Primary Services over
    /// the whole range; ours must send the same requests and find the database's primary services.
    @Test func fullClientPrimaryServiceDiscovery() throws {
        guard let cases = try SharedVectors.clientCases(), let databases = try SharedVectors.databases() else {
            print("skipped: \(SharedVectors.missingMessage)")
            return
        }
        var checked = 0
        for vector in cases where vector.context.hasPrefix("bt_gatt_client") {
            guard let name = vector.serverDatabase, let database = databases[name] else { continue }
            // The leading Read By Group Type «Primary Service» exchange of the discovery phase.
            var script: [SharedVectors.PDU] = []
            for pdu in vector.pdus(phase: "discovery") {
                if pdu.dir == "c2s" && !(pdu.bytes.first == 0x10 && pdu.bytes.suffix(2) == [0x00, 0x28]) { break }
                script.append(pdu)
            }
            guard !script.isEmpty else { continue }
            var procedure = DiscoverAllPrimaryServices(mtu: vector.clientMTU)
            let run = play(&procedure, script: script[...])
            #expect(run.mismatch == nil && run.rest.isEmpty, "\(vector.id): \(run.mismatch ?? "PDUs left over")")
            let expected = database.filter(\.isPrimary).map {
                Service(uuid: $0.uuid, startHandle: $0.startHandle, endHandle: $0.endHandle)
            }
            #expect(run.outcome == .done(expected), "\(vector.id)")
            checked += 1
        }
        #expect(checked > 50)
    }

    @Test func otherProcedureCases() throws {
        guard
            let cases = try Self.loadCases([
                "read_multiple", "reliable_write", "read_using_characteristic_uuid", "find_included_services",
                "write_without_response", "signed_write_without_response",
            ])
        else { return }
        #expect(cases.count == 25)
        var played = 0
        for vector in cases {
            var script = vector.pdus(phase: "procedure")[...]
            let mtu = vector.clientMTU
            let args = vector.arguments
            let success = vector.expected["success"] as? Bool == true
            let retried =
                success
                && script.contains {
                    $0.dir == "s2c" && $0.bytes.count == 5 && $0.bytes[0] == 0x01 && $0.bytes[4] == 0x05
                }
            switch vector.procedure {
            case "read_multiple":
                let handles = (args["handles"] as? [Int] ?? []).map { UInt16($0) }
                for attempt in 1...(retried ? 2 : 1) {
                    var procedure = ReadMultipleCharacteristicValues(handles: handles, mtu: mtu)
                    let run = play(&procedure, script: script)
                    #expect(run.mismatch == nil, "\(vector.id): \(run.mismatch ?? "")")
                    script = run.rest
                    if attempt == 1 && retried {
                        #expect(
                            run.outcome
                                == .fail(
                                    .peerError(
                                        request: .readMultipleRequest, handle: handles[0],
                                        code: .insufficientAuthentication)))
                    } else {
                        let value = (vector.expected["value"] as? String).flatMap(Hex.decode)
                        Self.check(run.outcome, vector) { $0 == value }
                    }
                }
            case "reliable_write":
                if retried {
                    // BlueZ raises security and prepares again without cancelling the queue;
                    // ours cancels on every error, so this script differs by design.
                    print("\(vector.id): not played (BlueZ retries without Execute Write cancel)")
                    continue
                }
                let value = Hex.decode(args["value"] as? String ?? "") ?? []
                var procedure = ReliableWrites(
                    writes: [
                        .init(
                            handle: UInt16(args["handle"] as! Int), value: value,
                            offset: UInt16(args["offset"] as? Int ?? 0))
                    ],
                    mtu: mtu)
                let run = play(&procedure, script: script)
                #expect(run.mismatch == nil, "\(vector.id): \(run.mismatch ?? "")")
                script = run.rest
                Self.check(run.outcome, vector) { $0 == value.count }
            case "read_using_characteristic_uuid":
                let uuid = try #require(Self.uuid(args["uuid"]))
                let range = UInt16(args["start_handle"] as! Int)...UInt16(args["end_handle"] as! Int)
                var procedure = ReadUsingCharacteristicUUID(uuid: uuid, range: range, mtu: mtu)
                let run = play(&procedure, script: script)
                #expect(run.mismatch == nil, "\(vector.id): \(run.mismatch ?? "")")
                script = run.rest
                if let first = vector.expected["first_and_only_result_value"] as? String {
                    guard case .done(let values) = run.outcome else {
                        Issue.record("\(vector.id): \(String(describing: run.outcome))")
                        continue
                    }
                    #expect(values.map { Hex.encode($0.value) } == [first], "\(vector.id)")
                } else {
                    Self.check(run.outcome, vector) { _ in false }
                }
            case "find_included_services":
                let range = UInt16(args["start_handle"] as! Int)...UInt16(args["end_handle"] as! Int)
                var procedure = FindIncludedServices(range: range, mtu: mtu)
                let run = play(&procedure, script: script)
                #expect(run.mismatch == nil, "\(vector.id): \(run.mismatch ?? "")")
                script = run.rest
                let expected = vector.derivedResults.map {
                    IncludedService(
                        handle: UInt16($0["declaration_handle"] as! Int), startHandle: UInt16($0["start"] as! Int),
                        endHandle: UInt16($0["end"] as! Int), uuid: Self.uuid($0["uuid"]))
                }
                #expect(run.outcome == .done(expected), "\(vector.id)")
            case "write_without_response", "signed_write_without_response":
                let handle = UInt16(args["handle"] as! Int)
                let value = Hex.decode(args["value"] as? String ?? "") ?? []
                let command: ATTPDU
                if let csrk = (args["csrk_le"] as? String).flatMap(Hex.decode),
                    let counter = args["sign_counter"] as? Int
                {
                    command = try WriteWithoutResponse.signedCommand(
                        handle: handle, value: value,
                        csrk: try #require(ConnectionSignatureResolvingKey(littleEndian: csrk)),
                        signCounter: UInt32(counter), mtu: mtu)
                } else {
                    // Without a counter (the encrypted-link variant) BlueZ sends a plain command.
                    command = try WriteWithoutResponse.command(handle: handle, value: value, mtu: mtu)
                }
                #expect(script.first.map { Hex.encode($0.bytes) } == Hex.encode(command.encoded), "\(vector.id)")
                script = script.dropFirst()
            default:
                Issue.record("unhandled \(vector.procedure)")
            }
            #expect(script.isEmpty, "\(vector.id): \(script.count) PDUs not played")
            played += 1
        }
        #expect(played == cases.count - 1)
    }
}
