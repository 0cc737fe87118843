import SystemSupport
import Bluetooth

/// Loads attribute databases from the JSON layout of the shared GATT vectors (one entry of
/// `databases`): `services[]` with `handle`, `end_handle`, `primary`, `uuid`, `includes[]`
/// (`handle`, `included_service_handle`, `included_end_handle`, `included_uuid`) and
/// `characteristics[]` (`declaration_handle`, `value_handle`, `uuid`, `properties`,
/// `permissions`, `value`, `descriptors[]` with `handle`, `uuid`, `permissions`, `value`).
///
/// Handles are kept as given, gaps included; a missing handle is assigned in order. UUIDs are
/// text (`"2a00"` or 128-bit); values hex in wire order; `properties` a number or a list of
/// names (`"read"`, `"notify"`, ...); `permissions` the bitmask (bit 0 read, 1 write, 2 read
/// encrypted, 3 write encrypted; ours: 4/5 read/write authenticated, 6/7 read/write
/// authorized; 0 = no restriction) or a list of names (`"read"`, `"writeEncrypted"`, ...).
public enum DatabaseDescription {
    /// The service definitions of one database entry: an object with `services`, or the
    /// `services` array itself.
    public static func services(json: [UInt8]) throws(DatabaseDescriptionError) -> [ServiceDefinition] {
        try services(from: parse(json))
    }

    /// The database of one entry, built.
    public static func database(json: [UInt8]) throws(DatabaseDescriptionError) -> AttributeDatabase {
        try build(services(json: json))
    }

    /// Every database of a vectors file (its `databases` object), by name, in file order.
    public static func databases(vectorsJSON json: [UInt8]) throws(DatabaseDescriptionError)
        -> [(name: String, database: AttributeDatabase)]
    {
        guard case .object(let members)? = try parse(json)["databases"] else {
            throw DatabaseDescriptionError(path: "databases", reason: "missing or not an object")
        }
        var out: [(name: String, database: AttributeDatabase)] = []
        for (name, entry) in members {
            do {
                out.append((name, try build(services(from: entry))))
            } catch {
                throw DatabaseDescriptionError(path: "databases.\(name)." + error.path, reason: error.reason)
            }
        }
        return out
    }

    // MARK: Internals

    private static func parse(_ json: [UInt8]) throws(DatabaseDescriptionError) -> JSONValue {
        do {
            return try JSONValue(parsing: json)
        } catch {
            throw DatabaseDescriptionError(path: "", reason: error.description)
        }
    }

    private static func build(_ services: [ServiceDefinition]) throws(DatabaseDescriptionError) -> AttributeDatabase {
        do {
            return try AttributeDatabase(services: services)
        } catch {
            throw DatabaseDescriptionError(path: "services", reason: error.description)
        }
    }

    static func services(from root: JSONValue) throws(DatabaseDescriptionError) -> [ServiceDefinition] {
        let list: [JSONValue]
        if let array = root.array {
            list = array
        } else if let array = root["services"]?.array {
            list = array
        } else {
            throw DatabaseDescriptionError(path: "services", reason: "missing or not an array")
        }
        var out: [ServiceDefinition] = []
        for (index, entry) in list.enumerated() {
            out.append(try service(entry, path: "services[\(index)]"))
        }
        return out
    }

    private static func service(_ entry: JSONValue, path: String) throws(DatabaseDescriptionError) -> ServiceDefinition
    {
        var definition = ServiceDefinition(
            uuid: try uuid(entry["uuid"], path + ".uuid"), isPrimary: entry["primary"]?.bool ?? true,
            handle: try handle(entry["handle"], path + ".handle"),
            endHandle: try handle(entry["end_handle"], path + ".end_handle"))
        for (index, include) in (entry["includes"]?.array ?? []).enumerated() {
            let at = path + ".includes[\(index)]"
            guard let start = try handle(include["included_service_handle"], at + ".included_service_handle"),
                let end = try handle(include["included_end_handle"], at + ".included_end_handle")
            else { throw DatabaseDescriptionError(path: at, reason: "included service handles missing") }
            definition.includes.append(
                IncludeDefinition(
                    .range(start: start, end: end, uuid: try uuid(include["included_uuid"], at + ".included_uuid")),
                    handle: try handle(include["handle"], at + ".handle")))
        }
        for (index, characteristic) in (entry["characteristics"]?.array ?? []).enumerated() {
            definition.characteristics.append(
                try self.characteristic(characteristic, path: path + ".characteristics[\(index)]"))
        }
        return definition
    }

