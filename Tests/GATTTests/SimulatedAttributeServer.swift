import ATT
import Bluetooth
import Foundation

@testable import GATT

/// A minimal ATT server over an attribute table, answering the discovery and read requests as
/// Core 5.4 Vol 3 Part F §3.4 describes (lists cut at the first entry of another length or at
/// ATT_MTU). Test-only: it lets procedures run against the shared databases.
struct SimulatedAttributeServer {
    struct Attribute: Sendable {
        var handle: UInt16
        var type: BluetoothUUID
        var value: [UInt8]
    }

    /// The attributes and MTU, in the form `ClientTestServer` answers from (its request
    /// table serves both test servers).
    private var state: ClientTestServer.State
    private(set) var requests = 0

    init(attributes: [Attribute], groupEnds: [UInt16: UInt16], mtu: Int) {
        state = ClientTestServer.State(
            attributes: attributes.sorted { $0.handle < $1.handle }.map {
                ClientTestServer.Attribute(handle: $0.handle, type: $0.type, value: $0.value, groupEnd: groupEnds[$0.handle])
            },
            mtu: mtu)
    }

    /// Read By Group Type (services only), Read By Type, Find Information and Read; anything
    /// else is Request Not Supported.
    mutating func answer(_ request: ATTPDU) -> ATTPDU {
        requests += 1
        switch request {
        case .readByGroupTypeRequest(let r)
        where r.startingHandle != 0 && r.startingHandle <= r.endingHandle
            && r.attributeGroupType != GATTUUID.primaryService && r.attributeGroupType != GATTUUID.secondaryService:
            return .errorResponse(
                ErrorResponse(requestOpcode: request.opcode, handle: r.startingHandle, errorCode: .unsupportedGroupType))
        case .readByGroupTypeRequest, .readByTypeRequest, .findInformationRequest, .readRequest:
            return ClientTestServer.answer(request, state: &state)
        default:
            return .errorResponse(ErrorResponse(requestOpcode: request.opcode, handle: 0, errorCode: .requestNotSupported))
        }
    }

    /// Runs `procedure` against this server to its end.
    mutating func run<P: GATTClientProcedure>(_ procedure: P) -> GATTProcedureAction<P.Result> {
        var procedure = procedure
        var action = procedure.start()
        while case .send(let request) = action, requests < 100_000 {
            action = procedure.receive(answer(request))
        }
        return action
    }
}

extension SharedVectors {
    /// A database of the client file: its attribute table and its services as our model.
    struct Database: @unchecked Sendable {
        var attributes: [SimulatedAttributeServer.Attribute]
        var groupEnds: [UInt16: UInt16]
        var services: [Service]
    }

    /// Every database of the client file, or `nil` when it is absent.
    static func fullDatabases() throws -> [String: Database]? {
        guard FileManager.default.fileExists(atPath: clientFile.path) else { return nil }
        let data = try Data(contentsOf: clientFile)
        guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let databases = root["databases"] as? [String: [String: Any]]
        else { throw VectorError.layout("no databases") }
        func handle(_ value: Any?) throws -> UInt16 {
            guard let number = value as? Int, let handle = UInt16(exactly: number) else {
                throw VectorError.layout("handle \(String(describing: value))")
            }
            return handle
        }
        func uuid(_ value: Any?) throws -> BluetoothUUID {
            guard let text = value as? String, let uuid = BluetoothUUID(text) else {
                throw VectorError.layout("uuid \(String(describing: value))")
            }
            return uuid
        }
        var out: [String: Database] = [:]
        for (name, database) in databases {
            let attributes = try (database["attributes"] as? [[String: Any]] ?? []).map {
                SimulatedAttributeServer.Attribute(
                    handle: try handle($0["handle"]), type: try uuid($0["type"]),
                    value: Hex.decode($0["value"] as? String ?? "") ?? [])
            }
            var groupEnds: [UInt16: UInt16] = [:]
            var services: [Service] = []
            for raw in database["services"] as? [[String: Any]] ?? [] {
                let start = try handle(raw["handle"])
                let end = try handle(raw["end_handle"])
                groupEnds[start] = end
                let includes = try (raw["includes"] as? [[String: Any]] ?? []).map {
                    IncludedService(
                        handle: try handle($0["handle"]), startHandle: try handle($0["included_service_handle"]),
                        endHandle: try handle($0["included_end_handle"]), uuid: try uuid($0["included_uuid"]))
                }
                let rawCharacteristics = raw["characteristics"] as? [[String: Any]] ?? []
                var characteristics: [Characteristic] = []
                for (index, c) in rawCharacteristics.enumerated() {
                    let next =
                        index + 1 < rawCharacteristics.count
                        ? try handle(rawCharacteristics[index + 1]["declaration_handle"]) - 1 : end
                    characteristics.append(
                        Characteristic(
                            uuid: try uuid(c["uuid"]), declarationHandle: try handle(c["declaration_handle"]),
                            valueHandle: try handle(c["value_handle"]), endHandle: next,
                            properties: CharacteristicProperties(rawValue: UInt8(c["properties"] as? Int ?? 0)),
                            descriptors: try (c["descriptors"] as? [[String: Any]] ?? []).map {
                                Descriptor(handle: try handle($0["handle"]), uuid: try uuid($0["uuid"]))
                            }))
                }
                services.append(
                    Service(
                        uuid: try uuid(raw["uuid"]), startHandle: start, endHandle: end,
                        isPrimary: raw["primary"] as? Bool ?? true, includes: includes, characteristics: characteristics
                    ))
            }
            out[name] = Database(attributes: attributes, groupEnds: groupEnds, services: services)
        }
        return out
    }
}
