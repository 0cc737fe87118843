import Bluetooth
import HCI
internal import CHCI

/// The kernel HCI user channel (`hci-user:N`): exclusive access to adapter N, with the kernel's
/// own host stepping aside, so the whole host (HCI, L2CAP, ATT, GATT) runs here. The socket
/// delivers one whole packet, indicator first, per read: no H4 framing.
///
/// Needs CAP_NET_ADMIN, and the adapter down and not managed by bluetoothd; the errors say which
/// (`KernelBluetoothError`, whose `kind` maps to the CLI's exit codes).
public enum UserChannelTransport {
    public static func open(
        adapter index: UInt16, writeTimeout: Duration = .seconds(2), logger: Logger = .disabled
    ) async throws(KernelBluetoothError) -> FileDescriptorTransport {
        let operation = KernelOperation.openHCISocket(channel: .user, device: index)
        let descriptor = try KernelBluetoothError.check(operation) {
            chci_hci_open(index, UInt16(CHCI_CHANNEL_USER), CHCI_NONBLOCK)
        }
        let name = "hci-user:\(index)"
        logger.debug("\(name): open")
        return FileDescriptorTransport(
            adopting: descriptor, framing: .datagram, name: name, writeTimeout: writeTimeout, logger: logger)
    }
}
