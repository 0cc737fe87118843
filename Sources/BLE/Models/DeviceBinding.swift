import Bluetooth
import GATT
import Synchronization

/// What a model knows of its device, synchronously: read through `@DeviceState(\.state)` and
/// the like. Before the model is bound: `.disconnected(.local)` and nil elsewhere.
public struct DeviceSnapshot: Sendable {
    public var state: PeripheralState = .disconnected(.local)
    public var peer: PeerAddress?
    /// The advertised name, where the model was connected from an advertisement.
    public var name: String?
    /// The RSSI of the advertisement it was connected from (dBm).
    public var rssi: Int?
    /// The ATT_MTU while connected.
    public var mtu: Int?

    public init() {}
}

/// Connects the model's device again (a bound model whose link ended), binding the same model.
public struct ConnectAction: Sendable {
    let run: @Sendable () async throws(BLEError) -> Void
    public func callAsFunction() async throws(BLEError) { try await run() }
}

/// Ends the model's link (and, for a retrieved device, stops reconnecting).
public struct DisconnectAction: Sendable {
    let run: @Sendable () async -> Void
    public func callAsFunction() async { await run() }
}

/// What `@DeviceAction(\.connect)` and `@DeviceAction(\.disconnect)` give.
public struct DeviceActions: Sendable {
    public var connect: ConnectAction
    public var disconnect: DisconnectAction

    static let unbound = DeviceActions(
        connect: ConnectAction { () async throws(BLEError) in
            throw BLEError("connect: the model is not bound to a device (connect it with Adapter.connect(to:as:) or retrieve)", kind: "usage", exitCode: .usage)
        },
        disconnect: DisconnectAction {})
}

/// A value of the model's device state (``DeviceSnapshot``), read synchronously.
@propertyWrapper
public struct DeviceState<Value: Sendable>: Sendable {
    let keyPath: KeyPath<DeviceSnapshot, Value> & Sendable
    let box = DeviceBox()

    public init(_ keyPath: KeyPath<DeviceSnapshot, Value> & Sendable) { self.keyPath = keyPath }

    public var wrappedValue: Value { box.snapshot[keyPath: keyPath] }
}

/// An action on the model's device (``DeviceActions``).
@propertyWrapper
public struct DeviceAction<Action: Sendable>: Sendable {
    let keyPath: KeyPath<DeviceActions, Action> & Sendable
    let box = DeviceBox()

    public init(_ keyPath: KeyPath<DeviceActions, Action> & Sendable) { self.keyPath = keyPath }

    public var wrappedValue: Action { box.actions[keyPath: keyPath] }
}

/// Which devices a model is looked for by; several criteria are ORed.
public enum DiscoveryCriteria: Hashable, Sendable {
    case advertisedService(BluetoothUUID)
    case name(String)
    /// A company identifier of the manufacturer specific data.
    case manufacturer(UInt16)

    func matches(_ advertisement: Advertisement) -> Bool {
        switch self {
        case .advertisedService(let uuid): return advertisement.serviceUUIDs.contains(uuid)
        case .name(let name): return advertisement.name == name
        case .manufacturer(let company): return advertisement.manufacturerData.contains { $0.companyID == company }
        }
    }
}

/// The box of a `@DeviceState` or `@DeviceAction`: which device it belongs to, once bound.
final class DeviceBox: Sendable {
    private let context = Mutex<ModelContext?>(nil)

    func attach(_ context: ModelContext) { self.context.withLock { $0 = context } }
    var snapshot: DeviceSnapshot { context.withLock { $0 }?.snapshot ?? DeviceSnapshot() }
    var actions: DeviceActions { context.withLock { $0 }?.actions ?? .unbound }
}

protocol AnyDeviceProperty: Sendable {
    func attach(_ context: ModelContext)
}

extension DeviceState: AnyDeviceProperty {
    func attach(_ context: ModelContext) { box.attach(context) }
}

extension DeviceAction: AnyDeviceProperty {
    func attach(_ context: ModelContext) { box.attach(context) }
}

// MARK: - Binding a model to a device

/// How a model binds on a link the app opened (``Adapter/bind(_:to:options:)``): `gattclient`'s
/// `sensortag` and `uart` keep the traffic they always had, and turn on what they choose.
package struct ModelBindOptions: Sendable {
    /// The services already discovered (nil: ``Peripheral/services()``).
    package var services: [RemoteService]?
    /// Reads the `autoRead` characteristics.
    package var reads = true
    /// Enables the notifications of the `notify: true` characteristics.
    package var subscribes = true
    /// Fails when a required service is absent (else its characteristics are absent).
    package var requiresServices = true

    package init() {}
}

