#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Bluetooth
import SystemSupport

/// Who a cached database belongs to: the peer's address and its type.
public struct GATTPeerIdentity: Hashable, Sendable, CustomStringConvertible {
    public var address: BluetoothAddress
    public var addressType: AddressType

    public init(address: BluetoothAddress, addressType: AddressType) {
        self.address = address
        self.addressType = addressType
    }

    /// `AABBCCDDEEFF-public`: the cache file's name without `.json`.
    public var fileStem: String {
        String(address.description.filter { $0 != ":" }) + "-" + addressType.description
    }

    public var description: String { "\(address)/\(addressType)" }
}

/// When a cached database may stand in for discovery.
public enum GATTCachePolicy: Hashable, Sendable {
    /// Only when the server has a Database Hash (0x2B2A) equal to the cached one (Core 5.4
    /// Vol 3 Part G §2.5.2: the hash identifies the database).
    case requireHash
    /// Also when the server has no Database Hash: the caller vouches that the database did not
    /// change (a bonded peer, a device with fixed firmware). A hash that differs still wins.
    case trust
}

/// One cached database and the hash it was read with.
public struct GATTCacheEntry: Hashable, Sendable {
    public var database: GATTDatabase
    /// The Database Hash value read with `database`, or nil when the server has none.
    public var databaseHash: [UInt8]?

    public init(database: GATTDatabase, databaseHash: [UInt8]?) {
        self.database = database
        self.databaseHash = databaseHash
    }
}

/// Discovered databases kept across connections, one JSON file per peer, in `directory`
/// (`$XDG_CACHE_HOME/gattclient/`, else `~/.cache/gattclient/`, unless injected).
///
/// File `AABBCCDDEEFF-public.json` (or `-random`), UTF-8 JSON, keys in camelCase:
///
/// ```
/// { "format": "gattclient-database-cache", "version": 1,
///   "address": "AA:BB:CC:DD:EE:FF", "addressType": "public" | "random",
///   "databaseHash": "32 hex digits"            (absent when the server has none),
///   "services": [ { "uuid": "180F" | "canonical 128-bit", "start": 12, "end": 15, "primary": true,
///       "includes": [ { "handle", "start", "end", "uuid" (absent when unknown) } ],
///       "characteristics": [ { "uuid", "declarationHandle", "valueHandle", "endHandle",
///           "properties": 18 (the declaration's bit field),
///           "descriptors": [ { "handle", "uuid" } ] } ] } ] }
/// ```
///
/// A file that cannot be read, is not this format or version, names another peer, or holds a
/// database that fails `GATTDatabase.validate()` is ignored, with the reason logged at warning
/// level, and the caller discovers again. Writes replace the file atomically.
public struct GATTDatabaseCache: Sendable {
    public let directory: String
    let logger: Logger

    /// `directory` nil: the default location.
    public init(directory: String? = nil, logger: Logger = .disabled) {
        self.directory = directory ?? GATTDatabaseCache.defaultDirectory()
        self.logger = logger
    }

    /// `$XDG_CACHE_HOME/gattclient` (when absolute), else `$HOME/.cache/gattclient`, else the
    /// password database's home of the user; `environment` nil: the process's own (`getenv`).
    public static func defaultDirectory(environment: [String: String]? = nil) -> String {
        let xdg = environment.map { $0["XDG_CACHE_HOME"] } ?? ProcessEnvironment.value("XDG_CACHE_HOME")
        if let xdg, xdg.hasPrefix("/") {
            return xdg + "/gattclient"
        }
        // No home at all (a service without a passwd entry): the working directory's .cache.
        let home = ProcessEnvironment.homeDirectory(environment: environment) ?? "."
        return home + "/.cache/gattclient"
    }

    /// The file for `peer`.
    public func path(for peer: GATTPeerIdentity) -> String {
        directory + "/" + peer.fileStem + ".json"
    }

    /// The cached entry for `peer`, or nil (none, or unusable: the reason is logged).
    public func load(_ peer: GATTPeerIdentity) -> GATTCacheEntry? {
        let path = path(for: peer)
        let bytes: [UInt8]
        do {
            bytes = try FileSystem.readFile(atPath: path)
        } catch {
            // No file is the ordinary miss; anything else (a directory, no permission) is worth a line.
            if error.errno.rawValue != ENOENT { logger.warning("ignoring cache file \(path): \(error)") }
            return nil
        }
        do {
            return try CacheFile(parsing: bytes).entry(for: peer)
        } catch {
            logger.warning("ignoring cache file \(path): \(error)")
        }
        return nil
    }

    /// Writes `entry` for `peer` (creating the directory), atomically: a reader sees the old
    /// file or the new one.
    public func store(_ entry: GATTCacheEntry, for peer: GATTPeerIdentity) throws(GATTError) {
        let path = path(for: peer)
        do {
            try FileSystem.createDirectory(atPath: directory)
            try FileSystem.writeFileAtomically(CacheFile(entry, peer: peer).encoded(), toPath: path)
        } catch {
            throw GATTError.cache(reason: "cannot write \(path): \(error)")
        }
    }

    /// Forgets `peer`'s database (no error when there is none).
    public func invalidate(_ peer: GATTPeerIdentity) throws(GATTError) {
        let path = path(for: peer)
        do {
            try FileSystem.removeFile(atPath: path, mustExist: false)
        } catch {
            throw GATTError.cache(reason: "cannot remove \(path): \(error)")
        }
    }
}
