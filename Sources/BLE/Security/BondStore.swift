#if canImport(Glibc)
import Glibc
#endif
import Bluetooth
import Security
import SystemSupport
import Synchronization

/// The bonds on disk: `<dir>/<local address>/<peer identity>.json`, mode 0600, written
/// atomically. `<dir>` is `--bonds DIR`, else `$GATTCLIENT_BONDS`, else
/// `$XDG_STATE_HOME/gattclient/bonds`, else `~/.local/state/gattclient/bonds`. A bond belongs to
/// one local controller address: a bond made on `sim` is never offered over `tcp:`.
///
/// A bond's identity is its identity address **with its type** (a public and a random address
/// with the same bits are two devices): a public identity's file is `<address>.json`, a random
/// one's `<address>-random.json`. Nothing a peer says replaces another device's bond: ``save(_:replacing:)``
/// refuses a bond whose identity is bonded already unless the caller names that identity as the
/// one it repairs, and then only with a bond at least as strong. Lookups use an index of the
/// folder kept in memory, read again only when the folder changed (another process's save).
package final class BondStore: Sendable {
    package let directory: String
    /// The most bonds made as peripheral (by centrals that asked) one local address keeps; a new
    /// one beyond it is refused, never an old one dropped. Bonds we made as central (each one
    /// the user's own `pair` or a command's security) do not count.
    package let peripheralLimit: Int
    /// Damaged files seen, reported once each by name (and then ignored).
    private let reported = Mutex<Set<String>>([])
    private let warning: @Sendable (String) -> Void
    private let changeCount = Mutex<Int>(0)
    /// Each local address's folder as last read: its stamp and its bonds with their file names.
    private let index = Mutex<[BluetoothAddress: (stamp: [Int]?, entries: [(name: String, bond: Bond)])]>([:])

    /// The default ``peripheralLimit``.
    package static let defaultPeripheralLimit = 32

    /// How many times this store saved or removed a bond: what was read from it before may be
    /// stale when this has changed (a scan's address resolver).
    package var changes: Int { changeCount.withLock { $0 } }

    package init(
        directory: String? = nil, peripheralLimit: Int = BondStore.defaultPeripheralLimit,
        warning: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.directory = directory ?? Self.defaultDirectory()
        self.peripheralLimit = max(0, peripheralLimit)
        self.warning = warning
    }

    /// The directory the environment names.
    package static func defaultDirectory(environment: [String: String]? = nil) -> String {
        let environment = environment ?? ProcessEnvironment.all()
        if let given = environment["GATTCLIENT_BONDS"], !given.isEmpty { return given }
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/gattclient/bonds" }
        // No fallback to a shared directory such as /tmp, where another user could plant a bond.
        let home = ProcessEnvironment.homeDirectory(environment: environment) ?? "."
        return home + "/.local/state/gattclient/bonds"
    }

    /// What is wrong with ``directory`` itself (a file where a directory should be), nil when
    /// it is a directory or absent (no bonds yet).
    package var directoryProblem: String? {
        guard FileSystem.fileExists(atPath: directory), !FileSystem.isDirectory(atPath: directory) else { return nil }
        return "the bond directory \(directory) is not a directory"
    }

    /// The local addresses that have a folder of bonds.
    package func locals() -> [BluetoothAddress] {
        ((try? FileSystem.contentsOfDirectory(atPath: directory)) ?? []).sorted().compactMap { BluetoothAddress($0) }
    }

    private func folder(_ local: BluetoothAddress) -> String { directory + "/" + local.description }

    /// The file name a new bond with `identity` takes.
    private static func fileName(_ identity: PeerAddress) -> String {
        identity.address.description + (identity.type == .random ? "-random.json" : ".json")
    }

    /// The folder's bonds with their file names, from the index while the folder is unchanged.
    private func entries(_ local: BluetoothAddress) -> [(name: String, bond: Bond)] {
        let path = folder(local)
        let stamp = FileSystem.modificationStamp(atPath: path)
        if let cached = index.withLock({ $0[local] }), cached.stamp != nil, cached.stamp == stamp { return cached.entries }
        guard let names = try? FileSystem.contentsOfDirectory(atPath: path) else {
            index.withLock { $0[local] = nil }
            return []
        }
        var entries: [(name: String, bond: Bond)] = []
        var identities: Set<PeerAddress> = []
        for name in names.sorted() where name.hasSuffix(".json") {
            guard let bond = load(path + "/" + name) else { continue }
            // Two files naming one identity (edited by hand): the first by name is used.
            guard identities.insert(bond.peerIdentity).inserted else {
                report(path + "/" + name, "names the identity \(bond.peerIdentity) of another bond file; ignored")
                continue
            }
            entries.append((name, bond))
        }
        index.withLock { $0[local] = (stamp, entries) }
        return entries
    }

    /// Every bond of `local` (damaged files reported and skipped).
    package func bonds(local: BluetoothAddress) -> [Bond] {
        entries(local).map(\.bond)
    }

    /// Every bond of `local`, or why they cannot be listed: the bond directory (or the local
    /// address's folder in it) is not a directory. A directory that does not exist yet holds no
    /// bonds.
    package func listBonds(local: BluetoothAddress) throws(FileSystemError) -> [Bond] {
        try checkDirectories(local: local)
        return entries(local).map(\.bond)
    }

    /// Throws when the bond directory or the folder of `local` exists and is not a directory.
    package func checkDirectories(local: BluetoothAddress) throws(FileSystemError) {
        for path in [directory, folder(local)] where FileSystem.fileExists(atPath: path) && !FileSystem.isDirectory(atPath: path) {
            throw FileSystemError(operation: "read the bond directory", path: path, errno: Errno(rawValue: ENOTDIR))
        }
    }

    /// The bond of `local` with the device whose identity is `peer` (address and type). Never by
    /// the link address a bond was made on: another device (or a central on our peripheral) may
    /// have paired from that address while distributing another identity; a private address is
    /// resolved to its identity first (``AddressResolver``).
    package func bond(local: BluetoothAddress, peer: PeerAddress) -> Bond? {
        entries(local).first(where: { $0.bond.peerIdentity == peer })?.bond
    }

    /// Writes `bond` (mode 0600, atomically) after checking it may be kept:
    /// - its identity is public or static random, its IRK (if any) not all zero;
    /// - a bond with the same identity (address and type) is replaced only when `replacing`
    ///   names that identity (an explicit repair) and the new bond is at least as strong;
    /// - a new bond made as peripheral fits under ``peripheralLimit``.
    /// A refused bond leaves the store as it was.
    package func save(_ bond: Bond, replacing: PeerAddress? = nil) throws(BondStoreError) {
        let name = try admit(bond, replacing: replacing, storing: true)
        do {
            // Owner-only directories (created so; an existing one is the user's choice).
            try FileSystem.createDirectory(atPath: folder(bond.local), mode: 0o700)
            var bytes = bond.json.encoded(.pretty)
            bytes.append(0x0A)
            try FileSystem.writeFileAtomically(bytes, toPath: folder(bond.local) + "/" + name)
        } catch {
            throw .file(error)
        }
        index.withLock { $0[bond.local] = nil }
        changeCount.withLock { $0 += 1 }
    }

    /// Checks, without writing, that ``save(_:replacing:)`` would keep `bond`; a pairing that
    /// does not bond (`storing` false) is held to the same rules but the limit: its identity must
    /// not be another device's. Returns the file name it would take.
    @discardableResult
    package func admit(_ bond: Bond, replacing: PeerAddress? = nil, storing: Bool = false) throws(BondStoreError) -> String {
        try Self.check(bond)
        let existing = entries(bond.local)
        let old = existing.first(where: { $0.bond.peerIdentity == bond.peerIdentity })
        // Whose identity first: a full store never lets a claimed identity through.
        if let old {
            guard replacing == bond.peerIdentity else {
                throw .identityBonded(
                    identity: bond.peerIdentity, claimedBy: PeerAddress(address: bond.peer, type: bond.peerType),
                    bondedAs: old.bond.pairedAs)
            }
            guard bond.securityLevel >= old.bond.securityLevel, bond.keySize >= old.bond.keySize else {
                throw .weaker(identity: bond.peerIdentity, old: old.bond.securityLevel, new: bond.securityLevel)
            }
        }
        if storing, bond.pairedAs == "peripheral" {
            // Counted without the bond it would replace (a repair in place keeps the count).
            let count = existing.lazy.filter { $0.bond.pairedAs == "peripheral" && $0.bond.peerIdentity != bond.peerIdentity }.count
            guard count < peripheralLimit else { throw .full(limit: peripheralLimit) }
        }
        if let old { return old.name }
        // A name another identity's file holds (a file written by hand, an older file of a
        // random identity named `<address>.json`) is never overwritten: the first free one.
        let taken = Set(existing.map(\.name))
        let base = bond.identity.description + (bond.identityType == .random ? "-random" : "")
        var name = base + ".json"
        var suffix = 2
        while taken.contains(name) || FileSystem.fileExists(atPath: folder(bond.local) + "/" + name) {
            name = base + "-\(suffix).json"
            suffix += 1
        }
        return name
    }

    /// Why `bond` may never be stored, whatever the store holds.
    package static func check(_ bond: Bond) throws(BondStoreError) {
        // A peer that distributed no identity is known by its link address, which may be private:
        // only an identity it distributed must be one.
        let distributed = bond.peerIdentity != PeerAddress(address: bond.peer, type: bond.peerType)
        if distributed, let refusal = Bond.identityRefusal(bond.peerIdentity) {
            throw .invalidIdentity(bond.peerIdentity, refusal)
        }
        if let irk = bond.peerIRK, !Bond.isValidIRK(irk) { throw .invalidIRK(bond.peerIdentity) }
    }

    /// Removes the bond of `local` with `peer`; false when there was none.
    @discardableResult
    package func remove(local: BluetoothAddress, peer: PeerAddress) throws(FileSystemError) -> Bool {
        guard let entry = entries(local).first(where: { $0.bond.peerIdentity == peer }) else { return false }
        try FileSystem.removeFile(atPath: folder(local) + "/" + entry.name)
        index.withLock { $0[local] = nil }
        changeCount.withLock { $0 += 1 }
        return true
    }

    private func report(_ path: String, _ why: String) {
        let first = reported.withLock { $0.insert(path).inserted }
        if first { warning("warning: bond file \(path) \(why)") }
    }

    private func load(_ path: String) -> Bond? {
        do {
            let bytes = try FileSystem.readFile(atPath: path)
            let json = try JSONValue(parsing: bytes)
            var bond = try Bond(json: json)
            if bond.peerIdentity != PeerAddress(address: bond.peer, type: bond.peerType), let refusal = Bond.identityRefusal(bond.peerIdentity) {
                report(path, "names an identity that cannot be one (\(refusal)); ignored")
                return nil
            }
            if let irk = bond.peerIRK, !Bond.isValidIRK(irk) {
                // An all-zero IRK would let anyone make an address that "resolves" to this device.
                report(path, "holds an all-zero IRK; the IRK is ignored (the device's private addresses are not resolved)")
                bond.peerIRK = nil
            }
            return bond
        } catch {
            report(path, "is damaged and was ignored: \(error)")
            return nil
        }
    }
}

