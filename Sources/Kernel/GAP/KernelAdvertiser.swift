import Bluetooth
import HCI
import Host

/// Advertising on the kernel path without bluetoothd: the management channel prepares the
/// adapter for LE, makes it connectable and switches advertising on; our advertising and scan
/// response data replace the kernel's own (flags, name) through a raw HCI socket; an L2CAP LE
/// socket listens on the ATT fixed channel (CID 4). bluetoothd's own GATT server, when it runs,
/// holds that channel: listening then fails with `EADDRINUSE`.
public enum KernelAdvertiser {
    /// Starts advertising `parameters` on adapter `index` (whose address is `address`) and
    /// returns the listener that accepts the centrals connecting to it, with `security` as the
    /// accepted sockets' `BT_SECURITY`. Throws `KernelBluetoothError` (a socket or management
    /// command failed), or `HCIError` (advertising data that does not encode: check
    /// `parameters.invalidity` first); the listener is closed again on failure.
    public static func start(
        adapter index: UInt16, address: BluetoothAddress, parameters: LEAdvertisingParameters,
        security: L2CAPSecurityLevel?
    ) async throws -> KernelATTListener {
        let management = try ManagementSocket.open()
        defer { management.close() }
        _ = try management.prepareForLowEnergy(index: index)
        _ = try management.setConnectable(parameters.connectable, index: index)
        let listening = try KernelATTChannel.listen(adapter: address, security: security)
        do {
            _ = try management.setAdvertising(parameters.connectable ? .connectable : .on, index: index)
            let socket = try HCISocket.openRaw(device: index, filter: HCIFilter(packetTypes: [.event], events: []))
            defer { socket.close() }
            try socket.send(
                [HCIPacketType.command.rawValue]
                    + HCICommandPacket(LESetAdvertisingDataCommand(advertisingData: parameters.advertisingData)).encode())
            try socket.send(
                [HCIPacketType.command.rawValue]
                    + HCICommandPacket(LESetScanResponseDataCommand(scanResponseData: parameters.scanResponseData))
                    .encode())
        } catch {
            await listening.close()
            throw error
        }
        return listening
    }

    /// Switches advertising off on adapter `index` (best effort: the adapter may be gone).
    public static func stop(adapter index: UInt16) {
        guard let management = try? ManagementSocket.open() else { return }
        _ = try? management.setAdvertising(.off, index: index)
        management.close()
    }
}
