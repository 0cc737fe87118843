import ATT
import Bluetooth

/// Server-initiated PDUs: value notifications and indications to the clients whose Client
/// Characteristic Configuration asks for them, and Service Changed when the database changes.
/// The ATT bearer keeps one indication outstanding per client and waits for its confirmation.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.10, §4.11 (notifications, indications),
///   §7.1 (Service Changed); Vol 3, Part F, §3.4.7
extension GATTServer {
    /// Stores `value` at the characteristic value `handle` and returns, for each client that
    /// enabled them, a Handle Value Indication (when it asked for indications and the
    /// characteristic can indicate) or Notification, the value cut to ATT_MTU − 3 octets.
    /// Throws `noAttribute` or `valueTooLong`.
    public mutating func updateValue(_ value: [UInt8], handle: UInt16) throws(GATTError) -> [Outbound] {
        try database.setValue(value, handle: handle)
        return outbound(value: value, handle: handle)
    }

    /// The notifications and indications `value` at `handle` produces now, without storing it
    /// (for a value the application computes on demand).
    public func outbound(value: [UInt8], handle: UInt16) -> [Outbound] {
        guard let properties = database.properties(ofValue: handle) else { return [] }
        var out: [Outbound] = []
        for client in connectedClients {
            let configuration = clientConfiguration(ofValue: handle, for: client)
            let fitted = Array(value.prefix(state(client).mtu - 3))
            if configuration.contains(.indications), properties.contains(.indicate) {
                out.append(
                    Outbound(
                        client: client,
                        pdu: .handleValueIndication(HandleValueIndication(handle: handle, value: fitted))))
            } else if configuration.contains(.notifications), properties.contains(.notify) {
                out.append(
                    Outbound(
                        client: client,
                        pdu: .handleValueNotification(HandleValueNotification(handle: handle, value: fitted))))
            }
        }
        return out
    }

    /// Swaps in `newDatabase` and returns the Service Changed indications (value: the first and
    /// last affected handles, `changed`, by default the whole range) for the clients that
    /// enabled them on the new database's Service Changed characteristic.
    ///
    /// Configurations of Service Changed survive (by handle, when the new database has its
    /// descriptor at the same handle); every other configuration and every prepare queue is
    /// dropped. Clients with robust caching enabled become change-unaware (Vol 3 Part G
    /// §2.5.2.1) until they are told (``serviceChangedConfirmed(by:)``), read the Database Hash
    /// or have been answered Database Out Of Sync once.
    public mutating func replaceDatabase(
        _ newDatabase: AttributeDatabase, changed: ClosedRange<UInt16> = 0x0001...0xFFFF
    ) -> [Outbound] {
        let oldServiceChanged = database.valueHandle(of: GATTUUID.serviceChanged)
            .flatMap(database.clientConfigurationHandle(ofValue:))
        database = newDatabase
        let newValueHandle = newDatabase.valueHandle(of: GATTUUID.serviceChanged)
        let newServiceChanged = newValueHandle.flatMap(newDatabase.clientConfigurationHandle(ofValue:))
        var out: [Outbound] = []
        for client in connectedClients {
            guard var state = clients[client] else { continue }
            var kept: [UInt16: UInt16] = [:]
            if let old = oldServiceChanged, let new = newServiceChanged, old == new,
                let value = state.clientConfigurations[old]
            {
                kept[new] = value
            }
            state.clientConfigurations = kept
            state.prepareQueue = []
            let robust = (state.supportedFeatures?.first ?? 0) & ClientSupportedFeatures.robustCaching.rawValue != 0
            if robust {
                state.changeAware = false
                state.outOfSyncSent = false
            }
            clients[client] = state
            if let valueHandle = newValueHandle, let new = newServiceChanged,
                (kept[new] ?? 0) & ClientCharacteristicConfiguration.indications.rawValue != 0
            {
                var writer = ByteWriter(capacity: 4)
                writer.writeUInt16LE(changed.lowerBound)
                writer.writeUInt16LE(changed.upperBound)
                out.append(
                    Outbound(
                        client: client,
                        pdu: .handleValueIndication(HandleValueIndication(handle: valueHandle, value: writer.bytes))))
            }
        }
        return out
    }

    /// `client` confirmed a Service Changed indication: it is change-aware again.
    public mutating func serviceChangedConfirmed(by client: ClientID) {
        makeChangeAware(client)
    }

    /// Whether `client` is change-aware (robust caching, Vol 3 Part G §2.5.2.1).
    public func isChangeAware(_ client: ClientID) -> Bool { clients[client]?.changeAware ?? true }
}