    private static func characteristic(_ entry: JSONValue, path: String) throws(DatabaseDescriptionError)
        -> CharacteristicDefinition
    {
        let properties = try self.properties(entry["properties"], path + ".properties")
        var definition = CharacteristicDefinition(
            uuid: try uuid(entry["uuid"], path + ".uuid"), properties: properties,
            permissions: try permissions(entry["permissions"], path + ".permissions"),
            value: try hex(entry["value"], path + ".value"),
            declarationHandle: try handle(entry["declaration_handle"], path + ".declaration_handle"),
            valueHandle: try handle(entry["value_handle"], path + ".value_handle"))
        for (index, descriptor) in (entry["descriptors"]?.array ?? []).enumerated() {
            let at = path + ".descriptors[\(index)]"
            let type = try uuid(descriptor["uuid"], at + ".uuid")
            // Without permissions: a Client Characteristic Configuration is readable and
            // writable (a client must be able to subscribe), any other descriptor read-only.
            let fallback: AttributePermissions =
                type == GATTUUID.clientCharacteristicConfiguration ? .readWrite : .read
            var item = DescriptorDefinition(
                uuid: type, permissions: try permissions(descriptor["permissions"], at + ".permissions") ?? fallback,
                value: try hex(descriptor["value"], at + ".value"),
                handle: try handle(descriptor["handle"], at + ".handle"))
            if type == GATTUUID.clientCharacteristicConfiguration || type == GATTUUID.characteristicExtendedProperties {
                item.maximumLength = 2
                item.isFixedLength = true
                if item.value.isEmpty { item.value = [0, 0] }
            }
            definition.descriptors.append(item)
        }
        return definition
    }

    // MARK: Fields

    private static func handle(_ value: JSONValue?, _ path: String) throws(DatabaseDescriptionError) -> UInt16? {
        guard let value, value != .null else { return nil }
        guard let number = value.int, (1...0xFFFF).contains(number) else {
            throw DatabaseDescriptionError(path: path, reason: "not a handle (1...65535)")
        }
        return UInt16(number)
    }

    private static func uuid(_ value: JSONValue?, _ path: String) throws(DatabaseDescriptionError) -> BluetoothUUID {
        guard let text = value?.string, let uuid = BluetoothUUID(text) else {
            throw DatabaseDescriptionError(path: path, reason: "not a UUID")
        }
        return uuid
    }

    private static func hex(_ value: JSONValue?, _ path: String) throws(DatabaseDescriptionError) -> [UInt8] {
        guard let value, value != .null else { return [] }
        guard let text = value.string, let bytes = Hex.decode(text) else {
            throw DatabaseDescriptionError(path: path, reason: "not a hex string")
        }
        return bytes
    }

    private static func properties(_ value: JSONValue?, _ path: String) throws(DatabaseDescriptionError)
        -> CharacteristicProperties
    {
        if let number = value?.int, (0...0xFF).contains(number) {
            return CharacteristicProperties(rawValue: UInt8(number))
        }
        if let names = value?.array?.compactMap(\.string), names.count == value?.array?.count,
            let properties = CharacteristicProperties(names: names)
        {
            return properties
        }
        throw DatabaseDescriptionError(path: path, reason: "not a properties octet or list of property names")
    }

    /// `nil` when absent (the definition then derives permissions from the properties).
    private static func permissions(_ value: JSONValue?, _ path: String) throws(DatabaseDescriptionError)
        -> AttributePermissions?
    {
        guard let value, value != .null else { return nil }
        if let number = value.int, (0...0xFF).contains(number) { return AttributePermissions(bitmask: number) }
        if let names = value.array?.compactMap(\.string), names.count == value.array?.count,
            let permissions = AttributePermissions(names: names)
        {
            return permissions
        }
        throw DatabaseDescriptionError(path: path, reason: "not a permissions bitmask or list of permission names")
    }
}

/// A database description that cannot be loaded: where (`path`, like
/// `services[1].characteristics[0].uuid`) and why.
public struct DatabaseDescriptionError: Error, Hashable, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }
}
