import ATT
import Bluetooth

/// Discovery of a whole GATT database in few requests, as a sans-I/O state machine built from
/// the §4 procedures:
///
/// 1. Discover All Primary Services (§4.4.1);
/// 2. Find Included Services (§4.5.1) once over all services rather than per service (an
///    include belongs to the service whose group holds its declaration); an included service
///    that is not primary is added as a secondary service;
/// 3. Discover All Characteristics (§4.6.1) once over all services rather than per service:
///    one response carries declarations of several services, and no per-service terminating
///    request is needed; each characteristic's end is cut at its service's end;
/// 4. Discover All Characteristic Descriptors (§4.7.1) for each characteristic whose value is
///    not the last handle of its definition.
///
/// Every phase inherits its procedure's checks (handles move forward and stay in range), so a
/// misbehaving server cannot make it loop. Characteristic declarations outside every known
/// service are left out (they belong to a secondary service nothing includes). The include
/// search covers the primary services' handles; includes inside a secondary service that lies
/// beyond them are not searched.
public struct DatabaseDiscovery: GATTClientProcedure {
    public typealias Result = GATTDatabase

    public private(set) var mtu: Int
    /// Search for include declarations (one request or more). Off for a server known to have
    /// none, such as a 4.x SensorTag.
    public let findIncludes: Bool

    private enum Step: Sendable {
        case idle
        case services(DiscoverAllPrimaryServices)
        case includes(FindIncludedServices)
        case characteristics(DiscoverAllCharacteristics)
        /// Descriptors of `characteristics[index]` (index into the flattened list).
        case descriptors(DiscoverAllCharacteristicDescriptors, index: Int)
        case finished
    }

    private var step = Step.idle
    private var services: [Service] = []
    /// (service index, characteristic), in handle order.
    private var characteristics: [(service: Int, characteristic: Characteristic)] = []

    public init(mtu: Int = GATTLimits.defaultMTU, findIncludes: Bool = true) {
        self.mtu = mtu
        self.findIncludes = findIncludes
    }

    /// Follows the bearer's ATT_MTU: the running phase and the phases after it use the new value.
    public mutating func updateMTU(_ mtu: Int) {
        self.mtu = mtu
        switch step {
        case .services(var procedure):
            procedure.updateMTU(mtu)
            step = .services(procedure)
        case .includes(var procedure):
            procedure.updateMTU(mtu)
            step = .includes(procedure)
        case .characteristics(var procedure):
            procedure.updateMTU(mtu)
            step = .characteristics(procedure)
        case .descriptors(var procedure, let index):
            procedure.updateMTU(mtu)
            step = .descriptors(procedure, index: index)
        case .idle, .finished:
            break
        }
    }

    public mutating func start() -> GATTProcedureAction<Result> {
        guard case .idle = step else { return .misuse(.finished) }
        return startServices()
    }

    public mutating func receive(_ pdu: ATTPDU) -> GATTProcedureAction<Result> {
        switch step {
        case .idle: return .misuse(.idle)
        case .finished: return .misuse(.finished)
        case .services(var procedure):
            let action = procedure.receive(pdu)
            step = .services(procedure)
            switch relay(action) {
            case .pass(let action): return action
            case .done(let found): return servicesFound(found)
            }
        case .includes(var procedure):
            let action = procedure.receive(pdu)
            step = .includes(procedure)
            switch relay(action) {
            case .pass(let action): return action
            case .done(let found): return includesFound(found)
            }
        case .characteristics(var procedure):
            let action = procedure.receive(pdu)
            step = .characteristics(procedure)
            switch relay(action) {
            case .pass(let action): return action
            case .done(let found): return characteristicsFound(found)
            }
        case .descriptors(var procedure, let index):
            let action = procedure.receive(pdu)
            step = .descriptors(procedure, index: index)
            switch relay(action) {
            case .pass(let action): return action
            case .done(let found): return descriptorsFound(found, index: index)
            }
        }
    }

    // MARK: Phases

    private enum Relay<R> {
        /// A request to send or the failure, passed on as they are.
        case pass(GATTProcedureAction<Result>)
        /// The phase's result.
        case done(R)
    }

