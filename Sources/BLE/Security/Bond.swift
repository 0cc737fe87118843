#if canImport(Glibc)
import Glibc
#endif
import Bluetooth
import GATT
import Security
import SystemSupport

/// A bond: the keys a pairing left, for one local controller address and one peer, as the bond
/// file holds them (`<dir>/<local address>/<peer identity address>.json`). Keys are hex in SMP
/// PDU octet order (least significant first); under Secure Connections the one LTK is `peerLTK`
/// with EDIV and Rand zero. Never printed unless asked (`bonds --json`).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.4 (key distribution), Vol 3, Part C, §9.4 (bonding)
public struct Bond: Hashable, Sendable {
    /// Our controller's address and type when the bond was made.
    public var local: BluetoothAddress
    public var localType: AddressType
    /// The peer's address and type on the link that paired.
    public var peer: BluetoothAddress
    public var peerType: AddressType
    /// The peer's identity address (what it distributed, else its link address).
    public var identity: BluetoothAddress
    public var identityType: AddressType
    /// The LTK the peer distributed (legacy) or both derived (Secure Connections).
    public var peerLTK: LongTermKey?
    /// The LTK we distributed (legacy).
    public var localLTK: LongTermKey?
    /// The encryption key size in octets.
    public var keySize: Int
    /// Whether the keys are MITM-protected.
    public var authenticated: Bool
    public var secureConnections: Bool
    public var peerIRK: [UInt8]?
    public var peerCSRK: [UInt8]?
    public var localIRK: [UInt8]?
    public var localCSRK: [UInt8]?
    /// `central` or `peripheral`: our role when it paired.
    public var pairedAs: String
    /// When, as RFC 3339 (UTC).
    public var created: String

    /// The security level encrypting with this bond gives (Vol 3, Part C, §10.2).
    public var securityLevel: SecurityLevel {
        SecurityLevel.of(authenticated: authenticated, secureConnections: secureConnections, keySize: keySize)
    }

    /// The peer's identity as an address with its type.
    public var peerIdentity: PeerAddress { PeerAddress(address: identity, type: identityType) }

    /// A bond from its parts (the kernel path's keys).
    package init(
        local: BluetoothAddress, localType: AddressType, peer: BluetoothAddress, peerType: AddressType,
        identity: BluetoothAddress, identityType: AddressType, peerLTK: LongTermKey?, localLTK: LongTermKey?, keySize: Int,
        authenticated: Bool, secureConnections: Bool, peerIRK: [UInt8]?, peerCSRK: [UInt8]?, localIRK: [UInt8]?,
        localCSRK: [UInt8]?, pairedAs: String, created: String
    ) {
        self.local = local
        self.localType = localType
        self.peer = peer
        self.peerType = peerType
        self.identity = identity
        self.identityType = identityType
        self.peerLTK = peerLTK
        self.localLTK = localLTK
        self.keySize = keySize
        self.authenticated = authenticated
        self.secureConnections = secureConnections
        self.peerIRK = peerIRK
        self.peerCSRK = peerCSRK
        self.localIRK = localIRK
        self.localCSRK = localCSRK
        self.pairedAs = pairedAs
        self.created = created
    }

    /// A bond from a completed pairing.
    package init(result: PairingResult, local: PeerAddress, peer: PeerAddress, pairedAs: String, created: String = Bond.now()) {
        self.local = local.address
        self.localType = local.type
        self.peer = peer.address
        self.peerType = peer.type
        identity = result.peerIdentity?.address ?? peer.address
        identityType = result.peerIdentity?.addressType ?? peer.type
        peerLTK = result.peerLTK
        localLTK = result.localLTK
        keySize = result.keySize
        authenticated = result.authenticated
        secureConnections = result.secureConnections
        peerIRK = result.peerIRK
        peerCSRK = result.peerCSRK
        localIRK = result.localIRK
        localCSRK = result.localCSRK
        self.pairedAs = pairedAs
        self.created = created
    }

