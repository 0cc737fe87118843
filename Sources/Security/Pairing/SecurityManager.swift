import Bluetooth
import L2CAP

/// What the Security Manager of one connection needs from the host: the SMP PDUs the peer sends,
/// a way to send ours, and encryption with a key.
public struct SecurityManagerIO: Sendable {
    /// The peer's SMP PDUs on this connection, in order; finishes when the link ends.
    public var incoming: AsyncStream<[UInt8]>
    /// Sends one SMP PDU.
    public var send: @Sendable ([UInt8]) throws -> Void
    /// Encrypts the link with a key (LE Enable Encryption) and gives Encryption Change's status
    /// (0 success) and whether the link is encrypted.
    public var encrypt: @Sendable (LongTermKey) async throws -> (status: UInt8, enabled: Bool)

    public init(
        incoming: AsyncStream<[UInt8]>, send: @escaping @Sendable ([UInt8]) throws -> Void,
        encrypt: @escaping @Sendable (LongTermKey) async throws -> (status: UInt8, enabled: Bool)
    ) {
        self.incoming = incoming
        self.send = send
        self.encrypt = encrypt
    }
}

/// The user's side of a pairing: show a passkey, ask for one, confirm a number.
public protocol PairingAgent: Sendable {
    /// Show `passkey` (six digits, leading zeros kept) for the peer's user to enter.
    func displayPasskey(_ passkey: UInt32) async
    /// The passkey the peer displays; nil when the user gives none.
    func enterPasskey() async -> UInt32?
    /// Whether both devices show `number` (six digits).
    func confirm(_ number: UInt32) async -> Bool
}

