#if canImport(Glibc)
import BLE
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import ATT
import Bluetooth
import Emulator
import GATT
import HCI
import L2CAP
import Host
import SystemSupport

/// `peripheral sensortag|bluefruit|--database FILE.json [--mtu N] [--duration S]`.
public struct PeripheralOptions: Equatable, Sendable {
    public enum Device: Equatable, Sendable {
        case sensortag
        case bluefruit
        /// A database in the layout of one entry of the vectors' `databases`.
        case database(path: String)
    }

    public var device: Device
    /// `--mtu N`: the server's Rx MTU (default: the emulated device's own 23; 517 for a file).
    public var mtu: Int?
    /// `--duration S`: serve this long, whatever standard input does.
    public var duration: Double?
    /// `--io-capability`: how we pair when a central asks (default none: Just Works; standard
    /// input carries commands, so the peripheral never prompts).
    public var ioCapability: IOCapability?
    /// `--passkey N`: the passkey we enter when the central displays one.
    public var passkey: UInt32?
    /// `--confirm`: accept a numeric comparison (the bond is then kept as unauthenticated).
    public var confirm = false
    /// `--security-request`: a request refused for the link's security makes us send a
    /// Security Request (Vol 3 Part H §2.4.6).
    public var securityRequest = false
    /// `--bondable`: pairings a central asks to bond leave a bond (off: nothing is stored).
    public var bondable = false
    /// `--max-bonds N`: the most bonds centrals may make with us (default 32); a new one beyond
    /// is refused and said, no old one dropped.
    public var maximumBonds = 32
    /// `--static-passkey-insecure`: allows `--passkey` under Secure Connections, where a fixed
    /// passkey leaks a bit per failed attempt and no throttle protects it.
    public var staticPasskeyInsecure = false
    /// `--sc-only`: Secure Connections Only mode (legacy pairing refused, Authentication
    /// Requirements).
    public var secureConnectionsOnly = false

    public init(device: Device) { self.device = device }

    /// Whether a pairing flag was given (the kernel path cannot honour them).
    var asksForPairingSettings: Bool {
        ioCapability != nil || passkey != nil || confirm || securityRequest || bondable || secureConnectionsOnly
            || staticPasskeyInsecure || maximumBonds != 32
    }

    /// The Rx MTU in force.
    public var effectiveMTU: Int {
        if let mtu { return mtu }
        if case .database = device { return 517 }
        return ATTPDU.defaultLEMTU
    }
}

