#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Bluetooth
import Testing

@testable import HCI
@testable import Kernel

@Suite("Kernel Bluetooth error messages")
struct KernelErrorMessageTests {
    static let noBluetooth =
        "this kernel has no Bluetooth support (AF_BLUETOOTH); use --transport sim or tcp:HOST:PORT"
    static let setcap = "setcap 'cap_net_raw,cap_net_admin+eip' $(which gattclient)"
    static let peer = BluetoothAddress("C4:BE:84:70:69:09")!

    @Test(
        "no Bluetooth in the kernel: the exact message for every operation",
        arguments: [
            (KernelOperation.listAdapters, "listing Bluetooth adapters"),
            (.openHCISocket(channel: .raw, device: 0), "opening the raw HCI channel on hci0"),
            (.openHCISocket(channel: .control, device: nil), "opening the management HCI channel"),
            (.openL2CAP(adapter: .zero), "opening an L2CAP LE socket"),
        ])
    func noBluetooth(_ operation: KernelOperation, _ prefix: String) {
        let error = KernelBluetoothError.system(operation: operation, errno: .addressFamilyNotSupported)
        #expect(error.description == "\(prefix): \(Self.noBluetooth)")
        #expect(error.kind == .unavailable)
    }

    /// monitor has no transport to change: its message does not advise one (issue 19, item 10).
    @Test func noBluetoothForTheMonitor() {
        let error = KernelBluetoothError.system(operation: .openHCISocket(channel: .monitor, device: nil), errno: .addressFamilyNotSupported)
        #expect(error.description.hasPrefix("opening the monitor HCI channel: this kernel has no Bluetooth support (AF_BLUETOOTH)"))
        #expect(!error.description.contains("--transport"))
        #expect(error.kind == .unavailable)
    }

