import ATT
import Bluetooth
import GATT
import HCI
import L2CAP

/// An emulated Adafruit Bluefruit LE UART Friend (nRF51, S110, firmware 0.8): the Nordic UART
/// Service, where everything written to RX comes back as TX notifications split to
/// ATT_MTU − 3 octets (the echo a Bluefruit running the UART example sketch gives), plus GAP,
/// GATT and Device Information; ATT_MTU 23; a random static address; the NUS UUID in the
/// advertising data and the name "Adafruit Bluefruit LE" in the scan response.
public final class EmulatedBluefruit: GATTVirtualPeripheral {
    public let address: BluetoothAddress
    public let addressType = AddressType.random
    public let advertisingData: [UInt8]
    public let scanResponseData: [UInt8]
    public let isConnectable = true
    public let peripheral: GATTPeripheral
    let firmware: BluefruitFirmware

    public static let deviceName = "Adafruit Bluefruit LE"
    /// A random static address (two top bits set).
    public static let defaultAddress = BluetoothAddress("E8:7F:3A:21:9C:05")!

    public init(
        address: BluetoothAddress = EmulatedBluefruit.defaultAddress, clock: any BluetoothClock = SystemClock(),
        logger: Logger = .disabled
    ) throws(GATTError) {
        self.address = address
        // Flags 0x06, Complete List of 128-bit Service UUIDs: NUS (little-endian).
        advertisingData = [0x02, 0x01, 0x06, 0x11, 0x07] + NordicUART.service.littleEndianBytes
        let name = Array(Self.deviceName.utf8)
        scanResponseData = [UInt8(name.count + 1), 0x09] + name
        let database = try AttributeDatabase(services: Self.services())
        firmware = BluefruitFirmware(
            rx: database.valueHandle(of: NordicUART.rx) ?? 0, tx: database.valueHandle(of: NordicUART.tx) ?? 0)
        peripheral = GATTPeripheral(
            database: database, rxMTU: ATTPDU.defaultLEMTU, firmware: firmware, clock: clock, logger: logger)
    }

    /// GAP, GATT, Nordic UART and Device Information, as devices.md lists them.
    public static func services() -> [ServiceDefinition] {
        return [
            ServiceDefinition(
                uuid: GATTUUID.genericAccess,
                characteristics: [
                    CharacteristicDefinition(
                        uuid: GATTUUID.deviceName, properties: [.read], value: Array(deviceName.utf8),
                        maximumLength: 31),
                    CharacteristicDefinition(
                        uuid: GATTUUID.appearance, properties: [.read], value: [0x00, 0x00], maximumLength: 2,
                        isFixedLength: true),
                    CharacteristicDefinition(
                        uuid: GATTUUID.peripheralPreferredConnectionParameters, properties: [.read],
                        value: [0x10, 0x00, 0x3C, 0x00, 0x00, 0x00, 0x90, 0x01], maximumLength: 8, isFixedLength: true),
                ]),
            StandardServices.genericAttributeWithServiceChangedOnly(),
            ServiceDefinition(
                uuid: NordicUART.service,
                characteristics: [
                    CharacteristicDefinition(
                        uuid: NordicUART.tx, properties: [.notify], permissions: [], value: [], maximumLength: 20,
                        descriptors: [.clientConfiguration()]),
                    CharacteristicDefinition(
                        uuid: NordicUART.rx, properties: [.write, .writeWithoutResponse], value: [], maximumLength: 20),
                ]),
            ServiceDefinition(
                uuid: .bit16(0x180A),
                characteristics: [
                    .text(0x2A29, "Adafruit Industries"),
                    .text(0x2A24, "BLEFRIEND32"),
                    .text(0x2A26, "0.8.1"),
                    .text(0x2A28, "S110 8.0.0, 0.2"),
                ]),
        ]
    }


    /// Sends text from the board's side (what its microcontroller prints to the UART) as TX
    /// notifications of at most ATT_MTU − 3 octets.
    public func send(_ bytes: [UInt8]) async {
        await firmware.transmit(bytes, peripheral)
    }
}

/// The UART loopback behind ``EmulatedBluefruit``.
struct BluefruitFirmware: GATTPeripheralFirmware {
    let rx: UInt16
    let tx: UInt16

    func checkWrite(handle: UInt16, value: [UInt8]) -> ATTErrorCode? { nil }

    func handle(_ event: GATTPeripheralEvent, peripheral: GATTPeripheral) async {
        if case .valueWritten(let handle, let value) = event, handle == rx {
            await transmit(value, peripheral)
        }
    }

    func transmit(_ bytes: [UInt8], _ peripheral: GATTPeripheral) async {
        let mtu = await peripheral.mtu()
        var start = 0
        while start < bytes.count {
            let end = min(start + mtu - 3, bytes.count)
            try? await peripheral.updateValue(Array(bytes[start..<end]), handle: tx)
            start = end
        }
    }
}