    private mutating func relay<R>(_ action: GATTProcedureAction<R>) -> Relay<R> {
        switch action {
        case .send(let pdu): return .pass(.send(pdu))
        case .fail(let error):
            step = .finished
            return .pass(.fail(error))
        case .done(let result): return .done(result)
        }
    }

    private mutating func startServices() -> GATTProcedureAction<Result> {
        var procedure = DiscoverAllPrimaryServices(mtu: mtu)
        let action = procedure.start()
        step = .services(procedure)
        switch relay(action) {
        case .pass(let action): return action
        case .done(let found): return servicesFound(found)
        }
    }

    private mutating func servicesFound(_ found: [Service]) -> GATTProcedureAction<Result> {
        services = found
        guard let range = coveredRange else { return finish() }
        guard findIncludes else { return startCharacteristics(range) }
        var procedure = FindIncludedServices(range: range, mtu: mtu)
        let action = procedure.start()
        step = .includes(procedure)
        switch relay(action) {
        case .pass(let action): return action
        case .done(let found): return includesFound(found)
        }
    }

    private mutating func includesFound(_ found: [IncludedService]) -> GATTProcedureAction<Result> {
        assignIncludes(found)
        guard let range = coveredRange else { return finish() }
        return startCharacteristics(range)
    }

    private mutating func startCharacteristics(_ range: ClosedRange<UInt16>) -> GATTProcedureAction<Result> {
        var procedure = DiscoverAllCharacteristics(range: range, mtu: mtu)
        let action = procedure.start()
        step = .characteristics(procedure)
        switch relay(action) {
        case .pass(let action): return action
        case .done(let found): return characteristicsFound(found)
        }
    }

    private mutating func characteristicsFound(_ found: [Characteristic]) -> GATTProcedureAction<Result> {
        assignCharacteristics(found)
        return nextDescriptors(after: -1)
    }

    private mutating func descriptorsFound(_ found: [Descriptor], index: Int) -> GATTProcedureAction<Result> {
        characteristics[index].characteristic.descriptors = found
        return nextDescriptors(after: index)
    }

    /// Starts descriptor discovery for the next characteristic after `index` that can have any.
    private mutating func nextDescriptors(after index: Int) -> GATTProcedureAction<Result> {
        var next = index + 1
        while next < characteristics.count {
            if let range = characteristics[next].characteristic.descriptorRange {
                var procedure = DiscoverAllCharacteristicDescriptors(range: range, mtu: mtu)
                let action = procedure.start()
                step = .descriptors(procedure, index: next)
                switch relay(action) {
                case .pass(let action): return action
                case .done(let found): return descriptorsFound(found, index: next)
                }
            }
            next += 1
        }
        return finish()
    }

    private mutating func finish() -> GATTProcedureAction<Result> {
        for (serviceIndex, characteristic) in characteristics {
            services[serviceIndex].characteristics.append(characteristic)
        }
        step = .finished
        return .done(GATTDatabase(services: services))
    }

    // MARK: Assembly

    /// From the first service's start to the last one's end.
    private var coveredRange: ClosedRange<UInt16>? {
        guard let first = services.map(\.startHandle).min(), let last = services.map(\.endHandle).max() else {
            return nil
        }
        return first...max(first, last)
    }

    /// The index of the service whose group holds `handle`.
    private func serviceIndex(containing handle: UInt16) -> Int? {
        services.indices.first { services[$0].handleRange.contains(handle) }
    }

    private mutating func assignIncludes(_ includes: [IncludedService]) {
        for include in includes {
            if let index = serviceIndex(containing: include.handle) { services[index].includes.append(include) }
            // An included service that is not a known group is a secondary service.
            let known = services.contains { $0.startHandle == include.startHandle }
            if !known, let uuid = include.uuid {
                services.append(
                    Service(
                        uuid: uuid, startHandle: include.startHandle, endHandle: include.endHandle, isPrimary: false))
            }
        }
        services.sort { $0.startHandle < $1.startHandle }
    }

    private mutating func assignCharacteristics(_ found: [Characteristic]) {
        characteristics = found.compactMap { characteristic in
            guard let index = serviceIndex(containing: characteristic.declarationHandle),
                characteristic.valueHandle <= services[index].endHandle
            else { return nil }
            var characteristic = characteristic
            characteristic.endHandle = min(characteristic.endHandle, services[index].endHandle)
            return (index, characteristic)
        }
    }
}
