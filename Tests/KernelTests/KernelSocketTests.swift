#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Bluetooth
import Testing

@testable import HCI
@testable import Kernel

/// On a kernel without Bluetooth (like CI containers) every kernel entry point must fail with the
/// exact "no Bluetooth" message; on a machine with Bluetooth it may succeed or fail with one of
/// the typed errors a normal user can meet (no adapter, no capability, busy).
func expectKernelOutcome<T>(_ operation: KernelOperation, _ body: () throws(KernelBluetoothError) -> T) -> T? {
    do {
        return try body()
    } catch {
        expectTypedKernelError(error, operation)
        return nil
    }
}

func expectTypedKernelError(_ error: KernelBluetoothError, _ operation: KernelOperation) {
    guard case .system(let failed, let errno) = error else {
        Issue.record("unexpected error \(error)")
        return
    }
    #expect(failed == operation)
    switch errno.rawValue {
    case EAFNOSUPPORT:
        #expect(error.description.hasPrefix("\(operation): this kernel has no Bluetooth support (AF_BLUETOOTH)"))
    case ENODEV, EPERM, EACCES, EBUSY, EALREADY, EUSERS, ERFKILL, EPROTONOSUPPORT, EHOSTUNREACH, ENETDOWN:
        #expect(error.description.hasPrefix("\(operation): "))
    default:
        Issue.record("unexpected errno: \(error)")
    }
}

@Suite("Kernel HCI sockets on this machine")
struct KernelHCISocketTests {
    @Test("listing adapters succeeds or says why not")
    func listAdapters() {
        if let adapters = expectKernelOutcome(.listAdapters, { () throws(KernelBluetoothError) in try KernelHCI.adapters() }) {
            for adapter in adapters { #expect(adapter.name == "hci\(adapter.index)") }
        }
    }

    @Test(
        "opening each channel succeeds or throws the typed error",
        arguments: [(UInt16?.some(0), HCIChannel.raw), (nil, .monitor), (nil, .control)])
    func openChannel(_ device: UInt16?, _ channel: HCIChannel) {
        let operation = KernelOperation.openHCISocket(channel: channel, device: device)
        if let socket = expectKernelOutcome(operation, { () throws(KernelBluetoothError) in try HCISocket.open(device: device, channel: channel) }) {
            #expect(socket.channel == channel)
            socket.close()
            #expect(socket.descriptor == nil)
        }
    }

    @Test("the raw channel with an event filter")
    func rawWithFilter() {
        let operation = KernelOperation.openHCISocket(channel: .raw, device: 0)
        guard let socket = expectKernelOutcome(operation, { () throws(KernelBluetoothError) in try HCISocket.open(device: 0, channel: .raw) }) else {
            return
        }
        defer { socket.close() }
        let filter = HCIFilter(packetTypes: [.event], events: [HCIEventCode(rawValue: 0x0E), HCIEventCode(rawValue: 0x3E)])
        do {
            try socket.setFilter(filter)
            // Without CAP_NET_RAW the kernel narrows the filter to its safe list; never widens it.
            let installed = try socket.filter()
            let wanted = filter.kernelMasks
            #expect(installed.typeMask & ~wanted.typeMask == 0)
            #expect(installed.eventMask & ~wanted.eventMask == 0)
            #expect(installed.eventMask & (1 << 0x0E) != 0)
        } catch {
            Issue.record("setting a filter on an open raw socket failed: \(error)")
        }
    }

    @Test("openRaw with a filter succeeds or throws the typed error")
    func openRawWithFilter() {
        let operation = KernelOperation.openHCISocket(channel: .raw, device: 0)
        if let socket = expectKernelOutcome(operation, { () throws(KernelBluetoothError) in
            try HCISocket.openRaw(device: 0, filter: .allEvents)
        }) {
            #expect(socket.channel == .raw)
            socket.close()
        }
    }

    @Test("adapter up on a kernel without Bluetooth says so")
    func adapterUp() {
        _ = expectKernelOutcome(.adapterUp(index: 15)) { () throws(KernelBluetoothError) in try KernelHCI.bringUp(index: 15) }
    }

    @Test("a channel and a device that do not go together are refused before the kernel is asked")
    func invalidChannelDevice() {
        #expect(throws: KernelBluetoothError.invalidRequest(operation: .openHCISocket(channel: .monitor, device: 0), reason: "the monitor channel takes no adapter (got hci0)")) {
            try HCISocket.open(device: 0, channel: .monitor)
        }
        #expect(throws: KernelBluetoothError.invalidRequest(operation: .openHCISocket(channel: .raw, device: nil), reason: "the raw channel needs an adapter (hciN)")) {
            try HCISocket.open(device: nil, channel: .raw)
        }
    }
}

