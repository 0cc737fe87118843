import Bluetooth
import L2CAP

/// The Security Manager of one connection where we are peripheral: answers the central's
/// Pairing Request with a ``PairingResponder`` (the user's agent, the 30 s timer), hands the key
/// the central will encrypt with to the host's LE Long Term Key Request, and reports the keys
/// when pairing completes. A Security Request can be sent to ask the central to secure the link.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.3, §3.4, §3.6.7
public actor PeripheralSecurityManager {
    private let incoming: AsyncStream<[UInt8]>
    private let send: @Sendable ([UInt8]) throws -> Void
    private let encryptionChanges: AsyncStream<(status: UInt8, enabled: Bool)>
    private let addresses: PairingInitiator.Addresses
    private let identity: IdentityAddressInformation
    private let localIRK: [UInt8]?
    private let clock: any BluetoothClock
    private let random: @Sendable (Int) -> [UInt8]
    private let optionsProvider: @Sendable () -> PairingOptions?
    private let agent: any PairingAgent
    private let completed: @Sendable (Result<PairingResult, PairingFailure>) async -> Void
    /// Asked at each Pairing Request: nil to pair, else the wait left (repeated attempts).
    private let attempt: @Sendable () -> Duration?
    private var responder: PairingResponder?
    /// The key of the pairing in progress, for the central's encryption.
    private var pendingKey: LongTermKey?
    private var timer: ScheduledTimer?
    private var timerGeneration = 0
    private var timedOut = false
    private var tasks: [Task<Void, Never>] = []

    /// - Parameters:
    ///   - options: the pairing options now, or nil to refuse pairing (Pairing Not Supported).
    ///   - attempt: asked at each Pairing Request (§2.3.6): nil lets it start; a wait refuses
    ///     it with Pairing Failed (Repeated Attempts).
    ///   - completed: each pairing's end.
    public init(
        incoming: AsyncStream<[UInt8]>, send: @escaping @Sendable ([UInt8]) throws -> Void,
        encryptionChanges: AsyncStream<(status: UInt8, enabled: Bool)>, addresses: PairingInitiator.Addresses,
        identity: IdentityAddressInformation, localIRK: [UInt8]? = nil, options: @escaping @Sendable () -> PairingOptions?,
        agent: any PairingAgent, clock: any BluetoothClock = SystemClock(),
        random: @escaping @Sendable (Int) -> [UInt8] = SecureRandom.bytes,
        attempt: @escaping @Sendable () -> Duration? = { nil },
        completed: @escaping @Sendable (Result<PairingResult, PairingFailure>) async -> Void
    ) {
        self.attempt = attempt
        self.incoming = incoming
        self.send = send
        self.encryptionChanges = encryptionChanges
        self.addresses = addresses
        self.identity = identity
        self.localIRK = localIRK
        self.optionsProvider = options
        self.agent = agent
        self.clock = clock
        self.random = random
        self.completed = completed
    }

    /// Starts reading the SMP channel and the link's encryption changes (once).
    public func start() {
        guard tasks.isEmpty else { return }
        let incoming = incoming
        let changes = encryptionChanges
        tasks.append(Task { [weak self] in
            for await pdu in incoming { await self?.received(pdu) }
            await self?.linkEnded()
        })
        tasks.append(Task { [weak self] in
            for await change in changes { await self?.encryptionChanged(change.status, change.enabled) }
        })
    }

    /// The key of the pairing in progress when the central asks for it (EDIV and Rand zero: the
    /// STK or the Secure Connections LTK); nil when there is none.
    public func pairingKey(rand: UInt64, ediv: UInt16) -> [UInt8]? {
        guard rand == 0, ediv == 0 else { return nil }
        return pendingKey?.key
    }

    /// What the key of the pairing in progress protects, for the level of the link it encrypts
    /// (the STK or the LTK; key distribution runs on that link, and the central may use it as
    /// soon as its own side of the pairing ends): nil when ``pairingKey(rand:ediv:)`` has none.
    public func pairingKeyProtection(rand: UInt64, ediv: UInt16)
        -> (authenticated: Bool, secureConnections: Bool, keySize: Int)?
    {
        guard rand == 0, ediv == 0, pendingKey != nil, let responder else { return nil }
        return (responder.method.isAuthenticated, responder.secureConnections, responder.keySize)
    }

    /// Asks the central to secure the link (Security Request, §3.6.7).
    public func requestSecurity(_ requirements: AuthenticationRequirements) {
        guard !timedOut, responder?.isActive != true else { return }
        try? send(SecurityRequest(authenticationRequirements: requirements.rawValue).encodedBytes)
    }

    private func received(_ pdu: [UInt8]) async {
        guard !timedOut else { return }
        if pdu.first == SecurityManagerCode.pairingRequest.rawValue, responder?.isActive != true {
            guard let options = optionsProvider() else {
                try? send(PairingFailed(reason: .pairingNotSupported).encode())
                return
            }
            if attempt() != nil {
                try? send(PairingFailed(reason: .repeatedAttempts).encode())
                return
            }
            responder = PairingResponder(
                options: options, addresses: addresses, identity: identity, random: random, localIRK: localIRK)
            pendingKey = nil
        }
        guard var machine = responder else {
            // No pairing runs and this is no Pairing Request: a peripheral ignores it (§3.3).
            return
        }
        var actions: [PairingResponder.Action] = []
        machine.receive(pdu[...], into: &actions)
        responder = machine
        await perform(actions)
    }

    private func encryptionChanged(_ status: UInt8, _ enabled: Bool) async {
        await step { $0.encryptionChanged(status: status, enabled: enabled, into: &$1) }
    }

    private func perform(_ actions: [PairingResponder.Action]) async {
        for action in actions {
            switch action {
            case .send(let pdu):
                do {
                    try send(pdu)
                    armTimer()
                } catch {
                    await end(.failure(.local(.unspecifiedReason, "sending SMP: \(error)")))
                    return
                }
            case .displayPasskey(let passkey):
                await agent.displayPasskey(passkey)
            case .requestPasskey:
                let value = await agent.enterPasskey()
                await step { $0.passkeyEntered(value, into: &$1) }
            case .confirmNumber(let number):
                let matches = await agent.confirm(number)
                await step { $0.comparisonAnswered(matches, into: &$1) }
            case .keyReady(let key):
                pendingKey = key
            case .completed(let result):
                await end(.success(result))
            case .failed(let failure):
                if failure == .timeout { timedOut = true }
                await end(.failure(failure))
            }
        }
    }

    private func step(_ input: (inout PairingResponder, inout [PairingResponder.Action]) -> Void) async {
        guard var machine = responder else { return }
        var actions: [PairingResponder.Action] = []
        input(&machine, &actions)
        responder = machine
        await perform(actions)
    }

    private func armTimer() {
        timer?.cancel()
        timerGeneration += 1
        let generation = timerGeneration
        timer = clock.schedule(after: SecurityManager.timeout) { [weak self] in await self?.timerFired(generation) }
    }

    private func timerFired(_ generation: Int) async {
        guard generation == timerGeneration, responder?.isActive == true else { return }
        await step { $0.timerExpired(into: &$1) }
    }

    /// Whether a pairing runs now (from its Pairing Request to its end).
    public var pairingInProgress: Bool { responder?.isActive == true }

    private func end(_ result: Result<PairingResult, PairingFailure>) async {
        timer?.cancel()
        timer = nil
        // Ended either way: the key is the bond's from now on (or nobody's), never handed out
        // again as "the pairing in progress".
        pendingKey = nil
        await completed(result)
    }

    private func linkEnded() {
        timer?.cancel()
        for task in tasks { task.cancel() }
    }
}

extension SecurityRequest {
    /// The command's octets.
    public var encodedBytes: [UInt8] {
        var writer = ByteWriter(capacity: Self.encodedLength)
        write(to: &writer)
        return writer.bytes
    }
}
