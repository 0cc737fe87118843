import Bluetooth

/// The Database Hash (characteristic 0x2B2A): AES-CMAC with a zero key over the GATT-relevant
/// attributes of a server, so a client can tell whether its cached database is still valid.
///
/// The message is, in ascending handle order, for each Primary Service, Secondary Service,
/// Include and Characteristic declaration and each Characteristic Extended Properties
/// descriptor: handle ‖ type ‖ value; for each Characteristic User Description, Client
/// Characteristic Configuration, Server Characteristic Configuration, Characteristic
/// Presentation Format and Characteristic Aggregate Format descriptor: handle ‖ type. Other
/// attributes are left out. Handles, types and values are in their ATT (little-endian) octet
/// order, fed to AES-CMAC as they are.
///
/// The spec does not state the octet order of the 16-octet characteristic value; like Zephyr
/// (whose comment records that PTS expects it) and Bumble (whose output the tests match)
/// `characteristicValue` writes the CMAC result least significant octet first, as any multi-octet characteristic value (Vol 3 Part F §3.3.1).
/// BlueZ's gatt-db serves the CMAC output octets unreversed; compare both orders when checking
/// a BlueZ server.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §7.3
public enum DatabaseHash {
    /// One attribute of a server, as the hash sees it.
    public struct Attribute: Hashable, Sendable {
        public var handle: UInt16
        public var type: BluetoothUUID
        public var value: [UInt8]

        public init(handle: UInt16, type: BluetoothUUID, value: [UInt8]) {
            self.handle = handle
            self.type = type
            self.value = value
        }
    }

    /// Types hashed with their value.
    static let withValue: Set<BluetoothUUID> = [
        GATTUUID.primaryService, GATTUUID.secondaryService, GATTUUID.include, GATTUUID.characteristic,
        GATTUUID.characteristicExtendedProperties,
    ]
    /// Types hashed without their value.
    static let withoutValue: Set<BluetoothUUID> = [
        GATTUUID.characteristicUserDescription, GATTUUID.clientCharacteristicConfiguration,
        GATTUUID.serverCharacteristicConfiguration, GATTUUID.characteristicPresentationFormat,
        GATTUUID.characteristicAggregateFormat,
    ]

    /// The CMAC input for `attributes` (any order; sorted by handle here). Attributes of other
    /// types are skipped.
    public static func message<S: Sequence>(attributes: S) -> [UInt8] where S.Element == Attribute {
        var writer = ByteWriter()
        for attribute in attributes.sorted(by: { $0.handle < $1.handle }) {
            let hasValue = withValue.contains(attribute.type)
            guard hasValue || withoutValue.contains(attribute.type) else { continue }
            writer.writeUInt16LE(attribute.handle)
            writeAttributeUUID(attribute.type, to: &writer)
            if hasValue { writer.writeBytes(attribute.value) }
        }
        return writer.bytes
    }

    /// The hash of `attributes` as a 128-bit number (the CMAC result).
    public static func compute<S: Sequence>(attributes: S) throws(GATTError) -> UInt128 where S.Element == Attribute {
        try AESCMAC.compute(key: UInt128(0), message: message(attributes: attributes))
    }

    /// The 16 octets of the Database Hash characteristic value: `hash` least significant first.
    public static func characteristicValue(_ hash: UInt128) -> [UInt8] {
        (0..<16).map { UInt8(truncatingIfNeeded: hash >> ($0 * 8)) }
    }

    /// The hash of a discovered database. Declaration values are rebuilt from the model;
    /// each Characteristic Extended Properties descriptor's value must be in
    /// `extendedProperties` (by descriptor handle), else `valueUnknown` is thrown.
    public static func compute(
        database: GATTDatabase, extendedProperties: [UInt16: CharacteristicExtendedProperties] = [:]
    ) throws(GATTError) -> UInt128 {
        try compute(attributes: attributes(of: database, extendedProperties: extendedProperties))
    }

    /// The hashed attributes of a discovered database (see `compute(database:extendedProperties:)`).
    public static func attributes(
        of database: GATTDatabase, extendedProperties: [UInt16: CharacteristicExtendedProperties] = [:]
    ) throws(GATTError) -> [Attribute] {
        var out: [Attribute] = []
        for service in database.services {
            out.append(
                Attribute(
                    handle: service.startHandle,
                    type: service.isPrimary ? GATTUUID.primaryService : GATTUUID.secondaryService,
                    value: ServiceDeclaration(uuid: service.uuid).encoded))
            for include in service.includes {
                let value = IncludeDeclaration(
                    includedServiceHandle: include.startHandle, endGroupHandle: include.endHandle, uuid: include.uuid)
                out.append(Attribute(handle: include.handle, type: GATTUUID.include, value: value.encoded))
            }
            for characteristic in service.characteristics {
                let declaration = CharacteristicDeclaration(
                    properties: characteristic.properties, valueHandle: characteristic.valueHandle,
                    uuid: characteristic.uuid)
                out.append(
                    Attribute(
                        handle: characteristic.declarationHandle, type: GATTUUID.characteristic,
                        value: declaration.encoded))
                for descriptor in characteristic.descriptors {
                    if descriptor.uuid == GATTUUID.characteristicExtendedProperties {
                        guard let value = extendedProperties[descriptor.handle] else {
                            throw GATTError.valueUnknown(handle: descriptor.handle)
                        }
                        out.append(Attribute(handle: descriptor.handle, type: descriptor.uuid, value: value.encoded))
                    } else if withoutValue.contains(descriptor.uuid) {
                        out.append(Attribute(handle: descriptor.handle, type: descriptor.uuid, value: []))
                    }
                }
            }
        }
        return out
    }
}
