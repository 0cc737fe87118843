import ATT
import Bluetooth
import Testing

@testable import GATT

/// Permission × security level → the ATT error the server must answer.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part F, §3.2.5; Vol 3, Part C, §10.3
@Suite("GATT server: permissions")
struct ServerPermissionTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var permissions: AttributePermissions
        var security: SecurityLevel
        var read: ATTErrorCode?
        var write: ATTErrorCode?
        var testDescription: String { "\(permissions) at \(security)" }
    }

    static let rows: [Row] = [
        Row(permissions: [], security: .none, read: .readNotPermitted, write: .writeNotPermitted),
        Row(permissions: [], security: .secureConnections, read: .readNotPermitted, write: .writeNotPermitted),
        Row(permissions: .read, security: .none, read: nil, write: .writeNotPermitted),
        Row(permissions: .write, security: .none, read: .readNotPermitted, write: nil),
        Row(permissions: .readWrite, security: .none, read: nil, write: nil),
        Row(permissions: [.readEncrypted], security: .none, read: .insufficientEncryption, write: .writeNotPermitted),
        Row(permissions: [.readEncrypted], security: .encrypted, read: nil, write: .writeNotPermitted),
        Row(permissions: [.read, .writeEncrypted], security: .none, read: nil, write: .insufficientEncryption),
        Row(permissions: [.read, .writeEncrypted], security: .encrypted, read: nil, write: nil),
        Row(
            permissions: [.readAuthenticated, .writeAuthenticated], security: .none, read: .insufficientAuthentication,
            write: .insufficientAuthentication),
        Row(
            permissions: [.readAuthenticated, .writeAuthenticated], security: .encrypted,
            read: .insufficientAuthentication, write: .insufficientAuthentication),
        Row(permissions: [.readAuthenticated, .writeAuthenticated], security: .authenticated, read: nil, write: nil),
        Row(
            permissions: [.readAuthenticated, .writeAuthenticated], security: .secureConnections, read: nil, write: nil),
        Row(
            permissions: [.readEncrypted, .readAuthenticated, .write], security: .none,
            read: .insufficientAuthentication,
            write: nil),
        Row(
            permissions: [.read, .write, .writeAuthenticated], security: .encrypted, read: nil,
            write: .insufficientAuthentication),
    ]

    /// A database with one characteristic value at 0x0003 with `permissions`.
    static func server(_ permissions: AttributePermissions) throws -> GATTServer {
        let database = try AttributeDatabase(services: [
            ServiceDefinition(
                uuid: 0x1815,
                characteristics: [
                    CharacteristicDefinition(
                        uuid: 0x2A56, properties: [.read, .write, .writeWithoutResponse], permissions: permissions,
                        value: [0x01])
                ])
        ])
        return GATTServer(database: database)
    }

    func code(_ pdu: ATTPDU?) -> ATTErrorCode? {
        if case .errorResponse(let response)? = pdu { return response.errorCode }
        return nil
    }

    @Test("the permission rules", arguments: rows)
    func rules(_ row: Row) {
        #expect(row.permissions.readError(at: row.security) == row.read)
        #expect(row.permissions.writeError(at: row.security) == row.write)
    }

    @Test("every read request and write request answers the permission error", arguments: rows)
    func overATT(_ row: Row) throws {
        var server = try Self.server(row.permissions)
        let client = server.connect(security: row.security)
        let reads: [ATTPDU] = [
            .readRequest(ReadRequest(handle: 3)),
            .readBlobRequest(ReadBlobRequest(handle: 3, offset: 0)),
            .readByTypeRequest(ReadByTypeRequest(startingHandle: 1, endingHandle: 0xFFFF, attributeType: 0x2A56)),
            .readMultipleRequest(ReadMultipleRequest(handles: [3, 3])),
            .readMultipleVariableRequest(ReadMultipleVariableRequest(handles: [3, 3])),
        ]
        for request in reads {
            let answer = server.respond(to: request, from: client)
            #expect(code(answer) == row.read, "\(request.opcode)")
            if case .errorResponse(let response)? = answer {
                #expect(response.handle == 3)
                #expect(response.requestOpcode == request.opcode)
            }
        }
        let writes: [ATTPDU] = [
            .writeRequest(WriteRequest(handle: 3, value: [0x02])),
            .prepareWriteRequest(PrepareWriteRequest(handle: 3, offset: 0, value: [0x02])),
        ]
        for request in writes {
            #expect(code(server.respond(to: request, from: client)) == row.write, "\(request.opcode)")
        }
        // A Write Command is never answered, and writes only when permitted.
        #expect(server.respond(to: .writeCommand(WriteCommand(handle: 3, value: [0x07])), from: client) == nil)
        #expect((server.database.attribute(at: 3)?.value == [0x07]) == (row.write == nil))
    }

    @Test("raising the security level after pairing lifts the error")
    func securityChange() throws {
        var server = try Self.server([.readEncrypted, .writeEncrypted])
        let client = server.connect()
        #expect(server.answer("0a 0300", from: client) == "010a03000f")
        server.setSecurity(.encrypted, for: client)
        #expect(server.answer("0a 0300", from: client) == "0b01")
        #expect(server.answer("12 0300 05", from: client) == "13")
    }

    @Test("authorization: Insufficient Authorization until the application authorizes the client")
    func authorization() throws {
        var server = try Self.server([.readEncrypted, .readAuthorized, .writeAuthorized])
        let client = server.connect()
        #expect(server.answer("0a 0300", from: client) == "010a03000f")
        server.setSecurity(.encrypted, for: client)
        #expect(server.answer("0a 0300", from: client) == "010a030008")
        #expect(server.answer("12 0300 05", from: client) == "0112030008")
        server.setAuthorized(true, for: client)
        #expect(server.answer("0a 0300", from: client) == "0b01")
        #expect(server.answer("12 0300 05", from: client) == "13")
    }

    @Test("Find By Type Value skips values the client may not read")
    func findByTypeValueSkipsUnreadable() throws {
        var server = try Self.server([.readEncrypted])
        let client = server.connect()
        #expect(server.answer("06 0100 ffff 562a 01", from: client) == "010601000a")
        server.setSecurity(.encrypted, for: client)
        #expect(server.answer("06 0100 ffff 562a 01", from: client) == "0703000300")
    }

    @Test("the vectors' bitmask: 0 means no restriction")
    func bitmask() {
        #expect(AttributePermissions(bitmask: 0) == .readWrite)
        #expect(AttributePermissions(bitmask: 1) == .read)
        #expect(AttributePermissions(bitmask: 3) == .readWrite)
        #expect(AttributePermissions(bitmask: 4) == .readEncrypted)
        #expect(AttributePermissions(bitmask: 0x0C) == [.readEncrypted, .writeEncrypted])
        #expect(AttributePermissions(names: ["read", "writeAuthenticated"]) == [.read, .writeAuthenticated])
        #expect(AttributePermissions(names: ["read", "bogus"]) == nil)
        #expect(AttributePermissions(bitmask: 0xC0) == [.readAuthorized, .writeAuthorized])
    }
}