/// Why a bond was not stored.
package enum BondStoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A peer (`claimedBy`, its link address) distributed the identity of a device bonded already.
    case identityBonded(identity: PeerAddress, claimedBy: PeerAddress, bondedAs: String)
    /// A repair that would replace a bond with a weaker one.
    case weaker(identity: PeerAddress, old: SecurityLevel, new: SecurityLevel)
    /// Not a public or static random address.
    case invalidIdentity(PeerAddress, String)
    /// An IRK no device may have (all zero).
    case invalidIRK(PeerAddress)
    /// As many bonds made as peripheral as the store keeps.
    case full(limit: Int)
    case file(FileSystemError)

    package var description: String {
        switch self {
        case .identityBonded(let identity, let claimedBy, let bondedAs) where claimedBy == identity:
            // The device itself (by the address it is bonded under) pairing anew.
            return "\(identity) is bonded already and paired anew: refused (the bond is kept; "
                + (bondedAs == "central"
                    ? "`gattclient pair \(identity.address) --force` with it replaces it)"
                    : "a central that lost it pairs again once it is removed: `gattclient unpair \(identity.address)`)")
        case .identityBonded(let identity, let claimedBy, let bondedAs):
            return "\(claimedBy) distributed the identity address \(identity), which is another device's bond: refused "
                + "(the bond with \(identity) is kept; "
                + (bondedAs == "central"
                    ? "only `gattclient pair \(identity.address) --force` with that device replaces it)"
                    : "a central that lost it pairs again once it is removed: `gattclient unpair \(identity.address)`)")
        case .weaker(let identity, let old, let new):
            return "the bond with \(identity) is \(old); a \(new) pairing does not replace it (`unpair` it first)"
        case .invalidIdentity(let identity, let why): return "the identity address \(identity) is refused: \(why)"
        case .invalidIRK(let identity): return "\(identity) distributed an all-zero IRK: refused"
        case .full(let limit):
            return "\(limit) bond\(limit == 1 ? "" : "s") made as peripheral \(limit == 1 ? "is" : "are") stored already (the maximum): a new one is refused; "
                + "remove one with `gattclient unpair` or raise the maximum"
        case .file(let error): return "\(error)"
        }
    }
}

extension Bond {
    /// Why `identity` cannot be an identity address (Vol 3 Part H §3.6.5, Vol 6 Part B §1.3):
    /// a random one must be static (top two bits 0b11) and neither all zeros nor all ones in its
    /// random part; nil when it can.
    package static func identityRefusal(_ identity: PeerAddress) -> String? {
        let raw = identity.address.rawValue
        if identity.type == .public { return raw == 0 ? "the all-zero public address" : nil }
        guard raw >> 46 == 0b11 else { return "a random identity address must be static (its top two bits 11)" }
        let random = raw & 0x3FFF_FFFF_FFFF
        guard random != 0, random != 0x3FFF_FFFF_FFFF else { return "a static address's random part is all zeros or all ones" }
        return nil
    }

    /// Whether `irk` can be an Identity Resolving Key: 16 octets, not all zero.
    package static func isValidIRK(_ irk: [UInt8]) -> Bool { irk.count == 16 && irk.contains { $0 != 0 } }
}
