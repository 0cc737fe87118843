#if canImport(Glibc)
import Glibc
#endif
import Bluetooth
import SystemSupport
import Synchronization

/// The bonds on disk: `<dir>/<local address>/<peer identity address>.json`, mode 0600, written
/// atomically. `<dir>` is `--bonds DIR`, else `$GATTCLIENT_BONDS`, else
/// `$XDG_STATE_HOME/gattclient/bonds`, else `~/.local/state/gattclient/bonds`. A bond belongs to
/// one local controller address: a bond made on `sim` is never offered over `tcp:`.
package final class BondStore: Sendable {
    package let directory: String
    /// Damaged files seen, reported once each by name (and then ignored).
    private let reported = Mutex<Set<String>>([])
    private let warning: @Sendable (String) -> Void
    private let changeCount = Mutex<Int>(0)

    /// How many times this store saved or removed a bond: what was read from it before may be
    /// stale when this has changed (a scan's address resolver).
    package var changes: Int { changeCount.withLock { $0 } }

    package init(directory: String? = nil, warning: @escaping @Sendable (String) -> Void = { _ in }) {
        self.directory = directory ?? Self.defaultDirectory()
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

    private func folder(_ local: BluetoothAddress) -> String { directory + "/" + local.description }
    private func path(_ local: BluetoothAddress, _ identity: BluetoothAddress) -> String {
        folder(local) + "/" + identity.description + ".json"
    }

    /// Every bond of `local` (damaged files reported and skipped).
    package func bonds(local: BluetoothAddress) -> [Bond] {
        guard let names = try? FileSystem.contentsOfDirectory(atPath: folder(local)) else { return [] }
        return names.sorted().compactMap { name -> Bond? in
            guard name.hasSuffix(".json") else { return nil }
            return load(folder(local) + "/" + name)
        }
    }

    /// Every bond of `local`, or why they cannot be listed: the bond directory (or the local
    /// address's folder in it) is not a directory, or cannot be read. A directory that does not
    /// exist yet holds no bonds.
    package func listBonds(local: BluetoothAddress) throws(FileSystemError) -> [Bond] {
        try checkDirectories(local: local)
        guard FileSystem.fileExists(atPath: folder(local)) else { return [] }
        let names = try FileSystem.contentsOfDirectory(atPath: folder(local))
        return names.sorted().compactMap { name -> Bond? in
            guard name.hasSuffix(".json") else { return nil }
            return load(folder(local) + "/" + name)
        }
    }

    /// Throws when the bond directory or the folder of `local` exists and is not a directory.
    package func checkDirectories(local: BluetoothAddress) throws(FileSystemError) {
        for path in [directory, folder(local)] where FileSystem.fileExists(atPath: path) && !FileSystem.isDirectory(atPath: path) {
            throw FileSystemError(operation: "read the bond directory", path: path, errno: Errno(rawValue: ENOTDIR))
        }
    }

    /// The bond of `local` with `peer` (by identity address, or by the address it paired on).
    package func bond(local: BluetoothAddress, peer: PeerAddress) -> Bond? {
        if let direct = load(path(local, peer.address)) { return direct }
        return bonds(local: local).first { $0.peer == peer.address || $0.identity == peer.address }
    }

    /// Writes `bond` (mode 0600, atomically), replacing any bond with the same identity.
    package func save(_ bond: Bond) throws(FileSystemError) {
        // Owner-only directories (created so; an existing one is the user's choice).
        try FileSystem.createDirectory(atPath: folder(bond.local), mode: 0o700)
        var bytes = bond.json.encoded(.pretty)
        bytes.append(0x0A)
        try FileSystem.writeFileAtomically(bytes, toPath: path(bond.local, bond.identity))
        changeCount.withLock { $0 += 1 }
    }

    /// Removes the bond of `local` with `peer`; false when there was none.
    @discardableResult
    package func remove(local: BluetoothAddress, peer: PeerAddress) throws(FileSystemError) -> Bool {
        guard let bond = bond(local: local, peer: peer) else { return false }
        try FileSystem.removeFile(atPath: path(local, bond.identity))
        changeCount.withLock { $0 += 1 }
        return true
    }

    private func load(_ path: String) -> Bond? {
        guard FileSystem.fileExists(atPath: path) else { return nil }
        do {
            let bytes = try FileSystem.readFile(atPath: path)
            let json = try JSONValue(parsing: bytes)
            return try Bond(json: json)
        } catch {
            let first = reported.withLock { $0.insert(path).inserted }
            if first { warning("warning: bond file \(path) is damaged and was ignored: \(error)") }
            return nil
        }
    }
}
