import Bluetooth

/// What the host learned about its controller while initialising it.
public struct ControllerInfo: Hashable, Sendable {
    /// The LE ACL data buffers the host must respect when sending (Core Spec 5.4, Vol 4, Part E,
    /// §4.1): packet length and count, from LE Read Buffer Size or, when that reports zero
    /// (buffers shared with BR/EDR), from Read Buffer Size.
    public struct ACLBuffers: Hashable, Sendable {
        public var packetLength: UInt16
        public var packetCount: UInt16
        /// True when the LE buffers are the shared BR/EDR ones.
        public var shared: Bool

        public init(packetLength: UInt16, packetCount: UInt16, shared: Bool) {
            self.packetLength = packetLength
            self.packetCount = packetCount
            self.shared = shared
        }
    }

    public var address: BluetoothAddress
    public var version: ReadLocalVersionInformationCommand.ReturnParameters
    /// `nil` when the controller refused Read Local Supported Commands (pre-1.2 controllers).
    public var supportedCommands: HCISupportedCommands?
    public var lmpFeatures: LMPFeatures
    /// `nil` when the controller refused LE Read Local Supported Features.
    public var leFeatures: LEFeatures?
    public var aclBuffers: ACLBuffers
}

/// The initialisation sequence of an LE host, sans-I/O: it says which command to send next,
/// is fed each command's outcome, and ends with a `ControllerInfo` or the error that stopped it.
///
/// Sequence: Reset; Read Local Version Information; Read Local Supported Commands (optional);
/// Read Local Supported Features; Read BD_ADDR; Set Event Mask; LE Set Event Mask; LE Read
/// Buffer Size [v1] (then Read Buffer Size when the LE buffers are shared); LE Read Local
/// Supported Features (optional). A failure of a required command stops the sequence.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §4.1 (buffers), §7.3.1, §7.3.2, §7.4, §7.8.1–§7.8.3
public struct ControllerInitialization: Sendable {
    public enum Step: Hashable, Sendable {
        case send(HCICommandPacket)
        case finished(ControllerInfo)
        case failed(HCIError)
    }

    /// Events an LE host needs: Disconnection Complete (bit 4), Encryption Change (7), Read Remote
    /// Version Information Complete (11), Hardware Error (15), Data Buffer Overflow (25),
    /// Encryption Key Refresh Complete (47), LE Meta (61).
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.3.1
    public static let leHostEventMask = HCIEventMask(
        rawValue: [4, 7, 11, 15, 25, 47, 61].reduce(UInt64(0)) { $0 | 1 << UInt64($1) })

    /// LE subevents an LE central/peripheral needs: Connection Complete (bit 0), Advertising
    /// Report (1), Connection Update Complete (2), Read Remote Features Complete (3), Long Term
    /// Key Request (4), Remote Connection Parameter Request (5), Data Length Change (6),
    /// Enhanced Connection Complete (9), Directed Advertising Report (10), PHY Update Complete
    /// (11), Extended Advertising Report (12).
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.1
    public static let leHostLEEventMask = HCIEventMask(
        rawValue: [0, 1, 2, 3, 4, 5, 6, 9, 10, 11, 12].reduce(UInt64(0)) { $0 | 1 << UInt64($1) })

    private enum Stage: Int, Sendable {
        case reset, readLocalVersion, readLocalSupportedCommands, readLocalSupportedFeatures, readBDADDR,
            setEventMask, leSetEventMask, leReadBufferSize, readBufferSize, leReadLocalSupportedFeatures, done
    }

    private var stage = Stage.reset
    private let eventMask: HCIEventMask
    private let leEventMask: HCIEventMask

    private var version: ReadLocalVersionInformationCommand.ReturnParameters?
    private var supportedCommands: HCISupportedCommands?
    private var lmpFeatures: LMPFeatures?
    private var address: BluetoothAddress?
    private var aclBuffers: ControllerInfo.ACLBuffers?

    public init(eventMask: HCIEventMask = Self.leHostEventMask, leEventMask: HCIEventMask = Self.leHostLEEventMask) {
        self.eventMask = eventMask
        self.leEventMask = leEventMask
    }

    /// The first step: the Reset command.
    public mutating func start() -> Step {
        stage = .reset
        return command(for: .reset)
    }

