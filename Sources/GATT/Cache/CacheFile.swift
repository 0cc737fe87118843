import SystemSupport
import Bluetooth

/// The JSON layout of one cache file (documented on ``GATTDatabaseCache``). Separate from the
/// model types, so the model can change without changing the file format. Read and written
/// with ``JSONValue`` (no Foundation); files written by the former `JSONEncoder` version
/// (`"key" : value`, `\/` escapes) read the same.
struct CacheFile: Equatable {
    static let formatName = "gattclient-database-cache"
    static let currentVersion = 1

    struct DescriptorRecord: Equatable {
        var handle: UInt16
        var uuid: String
    }

    struct CharacteristicRecord: Equatable {
        var uuid: String
        var declarationHandle: UInt16
        var valueHandle: UInt16
        var endHandle: UInt16
        var properties: UInt8
        var descriptors: [DescriptorRecord]
    }

    struct IncludeRecord: Equatable {
        var handle: UInt16
        var start: UInt16
        var end: UInt16
        var uuid: String?
    }

    struct ServiceRecord: Equatable {
        var uuid: String
        var start: UInt16
        var end: UInt16
        var primary: Bool
        var includes: [IncludeRecord]
        var characteristics: [CharacteristicRecord]
    }

    var format: String
    var version: Int
    var address: String
    var addressType: String
    var databaseHash: String?
    var services: [ServiceRecord]

    init(_ entry: GATTCacheEntry, peer: GATTPeerIdentity) {
        format = Self.formatName
        version = Self.currentVersion
        address = peer.address.description
        addressType = peer.addressType.description
        databaseHash = entry.databaseHash.map { Hex.encode($0) }
        services = entry.database.services.map { service in
            ServiceRecord(
                uuid: service.uuid.description, start: service.startHandle, end: service.endHandle,
                primary: service.isPrimary,
                includes: service.includes.map {
                    IncludeRecord(
                        handle: $0.handle, start: $0.startHandle, end: $0.endHandle, uuid: $0.uuid?.description)
                },
                characteristics: service.characteristics.map { characteristic in
                    CharacteristicRecord(
                        uuid: characteristic.uuid.description, declarationHandle: characteristic.declarationHandle,
                        valueHandle: characteristic.valueHandle, endHandle: characteristic.endHandle,
                        properties: characteristic.properties.rawValue,
                        descriptors: characteristic.descriptors.map {
                            DescriptorRecord(handle: $0.handle, uuid: $0.uuid.description)
                        })
                })
        }
    }

    /// The entry, checked: format, version, peer, UUIDs, hash and database consistency.
    func entry(for peer: GATTPeerIdentity) throws(GATTError) -> GATTCacheEntry {
        guard format == Self.formatName else { throw GATTError.cache(reason: "format \"\(format)\" is not ours") }
        guard version == Self.currentVersion else { throw GATTError.cache(reason: "version \(version) unsupported") }
        guard address == peer.address.description, addressType == peer.addressType.description else {
            throw GATTError.cache(reason: "file names \(address)/\(addressType), not \(peer)")
        }
        var hash: [UInt8]?
        if let text = databaseHash {
            guard let bytes = Hex.decode(text), bytes.count == 16 else {
                throw GATTError.cache(reason: "databaseHash \"\(text)\" is not 16 octets of hex")
            }
            hash = bytes
        }
        func uuid(_ text: String) throws(GATTError) -> BluetoothUUID {
            guard let uuid = BluetoothUUID(text) else { throw GATTError.cache(reason: "invalid UUID \"\(text)\"") }
            return uuid
        }
        var out: [Service] = []
        for record in services {
            var includes: [IncludedService] = []
            for include in record.includes {
                includes.append(
                    IncludedService(
                        handle: include.handle, startHandle: include.start, endHandle: include.end,
                        uuid: try include.uuid.map { (text: String) throws(GATTError) in try uuid(text) }))
            }
            var characteristics: [Characteristic] = []
            for c in record.characteristics {
                var descriptors: [Descriptor] = []
                for d in c.descriptors { descriptors.append(Descriptor(handle: d.handle, uuid: try uuid(d.uuid))) }
                characteristics.append(
                    Characteristic(
                        uuid: try uuid(c.uuid), declarationHandle: c.declarationHandle, valueHandle: c.valueHandle,
                        endHandle: c.endHandle, properties: CharacteristicProperties(rawValue: c.properties),
                        descriptors: descriptors))
            }
            out.append(
                Service(
                    uuid: try uuid(record.uuid), startHandle: record.start, endHandle: record.end,
                    isPrimary: record.primary, includes: includes, characteristics: characteristics))
        }
        let database = GATTDatabase(services: out)
        try database.validate()
        return GATTCacheEntry(database: database, databaseHash: hash)
    }
}

// MARK: JSON

extension CacheFile {
    /// The file's text: pretty-printed, members sorted (diffable), a newline at the end.
    func encoded() -> [UInt8] { json.encoded(.pretty) }

    var json: JSONValue {
        var root: [(String, JSONValue)] = [
            ("format", .string(format)), ("version", .integer(version)), ("address", .string(address)),
            ("addressType", .string(addressType)),
        ]
        if let databaseHash { root.append(("databaseHash", .string(databaseHash))) }
        root.append(("services", .array(services.map(\.json))))
        return .object(root)
    }