    @Test(
        "permission denied names the capability and the setcap fix",
        arguments: [
            (KernelOperation.openHCISocket(channel: .raw, device: 0), EPERM, "CAP_NET_RAW"),
            (.openHCISocket(channel: .monitor, device: nil), EPERM, "CAP_NET_RAW"),
            (.openHCISocket(channel: .monitor, device: nil), EACCES, "CAP_NET_RAW"),
            (.setHCIFilter(device: 0), EPERM, "CAP_NET_RAW"),
            (.hciSend(channel: .raw, device: 1), EPERM, "CAP_NET_RAW"),
            (.openHCISocket(channel: .user, device: 0), EPERM, "CAP_NET_ADMIN"),
            (.openHCISocket(channel: .control, device: nil), EACCES, "CAP_NET_ADMIN"),
            (.adapterUp(index: 0), EPERM, "CAP_NET_ADMIN"),
            (.adapterDown(index: 1), EPERM, "CAP_NET_ADMIN"),
            (.managementCommand(opcode: .setPowered, index: 0), EPERM, "CAP_NET_ADMIN"),
        ])
    func permissionDenied(_ operation: KernelOperation, _ code: Int32, _ capability: String) {
        let error = KernelBluetoothError.system(operation: operation, errno: Errno(rawValue: code))
        #expect(
            error.description
                == "\(operation): permission denied: needs \(capability); grant it with `sudo \(Self.setcap)` (or run as root)")
        #expect(error.kind == .permissionDenied)
    }

    @Test("the user channel's EPERM asks for CAP_NET_ADMIN, not CAP_NET_RAW")
    func userChannelCapability() {
        let message = KernelBluetoothError.system(operation: .openHCISocket(channel: .user, device: 2), errno: .permissionDenied).description
        #expect(message.hasPrefix("opening the user HCI channel on hci2: permission denied: needs CAP_NET_ADMIN;"))
        #expect(!message.contains("CAP_NET_RAW;"))
    }

    @Test("no such adapter")
    func noSuchAdapter() {
        let error = KernelBluetoothError.system(operation: .openHCISocket(channel: .raw, device: 3), errno: .noSuchDevice)
        #expect(
            error.description
                == "opening the raw HCI channel on hci3: no such adapter hci3; list adapters with `hciconfig` or `btmgmt info`")
        #expect(error.kind == .unavailable)
        #expect(
            KernelBluetoothError.system(operation: .adapterUp(index: 7), errno: .noSuchDevice).description
                == "bringing hci7 up: no such adapter hci7; list adapters with `hciconfig` or `btmgmt info`")
    }

    @Test("adapter busy (EBUSY, EALREADY) says who owns it and how to free it", arguments: [EBUSY, EALREADY])
    func busy(_ code: Int32) {
        let error = KernelBluetoothError.system(operation: .openHCISocket(channel: .user, device: 0), errno: Errno(rawValue: code))
        #expect(
            error.description
                == "opening the user HCI channel on hci0: hci0 is busy: owned by bluetoothd or user channel in use; "
                + "stop bluetoothd or bring the adapter down: `hciconfig hci0 down`")
        #expect(error.kind == .unavailable)
    }

    @Test(
        "L2CAP connection failures",
        arguments: [
            (ECONNREFUSED, "connection refused by the device"),
            (
                ETIMEDOUT,
                "timed out: the device did not answer (is it advertising connectable and in range? a device connected "
                    + "to another central — a phone, bluetoothd on another adapter — stops advertising)"
            ),
            (EHOSTDOWN, "host is down: the device is not reachable (not advertising, or out of range)"),
            (EHOSTUNREACH, "no route: no powered LE adapter to reach the device; power one on (`btmgmt power on`)"),
            (ECONNRESET, "connection reset: the device disconnected"),
            (ECANCELED, "cancelled"),
        ])
    func connectFailures(_ code: Int32, _ text: String) {
        let error = KernelBluetoothError.system(operation: .connectL2CAP(peer: Self.peer, type: .random), errno: Errno(rawValue: code))
        #expect(error.description == "connecting to C4:BE:84:70:69:09 (random): \(text)")
    }

    @Test("the device's ATT channel held by another client of the adapter (bluetoothd)", arguments: [EBUSY, EALREADY, EISCONN])
    func attChannelHeld(_ code: Int32) {
        let error = KernelBluetoothError.system(operation: .connectL2CAP(peer: Self.peer, type: .random), errno: Errno(rawValue: code))
        #expect(
            error.description
                == "connecting to C4:BE:84:70:69:09 (random): C4:BE:84:70:69:09 is connected with an ATT channel of "
                + "another client of this adapter (bluetoothd?): disconnect it first "
                + "(`bluetoothctl disconnect C4:BE:84:70:69:09`) or stop bluetoothd")
    }

    @Test("link failures while receiving and sending")
    func linkFailures() {
        #expect(
            KernelBluetoothError.system(operation: .receive(peer: Self.peer), errno: .connectionReset).description
                == "receiving from C4:BE:84:70:69:09: connection reset: the device disconnected")
        #expect(
            KernelBluetoothError.system(operation: .receive(peer: Self.peer), errno: .timedOut).description
                == "receiving from C4:BE:84:70:69:09: the link timed out (device out of range or powered off)")
        #expect(
            KernelBluetoothError.system(operation: .send(peer: nil), errno: .brokenPipe).description
                == "sending to the peer: not connected: the link is gone")
        #expect(
            KernelBluetoothError.system(operation: .send(peer: nil), errno: Errno(rawValue: EMSGSIZE)).description
                == "sending to the peer: the SDU is larger than the channel's L2CAP MTU")
        #expect(KernelBluetoothError.system(operation: .send(peer: nil), errno: .connectionReset).kind == .failure)
    }

    @Test("other kernel conditions: rfkill, protocol missing, ATT channel taken")
    func otherConditions() {
        #expect(
            KernelBluetoothError.system(operation: .adapterUp(index: 0), errno: Errno(rawValue: ERFKILL)).description
                == "bringing hci0 up: hci0 is blocked by rfkill; unblock it with `rfkill unblock bluetooth`")
        #expect(
            KernelBluetoothError.system(operation: .openL2CAP(adapter: .zero), errno: Errno(rawValue: EPROTONOSUPPORT)).description
                == "opening an L2CAP LE socket: this kernel's Bluetooth lacks the L2CAP protocol (module not loaded?); "
                + "use --transport sim or tcp:HOST:PORT")
        #expect(
            KernelBluetoothError.system(operation: .listenL2CAP(adapter: .zero), errno: Errno(rawValue: EADDRINUSE)).description
                == "listening on the ATT channel: the ATT channel of this adapter is already in use "
                + "(bluetoothd's GATT server?); stop bluetoothd")
        #expect(
            KernelBluetoothError.system(operation: .managementCommand(opcode: .setPowered, index: 0), errno: .timedOut).description
                == "management command Set Powered on hci0: the kernel did not answer in time")
        // Anything else falls back to strerror.
        let other = KernelBluetoothError.system(operation: .readMTU, errno: Errno(rawValue: ENOMEM))
        #expect(other.description == "reading the L2CAP MTU: \(Errno(rawValue: ENOMEM))")
    }

    @Test("management failures carry the status name and the fix")
    func managementFailures() {
        #expect(
            KernelBluetoothError.managementFailed(opcode: .setPowered, index: 0, status: .permissionDenied).description
                == "Set Powered on hci0 failed: Permission Denied (0x14); needs CAP_NET_ADMIN; grant it with "
                + "`sudo \(Self.setcap)` (or run as root)")
        #expect(KernelBluetoothError.managementFailed(opcode: .setPowered, index: 0, status: .permissionDenied).kind == .permissionDenied)
        #expect(
            KernelBluetoothError.managementFailed(opcode: .setLowEnergy, index: 1, status: .notSupported).description
                == "Set Low Energy on hci1 failed: Not Supported (0x0c); this adapter has no LE support")
        #expect(
            KernelBluetoothError.managementFailed(opcode: .readControllerInformation, index: 4, status: .invalidIndex).description
                == "Read Controller Information on hci4 failed: Invalid Index (0x11); no such adapter hci4")
        #expect(
            KernelBluetoothError.managementFailed(opcode: .setPowered, index: 0, status: .rfkilled).description
                == "Set Powered on hci0 failed: RFKilled (0x12); unblock it with `rfkill unblock bluetooth`")
        #expect(
            KernelBluetoothError.managementFailed(opcode: .setAdvertising, index: 0, status: .rejected).description
                == "Set Advertising on hci0 failed: Rejected (0x0b)")
    }

    @Test("errors are Equatable on operation and errno")
    func equatable() {
        let a = KernelBluetoothError.system(operation: .adapterUp(index: 0), errno: .busy)
        #expect(a == .system(operation: .adapterUp(index: 0), errno: .busy))
        #expect(a != .system(operation: .adapterUp(index: 1), errno: .busy))
        #expect(a != .system(operation: .adapterUp(index: 0), errno: .permissionDenied))
        #expect(a.errno == .busy)
    }

    @Test func userChannelOnANonexistentAdapterIsAKernelError() async {
        // Adapter 65534 never exists; depending on the machine the kernel says "no Bluetooth"
        // (EAFNOSUPPORT), "no such device" or "permission denied", always as a kernel error
        // with advice, never a crash or a hang.
        await #expect {
            _ = try await UserChannelTransport.open(adapter: 65534)
        } throws: { error in
            guard let kernel = error as? KernelBluetoothError, case .system(let operation, _) = kernel else {
                return false
            }
            return operation == .openHCISocket(channel: .user, device: 65534) && !kernel.description.isEmpty
        }
    }
}
