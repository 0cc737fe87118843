import BLE
import SystemSupport
import Bluetooth
import GATT

/// Reads the `services --json` document (DESIGN.md's shape) back into a `GATTDatabase`, for
/// `dump --services FILE`. Only what naming handles needs is read: each service's `uuid`,
/// `start`, `end` (and `primary`, default true), each characteristic's `uuid`,
/// `declarationHandle`, `valueHandle` (and `properties` names), each descriptor's `handle` and
/// `uuid`; other members (`name`, `value`, ...) are ignored.
enum ServicesJSON {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func load(path: String) throws -> GATTDatabase {
        let bytes: [UInt8]
        do {
            bytes = try FileSystem.readFile(atPath: path)
        } catch {
            throw Failure(description: "cannot read \(path): \(error.errno)")
        }
        return try database(json: bytes, path: path)
    }

    /// The database `json` describes; `path` names the file in error messages.
    static func database(json bytes: [UInt8], path: String) throws(Failure) -> GATTDatabase {
        let root: JSONValue
        do {
            root = try JSONValue(parsing: bytes)
        } catch {
            throw Failure(description: "\(path) is not JSON: \(error)")
        }
        guard let services = root["services"]?.array, services.allSatisfy({ $0.members != nil }) else {
            throw Failure(description: "\(path): no \"services\" list (expected the output of `gattclient services ADDR --json`)")
        }
        var database: [GATT.Service] = []
        for (index, service) in services.enumerated() {
            let place = "\(path): services[\(index)]"
            guard let uuid = service["uuid"]?.string.flatMap(BluetoothUUID.init),
                let start = handle(service["start"]), let end = handle(service["end"])
            else {
                throw Failure(description: "\(place) needs uuid, start and end")
            }
            var characteristics: [GATT.Characteristic] = []
            for (ci, characteristic) in try objects(service["characteristics"], "\(place).characteristics").enumerated() {
                guard let cuuid = characteristic["uuid"]?.string.flatMap(BluetoothUUID.init),
                    let declaration = handle(characteristic["declarationHandle"]),
                    let value = handle(characteristic["valueHandle"])
                else {
                    throw Failure(description: "\(place).characteristics[\(ci)] needs uuid, declarationHandle and valueHandle")
                }
                let names = characteristic["properties"]?.array?.compactMap(\.string) ?? []
                let properties = CharacteristicProperties(names: names) ?? []
                var descriptors: [Descriptor] = []
                let descriptorPlace = "\(place).characteristics[\(ci)].descriptors"
                for descriptor in try objects(characteristic["descriptors"], descriptorPlace) {
                    guard let duuid = descriptor["uuid"]?.string.flatMap(BluetoothUUID.init),
                        let dhandle = handle(descriptor["handle"])
                    else { continue }
                    descriptors.append(Descriptor(handle: dhandle, uuid: duuid))
                }
                characteristics.append(
                    GATT.Characteristic(
                        uuid: cuuid, declarationHandle: declaration, valueHandle: value, properties: properties,
                        descriptors: descriptors))
            }
            database.append(
                GATT.Service(
                    uuid: uuid, startHandle: start, endHandle: end, isPrimary: service["primary"]?.bool ?? true,
                    characteristics: characteristics))
        }
        return GATTDatabase(services: database)
    }

    /// A list of objects; absent: empty.
    private static func objects(_ value: JSONValue?, _ place: String) throws(Failure) -> [JSONValue] {
        guard let value else { return [] }
        guard let list = value.array, list.allSatisfy({ $0.members != nil }) else {
            throw Failure(description: "\(place) is not a list of objects")
        }
        return list
    }

    private static func handle(_ value: JSONValue?) -> UInt16? {
        guard let number = value?.int, (1...0xFFFF).contains(number) else { return nil }
        return UInt16(number)
    }
}
