import Bluetooth
import HCI
internal import CHCI

/// One kernel Bluetooth adapter (`hciN`), as HCIGETDEVINFO reports it.
public struct KernelAdapter: Hashable, Sendable, CustomStringConvertible {
    /// The N of hciN.
    public var index: UInt16
    /// "hci0".
    public var name: String
    /// The public address (all zero for a controller that has none, or before it first came up).
    public var address: BluetoothAddress
    /// `HCI_UP`: the kernel has opened and initialised the controller.
    public var isUp: Bool
    /// `hci_dev_info.flags` verbatim (bit numbers of BlueZ's HCI device flags).
    public var flags: UInt32
    /// `hci_dev_info.type`: controller type in the low nibble, bus in the high nibble.
    public var type: UInt8
    public var aclMTU: UInt16
    public var aclPackets: UInt16

    public init(
        index: UInt16, name: String, address: BluetoothAddress, isUp: Bool, flags: UInt32 = 0, type: UInt8 = 0,
        aclMTU: UInt16 = 0, aclPackets: UInt16 = 0
    ) {
        self.index = index
        self.name = name
        self.address = address
        self.isUp = isUp
        self.flags = flags
        self.type = type
        self.aclMTU = aclMTU
        self.aclPackets = aclPackets
    }

    init(_ native: chci_adapter) {
        var copy = native
        let name = withUnsafeBytes(of: &copy.name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        let octets = withUnsafeBytes(of: native.address) { Array($0) }
        var reader = ByteReader(octets)
        let address = (try? BluetoothAddress(parsingLittleEndian: &reader)) ?? .zero
        self.init(
            index: native.index, name: name, address: address, isUp: native.is_up != 0, flags: native.flags,
            type: native.type, aclMTU: native.acl_mtu, aclPackets: native.acl_packets)
    }

    /// `HCI_RUNNING` (bit 2).
    public var isRunning: Bool { flags & (1 << 2) != 0 }

    /// The bus the controller sits on (`hci_dev_info.type` high nibble).
    public var bus: String {
        switch type >> 4 {
        case 0: return "virtual"
        case 1: return "USB"
        case 2: return "PC Card"
        case 3: return "UART"
        case 4: return "RS232"
        case 5: return "PCI"
        case 6: return "SDIO"
        case 7: return "SPI"
        case 8: return "I2C"
        case 9: return "SMD"
        case 10: return "VirtIO"
        case 11: return "IPC"
        default: return "bus \(type >> 4)"
        }
    }

    public var description: String { "\(name) \(address) \(isUp ? "UP" : "DOWN") \(bus)" }
}

/// The kernel's adapter list and the up/down ioctls.
public enum KernelHCI {
    /// Every adapter the kernel knows, up or down, in index order.
    /// - Throws: `KernelBluetoothError`; on a kernel without Bluetooth its message says so and
    ///   points to `--transport sim`.
    public static func adapters() throws(KernelBluetoothError) -> [KernelAdapter] {
        let capacity = Int(CHCI_MAX_ADAPTERS)
        var natives = [chci_adapter](repeating: chci_adapter(), count: capacity)
        let count = try KernelBluetoothError.check(.listAdapters) {
            natives.withUnsafeMutableBufferPointer { chci_list_adapters($0.baseAddress, Int32(capacity)) }
        }
        return natives.prefix(Int(count)).map(KernelAdapter.init).sorted { $0.index < $1.index }
    }

    /// Adapter `index` (ENODEV when there is none).
    public static func adapter(index: UInt16) throws(KernelBluetoothError) -> KernelAdapter {
        var native = chci_adapter()
        _ = try KernelBluetoothError.check(.readAdapterInformation(index: index)) { chci_adapter_info(index, &native) }
        return KernelAdapter(native)
    }

    /// The first adapter that is up, else the first adapter; `nil` when there is none.
    public static func defaultAdapter() throws(KernelBluetoothError) -> KernelAdapter? {
        let all = try adapters()
        return all.first(where: \.isUp) ?? all.first
    }

    /// Brings adapter `index` up (HCIDEVUP; CAP_NET_ADMIN). Already up is success.
    /// Note: with bluetoothd stopped, this opens the controller but does not enable LE on a
    /// dual-mode controller; use `ManagementSocket.prepareForLowEnergy(index:)` for that.
    public static func bringUp(index: UInt16) throws(KernelBluetoothError) {
        do {
            _ = try KernelBluetoothError.check(.adapterUp(index: index)) { chci_adapter_up(index) }
        } catch {
            if error.errno == .alreadyInProgress { return }
            throw error
        }
    }

    /// Brings adapter `index` down (HCIDEVDOWN; CAP_NET_ADMIN). Already down is success.
    public static func bringDown(index: UInt16) throws(KernelBluetoothError) {
        _ = try KernelBluetoothError.check(.adapterDown(index: index)) { chci_adapter_down(index) }
    }
}
