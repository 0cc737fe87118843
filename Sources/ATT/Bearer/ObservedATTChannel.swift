/// An ATT channel seen through: every SDU passes unchanged, and the observers hear each one
/// received (when the consumer of `incoming` takes it), each one sent (before it goes), and the
/// end of `incoming` (nil when it finished, the error when it failed). The one wrapper the
/// tools put under a bearer (`-v` tracing, `--record`, a peripheral watching its central go):
/// it adds no task — `incoming` advances the wrapped channel's iterator on demand.
public final class ObservedATTChannel: ATTChannel {
    public typealias SDUObserver = @Sendable (_ sdu: [UInt8]) -> Void
    public typealias EndObserver = @Sendable (_ error: (any Error)?) -> Void

    public let base: any ATTChannel
    public let incoming: AsyncThrowingStream<[UInt8], Error>
    private let onSend: SDUObserver?

    public init(
        _ base: any ATTChannel, onReceive: SDUObserver? = nil, onSend: SDUObserver? = nil,
        onEnd: EndObserver? = nil
    ) {
        self.base = base
        self.onSend = onSend
        let upstream = IteratorBox(base.incoming.makeAsyncIterator())
        incoming = AsyncThrowingStream(unfolding: {
            do {
                guard let sdu = try await upstream.next() else {
                    onEnd?(nil)
                    return nil
                }
                onReceive?(sdu)
                return sdu
            } catch {
                onEnd?(error)
                throw error
            }
        })
    }

    public var maximumSDUSize: Int? {
        get async { await base.maximumSDUSize }
    }

    public func send(_ sdu: [UInt8]) async throws {
        onSend?(sdu)
        try await base.send(sdu)
    }

    public func close() async { await base.close() }
}

/// The wrapped channel's iterator, advanced by the one consumer of `incoming`.
///
/// `@unchecked Sendable`: `AsyncThrowingStream(unfolding:)` calls its closure for one `next()`
/// at a time (a stream has one consumer), so the iterator is never advanced concurrently.
private final class IteratorBox: @unchecked Sendable {
    private var iterator: AsyncThrowingStream<[UInt8], Error>.AsyncIterator

    init(_ iterator: AsyncThrowingStream<[UInt8], Error>.AsyncIterator) {
        self.iterator = iterator
    }

    func next() async throws -> [UInt8]? {
        var current = iterator
        defer { iterator = current }
        return try await current.next()
    }
}
