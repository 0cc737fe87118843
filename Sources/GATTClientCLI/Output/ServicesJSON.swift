import Bluetooth
import Foundation
import GATT

/// Reads the `services --json` document (DESIGN.md's shape) back into a `GATTDatabase`, for
/// `dump --services FILE`.
enum ServicesJSON {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func load(path: String) throws -> GATTDatabase {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Failure(description: "cannot read \(path)")
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw Failure(description: "\(path) is not JSON: \(error.localizedDescription)")
        }
        guard let root = object as? [String: Any], let services = root["services"] as? [[String: Any]] else {
            throw Failure(description: "\(path): no \"services\" list (expected the output of `gattclient services ADDR --json`)")
        }
        var database: [Service] = []
        for (index, service) in services.enumerated() {
            let place = "\(path): services[\(index)]"
            guard let uuid = (service["uuid"] as? String).flatMap(BluetoothUUID.init),
                  let start = handle(service["start"]), let end = handle(service["end"]) else {
                throw Failure(description: "\(place) needs uuid, start and end")
            }
            var characteristics: [Characteristic] = []
            for (ci, characteristic) in ((service["characteristics"] as? [[String: Any]]) ?? []).enumerated() {
                guard let cuuid = (characteristic["uuid"] as? String).flatMap(BluetoothUUID.init),
                      let declaration = handle(characteristic["declarationHandle"]),
                      let value = handle(characteristic["valueHandle"]) else {
                    throw Failure(description: "\(place).characteristics[\(ci)] needs uuid, declarationHandle and valueHandle")
                }
                let names = (characteristic["properties"] as? [String]) ?? []
                let properties = CharacteristicProperties(names: names) ?? []
                var descriptors: [Descriptor] = []
                for descriptor in (characteristic["descriptors"] as? [[String: Any]]) ?? [] {
                    guard let duuid = (descriptor["uuid"] as? String).flatMap(BluetoothUUID.init),
                          let dhandle = handle(descriptor["handle"]) else { continue }
                    descriptors.append(Descriptor(handle: dhandle, uuid: duuid))
                }
                characteristics.append(Characteristic(
                    uuid: cuuid, declarationHandle: declaration, valueHandle: value, properties: properties, descriptors: descriptors))
            }
            database.append(Service(
                uuid: uuid, startHandle: start, endHandle: end, isPrimary: (service["primary"] as? Bool) ?? true,
                characteristics: characteristics))
        }
        return GATTDatabase(services: database)
    }

    private static func handle(_ value: Any?) -> UInt16? {
        guard let number = value as? Int, (1...0xFFFF).contains(number) else { return nil }
        return UInt16(number)
    }
}
