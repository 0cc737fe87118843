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
public final class EmulatedCounter: GATTVirtualPeripheral {
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
    public var sent: Int { firmware.current.sent }
    /// The value the next notification carries.
    public var next: UInt32 { firmware.current.next }

    /// Stops notifying (the counter stays where it is).
    public func stop() { firmware.stop() }

}

/// The counter's firmware: while notifications are on, each period pushes the next value and
/// counts it when it was sent (``PeriodicPush``).
final class CounterFirmware: GATTPeripheralFirmware {
    struct Counts: Sendable {
        var sent = 0
        var next: UInt32 = 0
    }

    let handle: UInt16
    /// Shared with the loop's tick (a class: the tick is made before `self` is).
    private let counts = SharedState(Counts())
    private let loop: PeriodicPush

    init(handle: UInt16, period: Duration, clock: any BluetoothClock) {
        self.handle = handle
        let counts = counts
        loop = PeriodicPush(period: period, clock: clock) { peripheral in
            let value = counts.lock.withLock { $0.next }
            let outcome = try? await peripheral.push(value.encoded(), handle: handle, indication: false)
            guard outcome == .sent else { return false }
            counts.lock.withLock {
                $0.sent += 1
                $0.next &+= 1
            }
            return true
        }
    }

    var current: Counts { counts.lock.withLock { $0 } }

    func checkWrite(handle: UInt16, value: [UInt8]) -> ATTErrorCode? { nil }

    func handle(_ event: GATTPeripheralEvent, peripheral: GATTPeripheral) async {
        switch event {
        case .subscriptionChanged(let valueHandle, let configuration) where valueHandle == handle:
            if configuration.contains(.notifications) { loop.start(peripheral) } else { loop.halt() }
        case .disconnected:
            loop.halt()
        default:
            break
        }
    }

    func stop() { loop.stop() }
}
