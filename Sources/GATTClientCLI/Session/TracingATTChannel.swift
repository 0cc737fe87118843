import ATT
import Bluetooth

/// `-v`: every ATT PDU sent and received, decoded, one line each on standard error.
final class TracingATTChannel: ATTChannel {
    let base: any ATTChannel
    let incoming: AsyncThrowingStream<[UInt8], any Error>
    private let errorDescriptor: Int32

    init(_ base: any ATTChannel, errorDescriptor: Int32 = 2) {
        self.base = base
        self.errorDescriptor = errorDescriptor
        let source = base.incoming
        let descriptor = errorDescriptor
        // One relay task for the channel's life, not one per PDU.
        incoming = AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await sdu in source {
                        TracingATTChannel.trace("<", sdu, to: descriptor)
                        continuation.yield(sdu)
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    var maximumSDUSize: Int? { get async { await base.maximumSDUSize } }

    func send(_ sdu: [UInt8]) async throws {
        Self.trace(">", sdu, to: errorDescriptor)
        try await base.send(sdu)
    }

    func close() async { await base.close() }

    static func trace(_ arrow: String, _ sdu: [UInt8], to descriptor: Int32) {
        let text: String
        if let pdu = try? ATTPDU(decoding: sdu) {
            text = pdu.description
        } else {
            text = "ATT (malformed) " + Hex.encode(sdu)
        }
        printError("\(arrow) \(text)", to: descriptor)
    }
}
