import HCI
import Bluetooth
import L2CAP
import ATT

import Bluetooth
import Synchronization

/// Wraps an HCI transport and writes every packet both ways into an H4 btsnoop (datalink 1002)
/// as it passes: `--record` on the user-space transports, so the file holds the real HCI
/// traffic (commands, events, advertising reports, ACL) that Wireshark, btmon, `dump` and
/// `replay:` read. A write failure (disk full) stops the recording, never the traffic; it is
/// kept in `recordingFailure`.
public final class RecordingHCITransport: HCITransport {
    private let base: any HCITransport
    public let packets: AsyncThrowingStream<HCITransportPacket, any Error>
    private let writer: Mutex<BTSnoopFileWriter?>
    private let failure = Mutex<HCIError?>(nil)
    private let clock: @Sendable () -> Int64

    public init(wrapping base: any HCITransport, path: String, clock: @escaping @Sendable () -> Int64 = CaptureTime.now) throws(HCIError) {
        self.base = base
        self.clock = clock
        writer = Mutex(try BTSnoopFileWriter(path: path, datalink: .h4))
        let source = base.packets
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: HCITransportPacket.self)
        packets = stream
        // One relay task for the transport's life (not one per packet).
        let task = Task { [weak self] in
            do {
                for try await packet in source {
                    self?.record(packet.type, packet.bytes, direction: .received)
                    continuation.yield(packet)
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
    }

    public var recordingFailure: HCIError? { failure.withLock { $0 } }

    public func send(_ type: HCIPacketType, _ bytes: [UInt8]) async throws(HCIError) {
        record(type, bytes, direction: .sent)
        try await base.send(type, bytes)
    }

    public func close(reason: String) {
        base.close(reason: reason)
        writer.withLock { writer in
            try? writer?.close()
            writer = nil
        }
    }

    private func record(_ type: HCIPacketType, _ bytes: [UInt8], direction: CaptureDirection) {
        let timestamp = clock()
        writer.withLock { writer in
            guard let file = writer else { return }
            do throws(HCIError) {
                try file.append(type, bytes, direction: direction, timestamp: timestamp)
            } catch {
                failure.withLock { $0 = error }
                try? file.close()
                writer = nil
            }
        }
    }
}
