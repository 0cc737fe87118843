import ATT
import Bluetooth

extension GATTClient {
    /// Subscribes to `characteristic`'s notifications (or indications) and returns the stream
    /// of its values (§4.10, §4.11, CCCD written as in §4.12.3).
    ///
    /// The route is registered before the CCCD is written, so values the server sends before
    /// its Write Response are delivered. When the characteristic's descriptors are not known,
    /// they are discovered first (one Find Information over its definition). `bufferLimit`
    /// values may wait for a slow consumer; beyond that `overflow` decides (by default the
    /// stream ends with `subscriptionOverflow`; nothing is dropped silently). Several
    /// subscriptions to one characteristic each get every value; the CCCD carries the union.
    public func subscribe(
        characteristic: Characteristic, indications: Bool = false, bufferLimit: Int = 10_000,
        overflow: GATTOverflowPolicy = .fail
    ) async throws(GATTError) -> GATTSubscription {
        var characteristic = characteristic
        if characteristic.clientConfigurationHandle == nil, characteristic.descriptors.isEmpty,
            characteristic.descriptorRange != nil
        {
            characteristic.descriptors = try await discoverDescriptors(of: characteristic)
        }
        guard let cccd = characteristic.clientConfigurationHandle else {
            throw GATTError.noAttribute(handle: characteristic.valueHandle)
        }
        startRouter()
        let subscription = router.add(
            characteristic, indications: indications, bufferLimit: bufferLimit, overflow: overflow)
        do {
            try await write(handle: cccd, value: configurationValue(on: characteristic.valueHandle).encoded)
        } catch {
            // The route goes; if the write landed before a cancellation, values that still
            // arrive are counted as unrouted.
            router.remove(subscription.id, error: error)
            throw error
        }
        return subscription
    }

    /// Subscribes to the one characteristic with `uuid`: from the known ``database`` when
    /// there is one, otherwise with a targeted search (``locateCharacteristic(uuid:)``), never
    /// a full discovery. Throws `notFound` or `ambiguousUUID`.
    public func subscribe(
        uuid: BluetoothUUID, indications: Bool = false, bufferLimit: Int = 10_000,
        overflow: GATTOverflowPolicy = .fail
    ) async throws(GATTError) -> GATTSubscription {
        let characteristic = try await locateCharacteristic(uuid: uuid)
        return try await subscribe(
            characteristic: characteristic, indications: indications, bufferLimit: bufferLimit, overflow: overflow)
    }

    /// The one characteristic with `uuid`, with its descriptors: from the known ``database``,
    /// else with ``LocateCharacteristic`` (Read Using Characteristic UUID, the declaration, Find
    /// Information: four requests or so at any ATT_MTU), else — for a server whose layout that
    /// cannot confirm — with Discover Characteristics by UUID. Throws `notFound` or
    /// `ambiguousUUID`.
    public func locateCharacteristic(uuid: BluetoothUUID) async throws(GATTError) -> Characteristic {
        let matches: [Characteristic]
        if let database {
            matches = database.characteristics(uuid: uuid)
        } else if let located = try await run(LocateCharacteristic(uuid: uuid, mtu: try await readyMTU())) {
            return located
        } else {
            matches = try await findCharacteristics(uuid: uuid)
        }
        guard let first = matches.first else { throw GATTError.notFound(uuid) }
        guard matches.count == 1 else { throw GATTError.ambiguousUUID(uuid, handles: matches.map(\.valueHandle)) }
        return first
    }

    /// Ends `subscription`: its stream finishes normally and the CCCD is written 0x0000 (or,
    /// while other subscriptions to the characteristic remain, what they still need).
    public func unsubscribe(_ subscription: GATTSubscription) async throws(GATTError) {
        guard router.remove(subscription.id) != nil else { return }
        guard let cccd = subscription.characteristic.clientConfigurationHandle else { return }
        try await write(
            handle: cccd, value: configurationValue(on: subscription.characteristic.valueHandle).encoded)
    }

    /// The CCCD value the routes on `handle` need.
    private func configurationValue(on handle: UInt16) -> ClientCharacteristicConfiguration {
        var value: ClientCharacteristicConfiguration = []
        for route in router.routes(on: handle) {
            value.insert(route.indications ? .indications : .notifications)
        }
        return value
    }

    /// Values delivered to subscriptions, values for handles nobody subscribes to, and values
    /// dropped by a `.dropOldest`/`.dropNewest` policy (or the one that overflowed `.fail`).
    public nonisolated var notificationCounters: (delivered: Int, unrouted: Int, dropped: Int) {
        router.counters
    }
}