    /// The current time as RFC 3339 in UTC, to the second.
    static func now() -> String {
        var seconds = time(nil)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    // MARK: - The file

    /// The bond file's JSON (members in the order the issue gives; absent keys omitted).
    package var json: JSONValue {
        func ltk(_ key: LongTermKey) -> JSONValue {
            .object([
                ("ltk", .string(Hex.encode(key.key))), ("ediv", .number(JSONNumber(key.ediv))),
                ("rand", .string(Hex.encode(Bond.randOctets(key.rand)))),
            ])
        }
        var members: [(String, JSONValue)] = [
            ("local", .string(local.description)), ("localType", .string(localType.jsonName)),
            ("peer", .string(peer.description)), ("peerType", .string(peerType.jsonName)),
            ("identity", .string(identity.description)), ("identityType", .string(identityType.jsonName)),
        ]
        if let peerLTK { members.append(("peerLTK", ltk(peerLTK))) }
        if let localLTK { members.append(("localLTK", ltk(localLTK))) }
        members += [
            ("keySize", .number(JSONNumber(keySize))), ("authenticated", .bool(authenticated)),
            ("secureConnections", .bool(secureConnections)),
        ]
        for (name, key) in [("peerIRK", peerIRK), ("peerCSRK", peerCSRK), ("localIRK", localIRK), ("localCSRK", localCSRK)] {
            if let key { members.append((name, .string(Hex.encode(key)))) }
        }
        members += [("pairedAs", .string(pairedAs)), ("created", .string(created))]
        return .object(members)
    }

    /// Reads a bond file's JSON; throws naming what is wrong.
    package init(json: JSONValue) throws(BondFileError) {
        func text(_ name: String) throws(BondFileError) -> String {
            guard let value = json[name]?.string else { throw BondFileError("\(name) is missing or not a string") }
            return value
        }
        func address(_ name: String) throws(BondFileError) -> BluetoothAddress {
            guard let value = BluetoothAddress(try text(name)) else { throw BondFileError("\(name) is not an address") }
            return value
        }
        func type(_ name: String) throws(BondFileError) -> AddressType {
            switch try text(name) {
            case "public": return .public
            case "random": return .random
            default: throw BondFileError("\(name) is neither public nor random")
            }
        }
        func key(_ name: String) throws(BondFileError) -> [UInt8]? {
            guard let value = json[name] else { return nil }
            guard let hex = value.string, let bytes = Hex.decode(hex), bytes.count == 16 else {
                throw BondFileError("\(name) is not 16 octets of hex")
            }
            return bytes
        }
        func ltk(_ name: String) throws(BondFileError) -> LongTermKey? {
            guard let value = json[name] else { return nil }
            guard let hex = value["ltk"]?.string, let bytes = Hex.decode(hex), bytes.count == 16,
                let ediv = value["ediv"]?.int, (0...0xFFFF).contains(ediv),
                let rand = value["rand"]?.string, let randBytes = Hex.decode(rand), randBytes.count == 8
            else { throw BondFileError("\(name) needs ltk (16 octets), ediv (0–65535) and rand (8 octets)") }
            return LongTermKey(key: bytes, ediv: UInt16(ediv), rand: Bond.rand(randBytes))
        }
        local = try address("local")
        localType = try type("localType")
        peer = try address("peer")
        peerType = try type("peerType")
        identity = try address("identity")
        identityType = try type("identityType")
        peerLTK = try ltk("peerLTK")
        localLTK = try ltk("localLTK")
        guard let size = json["keySize"]?.int, (7...16).contains(size) else { throw BondFileError("keySize is not 7–16") }
        keySize = size
        guard case .bool(let authenticated)? = json["authenticated"], case .bool(let sc)? = json["secureConnections"] else {
            throw BondFileError("authenticated and secureConnections must be true or false")
        }
        self.authenticated = authenticated
        secureConnections = sc
        peerIRK = try key("peerIRK")
        peerCSRK = try key("peerCSRK")
        localIRK = try key("localIRK")
        localCSRK = try key("localCSRK")
        pairedAs = try text("pairedAs")
        guard pairedAs == "central" || pairedAs == "peripheral" else { throw BondFileError("pairedAs is neither central nor peripheral") }
        created = try text("created")
    }

    /// Rand as its 8 octets in PDU order (least significant first).
    static func randOctets(_ rand: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: rand >> (8 * UInt64($0))) } }
    static func rand(_ octets: [UInt8]) -> UInt64 { octets.reversed().reduce(0) { $0 << 8 | UInt64($1) } }
}

/// What is wrong with a bond file.
package struct BondFileError: Error, Hashable, Sendable, CustomStringConvertible {
    package var reason: String
    package init(_ reason: String) { self.reason = reason }
    package var description: String { reason }
}

extension AddressType {
    /// `public` or `random`, as the bond file and the CLI's JSON write it.
    package var jsonName: String { self == .random ? "random" : "public" }
}

extension Bond: CustomStringConvertible, CustomReflectable {
    /// Who and how, never a key (keys are printed only by `bonds --json`).
    public var description: String {
        "bond \(local) ↔ \(identity) (\(identityType.jsonName)): \(secureConnections ? "Secure Connections" : "legacy"), "
            + "\(authenticated ? "authenticated" : "unauthenticated"), \(keySize)-octet key, paired as \(pairedAs) \(created)"
    }
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}