/// One bound model: its device, its link, its parts. Every copy of the model reaches it through
/// the boxes of its properties.
final class ModelContext: Sendable {
    let adapter: Adapter
    let peer: PeerAddress
    let parts: ModelParts
    let modelName: String
    /// A retrieved device: kept connected by the adapter's managed device.
    let managed: ManagedDevice?

    /// One characteristic's notifications on this link: being enabled (the generation of that
    /// enable), or on, with the task forwarding their values to the property.
    private enum Pump: Sendable {
        case enabling(UInt64)
        case on(Subscription, Task<Void, Never>)
    }

    private struct State: Sendable {
        var snapshot = DeviceSnapshot()
        var peripheral: Peripheral?
        /// This link's notifications by value handle.
        var pumps: [UInt16: Pump] = [:]
        var generation: UInt64 = 0
        /// The characteristics a retrieved model wants its managed device to keep subscribed.
        var wishes: Set<BluetoothUUID> = []
        var watcher: Task<Void, Never>?
        var router: Task<Void, Never>?
        /// Why the last binding of a retrieved device failed (a required service missing).
        var bindError: BLEError?
        /// A retrieved model let its device go (`disconnect`): once only.
        var released = false
    }

    private let state = Mutex(State())
    /// Whether the model is bound now (true once every read and subscription of a connection is
    /// done): what a retrieved device's connect waits for.
    private let bound = Broadcast<Bool>(latest: false)

    init(adapter: Adapter, peer: PeerAddress, parts: ModelParts, modelName: String, managed: ManagedDevice?) {
        self.adapter = adapter
        self.peer = peer
        self.parts = parts
        self.modelName = modelName
        self.managed = managed
        state.withLock { $0.snapshot.peer = peer }
        for property in parts.deviceProperties { property.attach(self) }
    }

    var snapshot: DeviceSnapshot { state.withLock { $0.snapshot } }

    var actions: DeviceActions {
        DeviceActions(
            connect: ConnectAction { [self] () async throws(BLEError) in try await connectAgain() },
            disconnect: DisconnectAction { [self] in await disconnect() })
    }

    func advertised(_ advertisement: Advertisement) {
        state.withLock {
            $0.snapshot.name = advertisement.name ?? $0.snapshot.name
            $0.snapshot.rssi = advertisement.rssi
        }
    }

    private var warning: @Sendable (String) -> Void { adapter.options.warning }

    // MARK: Connecting (a model connected by Adapter.connect(to:as:))

    func connect(timeout: Duration) async throws(BLEError) {
        state.withLock { $0.snapshot.state = .connecting }
        let peripheral: Peripheral
        do {
            peripheral = try await adapter.connect(to: peer, timeout: timeout)
        } catch {
            state.withLock { $0.snapshot.state = .disconnected(.local) }
            throw error
        }
        do {
            try await bind(to: peripheral)
        } catch {
            await peripheral.disconnect()
            await linkLost()
            throw error
        }
        watch(peripheral)
    }

    /// Binds the model on a link the app opened itself; the link stays the app's, and as it was,
    /// when binding fails (notifications it enabled are off again).
    func attach(to peripheral: Peripheral, options: ModelBindOptions) async throws(BLEError) {
        do {
            try await bind(to: peripheral, options: options)
        } catch {
            let pumps = state.withLock { state in
                defer { state.pumps.removeAll() }
                return Array(state.pumps.values)
            }
            for case .on(let subscription, let task) in pumps {
                await subscription.cancel()
                task.cancel()
            }
            unbind()
            throw error
        }
        watch(peripheral)
    }

    private func connectAgain() async throws(BLEError) {
        if managed != nil {
            // A retrieved device connects by itself whenever it is in range: wait until it is
            // connected and the model bound (or its binding failed).
            for await isBound in bound.subscribe() {
                if isBound { return }
                if let error = state.withLock({ $0.bindError }) { throw error }
            }
            throw BLEError("connect: \(peer) is no longer retrieved (disconnect was called)", kind: "usage", exitCode: .usage)
        }
        if case .connected = snapshot.state { return }
        try await connect(timeout: .seconds(30))
    }