/// Parses `peripheral`'s arguments (the `CommandLine.swift` dispatcher calls it).
func parsePeripheralCommand(_ rest: [String], _ flags: [(name: String, value: String?)]) throws(UsageError) -> PeripheralOptions {
    var database: String?
    var mtu: Int?
    var duration: Double?
    var ioCapability: IOCapability?
    var passkey: UInt32?
    var confirm = false
    var securityRequest = false
    var bondable = false
    var maximumBonds = 32
    var staticPasskeyInsecure = false
    var secureConnectionsOnly = false
    for (flag, value) in flags {
        switch flag {
        case "--security-request": securityRequest = true
        case "--bondable": bondable = true
        case "--static-passkey-insecure": staticPasskeyInsecure = true
        case "--sc-only": secureConnectionsOnly = true
        case "--max-bonds":
            guard let text = value, !text.isEmpty, text.count <= 6, text.allSatisfy({ $0.isASCII && $0.isNumber }),
                let n = Int(text), (1...100_000).contains(n), text == String(n)
            else { throw UsageError("--max-bonds takes a count from 1 to 100000, not '\(value ?? "")'") }
            maximumBonds = n
        case "--io-capability": ioCapability = try parseIOCapability(value)
        case "--passkey": passkey = try parsePasskey(value)
        case "--confirm": confirm = true
        case "--database":
            guard let path = value, !path.isEmpty else { throw UsageError("--database needs a JSON file") }
            database = path
        case "--mtu":
            guard let n = Int(value ?? ""), (23...517).contains(n) else {
                throw UsageError("--mtu needs an ATT_MTU from 23 to 517, not '\(value ?? "")'")
            }
            mtu = n
        case "--duration": duration = try parseSeconds(value, flag)
        default: throw UsageError("peripheral does not know \(flag)")
        }
    }
    var options: PeripheralOptions
    switch (rest.first, database) {
    case (nil, let path?):
        guard rest.isEmpty else { throw UsageError("peripheral takes a device or --database, not both") }
        options = PeripheralOptions(device: .database(path: path))
    case ("sensortag", nil) where rest.count == 1: options = PeripheralOptions(device: .sensortag)
    case ("bluefruit", nil) where rest.count == 1: options = PeripheralOptions(device: .bluefruit)
    case (nil, nil): throw UsageError("peripheral needs sensortag, bluefruit or --database FILE.json")
    case (_, .some): throw UsageError("peripheral takes a device or --database, not both")
    case (let other?, nil):
        throw UsageError("peripheral serves sensortag, bluefruit or --database FILE.json, not '\(([other] + rest.dropFirst()).joined(separator: " "))'")
    }
    options.mtu = mtu
    options.duration = duration
    options.ioCapability = ioCapability
    options.passkey = passkey
    options.confirm = confirm
    options.securityRequest = securityRequest
    options.bondable = bondable
    options.maximumBonds = maximumBonds
    options.staticPasskeyInsecure = staticPasskeyInsecure
    options.secureConnectionsOnly = secureConnectionsOnly
    if maximumBonds != 32, !bondable {
        throw UsageError("peripheral --max-bonds bounds the bonds --bondable keeps: without --bondable nothing is stored")
    }
    if staticPasskeyInsecure, passkey == nil {
        throw UsageError("peripheral --static-passkey-insecure allows a fixed --passkey; there is none")
    }
    if passkey != nil, !staticPasskeyInsecure {
        // The same passkey at every attempt: under Secure Connections each failed attempt tells
        // the central one bit of it (Vol 3 Part H §2.3.5.3), 20 attempts recover it, and no
        // throttle of repeated attempts protects a secret that never changes.
        throw UsageError(
            "peripheral --passkey: a fixed passkey can be recovered by a central one bit per failed attempt; "
                + "leave it out (pair with --io-capability display-only: a new random passkey each time, shown on stderr), "
                + "or insist with --static-passkey-insecure")
    }
    return options
}

/// One line of the peripheral's standard input.
/// - `notify HANDLE HEX`, `indicate HANDLE HEX`: store the value and send it to the connected
///   central when its Client Characteristic Configuration enables that kind;
/// - `set HANDLE HEX`: store the value without telling anyone.
enum PeripheralControl: Equatable, Sendable {
    case notify(handle: UInt16, value: [UInt8])
    case indicate(handle: UInt16, value: [UInt8])
    case set(handle: UInt16, value: [UInt8])

    /// Parses one line; nil for a blank line. The error text is the answer line.
    static func parse(_ line: String) throws(UsageError) -> PeripheralControl? {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard let verb = words.first else { return nil }
        guard ["notify", "indicate", "set"].contains(verb) else {
            throw UsageError("unknown command '\(verb)' (notify|indicate|set HANDLE HEX)")
        }
        guard words.count == 3 else { throw UsageError("\(verb) needs HANDLE and a hex VALUE") }
        let handle = try parseHandle(words[1], what: verb)
        let value = try parseHexValue(words[2])
        switch verb {
        case "notify": return .notify(handle: handle, value: value)
        case "indicate": return .indicate(handle: handle, value: value)
        default: return .set(handle: handle, value: value)
        }
    }
}

/// The device `gattclient peripheral` serves: a ``GATTPeripheral`` (database, firmware) and
/// what it advertises.
struct PeripheralDevice: Sendable {
    let name: String
    let gatt: GATTPeripheral
    let advertising: LEAdvertisingParameters
    /// The emulated device object, kept alive with its firmware.
    let device: (any VirtualPeripheral)?

