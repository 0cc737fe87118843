import Bluetooth
import Foundation

/// The JSON layout of one cache file (documented on ``GATTDatabaseCache``). Separate from the
/// model types, so the model can change without changing the file format.
struct CacheFile: Codable {
    static let formatName = "gattclient-database-cache"
    static let currentVersion = 1

    struct DescriptorRecord: Codable {
        var handle: UInt16
        var uuid: String
    }

    struct CharacteristicRecord: Codable {
        var uuid: String
        var declarationHandle: UInt16
        var valueHandle: UInt16
        var endHandle: UInt16
        var properties: UInt8
        var descriptors: [DescriptorRecord]
    }

    struct IncludeRecord: Codable {
        var handle: UInt16
        var start: UInt16
        var end: UInt16
        var uuid: String?
    }

    struct ServiceRecord: Codable {
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
