import ATT
import Bluetooth
import GATT
import HCI
import L2CAP
import Synchronization

/// An emulated counting sensor (`sim:counter`, `sim:counter*32`): one vendor service whose
/// characteristic notifies a 32-bit little-endian counter every `period` while a central has
/// notifications on. It counts what it sent (``sent``) and what it stored while nobody listened,
/// so a test or a benchmark compares what arrived with what left: nothing lost, nothing doubled,
/// nothing reordered. The counter runs on across connections (a reconnecting central sees the
/// next value, and the values missed meanwhile as a gap). A random static address, the service
/// UUID in its advertising data, its name ("Counter N") in the scan response.
public final class EmulatedCounter: VirtualPeripheral {
    public static let service = BluetoothUUID("C0DE0001-0000-4000-8000-00805F9B34FB")!
    public static let counter = BluetoothUUID("C0DE0002-0000-4000-8000-00805F9B34FB")!
    /// The first copy's address (random static: the two top bits set); copy N adds N − 1.
    public static let defaultAddress = BluetoothAddress("C0:DE:00:00:00:01")!

    public let address: BluetoothAddress
    public let addressType = AddressType.random
    public let advertisingData: [UInt8]
    public let scanResponseData: [UInt8]
    public let isConnectable = true
    public let peripheral: GATTPeripheral
    public let name: String
    let firmware: CounterFirmware

    public init(
        address: BluetoothAddress = EmulatedCounter.defaultAddress, name: String = "Counter 1",
        period: Duration = .milliseconds(50), clock: any BluetoothClock = SystemClock(), logger: Logger = .disabled
    ) throws(GATTError) {
        self.address = address
        self.name = name
        let text = Array(name.utf8.prefix(29))
        // Flags 0x06, Complete List of 128-bit Service UUIDs; the Complete Local Name in the scan response.
        advertisingData = [0x02, 0x01, 0x06, 0x11, 0x07] + Self.service.littleEndianBytes
        scanResponseData = [UInt8(text.count + 1), 0x09] + text
        let database = try AttributeDatabase(services: Self.services(name: name))
        let handle = database.valueHandle(of: Self.counter) ?? 0
        firmware = CounterFirmware(handle: handle, period: period, clock: clock)
        peripheral = GATTPeripheral(
            database: database, rxMTU: ATTPDU.defaultLEMTU, firmware: firmware, clock: clock, logger: logger)
    }

    /// GAP, GATT, and the counter service.
    public static func services(name: String) -> [ServiceDefinition] {
        [
            ServiceDefinition(
                uuid: GATTUUID.genericAccess,
                characteristics: [
                    CharacteristicDefinition(uuid: GATTUUID.deviceName, properties: [.read], value: Array(name.utf8)),
                    CharacteristicDefinition(
                        uuid: GATTUUID.appearance, properties: [.read], value: [0x00, 0x05], isFixedLength: true),
                ]),
            StandardServices.genericAttributeWithServiceChangedOnly(),
            ServiceDefinition(
                uuid: service,
                characteristics: [
                    CharacteristicDefinition(
                        uuid: counter, properties: [.read, .notify], value: [0, 0, 0, 0], maximumLength: 4,
                        isFixedLength: true, descriptors: [.clientConfiguration()])
                ]),
        ]
    }

    /// Notifications sent (each one the next counter value).
    public var sent: Int { firmware.counts.sent }
    /// The value the next notification carries.
    public var next: UInt32 { firmware.counts.next }

    /// Stops notifying (the counter stays where it is).
    public func stop() { firmware.stop() }

    public func connected(_ link: VirtualLinkConnection) async { await peripheral.connected(link) }
    public func received(_ frame: L2CAPBasicFrame) async { await peripheral.received(frame) }
    public func disconnected(reason: HCIStatus) async { await peripheral.disconnected(reason: reason) }
    public func connectionParametersChanged(_ parameters: VirtualLinkConnection.Parameters) async {
        await peripheral.connectionParametersChanged(parameters)
    }
}

/// The counter's firmware: a timer per period while notifications are on; each tick pushes the
/// next value and counts it when it was sent. Holds the peripheral only while it runs.
final class CounterFirmware: GATTPeripheralFirmware {
    struct Counts: Sendable {
        var sent = 0
        var next: UInt32 = 0
    }

    private struct State: Sendable {
        var counts = Counts()
        var stopped = false
        /// Bumped at every start and halt: a tick of an older run does nothing.
        var generation = 0
        var running: GATTPeripheral?
        var timer: ScheduledTimer?
    }

    let handle: UInt16
    let period: Duration
    let clock: any BluetoothClock
    private let state = Mutex(State())

    init(handle: UInt16, period: Duration, clock: any BluetoothClock) {
        self.handle = handle
        self.period = period
        self.clock = clock
    }

    var counts: Counts { state.withLock { $0.counts } }

    func checkWrite(handle: UInt16, value: [UInt8]) -> ATTErrorCode? { nil }

    func handle(_ event: GATTPeripheralEvent, peripheral: GATTPeripheral) async {
        switch event {
        case .subscriptionChanged(let valueHandle, let configuration) where valueHandle == handle:
            if configuration.contains(.notifications) { start(peripheral) } else { halt() }
        case .disconnected:
            halt()
        default:
            break
        }
    }

    func stop() {
        state.withLock { $0.stopped = true }
        halt()
    }

    private func start(_ peripheral: GATTPeripheral) {
        let generation: Int? = state.withLock { state in
            guard state.running == nil, !state.stopped else { return nil }
            state.running = peripheral
            state.generation += 1
            return state.generation
        }
        if let generation { schedule(generation) }
    }

    private func halt() {
        state.withLock { state in
            state.running = nil
            state.generation += 1
            state.timer?.cancel()
            state.timer = nil
        }
    }

    private func schedule(_ generation: Int) {
        let next = clock.schedule(after: period) { [weak self] in await self?.tick(generation) }
        let current = state.withLock { state -> Bool in
            guard state.generation == generation else { return false }
            state.timer = next
            return true
        }
        if !current { next.cancel() }
    }

    private func tick(_ generation: Int) async {
        let (value, peripheral): (UInt32, GATTPeripheral?) = state.withLock { state in
            guard state.generation == generation else { return (0, nil) }
            return (state.counts.next, state.running)
        }
        guard let peripheral else { return }
        let bytes = [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24)]
        let outcome = try? await peripheral.push(bytes, handle: handle, indication: false)
        let sent = outcome == .sent
        state.withLock { state in
            if sent {
                state.counts.sent += 1
                state.counts.next &+= 1
            }
        }
        if sent { schedule(generation) } else { halt() }
    }
}
