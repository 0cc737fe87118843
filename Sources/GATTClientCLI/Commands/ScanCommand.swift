import BLE
import Dispatch
import Host
import Bluetooth
import GATT
import HCI
import L2CAP

#if canImport(Glibc)
import Glibc
#endif

/// `scan [--duration S] [--name TEXT] [--service UUID] [--min-rssi DBM] [--passive] [--all-reports]
/// [--rssi-changes]`: a live list of advertisers (ADV and SCAN_RSP merged per device) on a
/// terminal, its countdown ticking; elsewhere one `NEW` line per device and a `CHG` line when its
/// name, services, data or connectability change (its RSSI too with `--rssi-changes`), each with
/// the time since the scan started, then `N devices`; or JSON Lines. `--all-reports` prints every
/// report with its AD structures decoded as `dump` does.
struct ScanCommand {
    /// What the scan loop waits for: the controller's scan, and the countdown's tick.
    enum Item: Sendable {
        case scan(ScanEvent)
        case tick
    }

    /// What a device's line shows: a `CHG` line only when one of these changes (not for an
    /// empty scan response's event type, or RSSI wobble), naming what changed.
    struct Shown: Equatable {
        var name: String?
        var services: [BluetoothUUID]
        var manufacturer: [String]
        var connectable: Bool
        var identity: PeerAddress?
        var rssi: Int8?

        init(_ device: DiscoveredDevice, identity: PeerAddress?, rssi: Bool) {
            name = device.name
            services = device.serviceUUIDs
            manufacturer = device.manufacturerData.map { hex($0.companyID, 4) + Hex.encode($0.data) }
            connectable = device.isConnectable
            self.identity = identity
            self.rssi = rssi ? device.rssi : nil
        }

        /// The fields that differ from `before`, as the line names them.
        func changes(from before: Shown) -> [String] {
            var changed: [String] = []
            if name != before.name { changed.append("name") }
            if services != before.services { changed.append("services") }
            if manufacturer != before.manufacturer { changed.append("manufacturer data") }
            if connectable != before.connectable { changed.append("connectable") }
            if identity != before.identity { changed.append("identity") }
            if rssi != before.rssi { changed.append("rssi") }
            return changed
        }
    }

    var options: ScanCommandOptions
    /// The transport to use instead of `--transport` (tests).
    var central: (any Central)? = nil

    func run(global: GlobalOptions, output: inout BufferedOutput) async throws {
        let adapter = try await CommandConnection.adapter(options: global, central: central)
        let scanOptions = LEScanParameters(
            active: !options.passive, filterDuplicates: false,
            reportMode: options.allReports ? .allReports : .merged)
        let stream: AsyncThrowingStream<ScanEvent, any Error>
        do {
            stream = try await adapter.scanEvents(scanOptions)
        } catch {
            await adapter.close()
            throw error
        }
        let events = CommandEvents<Item>(duration: options.duration)
        events.forward(stream.map { Item.scan($0) })
        let live = !global.json && TextStyle.movesCursor(output.fileDescriptor)
        // On a terminal the countdown ticks every second, whatever the air does.
        var ticker: (any DispatchSourceTimer)?
        if live, options.duration != nil {
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.schedule(deadline: .now() + 1, repeating: 1)
            timer.setEventHandler { events.yield(.tick) }
            timer.resume()
            ticker = timer
        }
        var shown: [BluetoothAddress: Shown] = [:]
        var table = LiveTable(enabled: live)
        let style = live ? TextStyle.forDescriptor(output.fileDescriptor) : .plain
        var failure: (any Error)?
        let clock = ContinuousClock()
        let started = clock.now
        // The types seen, for the address-type cache (a later bare address connects at once).
        var seenTypes: [BluetoothAddress: AddressType] = [:]
        loop: for await event in events.stream {
            switch event {
            case .value(.tick):
                let left = options.duration.map { max(0, $0 - seconds(clock.now - started)) }
                table.redraw(status: left.map { "scanning, \(Int($0.rounded(.up))) s left" }, output: &output)
            case .value(.scan(.report(let report))):
                guard options.allReports, passes(report) else { continue }
                if global.json {
                    output.writeLine(bytes: Self.json(report, time: seconds(clock.now - started)))
                } else {
                    output.writeLine(Self.line(report))
                    for line in Self.structures(report.data) { output.writeLine(line) }
                }
            case .value(.scan(.discovered(let device))), .value(.scan(.updated(let device))):
                seenTypes[device.address] = device.addressType
                guard !options.allReports, passes(device) else { continue }
                // A bonded peer's resolvable private address: the identity behind it.
                let identity = await adapter.resolvedIdentity(of: PeerAddress(address: device.address, type: device.addressType))
                if global.json {
                    output.writeLine(bytes: Self.json(device, identity: identity, time: seconds(clock.now - started)))
                } else if live {
                    let left = options.duration.map { max(0, $0 - seconds(clock.now - started)) }
                    table.update(
                        device, line: Self.line(device, identity: identity, style: style),
                        status: left.map { "scanning, \(Int($0.rounded(.up))) s left" }, output: &output)
                } else {
                    // Not on a terminal: NEW once, CHG for a change worth a line.
                    let now = Shown(device, identity: identity, rssi: options.rssiChanges)
                    let before = shown[device.address]
                    guard before != now else { continue }
                    shown[device.address] = now
                    let time = format3(seconds(clock.now - started))
                    let changed = before.map { "  (" + now.changes(from: $0).joined(separator: ", ") + " changed)" } ?? ""
                    output.writeLine((before == nil ? "NEW " : "CHG ") + time + "  " + Self.line(device, identity: identity) + changed)
                }
            case .ended(let error):
                failure = error
                break loop
            case .durationElapsed, .interrupted:
                break loop
            }
            output.flush()
        }
        ticker?.cancel()
        events.finish()
        if live { table.finish(output: &output) }
        if !live, !global.json, !options.allReports {
            output.writeLine("\(shown.count) device\(shown.count == 1 ? "" : "s")")
        }
        await adapter.close()
        if let directory = global.addressCacheDirectory {
            do {
                try AddressTypeCache(directory: directory).record(seenTypes, seen: Int(time(nil)))
            } catch {
                SessionDiagnostics.warn("the address-type cache was not updated: \(error)")
            }
        }
        if let failure { throw CommandFailure.from(failure, doing: "scanning") }
    }

