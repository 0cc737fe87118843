import ATT
import Bluetooth
import GATT
import HCI
import L2CAP
import Security
import Synchronization

/// An emulated medical thermometer that requires pairing: the Health Thermometer service
/// (0x1809) whose Temperature Type (0x2A1D) reads and whose Temperature Measurement (0x2A1C)
/// indications are enabled only on an authenticated link. It pairs as responder with IO
/// capability DisplayOnly (so a central with a keyboard gets Passkey Entry, MITM-protected;
/// Secure Connections or legacy), shows its passkey through `display` (the simulation's log)
/// and in ``displayedPasskey`` (tests), and keeps its bonds in memory for the simulation's
/// life, so a bonded central re-encrypts without pairing. Not in the default `sim` set: name
/// it (`sim:thermometer`).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.3.5.1 (Table 2.8); Health Thermometer Service 1.0
public final class EmulatedThermometer: VirtualPeripheral {
    public let address: BluetoothAddress
    public let addressType = AddressType.random
    public let advertisingData: [UInt8]
    public let scanResponseData: [UInt8]
    public let isConnectable = true
    public let peripheral: GATTPeripheral

    public static let deviceName = "Secure Thermometer"
    /// A random static address (two top bits set).
    public static let defaultAddress = BluetoothAddress("C4:7E:11:09:2A:1C")!
    public static let service = BluetoothUUID.bit16(0x1809)
    public static let temperatureMeasurement = BluetoothUUID.bit16(0x2A1C)
    public static let temperatureType = BluetoothUUID.bit16(0x2A1D)
    /// 36.6 °C as an IEEE-11073 FLOAT (mantissa 366, exponent −1), Celsius, no time stamp.
    public static let measurement: [UInt8] = [0x00, 0x6E, 0x01, 0x00, 0xFF]

    private struct Bond {
        var secureConnections: Bool
        /// The key the central encrypts with: the Secure Connections LTK, or the legacy LTK we
        /// distributed with its EDIV and Rand.
        var key: LongTermKey
        var level: SecurityLevel
    }

    private struct State {
        var bonds: [BluetoothAddress: Bond] = [:]
        var manager: PeripheralSecurityManager?
        var smp: AsyncStream<[UInt8]>.Continuation?
        var encryption: AsyncStream<(status: UInt8, enabled: Bool)>.Continuation?
        var sender: Task<Void, Never>?
        var central: BluetoothAddress?
        /// The level the next Encryption Change gives (bond or pairing).
        var pendingLevel: SecurityLevel?
        var displayed: UInt32?
    }

    private let state = Mutex(State())
    private let display: @Sendable (String) -> Void
    private let clock: any BluetoothClock
    private let logger: Logger

    /// The passkey the thermometer showed last (nil before any pairing that shows one).
    public var displayedPasskey: UInt32? { state.withLock { $0.displayed } }

