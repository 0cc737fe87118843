#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Bluetooth
import HCI
internal import CHCI
import Synchronization

/// The channels of the kernel's HCI socket (`struct sockaddr_hci.hci_channel`).
public enum HCIChannel: UInt16, Hashable, Sendable, CustomStringConvertible {
    /// Shares the adapter with the kernel (and bluetoothd): sees traffic through a filter, may
    /// send commands (CAP_NET_RAW for anything beyond the kernel's safe list).
    case raw = 0
    /// Exclusive access: the kernel's host stack steps aside. Needs CAP_NET_ADMIN and the adapter
    /// down and not managed by bluetoothd.
    case user = 1
    /// Every adapter's traffic, read-only, with the btmon header (CAP_NET_RAW). Device: none.
    case monitor = 2
    /// The management protocol (BlueZ doc/mgmt-api.txt). Device: none; commands that change
    /// state need CAP_NET_ADMIN.
    case control = 3

    public var description: String {
        switch self {
        case .raw: return "raw"
        case .user: return "user"
        case .monitor: return "monitor"
        case .control: return "management"
        }
    }

    /// The capability whose absence makes this channel fail with EPERM/EACCES.
    public var requiredCapability: String {
        switch self {
        case .raw, .monitor: return "CAP_NET_RAW"
        case .user, .control: return "CAP_NET_ADMIN"
        }
    }

    /// Whether the channel binds to one adapter (raw, user) or to none (monitor, management).
    public var bindsToDevice: Bool { self == .raw || self == .user }
}

/// A kernel HCI packet filter for the raw channel: which packet types, which event codes, and
/// optionally one command opcode (for Command Complete/Status) are delivered.
///
/// The kernel's layout is a 32-bit packet-type bitmap (the vendor indicator 0xFF maps to bit 0),
/// a 64-bit event bitmap (codes are taken modulo 64, as the kernel tests them) and an opcode;
/// `kernelMasks` shows it exactly as libbluetooth's `hci_filter_*` helpers build it.
public struct HCIFilter: Hashable, Sendable {
    /// H4 packet indicators (`HCIPacketType` raw values, or 0xFF for vendor packets).
    public var packetTypes: Set<UInt8>
    public var events: Set<UInt8>
    /// Deliver Command Complete/Status only for this opcode; `nil` for any.
    public var opcode: HCIOpcode?

    public init(packetTypes: Set<UInt8>, events: Set<UInt8>, opcode: HCIOpcode? = nil) {
        self.packetTypes = packetTypes
        self.events = events
        self.opcode = opcode
    }

    public init(packetTypes: [HCIPacketType], events: [HCIEventCode], opcode: HCIOpcode? = nil) {
        self.init(packetTypes: Set(packetTypes.map(\.rawValue)), events: Set(events.map(\.rawValue)), opcode: opcode)
    }

    /// Every packet type and every event (what a sniffer or a full host wants).
    public static let all = HCIFilter(packetTypes: Set(0...31), events: Set(0...63))

    /// Events only, all of them (command flow and LE Meta events for scanning).
    public static let allEvents = HCIFilter(packetTypes: [HCIPacketType.event.rawValue], events: Set(0...63))

    /// The bitmaps the kernel receives.
    public struct KernelMasks: Hashable, Sendable {
        public var typeMask: UInt32
        public var eventMask: UInt64
        public var opcode: UInt16
    }

    public var kernelMasks: KernelMasks {
        let native = nativeFilter
        return KernelMasks(
            typeMask: native.type_mask,
            eventMask: UInt64(native.event_mask.1) << 32 | UInt64(native.event_mask.0),
            opcode: native.opcode)
    }

    var nativeFilter: chci_hci_filter {
        var native = chci_hci_filter()
        let types = packetTypes.sorted()
        let codes = events.sorted()
        types.withUnsafeBufferPointer { typeBuffer in
            codes.withUnsafeBufferPointer { eventBuffer in
                chci_hci_filter_build(
                    &native, typeBuffer.baseAddress, typeBuffer.count, eventBuffer.baseAddress, eventBuffer.count,
                    opcode?.rawValue ?? 0)
            }
        }
        return native
    }
}

/// An open kernel HCI socket on one channel. Owns its descriptor: `close()` explicitly; a socket
/// that was never closed is closed when the last reference goes (and only then).
///
/// Datagram semantics: each `receive` returns one whole packet (raw/user: H4 indicator + packet;
/// monitor: the 6-octet monitor header + packet; control: a management packet).
///
/// Two ways to read, both on the Kernel module's one syscall layer (`SocketDescriptor`):
/// `packets()`, readiness-driven (a `DispatchSource`, no thread, no timed wake-ups), for async
/// code; `receive(timeout:)`, a blocking wait, for synchronous request/response such as the
/// management channel's set-up commands.
public final class HCISocket: Sendable {
    /// `nil` for the monitor and management channels.
    public let device: UInt16?
    public let channel: HCIChannel
    private let state: Mutex<State>