    /// Builds the device `options` name, with `address` (the controller's) in its database
    /// where the real device has its own (the SensorTag's System ID).
    static func make(_ options: PeripheralOptions, address: BluetoothAddress, logger: Logger = .disabled) throws -> PeripheralDevice {
        let made: PeripheralDevice
        do {
            switch options.device {
            case .sensortag:
                let tag = try EmulatedSensorTag(address: address, logger: logger)
                made = PeripheralDevice(
                    name: "sensortag", gatt: tag.peripheral,
                    advertising: LEAdvertisingParameters(
                        advertisingData: tag.advertisingData, scanResponseData: tag.scanResponseData),
                    device: tag)
            case .bluefruit:
                let board = try EmulatedBluefruit(address: address, logger: logger)
                made = PeripheralDevice(
                    name: "bluefruit", gatt: board.peripheral,
                    advertising: LEAdvertisingParameters(
                        advertisingData: board.advertisingData, scanResponseData: board.scanResponseData),
                    device: board)
            case .database(let path):
                let bytes: [UInt8]
                do {
                    bytes = try FileSystem.readFile(atPath: path)
                } catch {
                    throw CommandFailure("--database: \(error)", kind: "usage", exitCode: .usage)
                }
                let database: AttributeDatabase
                do {
                    database = try DatabaseDescription.database(json: bytes)
                } catch {
                    throw CommandFailure("--database \(path): \(error)", kind: "usage", exitCode: .usage)
                }
                made = PeripheralDevice(
                    name: "database \(path)",
                    gatt: GATTPeripheral(database: database, rxMTU: 517, firmware: StoredValuesFirmware(), logger: logger),
                    advertising: advertisingParameters(for: database), device: nil)
            }
        } catch let error as GATTError {
            throw CommandFailure("building the database: \(error)", kind: "gatt")
        }
        return made
    }

    /// Flags, the first 16-bit service UUIDs that fit, and the GAP Device Name (else
    /// "gattclient") in the scan response.
    static func advertisingParameters(for database: AttributeDatabase) -> LEAdvertisingParameters {
        var advertising: [UInt8] = [0x02, 0x01, 0x06]
        var uuids: [UInt8] = []
        for attribute in database.attributes where attribute.type == GATTUUID.primaryService {
            guard attribute.value.count == 2, attribute.value != [0x00, 0x18], attribute.value != [0x01, 0x18] else { continue }
            if advertising.count + 2 + uuids.count + 2 > 31 { break }
            uuids += attribute.value
        }
        if !uuids.isEmpty { advertising += [UInt8(uuids.count + 1), 0x03] + uuids }
        var name = Array("gattclient".utf8)
        if let handle = database.valueHandle(of: GATTUUID.deviceName), let stored = database.attribute(at: handle)?.value,
            !stored.isEmpty
        {
            name = stored
        }
        let shortened = name.count > 29
        let scanResponse = [UInt8(min(name.count, 29) + 1), shortened ? 0x08 : 0x09] + name.prefix(29)
        return LEAdvertisingParameters(advertisingData: advertising, scanResponseData: scanResponse)
    }
}

/// A database loaded from a file has no firmware: values are what clients write.
struct StoredValuesFirmware: GATTPeripheralFirmware {
    func checkWrite(handle: UInt16, value: [UInt8]) -> ATTErrorCode? { nil }
    func handle(_ event: GATTPeripheralEvent, peripheral: GATTPeripheral) async {}
}

/// `gattclient peripheral`: our stack as an advertising GATT server.
///
/// It advertises connectably (the device's own advertising and scan response data), serves
/// one central at a time and advertises again after every disconnect. Standard input carries
/// `notify|indicate|set HANDLE HEX`, one per line, each answered with one line on standard
/// output: `ok`, or `error: …` (with `--json`: `{"command":…,"result":"ok"}` or `"error"`).
/// Connections and disconnections are logged on standard error (with `--json`: as
/// `{"event":"connected",…}` lines on standard output).
///
/// It ends at Ctrl-C/SIGTERM, at the end of `--duration`, or — only without `--duration` — at
/// the end of standard input (`--duration` with `< /dev/null` serves for that long).
struct PeripheralCommand {
    enum Input: Sendable {
        case line(String)
        case inputEnded
        case connected(AcceptedCentral)
        case disconnected(peer: String, HCIStatus?)
        case advertisingEnded
    }

    var options: PeripheralOptions
    /// Replaces standard input (tests).
    var input: AsyncStream<String>?
    /// Replaces the transport `--transport` names (tests).
    var host: (any PeripheralHost)?
    /// Called once serving began, with the device (tests drive it).
    var onReady: (@Sendable (PeripheralDevice, BluetoothAddress) async -> Void)?
    var errors: Int32 = STDERR_FILENO

    init(options: PeripheralOptions) { self.options = options }

