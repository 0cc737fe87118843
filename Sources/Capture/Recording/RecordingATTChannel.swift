import ATT
import Bluetooth
import HCI
import L2CAP
import Synchronization

/// `--record FILE.btsnoop` for a channel whose HCI we do not see (the kernel's L2CAP socket):
/// wraps any ``ATTChannel`` and writes every SDU, both ways, to an H4 btsnoop file inside
/// synthetic ACL/L2CAP headers (``ATTCaptureFramer``: CID 4 unless configured, one fixed
/// connection handle), timestamped by the wall clock. The file is what `gattclient dump`,
/// Wireshark and ``ReplayATTChannel`` read; replayed strictly with the same requests, it
/// answers byte for byte.
///
/// Order: an SDU we send is recorded before it is handed to the wrapped channel, an SDU we
/// receive when the consumer of `incoming` takes it. Whatever our side sends in answer to a
/// received PDU (an indication's confirmation, the next request after a response) therefore
/// follows that PDU in the file, which is the order replay needs.
///
/// With `peer`, the file starts with a synthetic HCI_LE_Connection_Complete naming it (so
/// tools show the connection and its address) and ends, when the channel closes, with a
/// Disconnection Complete (reason: terminated by local host).
///
/// Recording never disturbs the traffic: a write that fails (disk full) stops recording,
/// keeps the first error in ``recordingFailure`` and lets SDUs flow on;
/// ``finishRecording()`` throws it.
public final class RecordingATTChannel: ATTChannel {
    /// The remote device named by the synthetic LE Connection Complete.
    public struct Peer: Hashable, Sendable {
        public var address: BluetoothAddress
        public var addressType: LEAddressType
        /// Our role on the connection.
        public var role: LERole

        public init(address: BluetoothAddress, addressType: LEAddressType, role: LERole = .central) {
            self.address = address
            self.addressType = addressType
            self.role = role
        }
    }

    /// The wrapped channel, seen through by the recorder.
    private let channel: ObservedATTChannel
    private let recorder: Recorder
    public var incoming: AsyncThrowingStream<[UInt8], Error> { channel.incoming }

    /// Records into a new file at `path` (created or truncated).
    public convenience init(
        wrapping channel: any ATTChannel, path: String, framer: ATTCaptureFramer = ATTCaptureFramer(),
        peer: Peer? = nil, clock: @escaping @Sendable () -> Int64 = CaptureTime.now
    ) throws(HCIError) {
        try self.init(
            channel, Recorder(writer: BTSnoopFileWriter(path: path), framer: framer, peer: peer, clock: clock))
    }

    /// Records into an open descriptor (a file, a pipe); with `takingOwnership` the recording
    /// closes it when it finishes.
    public convenience init(
        wrapping channel: any ATTChannel, fileDescriptor: Int32, takingOwnership: Bool = false,
        framer: ATTCaptureFramer = ATTCaptureFramer(), peer: Peer? = nil,
        clock: @escaping @Sendable () -> Int64 = CaptureTime.now
    ) throws(HCIError) {
        let writer = try BTSnoopFileWriter(fileDescriptor: fileDescriptor, takingOwnership: takingOwnership)
        try self.init(channel, Recorder(writer: writer, framer: framer, peer: peer, clock: clock))
    }

    private init(_ channel: any ATTChannel, _ recorder: Recorder) throws(HCIError) {
        self.channel = ObservedATTChannel(
            channel, onReceive: { sdu in recorder.record(sdu, .received) }, onSend: { sdu in recorder.record(sdu, .sent) },
            onEnd: { _ in recorder.finish() })
        self.recorder = recorder
    }

    public var maximumSDUSize: Int? {
        get async { await channel.maximumSDUSize }
    }

    /// Records `sdu` as sent, then sends it.
    public func send(_ sdu: [UInt8]) async throws {
        try await channel.send(sdu)
    }

    /// Closes the wrapped channel and finishes the recording.
    public func close() async {
        await channel.close()
        recorder.finish()
    }

    /// The first failure to write the recording, if any.
    public var recordingFailure: HCIError? {
        recorder.failure
    }

    /// SDUs recorded so far.
    public var recordedSDUCount: Int {
        recorder.sduCount
    }

    /// Ends the recording (Disconnection Complete if a peer was given, file closed) without
    /// closing the channel; throws the first recording failure. Later SDUs are not recorded.
    public func finishRecording() throws(HCIError) {
        recorder.finish()
        if let failure = recorder.failure { throw failure }
    }
}

/// The file side of a ``RecordingATTChannel``, shared by its sender and its `incoming` stream.
private final class Recorder: Sendable {
    private struct State {
        var writer: BTSnoopFileWriter?
        var failure: HCIError?
        var sduCount = 0
    }

    private let framer: ATTCaptureFramer
    private let peer: RecordingATTChannel.Peer?
    private let clock: @Sendable () -> Int64
    private let state: Mutex<State>

    /// Writes the synthetic LE Connection Complete when `peer` is given.
    init(
        writer: sending BTSnoopFileWriter, framer: ATTCaptureFramer, peer: RecordingATTChannel.Peer?,
        clock: @escaping @Sendable () -> Int64
    ) throws(HCIError) {
        if let peer {
            let event = try framer.connectionComplete(
                peerAddress: peer.address, peerAddressType: peer.addressType, role: peer.role)
            try writer.append(.event, event, direction: .received, timestamp: clock())
        }
        self.framer = framer
        self.peer = peer
        self.clock = clock
        state = Mutex(State(writer: writer))
    }

    var failure: HCIError? { state.withLock { $0.failure } }
    var sduCount: Int { state.withLock { $0.sduCount } }

    func record(_ sdu: [UInt8], _ direction: CaptureDirection) {
        state.withLock { state in
            guard let writer = state.writer, state.failure == nil else { return }
            do throws(HCIError) {
                let timestamp = clock()
                for packet in try framer.aclPackets(sdu, direction: direction) {
                    try writer.append(.acl, packet, direction: direction, timestamp: timestamp)
                }
                state.sduCount += 1
            } catch {
                state.failure = error
            }
        }
    }

    /// Writes the Disconnection Complete (with a peer) and closes the file, once.
    func finish() {
        state.withLock { state in
            guard let writer = state.writer else { return }
            state.writer = nil
            do throws(HCIError) {
                if peer != nil, state.failure == nil {
                    try writer.append(
                        .event, try framer.disconnectionComplete(), direction: .received, timestamp: clock())
                }
                try writer.close()
            } catch {
                if state.failure == nil { state.failure = error }
            }
        }
    }
}