    func disconnect() async {
        if let managed {
            // Once: a second disconnect must not release another model's hold.
            let (first, wishes) = state.withLock { state in
                defer {
                    state.released = true
                    state.wishes.removeAll()
                }
                return (!state.released, state.wishes)
            }
            guard first else { return }
            if await !adapter.releaseForModel(managed) {
                for characteristic in wishes { await adapter.unwishForModel(managed, characteristic) }
                // Another retrieved model of this device keeps it managed and connected: this one
                // only lets go (its streams end; the link stays the other's), once its router,
                // perhaps binding now, has stopped.
                let router = state.withLock { $0.router }
                router?.cancel()
                await router?.value
                unbind(final: true)
                bound.finish()
                state.withLock { $0.snapshot.state = .disconnected(.local) }
                return
            }
        }
        let peripheral = state.withLock { $0.peripheral }
        await peripheral?.disconnect()
        await linkLost()
    }

    /// The link is gone: the values it delivered reach the properties (each subscription ends by
    /// itself with the link, after them; at most 5 s), then the properties are unbound.
    private func linkLost() async {
        let pumps = state.withLock { state in
            defer { state.pumps.removeAll() }
            return state.pumps.values.compactMap { pump -> Task<Void, Never>? in
                if case .on(_, let task) = pump { return task }
                return nil
            }
        }
        let bound = Task {
            try? await Task.sleep(for: .seconds(5))
            for pump in pumps { pump.cancel() }
        }
        for pump in pumps { await pump.value }
        bound.cancel()
        unbind()
    }

    /// Binds every service and characteristic of the model on `peripheral`: required services
    /// present, values read where `autoRead`, notifications on where `notify` (or the app's
    /// `enableNotifications` said so).
    func bind(to peripheral: Peripheral, options: ModelBindOptions = ModelBindOptions()) async throws(BLEError) {
        let services: [RemoteService]
        if let given = options.services {
            services = given
        } else {
            services = try await peripheral.services()
        }
        var found: [(property: any AnyCharacteristicProperty, binding: CharacteristicBinding)] = []
        for service in parts.services {
            let remote = services.first { $0.uuid == service.serviceID }
            if remote == nil, service.isRequired, options.requiresServices {
                throw BLEError(
                    "\(peer) has no \(service.serviceName) service (\(service.serviceID)), which \(modelName) requires",
                    kind: "notFound")
            }
            for property in service.characteristics {
                let characteristic = remote?.characteristics.first { $0.uuid == property.characteristicID }
                let absence =
                    remote == nil
                    ? "\(peer) has no \(service.serviceName) service (\(service.serviceID))"
                    : "the \(service.serviceName) service of \(peer) has no characteristic \(property.characteristicID)"
                let binding = characteristic.map { characteristic in
                    CharacteristicBinding(peripheral: peripheral, characteristic: characteristic) { [self] (enabled) async throws(BLEError) in
                        try await setNotifications(enabled, of: property, characteristic: characteristic, on: peripheral)
                    }
                }
                property.bind(binding, absence: absence, warning: warning, spansReconnects: managed != nil)
                if let binding { found.append((property, binding)) }
            }
        }
        let mtu = await peripheral.mtu
        state.withLock {
            $0.peripheral = peripheral
            $0.snapshot.mtu = mtu
        }
        for (property, binding) in found
        where options.reads && property.readsOnConnect && binding.characteristic.properties.contains(.read) {
            do {
                try await property.readValue()
            } catch {
                warning("warning: \(modelName): reading \(property.characteristicID) on connecting: \(error)")
            }
        }
        for (property, binding) in found where options.subscribes && property.notifies {
            let properties = binding.characteristic.properties
            guard properties.contains(.notify) || properties.contains(.indicate) else {
                warning("warning: \(modelName): \(property.characteristicID) can neither notify nor indicate; not subscribed")
                continue
            }
            try await binding.setNotifications(true)
        }
        state.withLock { $0.snapshot.state = .connected }
        _ = bound.yield(true)
    }

