import BLE
import Bluetooth
import SystemSupport

/// The address type each device had when a scan last saw it, kept between runs so a command
/// given a bare address (no `/random`, no `--random`) connects with the right type at once.
///
/// One text file, `address-types`, in `$GATTCLIENT_CACHE`, else `$XDG_CACHE_HOME/gattclient`,
/// else `~/.cache/gattclient`: a line `AA:BB:CC:DD:EE:FF public|random SECONDS` per device (the
/// time it was seen, seconds since the epoch), the newest 1 000 kept. Written atomically; a
/// damaged line is skipped. `--no-cache` neither reads nor writes it.
struct AddressTypeCache {
    static let fileName = "address-types"
    static let capacity = 1_000

    let directory: String
    var path: String { directory + "/" + Self.fileName }

    /// The directory the environment names.
    static func defaultDirectory(environment: [String: String]? = nil) -> String {
        let environment = environment ?? ProcessEnvironment.all()
        if let given = environment["GATTCLIENT_CACHE"], !given.isEmpty { return given }
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") { return cache + "/gattclient" }
        let home = ProcessEnvironment.homeDirectory(environment: environment) ?? "."
        return home + "/.cache/gattclient"
    }

    /// Every entry: address → (type, when seen).
    func entries() -> [BluetoothAddress: (type: AddressType, seen: Int)] {
        guard let bytes = try? FileSystem.readFile(atPath: path) else { return [:] }
        var table: [BluetoothAddress: (type: AddressType, seen: Int)] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, let address = BluetoothAddress(String(fields[0])), let seen = Int(fields[2]) else { continue }
            switch fields[1] {
            case "public": table[address] = (.public, seen)
            case "random": table[address] = (.random, seen)
            default: continue
            }
        }
        return table
    }

    /// The type `address` had when last seen, if it was.
    func type(of address: BluetoothAddress) -> AddressType? { entries()[address]?.type }

    /// Adds what a scan saw (`seen`: seconds since the epoch), keeping the newest entries.
    func record(_ devices: [BluetoothAddress: AddressType], seen: Int) throws(FileSystemError) {
        guard !devices.isEmpty else { return }
        var table = entries()
        for (address, type) in devices { table[address] = (type, seen) }
        let kept = table.sorted { $0.value.seen > $1.value.seen || ($0.value.seen == $1.value.seen && $0.key.description < $1.key.description) }
            .prefix(Self.capacity)
        var text = ""
        for (address, entry) in kept { text += "\(address) \(entry.type == .random ? "random" : "public") \(entry.seen)\n" }
        try FileSystem.createDirectory(atPath: directory, mode: 0o700)
        try FileSystem.writeFileAtomically(Array(text.utf8), toPath: path)
    }
}