@Suite("Kernel HCI filter masks")
struct KernelHCIFilterTests {
    @Test("events and packet types land on libbluetooth's bits")
    func masks() {
        let filter = HCIFilter(
            packetTypes: [.event, .acl],
            events: [HCIEventCode(rawValue: 0x0E), HCIEventCode(rawValue: 0x0F), HCIEventCode(rawValue: 0x3E)],
            opcode: HCIOpcode(rawValue: 0x200B))
        let masks = filter.kernelMasks
        #expect(masks.typeMask == 1 << 4 | 1 << 2)
        #expect(masks.eventMask == 1 << 0x0E | 1 << 0x0F | 1 << 0x3E)
        #expect(masks.opcode == 0x200B)
    }

    @Test("the vendor packet type is bit 0; event codes wrap at 64 as the kernel tests them")
    func vendorAndWrap() {
        let masks = HCIFilter(packetTypes: [0xFF], events: [0xFF, 0x40]).kernelMasks
        #expect(masks.typeMask == 1)
        #expect(masks.eventMask == UInt64(1) << 63 | 1)
        #expect(masks.opcode == 0)
    }

    @Test("all and allEvents")
    func presets() {
        #expect(HCIFilter.all.kernelMasks == HCIFilter.KernelMasks(typeMask: .max, eventMask: .max, opcode: 0))
        #expect(HCIFilter.allEvents.kernelMasks == HCIFilter.KernelMasks(typeMask: 1 << 4, eventMask: .max, opcode: 0))
        #expect(HCIFilter(packetTypes: [], events: []).kernelMasks == HCIFilter.KernelMasks(typeMask: 0, eventMask: 0, opcode: 0))
    }
}

/// A connected AF_UNIX SOCK_SEQPACKET pair: datagram semantics like the kernel's HCI and L2CAP
/// sockets, so the I/O paths can run without Bluetooth.
func kernelSeqpacketPair() throws -> (SocketDescriptor, SocketDescriptor) {
    var fds: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
        throw Errno.current
    }
    return (SocketDescriptor(rawValue: fds[0]), SocketDescriptor(rawValue: fds[1]))
}

@Suite("Kernel management socket request/response")
struct KernelManagementSocketTests {
    /// A management socket whose kernel is the other end of a socketpair, with `replies`
    /// already queued (the kernel side answers ahead; the request still sends first).
    func withFakeKernel(_ replies: [String], _ body: (ManagementSocket, SocketDescriptor) throws -> Void) throws {
        let (ours, kernel) = try kernelSeqpacketPair()
        defer { try? kernel.close() }
        for reply in replies { try kernel.send(kernelHex(reply)) }
        let socket = ManagementSocket(socket: HCISocket(adopting: ours, device: nil, channel: .control))
        defer { socket.close() }
        try body(socket, kernel)
    }

    func sentCommands(_ kernel: SocketDescriptor) throws -> [[UInt8]] {
        var commands: [[UInt8]] = []
        while try kernel.wait(for: .readable, timeout: .zero) {
            commands.append(try kernel.receive(maximumLength: 1024, nonBlocking: true))
        }
        return commands
    }

    @Test("Set Powered skips unrelated events and returns Current_Settings")
    func setPowered() throws {
        try withFakeKernel([
            "06 00 00 00 04 00 C0 0A 00 00",  // New Settings (unsolicited)
            "01 00 01 00 07 00 05 00 00 C1 0A 00 00",  // Set Powered done, but on hci1
            "02 00 00 00 03 00 05 00 00",  // Command Status success: still pending
            "01 00 00 00 07 00 05 00 00 C1 0A 00 00",  // ours
        ]) { socket, kernel in
            let settings = try socket.setPowered(true, index: 0)
            #expect(settings.contains(.powered))
            #expect(settings.contains(.lowEnergy))
            #expect(try sentCommands(kernel) == [kernelHex("05 00 00 00 01 00 01")])
        }
    }

