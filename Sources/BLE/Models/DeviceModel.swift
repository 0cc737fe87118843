import Bluetooth
import GATT
import Synchronization

/// A GATT service as a type: its UUID, and its characteristics as `@Characteristic` properties.
///
/// ```swift
/// struct BatteryLevel: BluetoothService {
///     static let id: BluetoothUUID = 0x180F
///     @Characteristic(id: 0x2A19, notify: true) var level: UInt8?
/// }
/// ```
public protocol BluetoothService: Sendable {
    static var id: BluetoothUUID { get }
    init()
}

/// A device as a type: its services as `@Service` properties, and where wanted its state and
/// actions (`@DeviceState`, `@DeviceAction`). Models are structs: copies share what they bind
/// (values, the link), so a model can be passed around freely.
public protocol BluetoothDevice: Sendable {
    init()
}

/// Includes a service in a device model. `required`: connecting fails when the device lacks it;
/// otherwise its characteristics are simply absent (`isPresent == false`).
@propertyWrapper
public struct Service<S: BluetoothService>: Sendable {
    public let wrappedValue: S
    let required: Bool

    public init(wrappedValue: S, required: Bool = true) {
        self.wrappedValue = wrappedValue
        self.required = required
    }
}

/// A characteristic of a service model, typed: `wrappedValue` is the last value read or
/// notified (nil until then), `$property` reads, writes and follows it.
///
/// `notify`: notifications (or indications) are enabled when the device is connected.
/// `autoRead`: the value is read when the device is connected (where the characteristic can be
/// read). The value lives in a box every copy of the model shares.
@propertyWrapper
public struct Characteristic<Value: ByteDecodable>: Sendable {
    let box: CharacteristicBox<Value>

    public init(wrappedValue: Value? = nil, id: BluetoothUUID, notify: Bool = false, autoRead: Bool = true) {
        box = CharacteristicBox(id: id, notify: notify, autoRead: autoRead, initial: wrappedValue)
    }

    /// The last value read or notified: a synchronous snapshot.
    public var wrappedValue: Value? { box.value }

    public var projectedValue: CharacteristicAccess<Value> { CharacteristicAccess(box: box) }
}

/// What `$characteristic` gives: whether the connected device has it, reading, writing and
/// following its values.
public struct CharacteristicAccess<Value: ByteDecodable>: Sendable {
    let box: CharacteristicBox<Value>

    /// The connected device has this characteristic (false before connecting and when its
    /// service or the characteristic is absent).
    public var isPresent: Bool { box.binding != nil }

    /// Reads the value (Read, then Read Blob as needed), decodes it and keeps it as the
    /// property's value.
    public func read() async throws(BLEError) -> Value {
        let binding = try box.require("reading")
        let bytes = try await binding.peripheral.read(handle: binding.characteristic.valueHandle)
        let value: Value
        do throws(ByteCodingError) {
            value = try Value(decoding: bytes)
        } catch {
            throw BLEError(
                "\(box.id): the value \(Hex.encode(bytes)) does not decode as \(Value.self): \(error)", kind: "decode",
                handle: binding.characteristic.valueHandle)
        }
        box.store(value, bytes: bytes)
        return value
    }

    /// The typed values of its notifications or indications, in order, from now on; a value that
    /// does not decode is skipped (logged and counted: ``decodeFailures``). Ends when the device
    /// disconnects (a retrieved device's spans reconnects).
    public func values() -> AsyncStream<Value> { box.subscribe() }

    /// Runs `action` for each value read or notified from now on, in order.
    public func onChange(_ action: @escaping @Sendable (Value) async -> Void) { box.onChange(action) }

    /// Notified values that did not decode as `Value` (skipped).
    public var decodeFailures: Int { box.decodeFailures }

    /// The connected device's properties of this characteristic (nil when it is not present).
    public var properties: CharacteristicProperties? { box.binding?.characteristic.properties }

    /// The handle of its value on the connected device (nil when it is not present).
    public var handle: UInt16? { box.binding?.characteristic.valueHandle }

    /// Switches its notifications (or indications, where it cannot notify) on or off now; a
    /// `notify: true` characteristic has them on from the connect. On a retrieved device the
    /// choice holds across reconnects.
    public func enableNotifications(_ enabled: Bool = true) async throws(BLEError) {
        let binding = try box.require(enabled ? "enabling notifications of" : "disabling notifications of")
        box.wantsNotifications(enabled)
        try await binding.setNotifications(enabled)
    }