    /// The descriptor and the readers watching it. Closing waits for the readers: the
    /// descriptor is closed only after every reader's dispatch source is cancelled.
    private struct State {
        var descriptor: SocketDescriptor?
        var readers: [ObjectIdentifier: DatagramReader] = [:]
        /// Closed by `close()` while readers were still stopping; closed by the last of them.
        var closing: SocketDescriptor?
        var closeCompletions: [@Sendable () -> Void] = []
    }

    /// Adopts an open descriptor (tests use a socketpair in place of the kernel).
    init(adopting descriptor: SocketDescriptor, device: UInt16?, channel: HCIChannel) {
        self.device = device
        self.channel = channel
        self.state = Mutex(State(descriptor: descriptor))
    }

    deinit {
        // Only closes a descriptor nobody closed (a running reader keeps its socket alive, so
        // none is left here); no other cleanup happens here.
        if let descriptor = state.withLock({ $0.descriptor }) { try? descriptor.close() }
    }

    /// Opens an HCI socket on `channel`, bound to adapter `device` (raw and user channels) or to
    /// no adapter (monitor and management channels: pass `nil`).
    /// - Throws: `KernelBluetoothError` naming the channel, e.g. the missing capability.
    public static func open(device: UInt16?, channel: HCIChannel, nonBlocking: Bool = false) throws(KernelBluetoothError) -> HCISocket {
        let operation = KernelOperation.openHCISocket(channel: channel, device: device)
        if channel.bindsToDevice, device == nil || device == UInt16(CHCI_DEV_NONE) {
            throw .invalidRequest(operation: operation, reason: "the \(channel) channel needs an adapter (hciN)")
        }
        if !channel.bindsToDevice, let device, device != UInt16(CHCI_DEV_NONE) {
            throw .invalidRequest(operation: operation, reason: "the \(channel) channel takes no adapter (got hci\(device))")
        }
        let fd = try KernelBluetoothError.check(operation) {
            chci_hci_open(device ?? UInt16(CHCI_DEV_NONE), channel.rawValue, nonBlocking ? CHCI_NONBLOCK : 0)
        }
        return HCISocket(adopting: SocketDescriptor(rawValue: fd), device: device, channel: channel)
    }

    /// A raw-channel socket on adapter `device` with `filter` installed (the usual way to watch
    /// events such as LE advertising reports next to bluetoothd).
    public static func openRaw(device: UInt16, filter: HCIFilter, nonBlocking: Bool = false) throws(KernelBluetoothError) -> HCISocket {
        let socket = try open(device: device, channel: .raw, nonBlocking: nonBlocking)
        do {
            try socket.setFilter(filter)
        } catch {
            socket.close()
            throw error
        }
        return socket
    }

    /// The kernel monitor channel (what btmon reads): every adapter, read-only.
    public static func openMonitor() throws(KernelBluetoothError) -> HCISocket {
        try open(device: nil, channel: .monitor)
    }

    /// The descriptor, for readiness sources; `nil` once closed.
    package var descriptor: SocketDescriptor? { state.withLock { $0.descriptor } }

    func liveDescriptor(_ operation: KernelOperation) throws(KernelBluetoothError) -> SocketDescriptor {
        guard let descriptor = state.withLock({ $0.descriptor }) else { throw .closed(operation: operation) }
        return descriptor
    }

    /// Installs a packet filter (raw channel). Without CAP_NET_RAW the kernel narrows it to its
    /// safe list silently, so read it back with `filter()` when that matters.
    public func setFilter(_ filter: HCIFilter) throws(KernelBluetoothError) {
        let operation = KernelOperation.setHCIFilter(device: device)
        let fd = try liveDescriptor(operation).rawValue
        var native = filter.nativeFilter
        _ = try KernelBluetoothError.check(operation) { chci_hci_set_filter(fd, &native) }
    }

    /// The filter the kernel holds for this socket.
    public func filter() throws(KernelBluetoothError) -> HCIFilter.KernelMasks {
        let operation = KernelOperation.setHCIFilter(device: device)
        let fd = try liveDescriptor(operation).rawValue
        var native = chci_hci_filter()
        _ = try KernelBluetoothError.check(operation) { chci_hci_get_filter(fd, &native) }
        return HCIFilter.KernelMasks(
            typeMask: native.type_mask,
            eventMask: UInt64(native.event_mask.1) << 32 | UInt64(native.event_mask.0),
            opcode: native.opcode)
    }

    /// Sends one packet (raw/user: H4 indicator first; control: a management packet).
    public func send(_ packet: [UInt8]) throws(KernelBluetoothError) {
        let operation = KernelOperation.hciSend(channel: channel, device: device)
        let descriptor = try liveDescriptor(operation)
        do {
            try descriptor.send(packet)
        } catch {
            throw .system(operation: operation, errno: error)
        }
    }