    /// Reads the file's text: strict JSON, every member of the layout present with its type
    /// (optional ones may be absent or null); members it does not know are ignored.
    init(parsing bytes: [UInt8]) throws(GATTError) {
        let root: JSONValue
        do {
            root = try JSONValue(parsing: bytes)
        } catch {
            throw GATTError.cache(reason: error.description)
        }
        let file = try Fields(root, "")
        format = try file.string("format")
        version = try file.integer("version", Int.self)
        address = try file.string("address")
        addressType = try file.string("addressType")
        databaseHash = try file.optionalString("databaseHash")
        services = try file.list("services") { (fields: Fields) throws(GATTError) in try ServiceRecord(fields) }
    }

    /// The members of one object, with the path to it for error reasons.
    struct Fields {
        let value: JSONValue
        let path: String

        init(_ value: JSONValue, _ path: String) throws(GATTError) {
            guard value.members != nil else { throw GATTError.cache(reason: "\(path.isEmpty ? "the file" : path) is not an object") }
            self.value = value
            self.path = path
        }

        func place(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

        func member(_ key: String) throws(GATTError) -> JSONValue {
            guard let member = value[key] else { throw GATTError.cache(reason: "\(place(key)) is missing") }
            return member
        }

        func string(_ key: String) throws(GATTError) -> String {
            guard let text = try member(key).string else { throw GATTError.cache(reason: "\(place(key)) is not a string") }
            return text
        }

        func optionalString(_ key: String) throws(GATTError) -> String? {
            guard let member = value[key], !member.isNull else { return nil }
            guard let text = member.string else { throw GATTError.cache(reason: "\(place(key)) is not a string") }
            return text
        }

        func bool(_ key: String) throws(GATTError) -> Bool {
            guard let flag = try member(key).bool else { throw GATTError.cache(reason: "\(place(key)) is not true or false") }
            return flag
        }

        func integer<T: FixedWidthInteger>(_ key: String, _ type: T.Type) throws(GATTError) -> T {
            guard let number = try member(key).int, let value = T(exactly: number) else {
                throw GATTError.cache(reason: "\(place(key)) is not an integer from \(T.min) to \(T.max)")
            }
            return value
        }

        func list<T>(_ key: String, _ element: (Fields) throws(GATTError) -> T) throws(GATTError) -> [T] {
            guard let array = try member(key).array else { throw GATTError.cache(reason: "\(place(key)) is not an array") }
            var out: [T] = []
            out.reserveCapacity(array.count)
            for (index, item) in array.enumerated() {
                out.append(try element(try Fields(item, "\(place(key))[\(index)]")))
            }
            return out
        }
    }
}

extension CacheFile.DescriptorRecord {
    var json: JSONValue { .object([("handle", .integer(handle)), ("uuid", .string(uuid))]) }

    init(_ fields: CacheFile.Fields) throws(GATTError) {
        handle = try fields.integer("handle", UInt16.self)
        uuid = try fields.string("uuid")
    }
}

extension CacheFile.CharacteristicRecord {
    var json: JSONValue {
        .object([
            ("uuid", .string(uuid)), ("declarationHandle", .integer(declarationHandle)),
            ("valueHandle", .integer(valueHandle)), ("endHandle", .integer(endHandle)),
            ("properties", .integer(properties)), ("descriptors", .array(descriptors.map(\.json))),
        ])
    }

    init(_ fields: CacheFile.Fields) throws(GATTError) {
        uuid = try fields.string("uuid")
        declarationHandle = try fields.integer("declarationHandle", UInt16.self)
        valueHandle = try fields.integer("valueHandle", UInt16.self)
        endHandle = try fields.integer("endHandle", UInt16.self)
        properties = try fields.integer("properties", UInt8.self)
        descriptors = try fields.list("descriptors") { (fields: CacheFile.Fields) throws(GATTError) in
            try CacheFile.DescriptorRecord(fields)
        }
    }
}

extension CacheFile.IncludeRecord {
    var json: JSONValue {
        var members: [(String, JSONValue)] = [("handle", .integer(handle)), ("start", .integer(start)), ("end", .integer(end))]
        if let uuid { members.append(("uuid", .string(uuid))) }
        return .object(members)
    }

    init(_ fields: CacheFile.Fields) throws(GATTError) {
        handle = try fields.integer("handle", UInt16.self)
        start = try fields.integer("start", UInt16.self)
        end = try fields.integer("end", UInt16.self)
        uuid = try fields.optionalString("uuid")
    }
}

extension CacheFile.ServiceRecord {
    var json: JSONValue {
        .object([
            ("uuid", .string(uuid)), ("start", .integer(start)), ("end", .integer(end)), ("primary", .bool(primary)),
            ("includes", .array(includes.map(\.json))), ("characteristics", .array(characteristics.map(\.json))),
        ])
    }

    init(_ fields: CacheFile.Fields) throws(GATTError) {
        uuid = try fields.string("uuid")
        start = try fields.integer("start", UInt16.self)
        end = try fields.integer("end", UInt16.self)
        primary = try fields.bool("primary")
        includes = try fields.list("includes") { (fields: CacheFile.Fields) throws(GATTError) in
            try CacheFile.IncludeRecord(fields)
        }
        characteristics = try fields.list("characteristics") { (fields: CacheFile.Fields) throws(GATTError) in
            try CacheFile.CharacteristicRecord(fields)
        }
    }
}