    func run(global: GlobalOptions, output: inout BufferedOutput) async throws {
        let host: any PeripheralHost
        if let given = self.host { host = given } else { host = try await openPeripheralHost(global.transport, options: global.adapterOptions) }
        let device: PeripheralDevice
        do {
            device = try PeripheralDevice.make(options, address: host.address)
        } catch {
            await host.close()
            throw error
        }
        await device.gatt.setRxMTU(options.effectiveMTU)
        let pairing: PeripheralPairing?
        do {
            pairing = try makePairing(host: host, global: global)
        } catch {
            await host.close()
            throw error
        }
        if let pairing {
            pairing.setSecurityRequests(options.securityRequest)
            await device.gatt.setSecurityRefusalHandler { client, code in await pairing.refused(code, client: client) }
            await device.gatt.setSecuritySettling { client in await pairing.waitForPairing(of: client) }
        }
        let centrals: AsyncStream<AcceptedCentral>
        do {
            centrals = try await host.advertise(device.advertising)
        } catch {
            await host.close()
            throw error
        }
        let events = CommandEvents<Input>(duration: options.duration)
        let acceptor = Task {
            for await central in centrals {
                events.yield(.connected(central))
                let reason = await central.ended()
                events.yield(.disconnected(peer: central.peer, reason))
            }
            events.yield(.advertisingEnded)
        }
        if let input {
            events.forward(input.map { Input.line($0) })
        } else {
            do {
                try events.readStandardInput(line: { .line($0) }, end: .inputEnded)
            } catch {
                events.finish()
                acceptor.cancel()
                await device.gatt.disconnect()
                await host.close()
                throw error
            }
        }
        log(
            "advertising", ["device": .text(device.name), "address": .text("\(host.address)"),
                            "mtu": .number(options.effectiveMTU)],
            text: "peripheral \(device.name) advertising as \(host.address) (Rx MTU \(options.effectiveMTU))",
            json: global.json, output: &output)
        await onReady?(device, host.address)
        var failure: (any Error)?
        loop: for await event in events.stream {
            switch event {
            case .value(.line(let line)):
                guard let answer = await perform(line, on: device.gatt) else { continue }
                if global.json {
                    var json = JSONWriter()
                    json.beginObject()
                    json.field("kind", "answer")
                    json.field("command", line)
                    if case .error(let error) = answer {
                        json.field("result", "error")
                        json.field("error", error)
                    } else {
                        json.field("result", "ok")
                    }
                    json.endObject()
                    output.writeLine(bytes: json.bytes)
                } else {
                    switch answer {
                    case .ok: output.writeLine("ok")
                    case .error(let error): output.writeLine("error: \(error)")
                    }
                }
                output.flush()
            case .value(.connected(let central)):
                // SMP goes to our Security Manager from link-up, before the first ATT PDU.
                let security = await pairing?.attach(
                    central, peer: central.address ?? PeerAddress(address: .zero, type: .public))
                let client = await device.gatt.connected(
                    channel: central.channel, link: central.link, parameters: central.parameters)
                let gatt = device.gatt
                await security?.served(as: client) { level in await gatt.setSecurity(level, for: client) }
                log("connected", ["peer": .text(central.peer)], text: "connected: \(central.peer)", json: global.json, output: &output)
            case .value(.disconnected(let peer, let reason)):
                await device.gatt.disconnected(reason: reason ?? .remoteUserTerminatedConnection)
                var fields: [String: LogValue] = ["peer": .text(peer)]
                if let reason { fields["reason"] = .text("\(reason)") }
                log("disconnected", fields, text: "disconnected: \(peer)" + (reason.map { " (\($0))" } ?? ""), json: global.json, output: &output)
            case .value(.advertisingEnded):
                failure = CommandFailure("peripheral: the transport closed", kind: "transport")
                break loop
            case .value(.inputEnded), .ended:
                if options.duration == nil { break loop }
            case .durationElapsed, .interrupted:
                break loop
            }
        }
        events.finish()
        acceptor.cancel()
        await device.gatt.disconnect()
        await host.close()
        log("stopped", [:], text: "peripheral stopped", json: global.json, output: &output)
        output.flush()
        if let failure { throw failure }
    }