    /// Runs `action` for each value read or notified from now on, in order, with the octets it
    /// came as (`gattclient watch`, which shows both).
    package func onChangeWithBytes(_ action: @escaping @Sendable (Value, [UInt8]) async -> Void) { box.onChange(action) }
}

extension CharacteristicAccess where Value: ByteEncodable {
    /// Writes `value` (with response: Write Request, or a long write beyond ATT_MTU − 3; without:
    /// Write Command).
    public func write(_ value: Value, withResponse: Bool = true) async throws(BLEError) {
        let binding = try box.require("writing")
        try await binding.peripheral.write(
            value.encoded(), handle: binding.characteristic.valueHandle, withResponse: withResponse)
    }
}

// MARK: - Boxes shared by the copies of a model

/// Where a bound characteristic is: the peripheral and its discovered declaration.
struct CharacteristicBinding: Sendable {
    let peripheral: Peripheral
    let characteristic: RemoteCharacteristic
    /// Switches notifications on or off (through the model's context, which keeps them).
    let setNotifications: @Sendable (Bool) async throws(BLEError) -> Void
}

/// A characteristic property's state, shared by every copy of the model.
final class CharacteristicBox<Value: ByteDecodable>: Sendable {
    let id: BluetoothUUID
    let notify: Bool
    let autoRead: Bool

    private struct State {
        var value: Value?
        var binding: CharacteristicBinding?
        /// Why it is not bound (which service or characteristic is missing), for the error.
        var absence: String = "the model is not connected to a device"
        var listeners: [UInt64: AsyncStream<Value>.Continuation] = [:]
        var nextListener: UInt64 = 0
        var actions: [@Sendable (Value, [UInt8]) async -> Void] = []
        /// The app's `enableNotifications` choice, which outlasts the `notify` declaration.
        var notificationsWanted: Bool?
        var decodeFailures = 0
        /// The values' streams outlive a disconnect (a retrieved device).
        var spansReconnects = false
        /// The link ended and no other follows for these streams: a new stream ends at once.
        var ended = false
        var warning: (@Sendable (String) -> Void)?
    }

    private let state: Mutex<State>
    /// Runs the onChange actions, value after value.
    private let actionQueue = ActionQueue<Value>()

    init(id: BluetoothUUID, notify: Bool, autoRead: Bool, initial: Value?) {
        self.id = id
        self.notify = notify
        self.autoRead = autoRead
        state = Mutex(State(value: initial))
    }

    var value: Value? { state.withLock { $0.value } }
    /// Whether binding enables its notifications: the app's last choice, else `notify`.
    var notifies: Bool { state.withLock { $0.notificationsWanted } ?? notify }
    func wantsNotifications(_ enabled: Bool) { state.withLock { $0.notificationsWanted = enabled } }
    var binding: CharacteristicBinding? { state.withLock { $0.binding } }
    var decodeFailures: Int { state.withLock { $0.decodeFailures } }

    func require(_ doing: String) throws(BLEError) -> CharacteristicBinding {
        let (binding, absence) = state.withLock { ($0.binding, $0.absence) }
        guard let binding else { throw BLEError("\(doing) \(id): \(absence)", kind: "notFound") }
        return binding
    }

    func subscribe() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self)
        let id = state.withLock { state -> UInt64? in
            guard !state.ended else { return nil }
            state.nextListener += 1
            state.listeners[state.nextListener] = continuation
            return state.nextListener
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) }
        }
        return stream
    }

    func onChange(_ action: @escaping @Sendable (Value) async -> Void) {
        onChange { value, _ in await action(value) }
    }

    func onChange(_ action: @escaping @Sendable (Value, [UInt8]) async -> Void) {
        state.withLock { $0.actions.append(action) }
        actionQueue.start()
    }

    /// A value read (from `bytes`): kept; the onChange actions run.
    func store(_ value: Value, bytes: [UInt8]) {
        let actions = state.withLock { state in
            state.value = value
            return state.actions
        }
        if !actions.isEmpty { actionQueue.run(actions, value, bytes) }
    }

    /// A notified value: decoded, kept, yielded to every stream, the actions run; one that does
    /// not decode is skipped, counted and logged.
    func deliver(_ bytes: [UInt8]) {
        let value: Value
        do throws(ByteCodingError) {
            value = try Value(decoding: bytes)
        } catch {
            let warning = state.withLock { state in
                state.decodeFailures += 1
                return state.warning
            }
            warning?("warning: \(id): a notified value \(Hex.encode(bytes)) does not decode as \(Value.self): \(error); skipped")
            return
        }
        let (listeners, actions) = state.withLock { state in
            state.value = value
            return (Array(state.listeners.values), state.actions)
        }
        for listener in listeners { listener.yield(value) }
        if !actions.isEmpty { actionQueue.run(actions, value, bytes) }
    }
}