    /// Switches the notifications of one bound characteristic on or off. A retrieved device's
    /// managed device keeps them on every connection (its values routed by ``follow()``; each
    /// model of the device counts once); otherwise this link's subscription feeds the property
    /// until the link ends or it is off. An enable and a disable that cross leave the last one's
    /// choice: the slot is taken before the Write Request and checked after it.
    private func setNotifications(
        _ enabled: Bool, of property: any AnyCharacteristicProperty, characteristic: RemoteCharacteristic, on peripheral: Peripheral
    ) async throws(BLEError) {
        if let managed {
            let id = property.characteristicID
            if enabled {
                guard state.withLock({ !$0.released && $0.wishes.insert(id).inserted }) else { return }
                try await adapter.wishForModel(managed, id)
            } else {
                guard state.withLock({ $0.wishes.remove(id) != nil }) else { return }
                await adapter.unwishForModel(managed, id)
            }
            return
        }
        let handle = characteristic.valueHandle
        guard enabled else {
            let pump = state.withLock { $0.pumps.removeValue(forKey: handle) }
            // One being enabled finds its slot gone and switches itself off again.
            if case .on(let subscription, let task) = pump {
                await subscription.cancel()
                task.cancel()
            }
            return
        }
        let generation = state.withLock { state -> UInt64? in
            guard state.pumps[handle] == nil else { return nil }
            state.generation += 1
            state.pumps[handle] = .enabling(state.generation)
            return state.generation
        }
        // Already on, or being enabled.
        guard let generation else { return }
        let subscription: Subscription
        do {
            subscription = try await peripheral.subscribe(characteristic)
        } catch {
            state.withLock { state in
                if case .enabling(generation) = state.pumps[handle] { state.pumps[handle] = nil }
            }
            throw error
        }
        let task = Task {
            // Ends with the link (or the subscription), after every value it delivered.
            do throws(BLEError) {
                for try await notification in subscription { property.deliver(notification.value) }
            } catch {}
        }
        let kept = state.withLock { state -> Bool in
            guard case .enabling(generation) = state.pumps[handle] else { return false }
            state.pumps[handle] = .on(subscription, task)
            return true
        }
        if !kept {
            // Disabled (or the link ended) while the Write Request was out.
            await subscription.cancel()
            task.cancel()
        }
    }

    /// Follows the link: when it ends, the properties are unbound (and their streams end).
    private func watch(_ peripheral: Peripheral) {
        let task = Task { [self] in
            for await state in peripheral.states() {
                if case .disconnected = state {
                    await linkLost()
                    self.state.withLock { $0.snapshot.state = state }
                    return
                }
                self.state.withLock { $0.snapshot.state = state }
            }
        }
        state.withLock { $0.watcher = task }
    }

    /// Returns once the current link ended (at once when there is none).
    func linkEnded() async {
        guard let peripheral = state.withLock({ $0.peripheral }) else { return }
        for await state in peripheral.states() {
            if case .disconnected = state { return }
        }
    }

    private func unbind(final: Bool = false) {
        let watcher = state.withLock { state in
            defer {
                state.peripheral = nil
                state.watcher = nil
                state.snapshot.mtu = nil
                if case .connected = state.snapshot.state { state.snapshot.state = .disconnected(.local) }
                if case .connecting = state.snapshot.state { state.snapshot.state = .disconnected(.local) }
            }
            return state.watcher
        }
        watcher?.cancel()
        _ = bound.yield(false)
        for service in parts.services {
            for property in service.characteristics { property.linkEnded(final: final) }
        }
    }

    // MARK: Retrieved devices (kept connected by a managed device)

    /// Follows the managed device: binds the model on each connection, routes the values of its
    /// subscriptions (each once, across reconnects), unbinds on each loss.
    func follow() {
        guard let managed else { return }
        let events = managed.events()
        let task = Task { [self] in
            var handled: ObjectIdentifier?
            // Already connected (the peer was managed before): bound at once.
            let current: ManagedDevice.Event? = managed.state == .connected ? .state(.connected) : nil
            for await event in AsyncChain(first: current, rest: events) {
                switch event {
                case .state(let managedState):
                    switch managedState {
                    case .connected:
                        guard let peripheral = managed.peripheral, handled != ObjectIdentifier(peripheral) else { break }
                        handled = ObjectIdentifier(peripheral)
                        do throws(BLEError) {
                            try await bind(to: peripheral)
                            state.withLock { $0.bindError = nil }
                        } catch {
                            warning("warning: \(modelName): binding \(peer): \(error)")
                            state.withLock { $0.bindError = error }
                            _ = bound.yield(false)
                        }
                    case .connecting:
                        state.withLock { $0.snapshot.state = .connecting }
                    case .waiting, .removed:
                        handled = nil
                        unbind(final: managedState == .removed)
                        if managedState == .removed {
                            bound.finish()
                            return
                        }
                    case .disconnected(let reason):
                        handled = nil
                        unbind()
                        state.withLock { $0.snapshot.state = .disconnected(reason) }
                    }
                case .notification(let service, let characteristic, let notification):
                    for model in parts.services where service == nil || model.serviceID == service {
                        for property in model.characteristics where property.characteristicID == characteristic {
                            property.deliver(notification.value)
                        }
                    }
                case .reconnected, .attemptFailed:
                    break
                }
            }
        }
        state.withLock { $0.router = task }
    }
}

