import ATT
import Bluetooth
import Emulator
import GATT
import HCI
import Host
import Kernel
import Synchronization

/// One Bluetooth controller, on any transport: the library's front door.
///
/// ```swift
/// let adapter = try await Adapter.open("sim")
/// for try await device in await adapter.scan(ScanOptions(services: [0xAA80])) {
///     let tag = try await adapter.connect(to: device)
///     print(try await tag.read(0x2A19))
///     break
/// }
/// await adapter.close()
/// ```
///
/// The adapter owns its transport and everything on it: ``close()`` ends its scans, its
/// connections and its advertising. A ``Peripheral`` owns its link.
public actor Adapter {
    /// The controller's own address (all zeros where the transport has none: a replay).
    public nonisolated let address: PeerAddress

    package nonisolated let central: any Central
    package nonisolated let options: AdapterOptions
    package nonisolated let hooks: SessionHooks
    /// When the adapter opened: notification times count from here.
    package nonisolated let epoch = ContinuousClock.now
    nonisolated let serviceCache = ServiceCache()
    /// The pairing delegate and the bonds.
    nonisolated let securityContext: SecurityContext

    private var closed = false
    private var scans: ScanHub
    /// The resolver of bonded private addresses, the store's change count it was built at, and
    /// what it resolved (per address, bounded as the scan caches are).
    private var resolution: (resolver: AddressResolver, changes: Int, identities: ExpiringCache<BluetoothAddress, PeerAddress?>)?
    private var connected: [ObjectIdentifier: Peripheral] = [:]
    private var advertising: LocalPeripheral?
    private var advertisingStarting = false
    /// The address type each address had when a scan of this adapter last saw it (bounded as
    /// the scan caches are).
    private var lastSeenTypes: ExpiringCache<BluetoothAddress, AddressType>
    /// The scan caches' bounds (also read while `scans` is being changed: `reidentify`).
    private var scanCacheLimits: ScanCacheLimits
    /// The scan caches' full-cache warning was given (once per adapter).
    private var scanCacheFullTold = false
    private var kernelAgentFailureTold = false
    private var managed: [ManagedDevice] = []
    /// How many retrieved device models hold each managed device (by identity): the last one's
    /// disconnect stops the management.
    private var modelHolds: [ObjectIdentifier: Int] = [:]
    /// How many of those models want each characteristic kept subscribed: the last one's
    /// `enableNotifications(false)` (or disconnect) unsubscribes it.
    private var modelWishes: [ObjectIdentifier: [BluetoothUUID: Int]] = [:]

    package init(central: any Central, options: AdapterOptions = AdapterOptions(), hooks: SessionHooks = SessionHooks()) {
        self.central = central
        self.options = options
        self.hooks = hooks
        scans = ScanHub(limits: options.scanCache)
        scanCacheLimits = options.scanCache
        lastSeenTypes = ExpiringCache(limits: options.scanCache)
        address = PeerAddress(address: central.localAddress ?? .zero, type: .public)
        securityContext = SecurityContext(
            store: BondStore(
                directory: options.bondsDirectory, peripheralLimit: options.maximumPeripheralBonds, warning: options.warning),
            allowRepair: options.allowRepair, minimumKeySize: options.minimumKeySize, kernel: (central as? KernelCentral).map { KernelSecurity(index: $0.index) },
            warning: options.warning)
    }

    /// Opens the controller `transport` names: `hciN` or `hci:N` (the kernel's own host),
    /// `hci-user:N`, `tcp:HOST:PORT`, `unix:PATH`, `serial:DEV[@BAUD]` (our host in user space),
    /// `sim[:devices]` (the built-in simulation) or `replay:FILE` (a recorded session).
    public static func open(_ transport: String = "hci0") async throws(BLEError) -> Adapter {
        try await open(transport, options: AdapterOptions())
    }

    /// ``open(_:)`` with `gattclient`'s global options (recording, security, replay matching).
    package static func open(
        _ transport: String?, options: AdapterOptions, hooks: SessionHooks = SessionHooks()
    ) async throws(BLEError) -> Adapter {
        let central: any Central
        do {
            central = try await openCentral(transport, options: options)
        } catch {
            throw BLEError.from(error, doing: "opening \(transport ?? "hci0")")
        }
        do throws(BLEError) {
            try central.setLinkPreferences(options.link)
            if options.enhancedBearers != nil || options.link.enhancedBearers != nil,
                !(central is UserSpaceCentral || central is SimulatedCentral || central is ReplayCentral)
            {
                throw BLEError(
                    central is KernelCentral
                        ? "--eatt on hciN: the kernel's enhanced credit-based channels are off by default (its enable_ecred "
                            + "module parameter), and BlueZ opens its own EATT bearers; use hci-user:N for ours"
                        : "--eatt: \(type(of: central).linkControlRefusal)", kind: "usage", exitCode: .usage)
            }
            if options.parameterRequests != .acceptValid, !(central is UserSpaceCentral || central is SimulatedCentral) {
                throw BLEError(
                    "a policy for peers' parameter requests: \(type(of: central).linkControlRefusal)", kind: "usage",
                    exitCode: .usage)
            }
        } catch {
            await central.close()
            throw error
        }
        return Adapter(central: central, options: options, hooks: hooks)
    }

    /// What every later connection of this adapter is asked for: its connection parameters
    /// (in LE Create Connection), then its PHY and data length once it is up, and Enhanced ATT
    /// bearers once it is encrypted — where our host runs in user space (`tcp:`, `unix:`,
    /// `serial:`, `hci-user:`, `sim`). A controller that
    /// lacks LE Set PHY or LE Set Data Length leaves the link as it is, said as a warning.
    /// - Throws: a usage error for values out of range, or where the transport cannot ask (the
    ///   kernel path, whose kernel owns the link; a replay).
    public nonisolated func setLinkPreferences(_ preferences: LinkPreferences) throws(BLEError) {
        try central.setLinkPreferences(preferences)
    }

    /// One more controller on `simulation`'s air, with an address of its own: two adapters of
    /// one simulation see each other's advertising and connect to each other.
    public static func simulated(_ simulation: Simulation) async throws(BLEError) -> Adapter {
        try await simulated(simulation, options: AdapterOptions())
    }

    /// ``simulated(_:)`` with options (tests give each adapter its own bond directory).
    package static func simulated(_ simulation: Simulation, options: AdapterOptions) async throws(BLEError) -> Adapter {
        let address = SimulatedAddresses.next()
        let (controller, transport) = await VirtualController.attach(
            to: simulation.link, clock: SystemClock(), configuration: .init(address: address))
        do {
            let central = try await UserSpaceCentral.start(
                transport, name: "simulated adapter \(address)", commandTimeout: SimulatedCentral.commandTimeout,
                record: options.record, warning: options.warning, parameterRequests: options.parameterRequests)
            try central.setLinkPreferences(options.link)
            return Adapter(central: central, options: options)
        } catch {
            await controller.stop()
            throw BLEError.from(error, doing: "starting a simulated adapter")
        }
    }

    /// Keeps discovered databases (with their Database Hash) in `directory`, reused across runs
    /// while the peer's hash is unchanged; nil: in memory only, for this adapter's life.
    public func setServiceCache(directory: String?) {
        serviceCache.setDirectory(directory)
    }

    // MARK: - Scanning

    /// Scans for advertising devices. Advertising and scan response are merged per device; a
    /// device is yielded when first seen and again when its merged data or connectability
    /// changes. The stream ends after `options.duration`, when the caller stops iterating, or
    /// on ``close()``. Concurrent scans share one controller scan (active if any asks).
    /// - SeeAlso: Core Spec 5.4, Vol 3, Part C, §9.2 (discovery procedures)
    public func scan(_ options: ScanOptions = ScanOptions()) -> AsyncThrowingStream<Advertisement, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Advertisement.self, throwing: (any Error).self)
        guard !closed else {
            continuation.finish(throwing: BLEError("the adapter is closed", kind: "closed"))
            return stream
        }
        guard central is any Scanner else {
            continuation.finish(throwing: BLEError("this transport cannot scan", kind: "transport", exitCode: .unavailable))
            return stream
        }
        // What earlier scans saw is replayed to this one: with the identities the bonds give now.
        scans.reidentify { resolvedIdentity(of: $0) }
        let id = scans.add(options, continuation, now: self.options.clock.now)
        let timer: Task<Void, Never>? = options.duration.map { duration in
            Task {
                try? await Task.sleep(for: duration)
                continuation.finish()
            }
        }
        continuation.onTermination = { [weak self] _ in
            timer?.cancel()
            Task { await self?.scanEnded(id) }
        }
        reconcileControllerScan()
        return stream
    }

    /// The controller scan behind the scans (the CLI's `scan`, which prints raw reports too).
    package func scanEvents(_ parameters: LEScanParameters) async throws -> AsyncThrowingStream<ScanEvent, any Error> {
        guard let scanner = central as? any Scanner else {
            throw BLEError("this transport cannot scan", kind: "transport", exitCode: .unavailable)
        }
        return try await scanner.scan(parameters)
    }

    /// New bounds for what this adapter's scans remember (``ScanCacheLimits``; the defaults:
    /// 4 096 devices, forgotten after 300 s unheard); the excess goes at once.
    public func setScanCacheLimits(_ limits: ScanCacheLimits) {
        let now = options.clock.now
        scanCacheLimits = limits
        scans.setLimits(limits, now: now)
        lastSeenTypes.setLimits(limits, now: now)
        resolution?.identities.setLimits(limits, now: now)
    }

    /// What this adapter's scan caches hold now and have forgotten (full, or expired).
    public var scanCacheStatistics: ScanCacheStatistics {
        var result = scans.statistics
        result.evicted += lastSeenTypes.evicted + (resolution?.identities.evicted ?? 0)
        result.expired += lastSeenTypes.expired + (resolution?.identities.expired ?? 0)
        return result
    }

    /// The size of the largest scan cache (tests and the benchmark).
    package var largestScanCache: Int {
        max(scans.largestCache, lastSeenTypes.count, resolution?.identities.count ?? 0)
    }

    private func scanEnded(_ id: Int) {
        scans.remove(id)
        reconcileControllerScan()
    }

    /// Starts, restarts (passive → active) or stops the controller scan to match the scans.
    private func reconcileControllerScan() {
        guard let change = scans.change() else { return }
        let previous = scans.controllerTask
        scans.controllerTask = nil
        scans.runningActive = change.run ? change.active : nil
        scans.runningEveryReport = change.run && change.everyReport
        let generation = scans.generation
        guard change.run else {
            previous?.cancel()
            return
        }
        scans.controllerTask = Task { [weak self] in
            if let previous {
                previous.cancel()
                await previous.value
            }
            await self?.runControllerScan(active: change.active, everyReport: change.everyReport, generation: generation)
        }
    }

    private func runControllerScan(active: Bool, everyReport: Bool, generation: Int) async {
        guard let scanner = central as? any Scanner else { return }
        var failure: BLEError?
        do {
            // Every report, always: the merged events come only when a device is new or changed,
            // and the scan caches' expiry counts from when a device was last heard at all.
            var parameters = LEScanParameters(active: active)
            parameters.reportMode = .allReports
            let events = try await scanner.scan(parameters)
            for try await event in events {
                guard scans.generation == generation, !Task.isCancelled else { return }
                switch event {
                case .discovered(let device), .updated(let device):
                    let now = options.clock.now
                    lastSeenTypes.set(device.address, device.addressType, now: now)
                    var advertisement = Advertisement(device)
                    // A bonded peer advertising with a resolvable private address: its identity.
                    advertisement.identity = resolvedIdentity(of: advertisement.peer)
                    scans.deliver(advertisement, now: now)
                    if !scanCacheFullTold, lastSeenTypes.evicted > 0 || scans.statistics.evicted > 0 {
                        scanCacheFullTold = true
                        options.warning(
                            "warning: more than \(scanCacheLimits.maximumDevices) advertisers heard: the scan caches forget "
                                + "the least recently heard (counted in the adapter's scan cache statistics)")
                    }
                case .report(let report):
                    if let type = report.addressType.addressType {
                        let now = options.clock.now
                        let peer = PeerAddress(address: report.address, type: type)
                        scans.heard(peer, now: now)
                        lastSeenTypes.touch(report.address, now: now)
                    }
                    guard everyReport, var advertisement = Advertisement(report: report) else { continue }
                    advertisement.identity = resolvedIdentity(of: advertisement.peer)
                    scans.deliverReport(advertisement)
                }
            }
        } catch {
            failure = BLEError.from(error, doing: "scanning")
        }
        // The controller scan ended by itself (a replayed capture runs out, the transport went
        // away): every scan of it ends too, and the next scan starts a new one.
        guard scans.generation == generation, !Task.isCancelled else { return }
        scans.ended(failure)
    }

    // MARK: - Connecting

    /// Connects to `peer` and exchanges the ATT_MTU (we offer 517), within `timeout`.
    public func connect(to peer: PeerAddress, timeout: Duration = .seconds(30)) async throws(BLEError) -> Peripheral {
        try await connect(peer, link: nil, timeout: timeout)
    }

    private func connect(_ given: PeerAddress, link: CentralLink?, timeout: Duration) async throws(BLEError) -> Peripheral {
        guard !closed else { throw BLEError("the adapter is closed", kind: "closed") }
        var options = options
        options.timeout = timeout
        // A bonded device known by its identity may advertise with a private address now.
        let started = ContinuousClock.now
        var peer = given
        var identity: PeerAddress?
        if link == nil, let current = try await currentPrivateAddress(ofBonded: given, within: timeout) {
            peer = current
            identity = given
            options.timeout = max(timeout - (ContinuousClock.now - started), .seconds(1))
        } else if let resolved = resolvedIdentity(of: given) {
            // Given a private address a bonded IRK resolves: the bond is found by its identity.
            identity = resolved
        }
        // The kernel path: the agent answers the pairing a link may need, and the kernel has the
        // stored keys, before the link exists.
        if case .success(let agent)? = await startKernelAgent(),
            let wanted = options.security.flatMap(L2CAPSecurityLevel.init), wanted.rawValue > L2CAPSecurityLevel.low.rawValue,
            securityContext.store.bond(local: address.address, peer: peer) == nil
        {
            // --security on hciN: the kernel pairs while the link comes up; its keys are to be kept.
            await agent.expectKeys(from: peer.address)
        }
        let session: GATTSession
        do {
            session = try await GATTSession.connect(
                peer, through: central, options: options, hooks: hooks, ownsCentral: false, link: link)
        } catch {
            throw BLEError.from(error, doing: "connecting to \(peer)")
        }
        let peripheral = await Peripheral.make(
            session: session, epoch: epoch, cache: serviceCache, securityContext: securityContext, localAddress: address
        ) { [weak self] ended in
            await self?.forget(ended)
        }
        await peripheral.setIdentity(identity)
        connected[ObjectIdentifier(peripheral)] = peripheral
        if let count = options.enhancedBearers ?? central.linkPreferences.enhancedBearers {
            do {
                try await peripheral.openEnhancedBearers(count, trace: hooks.trace)
            } catch where error.kind == "eattRefused" && !options.enhancedBearersRequired {
                // Said, and the link goes on with its unenhanced bearer (`--eatt-required` fails)
                // — if it is still there.
                guard await peripheral.state == .connected else {
                    await peripheral.disconnect()
                    throw error
                }
                options.warning("warning: \(error.message); going on with the unenhanced ATT bearer")
            } catch {
                await peripheral.disconnect()
                throw error
            }
        }
        if closed {
            await peripheral.disconnect()
            throw BLEError("the adapter closed while connecting", kind: "closed")
        }
        return peripheral
    }

    /// The resolvable private address a bonded device with an IRK, known by its identity
    /// `peer`, advertises with now: this adapter scans (at most `timeout`) until an advertisement
    /// resolves to it with the bond's IRK (Vol 3 Part C §10.8.2.3; the host resolves, not the
    /// controller's resolving list). Nil where there is nothing to resolve: no such bond, the
    /// kernel path (the kernel resolves with the IRKs the agent loaded), or the device seen
    /// advertising with its identity address.
    private func currentPrivateAddress(ofBonded peer: PeerAddress, within timeout: Duration) async throws(BLEError) -> PeerAddress? {
        guard securityContext.kernel == nil, central is any Scanner,
            let bond = securityContext.store.bond(local: address.address, peer: peer),
            bond.identity == peer.address, bond.peerIRK != nil
        else { return nil }
        do {
            for try await advertisement in scan(ScanOptions(duration: timeout)) where advertisement.isConnectable {
                if advertisement.peer.address == peer.address { return nil }
                if advertisement.identity?.address == peer.address { return advertisement.peer }
            }
        } catch {
            throw BLEError.from(error, doing: "looking for \(peer.address) (bonded; it advertises with private addresses)")
        }
        throw BLEError(
            "\(peer.address) (bonded; it may advertise with private addresses) was not seen advertising within \(timeout.roundedText)",
            kind: "timeout")
    }

    /// Starts the kernel path's pairing agent (once), which loads the bonds into the kernel. It
    /// needs CAP_NET_ADMIN: without, connections still work; pairing on them fails saying so, and
    /// stored bonds are not loaded (said once, here).
    @discardableResult
    func startKernelAgent() async -> Result<KernelPairingAgent, KernelBluetoothError>? {
        guard let kernel = securityContext.kernel else { return nil }
        let result = await kernel.agent(local: address, context: securityContext)
        if case .failure(let error)? = result, !kernelAgentFailureTold {
            kernelAgentFailureTold = true
            let bonds = securityContext.store.bonds(local: address.address).count
            if bonds > 0 || options.security.map({ $0 != "low" }) == true {
                options.warning(
                    "warning: no pairing agent on hci\(kernel.index)\(bonds > 0 ? " and \(bonds) bond(s) not loaded into the kernel" : ""): \(error)")
            }
        }
        return result
    }

    /// Connects to the device `advertisement` came from.
    public func connect(to advertisement: Advertisement, timeout: Duration = .seconds(30)) async throws(BLEError) -> Peripheral {
        try await connect(to: advertisement.peer, timeout: timeout)
    }

    /// Connects to `address` with the address type this adapter's scans last saw it with.
    /// Unseen: on the user-space host, one LE Create Connection through the Filter Accept List
    /// holding both types; on the kernel path (whose socket takes one type), public first, then
    /// random, each with half of `timeout`.
    public func connect(to address: BluetoothAddress, timeout: Duration = .seconds(30)) async throws(BLEError) -> Peripheral {
        if let type = lastSeenTypes[address] {
            return try await connect(to: PeerAddress(address: address, type: type), timeout: timeout)
        }
        guard !closed else { throw BLEError("the adapter is closed", kind: "closed") }
        let either: (link: CentralLink, peer: PeerAddress)?
        do {
            either = try await central.linkEitherType(to: address, timeout: timeout)
        } catch {
            throw BLEError.from(error, doing: "connecting to \(address)")
        }
        if let either {
            return try await connect(either.peer, link: either.link, timeout: timeout)
        }
        let half = timeout / 2
        do {
            return try await connect(to: PeerAddress(address: address, type: .public), timeout: half)
        } catch let error where error.kind == "connect" || error.kind == "timeout" {
            do {
                return try await connect(to: PeerAddress(address: address, type: .random), timeout: timeout - half)
            } catch {
                throw BLEError(
                    "connecting to \(address): neither as a public nor as a random address within \(timeout.roundedText) "
                        + "(random: \(error.message))", kind: error.kind, exitCode: error.exitCode)
            }
        }
    }

    /// Connects to `peer` and raises the link to `security` before returning: encrypts with the
    /// bond when it gives that level (no SMP PDU), else pairs (Vol 3, Part C, §10.3). `.none`
    /// connects only. On the kernel path the kernel encrypts or pairs, the adapter's agent
    /// answering it.
    public func connect(
        to peer: PeerAddress, security: SecurityLevel, timeout: Duration = .seconds(30)
    ) async throws(BLEError) -> Peripheral {
        let peripheral = try await connect(to: peer, timeout: timeout)
        do {
            try await peripheral.ensureSecurity(security)
        } catch {
            await peripheral.disconnect()
            throw error
        }
        return peripheral
    }

    /// Who answers pairing's questions (passkeys, numeric comparison); nil: nobody, and pairings
    /// that need the user fail.
    public func setPairingDelegate(_ delegate: (any PairingDelegate)?) {
        securityContext.delegate = delegate
    }

    /// Whether a peer that lost its bond is paired again rather than refused (`--repair`).
    package func setAllowRepair(_ allowed: Bool) {
        securityContext.allowRepair = allowed
    }

    /// The bonds of this adapter's controller address.
    public func bonds() async -> [Bond] {
        securityContext.store.bonds(local: address.address)
    }

    /// This adapter's bonds, or why they cannot be listed (the bond directory is a file, or
    /// cannot be read): never "no bonds" for a store that cannot be read.
    public func storedBonds() async throws(BLEError) -> [Bond] {
        do {
            return try securityContext.store.listBonds(local: address.address)
        } catch {
            throw BLEError("the bonds of \(address.address) cannot be listed: \(error)", kind: "bonds")
        }
    }

    /// The bonded identity behind `peer` when it is a resolvable private address; the resolver
    /// is rebuilt when a bond was made or removed since it was built.
    package func resolvedIdentity(of peer: PeerAddress) -> PeerAddress? {
        guard AddressResolver.isResolvable(peer) else { return nil }
        let changes = securityContext.store.changes
        if resolution?.changes != changes { resolution = (addressResolver(), changes, ExpiringCache(limits: scanCacheLimits)) }
        if let known = resolution?.identities[peer.address] { return known }
        let identity = resolution?.resolver.identity(of: peer)
        // An address no IRK resolves is remembered too (as nil).
        resolution?.identities.set(peer.address, identity, now: options.clock.now)
        return identity
    }

    /// Resolves private addresses with the IRKs of this adapter's bonds (as they are now).
    private func addressResolver() -> AddressResolver {
        AddressResolver(bonds: securityContext.store.bonds(local: address.address))
    }

    /// Stores `bond`, replacing the bond with its identity only when `replacing` names it (and
    /// never with a weaker one): ``BondStore/save(_:replacing:)``.
    package func saveBond(_ bond: Bond, replacing: PeerAddress? = nil) throws(BLEError) {
        do {
            try securityContext.store.save(bond, replacing: replacing)
        } catch {
            throw BLEError("storing the bond with \(bond.identity): \(error)", kind: "bonds")
        }
    }

    /// Forgets the bond with `peer` (its file is removed; on `hciN` without bluetoothd the kernel
    /// forgets its keys too, and a link to it ends); throws when there is none.
    public func removeBond(_ peer: PeerAddress) async throws(BLEError) {
        var kernelHad = false
        if let kernel = securityContext.kernel, !kernel.bluetoothd {
            let stored = securityContext.store.bond(local: address.address, peer: peer)
            guard case .success(let agent)? = await startKernelAgent() else {
                throw BLEError(
                    "removing the bond with \(peer.address): the kernel's keys cannot be removed without the pairing agent "
                        + "(CAP_NET_ADMIN)", kind: "bonds", exitCode: .permission)
            }
            do {
                for target in Set([peer, stored?.peerIdentity].compactMap { $0 }) {
                    if try await agent.unpair(target, disconnect: true) { kernelHad = true }
                }
            } catch {
                throw BLEError.kernel(error, doing: "removing the kernel's keys for \(peer.address)", kind: "bonds")
            }
        }
        do {
            try securityContext.store.checkDirectories(local: address.address)
            guard try securityContext.store.remove(local: address.address, peer: peer) || kernelHad else {
                throw BLEError("no bond with \(peer.address) on \(address.address)", kind: "notFound")
            }
        } catch let error as BLEError {
            throw error
        } catch {
            throw BLEError("removing the bond with \(peer.address): \(error)", kind: "bonds")
        }
    }

    private func forget(_ peripheral: Peripheral) {
        connected.removeValue(forKey: ObjectIdentifier(peripheral))
    }

    // MARK: - Advertising

    /// Serves `services` as our GATT server and advertises it: Generic Access and Generic
    /// Attribute are added where absent, and a Client Characteristic Configuration descriptor
    /// to every notify/indicate characteristic that lacks one. The advertising data carries the
    /// flags, then the service UUIDs, then the name; what does not fit goes into the scan
    /// response. One advertisement per adapter; a database that cannot work is refused here.
    public func advertise(name: String?, services: [ServiceDefinition]) async throws(BLEError) -> LocalPeripheral {
        guard !closed else { throw BLEError("the adapter is closed", kind: "closed") }
        guard advertising == nil, !advertisingStarting else {
            throw BLEError("this adapter is already advertising; stop its LocalPeripheral first", kind: "usage", exitCode: .usage)
        }
        advertisingStarting = true
        defer { advertisingStarting = false }
        let host: any PeripheralHost
        do {
            guard let made = try central.peripheralHost(warning: options.warning) else {
                throw BLEError("this transport cannot advertise", kind: "usage", exitCode: .usage)
            }
            host = made
        } catch {
            throw BLEError.from(error, doing: "advertising")
        }
        let local = try await LocalPeripheral.start(
            name: name, services: services, host: host, security: securityContext, localAddress: address
        ) { [weak self] in
            await self?.advertisingStopped()
        }
        guard !closed else {
            await local.stop()
            throw BLEError("the adapter closed while advertising started", kind: "closed")
        }
        advertising = local
        return local
    }

    private func advertisingStopped() {
        advertising = nil
    }

    // MARK: - Closing

    /// Ends every scan, connection and advertisement of this adapter and releases its
    /// transport. Idempotent.
    // MARK: - Managed devices

    /// Keeps `peer` connected from now on (``ManagedDevice``): connects when it advertises, and
    /// again after every link loss, with back-off, its bond's security and its subscriptions.
    /// Managing an address already managed gives the same device.
    public func manage(_ peer: PeerAddress, options: ManagedDeviceOptions = ManagedDeviceOptions()) -> ManagedDevice {
        if let existing = managed.first(where: { $0.peer.address == peer.address }) { return existing }
        let device = ManagedDevice(peer: peer, options: options)
        managed.append(device)
        device.start(on: self)
        return device
    }

    /// Stops managing `device`: its link ends, its last event is `.state(.removed)`.
    public func stopManaging(_ device: ManagedDevice) async {
        managed.removeAll { $0 === device }
        modelHolds[ObjectIdentifier(device)] = nil
        modelWishes[ObjectIdentifier(device)] = nil
        await device.stop()
    }

    /// One more retrieved model wants `characteristic` of `device` subscribed on every connection.
    func wishForModel(_ device: ManagedDevice, _ characteristic: BluetoothUUID) async throws(BLEError) {
        modelWishes[ObjectIdentifier(device), default: [:]][characteristic, default: 0] += 1
        try await device.subscribe(to: characteristic)
    }

    /// A retrieved model no longer wants `characteristic`; the last one unsubscribes it.
    func unwishForModel(_ device: ManagedDevice, _ characteristic: BluetoothUUID) async {
        let id = ObjectIdentifier(device)
        let count = (modelWishes[id]?[characteristic] ?? 1) - 1
        guard count <= 0 else {
            modelWishes[id]?[characteristic] = count
            return
        }
        modelWishes[id]?[characteristic] = nil
        await device.unsubscribe(from: characteristic)
    }

    /// The managed device of `peer`, held by one more retrieved model.
    func holdForModel(_ peer: PeerAddress) -> ManagedDevice {
        let device = manage(peer)
        modelHolds[ObjectIdentifier(device), default: 0] += 1
        return device
    }

    /// A retrieved model lets `device` go; the last one stops its management (true), others
    /// leave it to the models still holding it (false).
    func releaseForModel(_ device: ManagedDevice) async -> Bool {
        let id = ObjectIdentifier(device)
        let holds = (modelHolds[id] ?? 1) - 1
        guard holds <= 0 else {
            modelHolds[id] = holds
            return false
        }
        await stopManaging(device)
        return true
    }

    /// The devices this adapter keeps connected.
    public var managedDevices: [ManagedDevice] { managed }

    public func close() async {
        guard !closed else { return }
        closed = true
        let devices = managed
        managed = []
        for device in devices { await device.stop() }
        scans.finishAll()
        let scanTask = scans.controllerTask
        reconcileControllerScan()  // cancels the controller scan
        await scanTask?.value  // its socket closed and its scan disabled before the transport goes
        for peripheral in connected.values { await peripheral.disconnect() }
        connected = [:]
        if let advertising { await advertising.stop() }
        await securityContext.kernel?.close()
        await central.close()
    }
}