    /// Receives one packet, waiting at most `timeout` for it (`nil`: no limit). Returns `nil` when
    /// the time passes first. A zero-length result means the socket reached end of stream.
    public func receive(maximumLength: Int = 65_542, timeout: Duration?) throws(KernelBluetoothError) -> [UInt8]? {
        let operation = KernelOperation.hciReceive(channel: channel, device: device)
        let descriptor = try liveDescriptor(operation)
        let clock = ContinuousClock()
        let deadline = timeout.map { clock.now.advanced(by: $0) }
        do {
            while true {
                let left = deadline.map { max(.zero, clock.now.duration(to: $0)) }
                guard try descriptor.wait(for: .readable, timeout: left) else { return nil }
                do {
                    return try descriptor.receive(maximumLength: maximumLength, nonBlocking: true)
                } catch where error == .wouldBlock {
                    continue  // readiness without a datagram (another reader took it): wait again
                }
            }
        } catch {
            throw .system(operation: operation, errno: error)
        }
    }

    /// Closes the socket; later calls throw `.closed`. Closing twice is harmless. Running
    /// `packets()` streams finish; the descriptor itself is closed once their dispatch sources
    /// are cancelled (right away when nothing reads).
    public func close() {
        close(then: nil)
    }

    /// Closes the socket as `close()` does and runs `completion` once the descriptor is closed
    /// (right away, or on a reader's queue when readers had to stop first).
    func close(then completion: (@Sendable () -> Void)?) {
        let (descriptor, readers) = state.withLock { state -> (SocketDescriptor?, [DatagramReader]) in
            let descriptor = state.descriptor
            state.descriptor = nil
            guard !state.readers.isEmpty else { return (descriptor, []) }
            if let descriptor { state.closing = descriptor }
            if let completion { state.closeCompletions.append(completion) }
            return (nil, Array(state.readers.values))
        }
        if readers.isEmpty {
            try? descriptor?.close()
            completion?()
        } else {
            for reader in readers { reader.stop() }
        }
    }
}

extension HCISocket {
    /// Every packet the socket receives from now on, readiness-driven: a `DispatchSource` on the
    /// descriptor wakes a reader that drains all queued packets (non-blocking receives), in
    /// order, into an unbounded stream. Nothing polls and no thread waits.
    ///
    /// The stream finishes at end of stream and when the socket is closed, and throws
    /// `KernelBluetoothError.system(.hciReceive…)` on a receive error (`.closed` when the socket
    /// is closed already). Ending the iteration (or cancelling its task) stops the reading; the
    /// socket stays open. A zero-length datagram cannot be told from end of stream, so it ends
    /// the stream (HCI packets are never empty).
    public func packets(maximumLength: Int = 65_542) -> AsyncThrowingStream<[UInt8], any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: [UInt8].self, throwing: (any Error).self)
        let operation = KernelOperation.hciReceive(channel: channel, device: device)
        let reader = makeReader(
            maximumLength: maximumLength, label: "HCISocket.packets",
            onDatagram: { continuation.yield($0) },
            onEnd: { error in
                if let error {
                    continuation.finish(throwing: KernelBluetoothError.system(operation: operation, errno: error))
                } else {
                    continuation.finish()
                }
            })
        guard let reader else {
            continuation.finish(throwing: KernelBluetoothError.closed(operation: operation))
            return stream
        }
        continuation.onTermination = { _ in reader.stop() }
        reader.start()
        return stream
    }

    /// A reader registered with the socket (so `close()` stops it before closing the
    /// descriptor), not started yet; `nil` when the socket is closed. It keeps the socket alive
    /// until it has stopped.
    func makeReader(
        maximumLength: Int, label: String, onDatagram: @escaping DatagramReader.DatagramHandler,
        onEnd: @escaping DatagramReader.EndHandler
    ) -> DatagramReader? {
        state.withLock { state -> DatagramReader? in
            guard let descriptor = state.descriptor else { return nil }
            let reader = DatagramReader(
                descriptor: descriptor, maximumLength: maximumLength, label: label, onDatagram: onDatagram, onEnd: onEnd,
                onStopped: { [self] reader in readerStopped(reader) })
            state.readers[ObjectIdentifier(reader)] = reader
            return reader
        }
    }

    /// A reader's source is cancelled: forget it; the last one closes a descriptor whose
    /// `close()` came while it was still watching, then runs the close completions.
    private func readerStopped(_ reader: DatagramReader) {
        let (descriptor, completions) = state.withLock { state -> (SocketDescriptor?, [@Sendable () -> Void]) in
            state.readers[ObjectIdentifier(reader)] = nil
            guard state.readers.isEmpty else { return (nil, []) }
            defer {
                state.closing = nil
                state.closeCompletions.removeAll()
            }
            return (state.closing, state.closeCompletions)
        }
        try? descriptor?.close()
        for completion in completions { completion() }
    }
}