    @Test("a failure status becomes managementFailed with the fix")
    func failure() throws {
        try withFakeKernel(["02 00 00 00 03 00 05 00 14"]) { socket, _ in
            #expect(throws: KernelBluetoothError.managementFailed(opcode: .setPowered, index: 0, status: .permissionDenied)) {
                try socket.setPowered(true, index: 0)
            }
        }
    }

    @Test("no answer: a bounded wait, then the timeout error")
    func timeout() throws {
        try withFakeKernel([]) { socket, _ in
            #expect(throws: KernelBluetoothError.system(operation: .managementCommand(opcode: .setLowEnergy, index: 0), errno: .timedOut)) {
                try socket.request(SetLowEnergyCommand(enabled: true), index: 0, timeout: .milliseconds(50))
            }
        }
    }

    @Test("a malformed answer to our command is reported, not skipped")
    func malformedAnswer() throws {
        try withFakeKernel(["01 00 00 00 06 00 05 00 00 C1 0A 00"]) { socket, _ in
            do throws(KernelBluetoothError) {
                try socket.setPowered(true, index: 0)
                Issue.record("decoded a three-octet Current_Settings")
            } catch {
                guard case .malformedManagementReply(.setPowered, .malformed(_, .truncated, _)) = error else {
                    Issue.record("\(error)")
                    return
                }
            }
        }
    }

    @Test("prepareForLowEnergy switches LE on, then powers on")
    func prepareForLowEnergy() throws {
        let info = "01 00 00 00 1B 01 04 00 00 " + Hex.encode(kernelControllerInfoReply)
        try withFakeKernel([
            info,
            "01 00 00 00 07 00 0D 00 00 C0 0A 00 00",
            "01 00 00 00 07 00 05 00 00 C1 0A 00 00",
        ]) { socket, kernel in
            let settings = try socket.prepareForLowEnergy(index: 0)
            #expect(settings.isSuperset(of: [.powered, .lowEnergy]))
            #expect(
                try sentCommands(kernel) == [
                    kernelHex("04 00 00 00 00 00"), kernelHex("0D 00 00 00 01 00 01"), kernelHex("05 00 00 00 01 00 01"),
                ])
        }
    }

    @Test("without CAP_NET_ADMIN: what is off and what to run, exit class unavailable")
    func notReadyWithoutPrivilege() throws {
        // The fixture's Current_Settings (0x08C0): powered off, LE off. Set Low Energy is refused
        // with Permission Denied, as the kernel refuses an untrusted socket.
        #expect(kernelControllerInfo.currentSettings.isDisjoint(with: [.powered, .lowEnergy]))
        let info = "01 00 00 00 1B 01 04 00 00 " + Hex.encode(kernelControllerInfoReply)
        try withFakeKernel([info, "02 00 00 00 03 00 0D 00 14"]) { socket, _ in
            do throws(KernelBluetoothError) {
                _ = try socket.prepareForLowEnergy(index: 0)
                Issue.record("an untrusted socket changed the settings")
            } catch {
                #expect(error == .adapterNotReady(index: 0, poweredOff: true, leDisabled: true))
                #expect(error.kind == .unavailable)
                #expect(
                    "\(error)"
                        == "hci0 is powered off and has LE switched off (without bluetoothd nobody turns it on): run "
                        + "`sudo btmgmt --index 0 le on && sudo btmgmt --index 0 power on`, or grant CAP_NET_ADMIN "
                        + "(`\(KernelBluetoothError.setcapFix)`) and gattclient turns it on itself")
            }
        }
        #expect(
            "\(KernelBluetoothError.adapterNotReady(index: 1, poweredOff: true, leDisabled: false))".hasPrefix(
                "hci1 is powered off (without bluetoothd nobody turns it on): run `sudo btmgmt --index 1 power on`"))
    }

    @Test("an adapter already ready needs no change (and so no privilege)")
    func alreadyReady() throws {
        var reply = kernelControllerInfoReply
        reply[13] |= 0x01  // Current_Settings bit 0: powered
        reply[14] |= 0x02  // bit 9: LE
        try withFakeKernel(["01 00 00 00 1B 01 04 00 00 " + Hex.encode(reply)]) { socket, kernel in
            let settings = try socket.prepareForLowEnergy(index: 0)
            #expect(settings.isSuperset(of: [.powered, .lowEnergy]))
            #expect(try sentCommands(kernel) == [kernelHex("04 00 00 00 00 00")], "only Read Controller Information")
        }
    }

    @Test("a controller without LE is refused with Not Supported")
    func noLowEnergy() throws {
        var reply = kernelControllerInfoReply
        reply[10] &= ~0x02  // clear supported bit 9 (LE): octet 10 holds bits 8-15
        let info = "01 00 00 00 1B 01 04 00 00 " + Hex.encode(reply)
        try withFakeKernel([info]) { socket, _ in
            #expect(throws: KernelBluetoothError.managementFailed(opcode: .setLowEnergy, index: 0, status: .notSupported)) {
                try socket.prepareForLowEnergy(index: 0)
            }
        }
    }

    @Test("a closed management socket says so")
    func closed() throws {
        try withFakeKernel([]) { socket, _ in
            socket.close()
            #expect(throws: KernelBluetoothError.closed(operation: .hciSend(channel: .control, device: nil))) {
                try socket.setPowered(true, index: 0)
            }
        }
    }
}
