import ATT
import Bluetooth

/// Discovery of a whole GATT database (or of one handle range of it) in the fewest requests,
/// as a sans-I/O state machine built on the §4 procedures:
///
/// 1. Discover All Primary Services (§4.4.1) over the range; a response reaching the range
///    end needs no terminating request.
/// 2. One sweep of characteristic declarations (§4.6.1) over all services at once, not service
///    by service: a response carries declarations of several services and no per-service
///    terminating request is needed. The final request that would only confirm that nothing
///    follows the last characteristic is skipped when its answer is implied by step 4
///    (``CharacteristicSweep``).
/// 3. Find Included Services (§4.5.1) only where an include can be: include definitions
///    immediately follow their service declaration and precede its characteristic
///    definitions (Vol 3 Part G §3.1), so only the handles between a service declaration and
///    its first characteristic declaration are searched, all in one request range; a server
///    without such gaps costs no request. An included service that is not a known primary is
///    added as a secondary service and swept in turn.
/// 4. Find Information (§4.7.1) over each characteristic's descriptor gap (value handle to the
///    end of its definition); neighbouring gaps are merged into one request range when every
///    attribute between them is known to have a 16-bit type (a Find Information response holds
///    one UUID size) and the merge needs fewer responses at the current ATT_MTU. A
///    characteristic declaration met in the open tail of step 2 resumes the sweep there.
///
/// Every phase checks that handles stay in range and move forward, so a misbehaving server
/// cannot make it loop; the number of rounds is bounded too. Characteristic declarations
/// outside every known service are left out.
public struct DatabaseDiscovery: GATTClientProcedure {
    public typealias Result = GATTDatabase

    /// The handles searched for services (0x0001–0xFFFF for the whole server).
    public let range: ClosedRange<UInt16>
    public private(set) var mtu: Int
    /// Search for include declarations where they can be. Off for a server known to have none.
    public let findIncludes: Bool

    private enum Step: Sendable {
        case idle
        case services(DiscoverAllPrimaryServices)
        case characteristics(CharacteristicSweep)
        case includes(FindIncludedServices)
        case information(InformationRun, remaining: [ClosedRange<UInt16>])
        case finished
    }

    private var step = Step.idle
    private var services: [Service] = []
    /// Every characteristic found, sorted by declaration handle.
    private var characteristics: [Characteristic] = []
    /// Attribute types learned with Find Information.
    private var types: [UInt16: BluetoothUUID] = [:]
    /// Handle ranges Find Information has answered for.
    private var informed: [ClosedRange<UInt16>] = []
    /// Handle ranges the characteristic sweep covered.
    private var swept: [ClosedRange<UInt16>] = []
    /// The highest handle any sweep covered or left open: the last characteristic's end.
    private var sweepLimit: UInt16 = 0
    /// The open tail left by the last sweep.
    private var openTail: ClosedRange<UInt16>?
    /// Services whose include gap was searched (by start handle).
    private var includesSearched: Set<UInt16> = []
    /// Rounds of sweeps and include searches, bounded against a misbehaving server.
    private var rounds = 0
    /// Secondary services found through includes whose handles no sweep covered yet.
    private var pendingSweeps: [ClosedRange<UInt16>] = []
    private static let maximumRounds = 64
    /// Services already discovered (a part of the server given to one of several bearers): step 1 is skipped.
    private var known: [Service]?

    public init(
        range: ClosedRange<UInt16> = 0x0001...0xFFFF, mtu: Int = GATTLimits.defaultMTU, findIncludes: Bool = true
    ) {
        self.range = range
        self.mtu = mtu
        self.findIncludes = findIncludes
    }

    /// The definitions of `services` (found by Discover All Primary Services already): steps 2
    /// to 4 over their handles. What several bearers discover in parallel, each a part.
    public init(services: [Service], mtu: Int = GATTLimits.defaultMTU, findIncludes: Bool = true) {
        let low = services.map(\.startHandle).min() ?? 0x0001
        let high = services.map(\.endHandle).max() ?? 0x0001
        self.range = low...max(low, high)
        self.mtu = mtu
        self.findIncludes = findIncludes
        self.known = services
    }

    /// Follows the bearer's ATT_MTU: the running phase and the phases after it use the new value.
    public mutating func updateMTU(_ mtu: Int) {
        self.mtu = mtu
        if case .services(var procedure) = step {
            procedure.updateMTU(mtu)
            step = .services(procedure)
        } else if case .includes(var procedure) = step {
            procedure.updateMTU(mtu)
            step = .includes(procedure)
        }
    }

    public mutating func start() -> GATTProcedureAction<Result> {
        guard case .idle = step else { return .misuse(.finished) }
        if let known {
            step = .finished
            return servicesFound(known)
        }
        var procedure = DiscoverAllPrimaryServices(range: range, mtu: mtu)
        let action = procedure.start()
        step = .services(procedure)
        switch action {
        case .send(let pdu): return .send(pdu)
        case .fail(let error): return fail(error)
        case .done(let found): return servicesFound(found)
        }
    }

