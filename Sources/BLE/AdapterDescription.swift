import Bluetooth
import GATT
import HCI
import Kernel

/// What a controller says it is, as our host read it when it started (the user-space transports
/// and `sim`): Read Local Version Information, Read BD_ADDR, LE Read Local Supported Features,
/// and the LE ACL buffers.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.4.1, §7.4.6, §7.8.2, §7.8.3
public struct ControllerDescription: Hashable, Sendable {
    public var address: BluetoothAddress
    /// HCI_Version: `5.4 (0x0d)`.
    public var hciVersion: String
    public var hciRevision: UInt16
    /// LMP_Version (the Link Layer's): `5.4 (0x0d)`.
    public var lmpVersion: String
    public var lmpSubversion: UInt16
    /// Company_Identifier (Assigned Numbers), and its name where known.
    public var manufacturer: UInt16
    public var manufacturerName: String?
    /// LE Read Local Supported Features, by name (Vol 6, Part B, §4.6); nil when the controller
    /// refused the command.
    public var leFeatures: [String]?
    /// The LE ACL data buffers the host respects: octets per packet and packets.
    public var aclPacketLength: Int
    public var aclPacketCount: Int
    /// The LE buffers are the BR/EDR ones (LE Read Buffer Size said zero).
    public var aclBuffersShared: Bool

    init(_ info: ControllerInfo) {
        address = info.address
        hciVersion = info.version.hciVersion.description
        hciRevision = info.version.hciSubversion
        lmpVersion = info.version.lmpVersion.description
        lmpSubversion = info.version.lmpSubversion
        manufacturer = info.version.companyID
        manufacturerName = GATTNames.company(info.version.companyID)
        leFeatures = info.leFeatures?.names
        aclPacketLength = Int(info.aclBuffers.packetLength)
        aclPacketCount = Int(info.aclBuffers.packetCount)
        aclBuffersShared = info.aclBuffers.shared
    }
}

/// A kernel adapter (`hciN`) as the kernel reports it — HCIGETDEVINFO and the management
/// channel's Read Controller Information — without opening or changing it.
/// - SeeAlso: BlueZ doc/mgmt-api.txt, Read Controller Information Command
public struct KernelAdapterDescription: Hashable, Sendable {
    /// The N of hciN.
    public var index: UInt16
    public var address: BluetoothAddress
    /// `hci0`.
    public var name: String
    /// The controller's local name (mgmt Name); nil where unread or empty.
    public var localName: String?
    /// `HCI_UP`: the kernel has opened and initialised the controller.
    public var isUp: Bool
    /// The bus the controller sits on (USB, UART, virtual…).
    public var bus: String
    /// Powered / LE on (mgmt Current_Settings); nil where the management channel could not be read.
    public var isPowered: Bool?
    public var lowEnergyEnabled: Bool?
    /// The controller supports LE at all (mgmt Supported_Settings).
    public var supportsLowEnergy: Bool?
    /// Bluetooth_Version and Manufacturer from the management channel.
    public var version: String?
    public var manufacturer: UInt16?
    public var manufacturerName: String?
    /// A `bluetoothd` process runs on this machine: it manages every adapter (its agent, its keys).
    public var managedByBluetoothd: Bool
}

extension Adapter {
    /// What the controller says it is, where our host runs it (the user-space transports, `sim`);
    /// nil on the kernel path (see ``kernelAdapters()``) and in a replay.
    public nonisolated var controller: ControllerDescription? {
        central.controllerInfo.map(ControllerDescription.init)
    }

    /// Every kernel adapter, up or down, in index order, read without changing anything (no
    /// privilege needed). Throws where the kernel has no Bluetooth.
    public static func kernelAdapters() throws(BLEError) -> [KernelAdapterDescription] {
        let adapters: [KernelAdapter]
        do {
            adapters = try KernelHCI.adapters()
        } catch {
            // The kernel error names its operation (`listing Bluetooth adapters: …`): one prefix.
            throw BLEError.kernel(error, doing: nil)
        }
        let management = try? ManagementSocket.open()
        defer { management?.close() }
        let daemon = bluetoothDaemonRuns()
        return adapters.map { adapter in
            var description = KernelAdapterDescription(
                index: adapter.index, address: adapter.address, name: adapter.name, isUp: adapter.isUp, bus: adapter.bus,
                managedByBluetoothd: daemon)
            if let information = try? management?.readControllerInformation(index: adapter.index) {
                if !information.name.isEmpty { description.localName = information.name }
                if information.address != .zero { description.address = information.address }
                description.isPowered = information.currentSettings.contains(.powered)
                description.lowEnergyEnabled = information.currentSettings.contains(.lowEnergy)
                description.supportsLowEnergy = information.supportedSettings.contains(.lowEnergy)
                description.version = CoreVersion(rawValue: information.bluetoothVersion).description
                description.manufacturer = information.manufacturer
                description.manufacturerName = GATTNames.company(information.manufacturer)
            }
            return description
        }
    }
}
