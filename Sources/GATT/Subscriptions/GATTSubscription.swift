import ATT
import Bluetooth

/// One characteristic value pushed by the server: a Handle Value Notification, one entry of a
/// Multiple Handle Value Notification, or a Handle Value Indication.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.10 and §4.11
public struct GATTNotification: Hashable, Sendable {
    /// The characteristic value handle.
    public var handle: UInt16
    public var value: [UInt8]
    /// `true` for an indication (confirmed to the server), `false` for a notification.
    public var isIndication: Bool

    public init(handle: UInt16, value: [UInt8], isIndication: Bool) {
        self.handle = handle
        self.value = value
        self.isIndication = isIndication
    }
}

/// What a subscription does when its consumer falls `bufferLimit` values behind.
public enum GATTOverflowPolicy: Hashable, Sendable {
    /// End the stream with `GATTError.subscriptionOverflow` after the values it holds: nothing
    /// is dropped without the consumer learning it. The default.
    case fail
    /// Drop the oldest buffered value to make room (keep the latest readings).
    case dropOldest
    /// Drop the arriving value (keep the backlog as it is).
    case dropNewest
}

/// The values of one subscribed characteristic, in arrival order, as an `AsyncSequence`.
///
/// The sequence ends normally after ``GATTClient/unsubscribe(_:)``, and throws when the
/// bearer closes (`GATTError.att(.bearerClosed)` with the reason) or when the buffer overflows
/// under ``GATTOverflowPolicy/fail``. One consumer; cancelling the consuming task ends the
/// iteration, and the route is dropped when the next value arrives for it.
public struct GATTSubscription: AsyncSequence, Sendable {
    public typealias Element = GATTNotification
    public typealias Failure = GATTError

    /// Identifies the subscription for ``GATTClient/unsubscribe(_:)``.
    public struct ID: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt64
        public var description: String { "#\(rawValue)" }
    }

    public let id: ID
    /// The subscribed characteristic (its value handle routes the PDUs).
    public let characteristic: Characteristic
    /// Indications (`true`) or notifications (`false`) were asked for.
    public let indications: Bool
    let stream: AsyncThrowingStream<GATTNotification, any Error>

    public func makeAsyncIterator() -> Iterator {
        Iterator(base: stream.makeAsyncIterator())
    }

    public struct Iterator: AsyncIteratorProtocol {
        public typealias Element = GATTNotification
        public typealias Failure = GATTError

        var base: AsyncThrowingStream<GATTNotification, any Error>.Iterator

        public mutating func next() async throws(GATTError) -> GATTNotification? {
            do {
                return try await base.next()
            } catch let error as GATTError {
                throw error
            } catch {
                throw GATTError.invalidParameter("unexpected subscription failure: \(error)")
            }
        }
    }
}
