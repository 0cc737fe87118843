import ATT
import Bluetooth

@testable import GATT

#if canImport(Glibc)
    import Glibc
#endif

/// The small database of the server byte tables (handles assigned in order):
///
///     0x0001 Primary 0x1800            0x0002 decl  0x0003 Device Name "Srv" (read)
///     0x0004 Primary 0x1801            0x0005 decl  0x0006 Service Changed (no access)  0x0007 CCCD
///     0x0008 Primary 128-bit U1        0x0009 decl  0x000A U2 "hello" (read, write, notify; max 16)
///                                      0x000B CCCD  0x000C User Description "desc"
///     0x000D Secondary 0x180F          0x000E decl  0x000F Battery Level 0x64 (read, notify)
///     0x0010 Primary 0x180A            0x0011 include 0x000D–0x000F  0x0012 decl
///                                      0x0013 Manufacturer Name, 30 octets (read)
enum ServerFixture {
    static let u1 = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0")!
    static let u2 = BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF1")!
    static let u1LE = "f0debc9a785634127856341278563412"
    static let u2LE = "f1debc9a785634127856341278563412"
    static let longValue = Array("0123456789ABCDEFGHIJKLMNOPQRST".utf8)

    static func definitions() -> [ServiceDefinition] {
        [
            ServiceDefinition(
                uuid: GATTUUID.genericAccess,
                characteristics: [
                    CharacteristicDefinition(uuid: GATTUUID.deviceName, properties: [.read], value: Array("Srv".utf8))
                ]),
            StandardServices.genericAttributeWithServiceChangedOnly(),
            ServiceDefinition(
                uuid: u1,
                characteristics: [
                    CharacteristicDefinition(
                        uuid: u2, properties: [.read, .write, .notify], value: Array("hello".utf8), maximumLength: 16,
                        descriptors: [.clientConfiguration(), .userDescription("desc")])
                ]),
            ServiceDefinition(
                uuid: 0x180F, isPrimary: false,
                characteristics: [CharacteristicDefinition(uuid: 0x2A19, properties: [.read, .notify], value: [0x64])]),
            ServiceDefinition(
                uuid: 0x180A, includes: [.service(0x180F)],
                characteristics: [CharacteristicDefinition(uuid: 0x2A29, properties: [.read], value: longValue)]),
        ]
    }

    static func database() throws -> AttributeDatabase { try AttributeDatabase(services: definitions()) }

    static func server(configuration: GATTServer.Configuration = GATTServer.Configuration()) throws -> GATTServer {
        GATTServer(database: try database(), configuration: configuration)
    }
}

/// Decodes hex (spaces allowed) as an ATT PDU; traps on a bad fixture.
func serverPDU(_ hex: String) -> ATTPDU {
    let bytes = Hex.decode(hex.filter { !$0.isWhitespace })!
    return try! ATTPDU(decoding: bytes)
}

/// Encodes a PDU as lower-case hex without spaces.
func serverHex(_ pdu: ATTPDU?) -> String? {
    guard let pdu else { return nil }
    var writer = ByteWriter()
    pdu.write(to: &writer)
    return Hex.encode(writer.bytes).lowercased()
}

/// Normalises an expected hex string (spaces removed, lower case).
func serverExpected(_ hex: String?) -> String? {
    hex.map { String($0.filter { !$0.isWhitespace }).lowercased() }
}

extension GATTServer {
    /// Sends the request in `hex` from `client` and returns the answer as hex.
    mutating func answer(_ hex: String, from client: ClientID) -> String? {
        serverHex(respond(to: serverPDU(hex), from: client))
    }
}

/// `<package root>/../shared`, resolved from this file.
enum ServerShared {
    static let vectorsPath: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(4)  // package root/Tests/GATTTests/ServerTestSupport.swift
        return parts.joined(separator: "/") + "/shared/vectors/gatt-client-vectors.json"
    }()

    static var missingMessage: String { "shared GATT vectors not found at \(vectorsPath) (../shared is absent)" }

    /// The vectors file's bytes, or `nil` when absent.
    static func vectorsFile() -> [UInt8]? {
        guard let file = fopen(vectorsPath, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return bytes
    }
}