    /// `--name`: `text` anywhere in `name`, letter case ignored (Unicode lower-casing).
    static func name(_ name: String, contains text: String) -> Bool {
        ScanFilter.name(name, contains: text)
    }

    private var filter: ScanFilter {
        var filter = ScanFilter(name: options.name, service: options.service, minimumRSSI: options.minimumRSSI)
        filter.manufacturer = options.manufacturer
        return filter
    }

    private func passes(_ device: DiscoveredDevice) -> Bool { filter.matches(device) }

    private func passes(_ report: ScanReport) -> Bool { filter.matches(report) }

    // MARK: output

    static func json(_ device: DiscoveredDevice, identity: PeerAddress? = nil, time: Double? = nil) -> [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        json.field("kind", "device")
        if let time { json.field("time", (time * 1000).rounded() / 1000) }
        json.field("address", device.address.description)
        json.field("addressType", device.addressType.description)
        if let identity {
            // The bonded identity a resolvable private address resolved to (Vol 6 Part B §1.3.2.3).
            json.field("identity", identity.address.description)
            json.field("identityType", identity.type == .random ? "random" : "public")
        }
        if let kind = device.reports.last?.kind { json.field("eventType", kind.rawValue) }
        if let rssi = device.rssi { json.field("rssi", Int(rssi)) }
        if let tx = device.txPower { json.field("txPower", Int(tx)) }
        summaryFields(device.summary, into: &json)
        json.field("data", hex: device.mergedData)
        json.endObject()
        return json.bytes
    }

    static func json(_ report: ScanReport, time: Double? = nil) -> [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        json.field("kind", "report")
        if let time { json.field("time", (time * 1000).rounded() / 1000) }
        json.field("address", report.address.description)
        json.field("addressType", report.addressType.addressType?.description ?? "\(report.addressType)")
        json.field("eventType", report.kind.rawValue)
        if let rssi = report.rssi { json.field("rssi", Int(rssi)) }
        if let tx = report.txPower { json.field("txPower", Int(tx)) }
        summaryFields(AdvertisingData(report.data).summary, into: &json)
        json.field("data", hex: report.data)
        json.endObject()
        return json.bytes
    }