    public mutating func receive(_ pdu: ATTPDU) -> GATTProcedureAction<Result> {
        switch step {
        case .idle: return .misuse(.idle)
        case .finished: return .misuse(.finished)
        case .services(var procedure):
            let action = procedure.receive(pdu)
            step = .services(procedure)
            switch action {
            case .send(let pdu): return .send(pdu)
            case .fail(let error): return fail(error)
            case .done(let found): return servicesFound(found)
            }
        case .characteristics(var sweep):
            let next = sweep.receive(pdu, mtu: mtu)
            step = .characteristics(sweep)
            return sweepAction(next, sweep)
        case .includes(var procedure):
            let action = procedure.receive(pdu)
            step = .includes(procedure)
            switch action {
            case .send(let pdu): return .send(pdu)
            case .fail(let error): return fail(error)
            case .done(let found): return includesFound(found)
            }
        case .information(var run, let remaining):
            let before = run.entries.count
            let next = run.receive(pdu, mtu: mtu)
            step = .information(run, remaining: remaining)
            return informationAction(next, run, newEntries: before, remaining: remaining)
        }
    }

    // MARK: Phases

    private mutating func fail(_ error: GATTError) -> GATTProcedureAction<Result> {
        step = .finished
        return .fail(error)
    }

    private mutating func servicesFound(_ found: [Service]) -> GATTProcedureAction<Result> {
        services = found.sorted { $0.startHandle < $1.startHandle }
        guard let first = services.first, let last = services.map(\.endHandle).max() else { return finish() }
        return startSweep(first.startHandle...max(first.startHandle, last))
    }

    /// Sweeps characteristic declarations over `range`.
    private mutating func startSweep(_ range: ClosedRange<UInt16>) -> GATTProcedureAction<Result> {
        rounds += 1
        guard rounds <= Self.maximumRounds else {
            return fail(.procedureState("database discovery exceeded \(Self.maximumRounds) rounds"))
        }
        // The service that ends the range, whose tail the descriptor phase covers anyway.
        let finalService = services.last {
            $0.handleRange.contains(range.upperBound) && $0.startHandle <= range.upperBound
        }
        var sweep = CharacteristicSweep(
            range: range,
            finalServiceStart: finalService?.endHandle == range.upperBound ? finalService?.startHandle : nil)
        let next = sweep.start()
        step = .characteristics(sweep)
        return sweepAction(next, sweep)
    }

    private mutating func sweepAction(_ next: CharacteristicSweep.Next, _ sweep: CharacteristicSweep)
        -> GATTProcedureAction<Result>
    {
        switch next {
        case .send(let pdu): return .send(pdu)
        case .fail(let error): return fail(error)
        case .done:
            sweepLimit = max(sweepLimit, sweep.range.upperBound)
            let known = Set(characteristics.map(\.declarationHandle))
            characteristics += sweep.found.filter { !known.contains($0.declarationHandle) }
            characteristics.sort { $0.declarationHandle < $1.declarationHandle }
            if let tail = sweep.openTail {
                openTail = tail
                swept.append(sweep.range.lowerBound...(tail.lowerBound - 1))
            } else {
                openTail = nil
                swept.append(sweep.range)
            }
            assignEnds()
            return advance()
        }
    }

    /// The next sweep a secondary service needs, else the include search, else descriptors.
    private mutating func advance() -> GATTProcedureAction<Result> {
        if !pendingSweeps.isEmpty { return startSweep(pendingSweeps.removeFirst()) }
        return nextIncludesOrInformation()
    }

    /// Searches the include gaps not searched yet, or moves on to descriptors.
    private mutating func nextIncludesOrInformation() -> GATTProcedureAction<Result> {
        guard findIncludes else { return startInformation() }
        var low: UInt16?
        var high: UInt16?
        for service in services where !includesSearched.contains(service.startHandle) {
            includesSearched.insert(service.startHandle)
            guard let gap = includeGap(of: service) else { continue }
            low = min(low ?? gap.lowerBound, gap.lowerBound)
            high = max(high ?? gap.upperBound, gap.upperBound)
        }
        guard let low, let high else { return startInformation() }
        rounds += 1
        guard rounds <= Self.maximumRounds else {
            return fail(.procedureState("database discovery exceeded \(Self.maximumRounds) rounds"))
        }
        var procedure = FindIncludedServices(range: low...high, mtu: mtu)
        let action = procedure.start()
        step = .includes(procedure)
        switch action {
        case .send(let pdu): return .send(pdu)
        case .fail(let error): return fail(error)
        case .done(let found): return includesFound(found)
        }
    }

    /// The handles between a service declaration and its first characteristic declaration.
    private func includeGap(of service: Service) -> ClosedRange<UInt16>? {
        guard service.startHandle < service.endHandle else { return nil }
        let first = characteristics.first { service.handleRange.contains($0.declarationHandle) }
        let end = first.map { $0.declarationHandle - 1 } ?? service.endHandle
        guard end > service.startHandle else { return nil }
        return (service.startHandle + 1)...end
    }

