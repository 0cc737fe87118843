import BLE
import Bluetooth

/// `adapters`: the controllers this machine offers. Without `--transport` (or with `hciN`), the
/// kernel's adapters — index, address, name, up/down, powered, LE on, whether bluetoothd manages
/// them — read without changing anything; with a transport our host runs (`tcp:`, `unix:`,
/// `serial:`, `hci-user:`, `sim`), that controller's version, manufacturer, LE features and
/// buffers, as the host read them when it started.
struct AdaptersCommand {
    var central: (any Central)? = nil

    func run(global: GlobalOptions, output: inout BufferedOutput) async throws {
        let transport = global.transport ?? "hci0"
        let parsed: TransportURI
        do {
            parsed = try TransportURI(parsing: transport)
        } catch {
            throw CommandFailure("\(error)", kind: "usage", exitCode: .usage)
        }
        if central == nil, case .kernel(let index) = parsed {
            var adapters = try Adapter.kernelAdapters()
            if global.transport != nil {
                adapters = adapters.filter { $0.index == index }
                guard !adapters.isEmpty else {
                    throw CommandFailure("adapters: the kernel has no hci\(index)", kind: "adapter", exitCode: .unavailable)
                }
            }
            write(adapters, json: global.json, output: &output)
            return
        }
        if case .replay = parsed {
            throw CommandFailure(
                "adapters: a replayed capture has no controller to describe (`dump` shows the capture's HCI traffic)",
                kind: "usage", exitCode: .usage)
        }
        let adapter = try await CommandConnection.adapter(options: global, central: central)
        let controller = adapter.controller
        await adapter.close()
        guard let controller else {
            throw CommandFailure("adapters: \(transport) does not describe its controller", kind: "adapter")
        }
        write(controller, transport: transport, json: global.json, output: &output)
    }

    func write(_ adapters: [KernelAdapterDescription], json: Bool, output: inout BufferedOutput) {
        if json {
            for adapter in adapters {
                var writer = JSONWriter()
                writer.beginObject()
                writer.field("kind", "adapter")
                writer.field("transport", adapter.name)
                writer.field("index", Int(adapter.index))
                writer.field("address", adapter.address.description)
                if let name = adapter.localName { writer.field("name", name) }
                writer.field("up", adapter.isUp)
                writer.field("bus", adapter.bus)
                if let powered = adapter.isPowered { writer.field("powered", powered) }
                if let le = adapter.lowEnergyEnabled { writer.field("lowEnergy", le) }
                if let supported = adapter.supportsLowEnergy { writer.field("supportsLowEnergy", supported) }
                if let version = adapter.version { writer.field("version", version) }
                if let manufacturer = adapter.manufacturer { writer.field("manufacturer", Int(manufacturer)) }
                if let name = adapter.manufacturerName { writer.field("manufacturerName", name) }
                writer.field("bluetoothd", adapter.managedByBluetoothd)
                writer.endObject()
                output.writeLine(bytes: writer.bytes)
            }
            return
        }
        if adapters.isEmpty {
            output.writeLine("no kernel adapters (try --transport sim, or tcp:HOST:PORT for a controller over H4)")
            return
        }
        for adapter in adapters {
            var parts = [adapter.name, adapter.address.description, adapter.isUp ? "up" : "down"]
            if let powered = adapter.isPowered { parts.append(powered ? "powered" : "not powered") }
            if adapter.supportsLowEnergy == false {
                parts.append("no LE")
            } else if let le = adapter.lowEnergyEnabled {
                parts.append(le ? "LE on" : "LE off")
            }
            parts.append(adapter.managedByBluetoothd ? "managed by bluetoothd" : "no bluetoothd")
            if let version = adapter.version { parts.append("Bluetooth \(version)") }
            if let manufacturer = adapter.manufacturer {
                parts.append((adapter.manufacturerName ?? "company") + " (0x" + hex(manufacturer, 4) + ")")
            }
            parts.append(adapter.bus)
            if let name = adapter.localName { parts.append("\"\(name)\"") }
            output.writeLine(parts.joined(separator: "  "))
        }
    }

    func write(_ controller: ControllerDescription, transport: String, json: Bool, output: inout BufferedOutput) {
        let manufacturer = (controller.manufacturerName ?? "company") + " (0x" + hex(controller.manufacturer, 4) + ")"
        if json {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("kind", "adapter")
            writer.field("transport", transport)
            writer.field("address", controller.address.description)
            writer.field("hciVersion", controller.hciVersion)
            writer.field("hciRevision", Int(controller.hciRevision))
            writer.field("lmpVersion", controller.lmpVersion)
            writer.field("lmpSubversion", Int(controller.lmpSubversion))
            writer.field("manufacturer", Int(controller.manufacturer))
            if let name = controller.manufacturerName { writer.field("manufacturerName", name) }
            if let features = controller.leFeatures {
                writer.beginArray("leFeatures")
                for feature in features { writer.element(feature) }
                writer.endArray()
            }
            writer.beginObject("aclBuffers")
            writer.field("packetLength", controller.aclPacketLength)
            writer.field("packetCount", controller.aclPacketCount)
            writer.field("shared", controller.aclBuffersShared)
            writer.endObject()
            writer.endObject()
            output.writeLine(bytes: writer.bytes)
            return
        }
        output.writeLine("\(transport)  \(controller.address)")
        output.writeLine("  HCI version       \(controller.hciVersion), revision 0x\(hex(controller.hciRevision, 4))")
        output.writeLine("  LMP version       \(controller.lmpVersion), subversion 0x\(hex(controller.lmpSubversion, 4))")
        output.writeLine("  manufacturer      \(manufacturer)")
        output.writeLine(
            "  LE ACL buffers    \(controller.aclPacketCount) × \(controller.aclPacketLength) octets"
                + (controller.aclBuffersShared ? " (shared with BR/EDR)" : ""))
        if let features = controller.leFeatures {
            output.writeLine("  LE features       " + (features.isEmpty ? "none" : features.joined(separator: ", ")))
        } else {
            output.writeLine("  LE features       not read (the controller refused LE Read Local Supported Features)")
        }
    }
}