/// Runs a characteristic's onChange actions in the order its values came: one task for the
/// box's life (started with the first action), fed by a stream; it ends with the box.
final class ActionQueue<Value: Sendable>: Sendable {
    private typealias Item = (actions: [@Sendable (Value, [UInt8]) async -> Void], value: Value, bytes: [UInt8])
    private let feed: Mutex<AsyncStream<Item>.Continuation?> = Mutex(nil)

    func start() {
        feed.withLock { feed in
            guard feed == nil else { return }
            let (stream, continuation) = AsyncStream.makeStream(of: Item.self)
            feed = continuation
            Task {
                for await item in stream {
                    for action in item.actions { await action(item.value, item.bytes) }
                }
            }
        }
    }

    func run(_ actions: [@Sendable (Value, [UInt8]) async -> Void], _ value: Value, _ bytes: [UInt8]) {
        _ = feed.withLock { $0 }?.yield((actions, value, bytes))
    }

    deinit { feed.withLock { $0 }?.finish() }
}

// MARK: - Type-erased views used to bind a model (found by reflection)

protocol AnyCharacteristicProperty: Sendable {
    var characteristicID: BluetoothUUID { get }
    var notifies: Bool { get }
    var readsOnConnect: Bool { get }
    func bind(_ binding: CharacteristicBinding?, absence: String, warning: @escaping @Sendable (String) -> Void, spansReconnects: Bool)
    func deliver(_ bytes: [UInt8])
    /// Reads the value now (it is kept as the property's value).
    func readValue() async throws(BLEError)
    /// The link ended: the values' streams end unless they span reconnects (`final`: they end).
    func linkEnded(final: Bool)
}

extension Characteristic: AnyCharacteristicProperty {
    var characteristicID: BluetoothUUID { box.id }
    var notifies: Bool { box.notifies }
    var readsOnConnect: Bool { box.autoRead }
    func bind(_ binding: CharacteristicBinding?, absence: String, warning: @escaping @Sendable (String) -> Void, spansReconnects: Bool) {
        box.bind(binding, absence: absence, warning: warning, spansReconnects: spansReconnects)
    }
    func deliver(_ bytes: [UInt8]) { box.deliver(bytes) }
    func readValue() async throws(BLEError) { _ = try await projectedValue.read() }
    func linkEnded(final: Bool) { box.linkEnded(final: final) }
}

extension CharacteristicBox {
    func bind(_ binding: CharacteristicBinding?, absence: String, warning: @escaping @Sendable (String) -> Void, spansReconnects: Bool) {
        state.withLock { state in
            state.binding = binding
            state.absence = absence
            state.warning = warning
            state.spansReconnects = spansReconnects
            state.ended = false
        }
    }

    /// `final`: no link follows (a retrieved device no longer kept): streams end even when they
    /// span reconnects.
    func linkEnded(final: Bool) {
        let ending = state.withLock { state -> [AsyncStream<Value>.Continuation] in
            state.binding = nil
            state.absence = "the device is not connected"
            guard final || !state.spansReconnects else { return [] }
            state.ended = true
            defer { state.listeners.removeAll() }
            return Array(state.listeners.values)
        }
        for listener in ending { listener.finish() }
    }
}

protocol AnyServiceProperty: Sendable {
    var serviceID: BluetoothUUID { get }
    var serviceName: String { get }
    var isRequired: Bool { get }
    var characteristics: [any AnyCharacteristicProperty] { get }
}

extension Service: AnyServiceProperty {
    var serviceID: BluetoothUUID { S.id }
    var serviceName: String { "\(S.self)" }
    var isRequired: Bool { required }
    var characteristics: [any AnyCharacteristicProperty] {
        Mirror(reflecting: wrappedValue).children.compactMap { $0.value as? any AnyCharacteristicProperty }
    }
}

/// A model's parts, found by reflection on its stored properties (the wrappers' storage).
struct ModelParts: Sendable {
    var services: [any AnyServiceProperty] = []
    var deviceProperties: [any AnyDeviceProperty] = []

    init(_ device: some BluetoothDevice) {
        for child in Mirror(reflecting: device).children {
            if let service = child.value as? any AnyServiceProperty {
                services.append(service)
            } else if let property = child.value as? any AnyDeviceProperty {
                deviceProperties.append(property)
            }
        }
    }

    /// The services the model requires (what `nearbyDevices` looks for without criteria).
    var requiredServices: [BluetoothUUID] { services.filter(\.isRequired).map(\.serviceID) }
}