    private mutating func includesFound(_ found: [IncludedService]) -> GATTProcedureAction<Result> {
        for include in found {
            if let index = services.firstIndex(where: { $0.handleRange.contains(include.handle) }),
                !services[index].includes.contains(include)
            {
                services[index].includes.append(include)
            }
            let known = services.contains { $0.startHandle == include.startHandle }
            guard !known, let uuid = include.uuid, include.startHandle <= include.endHandle else { continue }
            services.append(
                Service(uuid: uuid, startHandle: include.startHandle, endHandle: include.endHandle, isPrimary: false))
            if !swept.contains(where: { $0.contains(include.startHandle) }) {
                pendingSweeps.append(include.startHandle...include.endHandle)
            }
        }
        services.sort { $0.startHandle < $1.startHandle }
        assignEnds()
        return advance()
    }

    // MARK: Descriptors

    /// Plans the Find Information runs over the gaps not answered yet, and starts the first.
    private mutating func startInformation() -> GATTProcedureAction<Result> {
        let runs = DiscoveryPlan.informationRuns(
            gaps: uncoveredGaps(), mtu: mtu, isShortType: { [self] handle in shortType(at: handle) })
        return nextRun(runs)
    }

    private mutating func nextRun(_ runs: [ClosedRange<UInt16>]) -> GATTProcedureAction<Result> {
        guard let range = runs.first else { return finish() }
        var run = InformationRun(range: range)
        let next = run.start()
        step = .information(run, remaining: Array(runs.dropFirst()))
        return informationAction(next, run, newEntries: 0, remaining: Array(runs.dropFirst()))
    }

    private mutating func informationAction(
        _ next: InformationRun.Next, _ run: InformationRun, newEntries start: Int, remaining: [ClosedRange<UInt16>]
    ) -> GATTProcedureAction<Result> {
        let known = Set(characteristics.map(\.declarationHandle))
        var resume: UInt16?
        for entry in run.entries[start...] {
            types[entry.handle] = entry.uuid
            // A characteristic the sweep left in its open tail: the sweep resumes there.
            if resume == nil, entry.uuid == GATTUUID.characteristic, !known.contains(entry.handle),
                let tail = openTail, tail.contains(entry.handle)
            {
                resume = entry.handle
            }
        }
        if let resume, let tail = openTail {
            // What this run learned stays learned; the rest of it is planned again afterwards.
            if let covered = run.covered { informed.append(covered) }
            openTail = nil
            return startSweep(resume...tail.upperBound)
        }
        switch next {
        case .send(let pdu): return .send(pdu)
        case .fail(let error): return fail(error)
        case .done:
            if let covered = run.covered { informed.append(covered) }
            if let tail = openTail,
                informed.contains(where: { $0.contains(tail.lowerBound) && $0.contains(tail.upperBound) })
            {
                openTail = nil
            }
            return nextRun(remaining)
        }
    }

    /// Descriptor gaps of every characteristic minus the handles Find Information answered for.
    private func uncoveredGaps() -> [ClosedRange<UInt16>] {
        var gaps: [ClosedRange<UInt16>] = []
        for characteristic in characteristics {
            guard let gap = characteristic.descriptorRange else { continue }
            gaps += DiscoveryPlan.subtract(informed, from: gap)
        }
        return gaps
    }

    /// Whether the attribute at `handle` is known to have a 16-bit type.
    private func shortType(at handle: UInt16) -> Bool {
        if let type = types[handle] { return type.uuid16 != nil }
        if services.contains(where: { $0.startHandle == handle }) { return true }
        if services.contains(where: { $0.includes.contains { $0.handle == handle } }) { return true }
        for characteristic in characteristics where characteristic.handleRange.contains(handle) {
            if characteristic.declarationHandle == handle { return true }
            if characteristic.valueHandle == handle { return characteristic.uuid.uuid16 != nil }
        }
        return false
    }

    // MARK: Assembly

    /// Each characteristic ends before the next declaration, and at its service's end.
    private mutating func assignEnds() {
        for index in characteristics.indices {
            let declaration = characteristics[index].declarationHandle
            var end =
                index + 1 < characteristics.count
                ? characteristics[index + 1].declarationHandle - 1 : max(sweepLimit, declaration)
            if let service = services.last(where: { $0.handleRange.contains(declaration) }) {
                end = min(end, service.endHandle)
            }
            characteristics[index].endHandle = max(end, characteristics[index].valueHandle)
        }
    }

    private mutating func finish() -> GATTProcedureAction<Result> {
        step = .finished
        var out = services
        for var characteristic in characteristics {
            guard let index = out.firstIndex(where: { $0.handleRange.contains(characteristic.declarationHandle) }),
                characteristic.valueHandle <= out[index].endHandle
            else { continue }
            characteristic.descriptors = DiscoveryPlan.descriptors(of: characteristic, types: types)
            out[index].characteristics.append(characteristic)
        }
        return .done(GATTDatabase(services: out))
    }
}
