import BLE
import Bluetooth
import GATT

/// `services`, `read`, `write`, `subscribe`: ADDR first, then what they act on.
func parseGATTCommand(_ name: String, _ rest: [String], _ flags: [(name: String, value: String?)]) throws(UsageError) -> Command {
    var random = false
    var long = false, noLong = false, indicate = false, values = false
    var multiple: [UInt16] = []
    var text: String?
    var modes: [WriteMode] = []
    var count: Int?
    var duration: Double?
    var writes: [(target: String, value: [UInt8])] = []
    for (flag, value) in flags {
        switch (name, flag) {
        case (_, "--random"): random = true
        case ("services", "--values"): values = true
        case ("read", "--long"): long = true
        case ("read", "--no-long"): noLong = true
        case ("read", "--multiple"):
            for part in (value ?? "").split(separator: ",", omittingEmptySubsequences: false) {
                multiple.append(try parseHandle(String(part), what: "--multiple"))
            }
            guard multiple.count >= 2 else { throw UsageError("--multiple needs two or more handles: --multiple 0x0003,0x0005") }
        case ("write", "--text"): text = value
        case ("write", "--no-response"): modes.append(.noResponse)
        case ("write", "--long"): modes.append(.long)
        case ("write", "--reliable"): modes.append(.reliable)
        case ("subscribe", "--indicate"): indicate = true
        case ("subscribe", "--write"):
            let text = value ?? ""
            guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                throw UsageError("--write needs HANDLE=HEX or UUID=HEX (like 0x0024=01 or F000AA02-0451-4000-B000-000000000000=01), not '\(text)'")
            }
            writes.append((String(text[..<equals]), try parseHexValue(String(text[text.index(after: equals)...]))))
        case ("subscribe", "--count"):
            guard let n = Int(value ?? ""), n > 0 else { throw UsageError("--count needs a positive number, not '\(value ?? "")'") }
            count = n
        case ("subscribe", "--duration"): duration = try parseSeconds(value, flag)
        default:
            throw UsageError("\(name) does not know \(flag)")
        }
    }
    guard let addressText = rest.first else { throw UsageError("\(name) needs the peer's address: gattclient \(name) AA:BB:CC:DD:EE:FF ...") }
    guard let peer = PeerAddress(addressText, random: random) else {
        throw UsageError("'\(addressText)' is not a Bluetooth address (AA:BB:CC:DD:EE:FF, or AA:BB:CC:DD:EE:FF/random)")
    }
    let arguments = Array(rest.dropFirst())
    func target(_ text: String) throws(UsageError) -> Target {
        switch try AttributeSelector(parsing: text) {
        case .handle(let handle): return .handle(handle)
        case .uuid(let uuid): return .uuid(uuid)
        }
    }
    switch name {
    case "services":
        guard arguments.isEmpty else { throw UsageError("services takes only the address (and --values)") }
        return .services(peer, values: values)
    case "read":
        guard !(long && noLong) else { throw UsageError("--long and --no-long exclude each other") }
        if !multiple.isEmpty {
            guard arguments.isEmpty else { throw UsageError("read --multiple takes its handles in --multiple, not as arguments") }
            guard !noLong else {
                throw UsageError("read --multiple always reads every value whole; --no-long is for one HANDLE or UUID")
            }
            return .read(peer, nil, long: long, multiple: multiple)
        }
        guard arguments.count == 1 else { throw UsageError("read needs one HANDLE or UUID after the address") }
        return .read(peer, try target(arguments[0]), long: long, multiple: [], noLong: noLong)
    case "write":
        guard modes.count <= 1 else { throw UsageError("--no-response, --long and --reliable exclude each other") }
        let value: [UInt8]
        if let text {
            guard arguments.count == 1 else { throw UsageError("write --text STR takes one HANDLE or UUID after the address") }
            value = Array(text.utf8)
        } else {
            guard arguments.count == 2 else { throw UsageError("write needs HANDLE|UUID and a hex VALUE (or --text STR)") }
            let bytes = try parseHexValue(arguments[1])
            value = bytes
        }
        return .write(peer, try target(arguments[0]), value: value, mode: modes.first ?? .request)
    default:
        guard arguments.count == 1 else { throw UsageError("subscribe needs one HANDLE or UUID after the address") }
        var before: [SubscribeWrite] = []
        for write in writes { before.append(SubscribeWrite(target: try target(write.target), value: write.value)) }
        return .subscribe(peer, try target(arguments[0]), indicate: indicate, count: count, duration: duration, writes: before)
    }
}