/// The scans of one adapter and the one controller scan that serves them. What it remembers of
/// the devices heard (`known`, each consumer's `given`) is bounded by ``ScanCacheLimits``: at most
/// so many devices each, a device not heard for the expiry forgotten; `now` is the adapter's
/// clock.
package struct ScanHub {
    private struct Consumer {
        var options: ScanOptions
        var continuation: AsyncThrowingStream<Advertisement, any Error>.Continuation
        /// What this consumer was last given of each device.
        var given: ExpiringCache<PeerAddress, Advertisement>
    }

    private var consumers: [Int: Consumer] = [:]
    private var nextID = 0
    /// Every device of the current controller scan, for consumers that join later.
    private var known: ExpiringCache<PeerAddress, Advertisement>
    /// What the caches of consumers that ended had forgotten.
    private var endedEvicted = 0
    private var endedExpired = 0
    var controllerTask: Task<Void, Never>?
    var runningActive: Bool?
    /// Whether the controller scan gives every report (a consumer asked for `everyReport`).
    var runningEveryReport = false
    /// Bumped each time the controller scan is replaced; a superseded scan delivers nothing.
    private(set) var generation = 0

    package init(limits: ScanCacheLimits = ScanCacheLimits()) {
        known = ExpiringCache(limits: limits)
    }

    package var limits: ScanCacheLimits { known.limits }

    /// Devices remembered now, and what every cache of the hub has forgotten so far.
    package var statistics: ScanCacheStatistics {
        var result = ScanCacheStatistics(devices: known.count, evicted: known.evicted + endedEvicted, expired: known.expired + endedExpired)
        for consumer in consumers.values {
            result.evicted += consumer.given.evicted
            result.expired += consumer.given.expired
        }
        return result
    }

    /// The largest of the caches (the known devices and each consumer's).
    package var largestCache: Int { consumers.values.reduce(known.count) { max($0, $1.given.count) } }

    mutating func setLimits(_ limits: ScanCacheLimits, now: Duration) {
        known.setLimits(limits, now: now)
        for id in Array(consumers.keys) {
            guard var consumer = consumers.removeValue(forKey: id) else { continue }
            consumer.given.setLimits(limits, now: now)
            consumers[id] = consumer
        }
    }

    package mutating func add(
        _ options: ScanOptions, _ continuation: AsyncThrowingStream<Advertisement, any Error>.Continuation, now: Duration
    ) -> Int {
        nextID += 1
        var consumer = Consumer(options: options, continuation: continuation, given: ExpiringCache(limits: known.limits))
        known.expire(now: now)
        // A consumer of every report gets reports from now on; another the devices seen so far.
        if !options.everyReport {
            for (peer, advertisement) in known.entries where options.matches(advertisement) {
                consumer.given.set(peer, advertisement, now: now)
                continuation.yield(advertisement)
            }
        }
        consumers[nextID] = consumer
        return nextID
    }

    package mutating func remove(_ id: Int) {
        guard let consumer = consumers.removeValue(forKey: id) else { return }
        endedEvicted += consumer.given.evicted
        endedExpired += consumer.given.expired
    }

    /// Gives the devices seen so far the identity `identify` finds now (bonds change).
    mutating func reidentify(_ identify: (PeerAddress) -> PeerAddress?) {
        known.updateAll { peer, advertisement in advertisement.identity = identify(peer) }
    }

    /// What the controller scan must become, or nil when it is right as it is.
    mutating func change() -> (run: Bool, active: Bool, everyReport: Bool)? {
        let wanted: Bool? = consumers.isEmpty ? nil : consumers.values.contains { $0.options.active }
        let everyReport = consumers.values.contains { $0.options.everyReport }
        guard wanted != runningActive || (wanted != nil && everyReport != runningEveryReport) else { return nil }
        generation += 1
        if wanted == nil { known.removeAll() }
        return (wanted != nil, wanted ?? false, everyReport)
    }

    /// One raw report: to the consumers that asked for every report.
    func deliverReport(_ advertisement: Advertisement) {
        for consumer in consumers.values where consumer.options.everyReport && consumer.options.matches(advertisement) {
            consumer.continuation.yield(advertisement)
        }
    }

    /// A device heard `now`: to every consumer it is new to, or changed for (a device the
    /// consumer was given and still hears unchanged stays remembered as heard now).
    package mutating func deliver(_ advertisement: Advertisement, now: Duration) {
        known.set(advertisement.peer, advertisement, now: now)
        // Each consumer is taken out while its cache changes: held once, its storage is changed in
        // place (iterating the dictionary while changing it would copy the cache every time).
        for id in Array(consumers.keys) {
            guard var consumer = consumers.removeValue(forKey: id) else { continue }
            if !consumer.options.everyReport && consumer.options.matches(advertisement) {
                let previous = consumer.given[advertisement.peer]
                consumer.given.set(advertisement.peer, advertisement, now: now)
                if previous?.data != advertisement.data || previous?.isConnectable != advertisement.isConnectable {
                    consumer.continuation.yield(advertisement)
                }
            }
            consumers[id] = consumer
        }
    }

    /// A report from `peer`, heard `now`: the device stays remembered (its merged data is what
    /// ``deliver(_:now:)`` gave; unchanged reports give no merged event).
    package mutating func heard(_ peer: PeerAddress, now: Duration) {
        guard known.touch(peer, now: now) else { return }
        for id in Array(consumers.keys) {
            guard var consumer = consumers.removeValue(forKey: id) else { continue }
            consumer.given.touch(peer, now: now)
            consumers[id] = consumer
        }
    }

    /// The controller scan ended (with `error`, or by itself): every scan ends with it, and the
    /// next scan starts a new one.
    mutating func ended(_ error: BLEError?) {
        for id in Array(consumers.keys) {
            consumers[id]?.continuation.finish(throwing: error)
            remove(id)
        }
        runningActive = nil
        runningEveryReport = false
        controllerTask = nil
        known.removeAll()
        generation += 1
    }

    package mutating func finishAll() {
        for id in Array(consumers.keys) {
            consumers[id]?.continuation.finish()
            remove(id)
        }
    }
}

/// Addresses of the simulated adapters of this process: `00:1B:DC:E0:6B:NN`, one each.
enum SimulatedAddresses {
    private static let counter = Mutex<UInt16>(0)

    static func next() -> BluetoothAddress {
        let n = counter.withLock { value -> UInt16 in
            value &+= 1
            return value
        }
        return BluetoothAddress(rawValue: 0x001B_DCE0_6B00 &+ UInt64(n))!
    }
}