    /// The outcome of the command the last step sent; returns the next step.
    public mutating func receive(_ outcome: HCICommandFlow.Outcome) -> Step {
        do throws(HCIError) {
            switch stage {
            case .reset:
                _ = try Self.decode(outcome, ResetCommand.self)
                return advance(to: .readLocalVersion)
            case .readLocalVersion:
                version = try Self.decode(outcome, ReadLocalVersionInformationCommand.self)
                return advance(to: .readLocalSupportedCommands)
            case .readLocalSupportedCommands:
                supportedCommands = try Self.decodeOptional(outcome, ReadLocalSupportedCommandsCommand.self)?
                    .supportedCommands
                return advance(to: .readLocalSupportedFeatures)
            case .readLocalSupportedFeatures:
                lmpFeatures = try Self.decode(outcome, ReadLocalSupportedFeaturesCommand.self).lmpFeatures
                return advance(to: .readBDADDR)
            case .readBDADDR:
                address = try Self.decode(outcome, ReadBDADDRCommand.self).address
                return advance(to: .setEventMask)
            case .setEventMask:
                _ = try Self.decode(outcome, SetEventMaskCommand.self)
                return advance(to: .leSetEventMask)
            case .leSetEventMask:
                _ = try Self.decode(outcome, LESetEventMaskCommand.self)
                return advance(to: .leReadBufferSize)
            case .leReadBufferSize:
                let buffers = try Self.decode(outcome, LEReadBufferSizeV1Command.self)
                if buffers.leACLDataPacketLength == 0 || buffers.totalNumLEACLDataPackets == 0 {
                    return advance(to: .readBufferSize)
                }
                aclBuffers = .init(
                    packetLength: buffers.leACLDataPacketLength, packetCount: UInt16(buffers.totalNumLEACLDataPackets),
                    shared: false)
                return advance(to: .leReadLocalSupportedFeatures)
            case .readBufferSize:
                let buffers = try Self.decode(outcome, ReadBufferSizeCommand.self)
                guard buffers.aclDataPacketLength > 0, buffers.totalNumACLDataPackets > 0 else {
                    throw .malformed(
                        context: "\(ReadBufferSizeCommand.opcode) return parameters",
                        reason: .invalidValue(field: "ACL_Data_Packet_Length", value: Int(buffers.aclDataPacketLength)),
                        offset: 1)
                }
                aclBuffers = .init(
                    packetLength: buffers.aclDataPacketLength, packetCount: buffers.totalNumACLDataPackets, shared: true
                )
                return advance(to: .leReadLocalSupportedFeatures)
            case .leReadLocalSupportedFeatures:
                let leFeatures = try Self.decodeOptional(outcome, LEReadLocalSupportedFeaturesCommand.self)?.leFeatures
                stage = .done
                guard let address, let version, let lmpFeatures, let aclBuffers else {
                    // Unreachable: every earlier stage stored its result before advancing.
                    return .failed(
                        .malformed(
                            context: "controller initialisation",
                            reason: .invalidValue(field: "stage", value: stage.rawValue), offset: 0))
                }
                return .finished(
                    ControllerInfo(
                        address: address, version: version, supportedCommands: supportedCommands,
                        lmpFeatures: lmpFeatures,
                        leFeatures: leFeatures, aclBuffers: aclBuffers))
            case .done:
                return .failed(
                    .malformed(
                        context: "controller initialisation",
                        reason: .invalidValue(field: "outcome after the end", value: 0), offset: 0))
            }
        } catch {
            stage = .done
            return .failed(error)
        }
    }

    // MARK: - Internals

    private mutating func advance(to next: Stage) -> Step {
        stage = next
        return command(for: next)
    }

    private func command(for stage: Stage) -> Step {
        func packet<C: HCICommand>(_ command: C) -> Step {
            do throws(HCIError) {
                return .send(try HCICommandPacket(command))
            } catch {
                return .failed(error)
            }
        }
        switch stage {
        case .reset: return packet(ResetCommand())
        case .readLocalVersion: return packet(ReadLocalVersionInformationCommand())
        case .readLocalSupportedCommands: return packet(ReadLocalSupportedCommandsCommand())
        case .readLocalSupportedFeatures: return packet(ReadLocalSupportedFeaturesCommand())
        case .readBDADDR: return packet(ReadBDADDRCommand())
        case .setEventMask: return packet(SetEventMaskCommand(eventMask: eventMask))
        case .leSetEventMask: return packet(LESetEventMaskCommand(leEventMask: leEventMask))
        case .leReadBufferSize: return packet(LEReadBufferSizeV1Command())
        case .readBufferSize: return packet(ReadBufferSizeCommand())
        case .leReadLocalSupportedFeatures: return packet(LEReadLocalSupportedFeaturesCommand())
        case .done:
            return .failed(
                .malformed(
                    context: "controller initialisation", reason: .invalidValue(field: "stage", value: stage.rawValue),
                    offset: 0))
        }
    }

    /// The typed return of a command answered by Command Complete.
    static func decode<C: HCICommand>(_ outcome: HCICommandFlow.Outcome, _ command: C.Type) throws(HCIError)
        -> C.ReturnParameters
    {
        switch outcome {
        case .complete(let event): return try event.decodeReturn(for: command)
        case .failed(let error): throw error
        case .accepted(let status):
            // A Command-Complete command answered by Command Status: only a failure is legal.
            throw .malformed(
                context: "HCI_Command_Status for \(C.opcode)",
                reason: .invalidValue(field: "Status", value: Int(status.status.rawValue)), offset: 0)
        }
    }

    /// As `decode`, but a refusal by the controller (any failure status) gives nil.
    static func decodeOptional<C: HCICommand>(_ outcome: HCICommandFlow.Outcome, _ command: C.Type) throws(HCIError)
        -> C.ReturnParameters?
    {
        do {
            return try decode(outcome, command)
        } catch {
            if case .commandFailed = error { return nil }
            throw error
        }
    }
}
