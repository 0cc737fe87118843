import ATT
import Bluetooth

/// Discover Characteristics by UUID: the requests of Discover All Characteristics of a Service
/// (Read By Type «Characteristic» cannot filter by the value's UUID), keeping the
/// characteristics whose UUID matches. Their `endHandle` is still the handle before the next
/// declaration of any UUID, so their descriptors can be found.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.6.2
public struct DiscoverCharacteristicsByUUID: GATTClientProcedure {
    public typealias Result = [Characteristic]

    public let uuid: BluetoothUUID
    private var all: DiscoverAllCharacteristics

    public init(uuid: BluetoothUUID, range: ClosedRange<UInt16>, mtu: Int = GATTLimits.defaultMTU) {
        self.uuid = uuid
        all = DiscoverAllCharacteristics(range: range, mtu: mtu)
    }

    public init(uuid: BluetoothUUID, service: Service, mtu: Int = GATTLimits.defaultMTU) {
        self.init(uuid: uuid, range: service.handleRange, mtu: mtu)
    }

    public mutating func start() -> GATTProcedureAction<Result> { filter(all.start()) }
    public mutating func receive(_ pdu: ATTPDU) -> GATTProcedureAction<Result> { filter(all.receive(pdu)) }

    private func filter(_ action: GATTProcedureAction<[Characteristic]>) -> GATTProcedureAction<Result> {
        guard case .done(let characteristics) = action else { return action }
        return .done(characteristics.filter { $0.uuid == uuid })
    }
}