// MARK: - The adapter's model API

extension Adapter {
    /// Connects to the device `advertisement` came from and binds a `D` model to it.
    public func connect<D: BluetoothDevice>(
        to advertisement: Advertisement, as type: D.Type, timeout: Duration = .seconds(30)
    ) async throws(BLEError) -> D {
        try await connect(to: advertisement.peer, as: type, timeout: timeout, advertisement: advertisement)
    }

    /// Connects to `peer` and binds a `D` model to it: every `@Service` found (a required one
    /// missing fails the connect, and the link is ended), `autoRead` values read, `notify`
    /// characteristics subscribed. The model's values end with the link; `@DeviceAction(\.connect)`
    /// connects again.
    public func connect<D: BluetoothDevice>(
        to peer: PeerAddress, as type: D.Type, timeout: Duration = .seconds(30)
    ) async throws(BLEError) -> D {
        try await connect(to: peer, as: type, timeout: timeout, advertisement: nil)
    }

    private func connect<D: BluetoothDevice>(
        to peer: PeerAddress, as type: D.Type, timeout: Duration, advertisement: Advertisement?
    ) async throws(BLEError) -> D {
        try await connectModel(to: peer, as: type, timeout: timeout, advertisement: advertisement).model
    }

    func connectModel<D: BluetoothDevice>(
        to peer: PeerAddress, as type: D.Type, timeout: Duration, advertisement: Advertisement?
    ) async throws(BLEError) -> (model: D, context: ModelContext) {
        let device = D()
        let context = ModelContext(adapter: self, peer: peer, parts: ModelParts(device), modelName: "\(D.self)", managed: nil)
        if let advertisement { context.advertised(advertisement) }
        try await context.connect(timeout: timeout)
        return (device, context)
    }

    /// Binds a `D` model to a device already connected (as ``connect(to:as:timeout:)`` does
    /// after connecting): a required service missing fails it and leaves the link as it was.
    /// The model's values end with the link.
    public func bind<D: BluetoothDevice>(_ type: D.Type, to peripheral: Peripheral) async throws(BLEError) -> D {
        try await bind(type, to: peripheral, options: ModelBindOptions())
    }

    /// ``bind(_:to:)`` with the reads, subscriptions and service checks `options` choose.
    package func bind<D: BluetoothDevice>(
        _ type: D.Type, to peripheral: Peripheral, options: ModelBindOptions
    ) async throws(BLEError) -> D {
        let device = D()
        let context = ModelContext(
            adapter: self, peer: peripheral.peer, parts: ModelParts(device), modelName: "\(D.self)", managed: nil)
        try await context.attach(to: peripheral, options: options)
        return device
    }

    /// A `D` model bound to a known device for as long as the app wants it: connected whenever
    /// the device is in range, and after a link loss reconnected (re-encrypted with its bond,
    /// re-subscribed, the cached database reused) until `@DeviceAction(\.disconnect)` is called.
    /// Its values' streams span reconnects; `@DeviceAction(\.connect)` waits, without a timeout,
    /// until it is connected.
    public func retrieve<D: BluetoothDevice>(_ type: D.Type, peer: PeerAddress) async -> D {
        let device = D()
        let managed = holdForModel(peer)
        let context = ModelContext(adapter: self, peer: peer, parts: ModelParts(device), modelName: "\(D.self)", managed: managed)
        context.follow()
        return device
    }
}

/// One element (when there is one), then every element of `rest`.
struct AsyncChain<Element: Sendable>: AsyncSequence, Sendable {
    let first: Element?
    let rest: AsyncStream<Element>

    struct AsyncIterator: AsyncIteratorProtocol {
        var first: Element?
        var rest: AsyncStream<Element>.Iterator

        mutating func next() async -> Element? {
            if let element = first {
                first = nil
                return element
            }
            return await rest.next()
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(first: first, rest: rest.makeAsyncIterator()) }
}