    public init(
        address: BluetoothAddress = EmulatedThermometer.defaultAddress, clock: any BluetoothClock = SystemClock(),
        logger: Logger = .disabled, display: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(GATTError) {
        self.address = address
        self.clock = clock
        self.logger = logger
        self.display = display
        // Flags 0x06, Complete List of 16-bit Service UUIDs: Health Thermometer.
        advertisingData = [0x02, 0x01, 0x06, 0x03, 0x03, 0x09, 0x18]
        let name = Array(Self.deviceName.utf8)
        scanResponseData = [UInt8(name.count + 1), 0x09] + name
        let database = try AttributeDatabase(services: Self.services())
        peripheral = GATTPeripheral(
            database: database, rxMTU: ATTPDU.defaultLEMTU,
            firmware: ThermometerFirmware(measurement: database.valueHandle(of: Self.temperatureMeasurement) ?? 0),
            clock: clock, logger: logger)
    }

    /// GAP, GATT and Health Thermometer; the thermometer's data needs an authenticated link.
    public static func services() -> [ServiceDefinition] {
        [
            ServiceDefinition(
                uuid: GATTUUID.genericAccess,
                characteristics: [
                    CharacteristicDefinition(
                        uuid: GATTUUID.deviceName, properties: [.read], value: Array(deviceName.utf8), maximumLength: 31),
                    // Appearance: Generic Thermometer (0x0300).
                    CharacteristicDefinition(
                        uuid: GATTUUID.appearance, properties: [.read], value: [0x00, 0x03], maximumLength: 2,
                        isFixedLength: true),
                ]),
            StandardServices.genericAttributeWithServiceChangedOnly(),
            ServiceDefinition(
                uuid: service,
                characteristics: [
                    CharacteristicDefinition(
                        uuid: temperatureMeasurement, properties: [.indicate], permissions: [], value: measurement,
                        maximumLength: 13,
                        descriptors: [.clientConfiguration(permissions: [.read, .write, .writeAuthenticated])]),
                    // Temperature Type: Body (general), 0x02.
                    CharacteristicDefinition(
                        uuid: temperatureType, properties: [.read], permissions: [.read, .readAuthenticated], value: [0x02],
                        maximumLength: 1, isFixedLength: true),
                ]),
        ]
    }

    // MARK: VirtualPeripheral

    public func connected(_ link: VirtualLinkConnection) async {
        let (smp, smpContinuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingNewest(16))
        let (changes, changesContinuation) = AsyncStream.makeStream(
            of: (status: UInt8, enabled: Bool).self, bufferingPolicy: .bufferingNewest(4))
        // SMP PDUs leave in order through one task.
        let (outgoing, outgoingContinuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingNewest(16))
        let sender = Task {
            for await pdu in outgoing {
                guard await link.send(channelID: L2CAPBasicFrame.securityManagerCID, payload: pdu) else { return }
            }
        }
        let central = link.centralAddress
        let manager = PeripheralSecurityManager(
            incoming: smp, send: { pdu in outgoingContinuation.yield(pdu) }, encryptionChanges: changes,
            addresses: PairingInitiator.Addresses(
                initiator: central, initiatorType: link.centralAddressType, responder: address, responderType: addressType),
            identity: IdentityAddressInformation(addressType: addressType, address: address),
            options: { PairingOptions(ioCapability: .displayOnly) },
            agent: ThermometerDisplay(device: self), clock: clock,
            completed: { [weak self] result in await self?.pairingEnded(result, central: central) })
        let previous = state.withLock { state -> Task<Void, Never>? in
            let previous = state.sender
            state.smp?.finish()
            state.encryption?.finish()
            state.manager = manager
            state.smp = smpContinuation
            state.encryption = changesContinuation
            state.sender = sender
            state.central = central
            state.pendingLevel = nil
            return previous
        }
        previous?.cancel()
        await manager.start()
        await peripheral.connected(link)
    }

    public func received(_ frame: L2CAPBasicFrame) async {
        guard frame.channelID == L2CAPBasicFrame.securityManagerCID else {
            await peripheral.received(frame)
            return
        }
        _ = state.withLock { $0.smp }?.yield(Array(frame.payload))
    }

    public func disconnected(reason: HCIStatus) async {
        let sender = state.withLock { state -> Task<Void, Never>? in
            state.smp?.finish()
            state.encryption?.finish()
            state.smp = nil
            state.encryption = nil
            state.manager = nil
            state.central = nil
            defer { state.sender = nil }
            return state.sender
        }
        sender?.cancel()
        await peripheral.disconnected(reason: reason)
    }

    public func connectionParametersChanged(_ parameters: VirtualLinkConnection.Parameters) async {
        await peripheral.connectionParametersChanged(parameters)
    }

    public func longTermKeyRequested(rand: UInt64, ediv: UInt16) async -> [UInt8]? {
        guard let (manager, central) = state.withLock({ state in state.manager.map { ($0, state.central) } }) else {
            return nil
        }
        if let key = await manager.pairingKey(rand: rand, ediv: ediv) {
            // Key distribution runs on the link this key encrypts: it has the pairing's level.
            if let protection = await manager.pairingKeyProtection(rand: rand, ediv: ediv) {
                let level = SecurityLevel.of(
                    authenticated: protection.authenticated, secureConnections: protection.secureConnections,
                    keySize: protection.keySize)
                state.withLock { $0.pendingLevel = level }
            }
            return key
        }
        return state.withLock { state -> [UInt8]? in
            guard let central, let bond = state.bonds[central] else { return nil }
            let matches =
                bond.secureConnections ? (rand == 0 && ediv == 0) : (bond.key.rand == rand && bond.key.ediv == ediv)
            guard matches else { return nil }
            state.pendingLevel = bond.level
            return bond.key.key
        }
    }

    public func encryptionChanged(refreshed: Bool) async {
        let (continuation, level) = state.withLock { ($0.encryption, $0.pendingLevel) }
        continuation?.yield((0, true))
        if let level { await peripheral.setLinkSecurity(level) }
    }

    // MARK: Pairing

    fileprivate func show(_ passkey: UInt32) {
        state.withLock { $0.displayed = passkey }
        let digits = String(passkey)
        display(
            "sim: \(Self.deviceName) \(address) shows passkey "
                + String(repeating: "0", count: max(0, 6 - digits.count)) + digits)
    }

    private func pairingEnded(_ result: Result<PairingResult, PairingFailure>, central: BluetoothAddress) async {
        switch result {
        case .success(let pairing):
            let level = SecurityLevel.of(
                authenticated: pairing.authenticated, secureConnections: pairing.secureConnections,
                keySize: pairing.keySize)
            let key = pairing.secureConnections ? pairing.peerLTK : pairing.localLTK
            state.withLock { state in
                state.pendingLevel = level
                if pairing.bonded, let key {
                    state.bonds[central] = Bond(secureConnections: pairing.secureConnections, key: key, level: level)
                }
            }
            await peripheral.setLinkSecurity(level)
        case .failure(let failure):
            logger.info("thermometer: pairing with \(central) failed: \(failure)")
        }
    }
}

/// The thermometer's display: shows the passkey; it has no keyboard and no yes/no button.
private struct ThermometerDisplay: PairingAgent {
    let device: EmulatedThermometer
    func displayPasskey(_ passkey: UInt32) async { device.show(passkey) }
    func enterPasskey() async -> UInt32? { nil }
    func confirm(_ number: UInt32) async -> Bool { false }
}

/// Indicates a measurement whenever a central enables indications.
struct ThermometerFirmware: GATTPeripheralFirmware {
    let measurement: UInt16

    func checkWrite(handle: UInt16, value: [UInt8]) -> ATTErrorCode? { nil }

    func handle(_ event: GATTPeripheralEvent, peripheral: GATTPeripheral) async {
        if case .subscriptionChanged(let handle, let configuration) = event, handle == measurement,
            configuration.contains(.indications)
        {
            try? await peripheral.updateValue(EmulatedThermometer.measurement, handle: measurement)
        }
    }
}