    private static func summaryFields(_ summary: AdvertisingDataSummary, into json: inout JSONWriter) {
        if let name = summary.name { json.field("name", name) }
        if !summary.serviceUUIDs.isEmpty {
            json.beginArray("serviceUUIDs")
            for uuid in summary.serviceUUIDs { json.element(jsonUUID(uuid)) }
            json.endArray()
        }
        if !summary.serviceData.isEmpty {
            json.beginArray("serviceData")
            for item in summary.serviceData {
                json.beginObject()
                json.field("uuid", jsonUUID(item.uuid))
                json.field("data", hex: item.data)
                json.endObject()
            }
            json.endArray()
        }
        if !summary.manufacturerData.isEmpty {
            json.beginArray("manufacturerData")
            for item in summary.manufacturerData {
                json.beginObject()
                json.field("companyID", Int(item.companyID))
                json.field("data", hex: item.data)
                json.endObject()
            }
            json.endArray()
        }
    }

    /// One device: address, type, RSSI, name, services, manufacturer data (coloured on a
    /// terminal: address bold, RSSI by strength, name cyan).
    static func line(_ device: DiscoveredDevice, identity: PeerAddress? = nil, style: TextStyle = .plain) -> String {
        var parts = [style.bold(device.address.description), device.addressType == .random ? "random" : "public"]
        if let identity { parts.append("identity \(identity)") }
        parts.append(device.rssi.map { style.rssi($0) } ?? "    ")
        parts.append(device.name.map { style.cyan("\"\(visible($0))\"") } ?? style.dim("(no name)"))
        if !device.serviceUUIDs.isEmpty { parts.append("services " + device.serviceUUIDs.map { GATTNames.name(for: $0) ?? jsonUUID($0) }.joined(separator: ", ")) }
        for item in device.manufacturerData {
            parts.append((CompanyIdentifiers.name(for: item.companyID) ?? "company 0x" + hex(item.companyID, 4)) + " " + Hex.encode(item.data))
        }
        if !device.isConnectable { parts.append(style.dim("non-connectable")) }
        return parts.joined(separator: "  ")
    }

    /// The AD structures of `data`, decoded as `dump` prints them, one indented line each.
    static func structures(_ data: [UInt8]) -> [String] {
        guard !data.isEmpty else { return [] }
        let ad = AdvertisingData(data)
        return ad.structures.map { "    " + visible("\($0)") } + ad.problems.map { "    malformed AD: \($0)" }
    }

    static func line(_ report: ScanReport) -> String {
        let summary = AdvertisingData(report.data).summary
        return "\(report.kind.rawValue.padding(toLength: 15)) \(report.address) \(report.addressType)"
            + (report.rssi.map { " \($0) dBm" } ?? "") + (summary.name.map { " \"\(visible($0))\"" } ?? "")
            + " " + Hex.encode(report.data)
    }
}


/// The scan list on a terminal: one line per device, redrawn in place, with a status line.
struct LiveTable {
    let enabled: Bool
    private var order: [BluetoothAddress] = []
    private var lines: [BluetoothAddress: String] = [:]
    private var drawn = 0

    init(enabled: Bool) { self.enabled = enabled }

    mutating func update(_ device: DiscoveredDevice, line: String, status: String?, output: inout BufferedOutput) {
        if lines[device.address] == nil { order.append(device.address) }
        lines[device.address] = line
        // Move up over what was drawn, then redraw every line (clearing each).
        if drawn > 0 { output.write("\u{1B}[\(drawn)A") }
        for address in order { output.write("\u{1B}[2K" + (lines[address] ?? "") + "\n") }
        output.write("\u{1B}[2K" + "\(order.count) device\(order.count == 1 ? "" : "s")" + (status.map { ", " + $0 } ?? "") + "\n")
        drawn = order.count + 1
    }

    /// Redraws the status line alone (the countdown's tick).
    mutating func redraw(status: String?, output: inout BufferedOutput) {
        guard enabled else { return }
        if drawn > 0 { output.write("\u{1B}[1A") }
        output.write("\u{1B}[2K" + "\(order.count) device\(order.count == 1 ? "" : "s")" + (status.map { ", " + $0 } ?? "") + "\n")
        drawn = max(drawn, 1)
        output.flush()
    }

    /// Leaves the table clean: the status line says the scan ended.
    mutating func finish(output: inout BufferedOutput) {
        redraw(status: "done", output: &output)
        output.flush()
    }
}

public struct ScanCommandOptions: Equatable, Sendable {
    public var duration: Double? = 10
    public var name: String?
    public var service: BluetoothUUID?
    public var minimumRSSI: Int?
    /// `--manufacturer ID`: only devices whose Manufacturer Specific Data has this Company ID.
    public var manufacturer: UInt16?
    public var passive = false
    public var allReports = false
    /// `--rssi-changes`: an RSSI change alone is worth a `CHG` line.
    public var rssiChanges = false

    public init() {}
}