/// The Security Manager of one connection, as central: runs a ``PairingInitiator`` over the
/// connection's SMP channel, with the 30 s SMP timer and the user's agent; reports the peer's
/// Security Requests; refuses what a central is never sent (a Pairing Request).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §3.4 (timeout), §2.4.6 (repeated attempts)
public actor SecurityManager {
    /// The SMP timer (§3.4).
    public static let timeout = Duration.seconds(30)

    private let io: SecurityManagerIO
    private let addresses: PairingInitiator.Addresses
    private let identity: IdentityAddressInformation
    private let localIRK: [UInt8]?
    private let clock: any BluetoothClock
    private let random: @Sendable (Int) -> [UInt8]
    private var initiator: PairingInitiator?
    private var agent: (any PairingAgent)?
    private var waiter: CheckedContinuation<Result<PairingResult, PairingFailure>, Never>?
    private var timer: ScheduledTimer?
    private var timerGeneration = 0
    /// After an SMP timeout no more SMP is exchanged on the link (§3.4).
    private var timedOut = false
    /// Bumped when a pairing ends: actions of an ended pairing are not performed.
    private var pairingGeneration = 0
    private var pump: Task<Void, Never>?
    private let requestContinuation: AsyncStream<AuthenticationRequirements>.Continuation

    /// The peer's Security Requests (its AuthReq), while no pairing runs.
    public nonisolated let securityRequests: AsyncStream<AuthenticationRequirements>

    public init(
        io: SecurityManagerIO, addresses: PairingInitiator.Addresses, identity: IdentityAddressInformation,
        localIRK: [UInt8]? = nil, clock: any BluetoothClock = SystemClock(),
        random: @escaping @Sendable (Int) -> [UInt8] = SecureRandom.bytes
    ) {
        self.io = io
        self.addresses = addresses
        self.identity = identity
        self.localIRK = localIRK
        self.clock = clock
        self.random = random
        (securityRequests, requestContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Starts reading the connection's SMP channel (once).
    public func start() {
        guard pump == nil else { return }
        let incoming = io.incoming
        pump = Task { [weak self] in
            for await pdu in incoming { await self?.received(pdu) }
            await self?.linkEnded()
        }
    }

    /// Pairs as initiator and returns the keys, or throws why it did not.
    public func pair(_ options: PairingOptions, agent: any PairingAgent) async throws(PairingFailure) -> PairingResult {
        start()
        guard !timedOut else { throw .timeout }
        guard initiator?.isActive != true, waiter == nil else {
            throw .local(.unspecifiedReason, "a pairing is already running on this link")
        }
        self.agent = agent
        var machine = PairingInitiator(
            options: options, addresses: addresses, identity: identity, random: random, localIRK: localIRK)
        var actions: [PairingInitiator.Action] = []
        machine.start(into: &actions)
        initiator = machine
        let result = await withCheckedContinuation { continuation in
            waiter = continuation
            Task { await self.perform(actions) }
        }
        return try result.get()
    }

    /// Encrypts the link with a stored key (no SMP).
    public func encrypt(with key: LongTermKey) async throws -> (status: UInt8, enabled: Bool) {
        try await io.encrypt(key)
    }

    // MARK: - Driving the state machine

    private func received(_ pdu: [UInt8]) async {
        guard !timedOut else { return }
        if var machine = initiator, machine.isActive {
            var actions: [PairingInitiator.Action] = []
            machine.receive(pdu[...], into: &actions)
            initiator = machine
            await perform(actions)
            return
        }
        // No pairing runs: a central answers a Pairing Request with Command Not Supported
        // (only peripherals respond to it) and hears a Security Request.
        switch pdu.first {
        case SecurityManagerCode.pairingRequest.rawValue:
            try? io.send(PairingFailed(reason: .commandNotSupported).encode())
        case SecurityManagerCode.securityRequest.rawValue:
            var reader = ByteReader(pdu)
            if let request = try? SecurityRequest(parsing: &reader) {
                requestContinuation.yield(AuthenticationRequirements(rawValue: request.authenticationRequirements))
            }
        default:
            break
        }
    }

    private func perform(_ actions: [PairingInitiator.Action]) async {
        let generation = pairingGeneration
        for action in actions {
            // Actions computed before an await (the user's answer, the encryption) are stale once
            // the pairing ended meanwhile (a timeout, the peer's Pairing Failed): none is performed.
            guard generation == pairingGeneration else { return }
            switch action {
            case .send(let pdu):
                do {
                    try io.send(pdu)
                    armTimer()
                } catch {
                    finish(.failure(.local(.unspecifiedReason, "sending SMP: \(error)")))
                    return
                }
            case .displayPasskey(let passkey):
                await agent?.displayPasskey(passkey)
            case .requestPasskey:
                let value = await agent?.enterPasskey()
                await step { $0.passkeyEntered(value, into: &$1) }
            case .confirmNumber(let number):
                let matches = await agent?.confirm(number) ?? false
                await step { $0.comparisonAnswered(matches, into: &$1) }
            case .startEncryption(let key):
                let status: UInt8
                let enabled: Bool
                do {
                    (status, enabled) = try await io.encrypt(key)
                } catch {
                    (status, enabled) = (0xFF, false)
                }
                await step { $0.encryptionChanged(status: status, enabled: enabled, into: &$1) }
            case .completed(let result):
                finish(.success(result))
            case .failed(let failure):
                if failure == .timeout { timedOut = true }
                finish(.failure(failure))
            }
        }
    }

    /// Feeds one input to the state machine and performs what it returns.
    private func step(_ input: (inout PairingInitiator, inout [PairingInitiator.Action]) -> Void) async {
        guard var machine = initiator else { return }
        var actions: [PairingInitiator.Action] = []
        input(&machine, &actions)
        initiator = machine
        await perform(actions)
    }

    private func armTimer() {
        timer?.cancel()
        timerGeneration += 1
        let generation = timerGeneration
        timer = clock.schedule(after: Self.timeout) { [weak self] in await self?.timerFired(generation) }
    }

    private func timerFired(_ generation: Int) async {
        guard generation == timerGeneration, initiator?.isActive == true else { return }
        await step { $0.timerExpired(into: &$1) }
    }

    private func finish(_ result: Result<PairingResult, PairingFailure>) {
        pairingGeneration += 1
        timer?.cancel()
        timer = nil
        agent = nil
        waiter?.resume(returning: result)
        waiter = nil
    }

    private func linkEnded() {
        requestContinuation.finish()
        if initiator?.isActive == true || waiter != nil {
            finish(.failure(.local(.unspecifiedReason, "the link ended during pairing")))
        }
    }
}

/// Random octets from the operating system (getrandom(2)).
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}