    /// How we pair when a central asks, on the user-space host: bonds under `--bonds`, the
    /// passkey shown on standard error, `--passkey` entered, `--confirm` accepting comparisons.
    /// The kernel's host runs SMP itself: pairing flags are refused there.
    func makePairing(host: any PeripheralHost, global: GlobalOptions) throws -> PeripheralPairing? {
        guard !(host is KernelPeripheralHost) else {
            if options.asksForPairingSettings {
                throw CommandFailure(
                    "peripheral --io-capability/--passkey/--confirm/--security-request/--bondable/--max-bonds/--sc-only: on the kernel path (hciN) the kernel's SMP pairs; "
                        + "these apply to our own host (hci-user:N, tcp:, unix:, serial:, sim)",
                    kind: "usage", exitCode: .usage)
            }
            return nil
        }
        let delegate = CLIPairingDelegate(
            passkey: options.passkey, confirmAll: options.confirm, errors: errors,
            diagnostics: SessionDiagnostics.current, prompts: false)
        let errors = errors
        var pairingOptions = PairingOptions(
            ioCapability: options.ioCapability ?? (options.passkey != nil ? .keyboardOnly : .noInputNoOutput))
        pairingOptions.secureConnectionsOnly = options.secureConnectionsOnly
        pairingOptions.minimumKeySize = global.minimumKeySize
        let pairing = PeripheralPairing(
            bondsDirectory: global.bonds, delegate: delegate,
            localAddress: PeerAddress(address: host.address, type: .public),
            options: pairingOptions, maximumBonds: options.maximumBonds,
            warning: { SessionDiagnostics.libraryMessage($0, to: errors) },
            adjustBond: { bond in
                // Nobody compared the numbers: no MITM protection, whatever the method.
                guard delegate.takeConfirmedUnseen(for: bond.peer) else { return bond }
                var unseen = bond
                unseen.authenticated = false
                printError(
                    "gattclient: --confirm accepted \(bond.peer)'s numeric comparison unseen: the bond is kept as unauthenticated",
                    to: errors)
                return unseen
            })
        pairing.setBondable(options.bondable)
        return pairing
    }

    /// The one-line answer to a standard-input command.
    enum Answer: Equatable, Sendable {
        case ok
        case error(String)
    }

    /// Performs one standard-input line; nil for a blank line.
    func perform(_ line: String, on gatt: GATTPeripheral) async -> Answer? {
        let control: PeripheralControl
        do {
            guard let parsed = try PeripheralControl.parse(line) else { return nil }
            control = parsed
        } catch {
            return .error(error.message)
        }
        do throws(GATTError) {
            switch control {
            case .set(let handle, let value):
                try await gatt.setValue(value, handle: handle)
                return .ok
            case .notify(let handle, let value), .indicate(let handle, let value):
                let indication: Bool
                if case .indicate = control { indication = true } else { indication = false }
                let kind = indication ? "indications" : "notifications"
                switch try await gatt.push(value, handle: handle, indication: indication) {
                case .sent: return .ok
                case .notConnected: return .error("no central is connected (value stored)")
                case .notPermitted:
                    return .error("the characteristic at 0x\(hex(handle, 4)) does not allow \(kind) (value stored)")
                case .notEnabled:
                    return .error("the central has not enabled \(kind) on 0x\(hex(handle, 4)) (value stored)")
                }
            }
        } catch {
            return .error("\(error)")
        }
    }

    enum LogValue {
        case text(String)
        case number(Int)
    }

    private func log(_ event: String, _ fields: [String: LogValue], text: String, json: Bool, output: inout BufferedOutput) {
        if json {
            var writer = JSONWriter()
            writer.beginObject()
            writer.field("kind", "event")
            writer.field("event", event)
            for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
                switch value {
                case .text(let text): writer.field(JSONKey(key), text)
                case .number(let number): writer.field(JSONKey(key), number)
                }
            }
            writer.endObject()
            output.writeLine(bytes: writer.bytes)
            output.flush()
        } else {
            printError(text, to: errors)
        }
    }
}

/// Runs `gattclient peripheral` until Ctrl-C, `--duration` or the end of standard input.
func runPeripheral(_ options: PeripheralOptions, invocation: Invocation, output: inout BufferedOutput, errors: Int32) -> Int32 {
    let global = invocation.options
    let initial = output
    let result = runAsync { () async -> (Int32, BufferedOutput) in
        var out = initial
        var command = PeripheralCommand(options: options)
        command.errors = errors
        do {
            try await command.run(global: global, output: &out)
            out.flush()
            return (ExitCode.success.rawValue, out)
        } catch {
            let failure = CommandFailure.from(error, doing: "peripheral")
            return (fail(failure, json: global.json, output: &out, errors: errors), out)
        }
    }
    output = result.1
    return result.0
}

extension PeripheralDevice {
    /// The value handle of the first characteristic `uuid` names in the served database.
    func valueHandle(of uuid: BluetoothUUID) async -> UInt16? {
        await gatt.database.valueHandle(of: uuid)
    }
}
