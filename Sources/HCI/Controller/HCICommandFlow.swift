import Bluetooth

/// Identifies one command submitted to `HCICommandFlow`, to match its outcome.
public struct HCICommandTicket: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "command #\(rawValue)" }
}

/// HCI command flow control, sans-I/O: which command may go to the controller now, which
/// Command Complete / Command Status answers which command, and when a command has waited too
/// long. Fed with events and time; returns actions for the driver to perform in order.
///
/// Rules (Core Spec 5.4, Vol 4, Part E, §4.4):
/// - The host may have as many commands outstanding as the last Num_HCI_Command_Packets allowed
///   (an absolute count, not an increment); after power-on or reset, one. Each command sent
///   uses one credit.
/// - At most one command per opcode is outstanding, since answers carry only the opcode; a
///   second command with that opcode waits. Commands go out in submission order.
/// - An outstanding command not answered within `commandTimeout` fails with
///   `HCIError.commandTimeout`, and one credit is restored so the host is not wedged (what
///   BlueZ does). If the controller grants zero credits and then stays silent for
///   `commandTimeout`, one credit is restored likewise: every wait is bounded.
/// - Closing fails every outstanding and queued command with `HCIError.transportClosed`.
///
/// Times are `Duration`s since any fixed origin the driver chooses (tests use small numbers).
public struct HCICommandFlow: Sendable {
    /// How a command ended.
    public enum Outcome: Hashable, Sendable {
        /// Answered by HCI_Command_Complete (whatever its status).
        case complete(CommandCompleteEvent)
        /// Accepted by HCI_Command_Status with status success; the command's own event comes later.
        case accepted(CommandStatusEvent)
        /// Refused by HCI_Command_Status (`.commandFailed`), timed out, or the transport closed.
        case failed(HCIError)
    }

    /// What the driver must do, in order.
    public enum Action: Hashable, Sendable {
        /// Write this command to the controller.
        case send(HCICommandPacket)
        /// The command identified by the ticket is over.
        case finish(HCICommandTicket, Outcome)
        /// An event that is not command flow (or an answer no outstanding command matches): hand
        /// it to the layers above. Bytes are the event packet: code, length, parameters.
        case deliver([UInt8])
        /// A Command Complete/Status that did not decode; its credits are lost. For logging.
        case discard([UInt8], HCIError)
    }

    private struct Queued: Sendable {
        var ticket: HCICommandTicket
        var packet: HCICommandPacket
    }

    private struct Outstanding: Sendable {
        var ticket: HCICommandTicket
        var deadline: Duration
    }

    public let commandTimeout: Duration
    /// Commands the controller currently accepts.
    public private(set) var credits: Int = 1
    private var queue: [Queued] = []
    private var queueStart = 0
    private var outstanding: [HCIOpcode: Outstanding] = [:]
    /// When zero credits will be assumed lost (set while credits are 0 and nothing is outstanding).
    private var creditStallDeadline: Duration?
    private var lastTicket: UInt64 = 0
    private var closedReason: String?

    public init(commandTimeout: Duration = .seconds(2)) {
        self.commandTimeout = commandTimeout
    }

    /// Commands submitted and not yet sent.
    public var queuedCount: Int { queue.count - queueStart }
    /// Opcodes sent and not yet answered.
    public var outstandingOpcodes: Set<HCIOpcode> { Set(outstanding.keys) }
    public var isClosed: Bool { closedReason != nil }

    /// The earliest time `expire(now:)` has something to do, or nil.
    public var nextDeadline: Duration? {
        let earliest = outstanding.values.map(\.deadline).min()
        switch (earliest, creditStallDeadline) {
        case (let a?, let b?): return min(a, b)
        case (let a?, nil): return a
        case (nil, let b): return b
        }
    }

    // MARK: - Inputs

    /// Queues `packet`; returns its ticket and what to do now (send it, if credits allow).
    public mutating func submit(_ packet: HCICommandPacket, now: Duration) -> (HCICommandTicket, [Action]) {
        lastTicket += 1
        let ticket = HCICommandTicket(rawValue: lastTicket)
        if let closedReason {
            return (ticket, [.finish(ticket, .failed(.transportClosed(closedReason)))])
        }
        queue.append(Queued(ticket: ticket, packet: packet))
        var actions: [Action] = []
        pump(now: now, into: &actions)
        return (ticket, actions)
    }

    /// An HCI event packet (code, length, parameters) from the controller.
    public mutating func receiveEvent(_ event: [UInt8], now: Duration) -> [Action] {
        guard closedReason == nil else { return [] }
        guard event.count >= 2,
            event[0] == CommandCompleteEvent.eventCode.rawValue || event[0] == CommandStatusEvent.eventCode.rawValue
        else { return [.deliver(event)] }

        var actions: [Action] = []
        var reader = ByteReader(event[2...])
        do throws(HCIError) {
            guard Int(event[1]) == event.count - 2 else {
                throw .malformed(
                    context: "HCI event header",
                    reason: .invalidLength(field: "Parameter_Total_Length", value: Int(event[1])), offset: 1)
            }
            if event[0] == CommandCompleteEvent.eventCode.rawValue {
                let complete = try CommandCompleteEvent(parsing: &reader)
                grant(complete.numHCICommandPackets)
                if complete.opcode.rawValue != 0x0000 {
                    if let owner = outstanding.removeValue(forKey: complete.opcode) {
                        actions.append(.finish(owner.ticket, .complete(complete)))
                    } else {
                        actions.append(.deliver(event))
                    }
                }
            } else {
                let status = try CommandStatusEvent(parsing: &reader)
                grant(status.numHCICommandPackets)
                if status.opcode.rawValue != 0x0000 {
                    if let owner = outstanding.removeValue(forKey: status.opcode) {
                        let outcome: Outcome =
                            status.status == .success
                            ? .accepted(status) : .failed(.commandFailed(opcode: status.opcode, status: status.status))
                        actions.append(.finish(owner.ticket, outcome))
                    } else {
                        actions.append(.deliver(event))
                    }
                }
            }
        } catch {
            return [.discard(event, error)]
        }
        pump(now: now, into: &actions)
        return actions
    }

    /// Time has passed: fails the commands whose answer is overdue and lifts a credit stall.
    public mutating func expire(now: Duration) -> [Action] {
        guard closedReason == nil else { return [] }
        var actions: [Action] = []
        let overdue = outstanding.filter { $0.value.deadline <= now }.sorted { $0.value.ticket < $1.value.ticket }
        for (opcode, owner) in overdue {
            outstanding[opcode] = nil
            actions.append(.finish(owner.ticket, .failed(.commandTimeout(opcode: opcode))))
        }
        if !overdue.isEmpty { credits = max(credits, 1) }
        if let stall = creditStallDeadline, stall <= now {
            creditStallDeadline = nil
            credits = max(credits, 1)
        }
        pump(now: now, into: &actions)
        return actions
    }

    /// The transport closed (or the host is shutting down): everything pending fails.
    public mutating func close(reason: String) -> [Action] {
        guard closedReason == nil else { return [] }
        closedReason = reason
        var actions: [Action] = []
        for owner in outstanding.values.sorted(by: { $0.ticket < $1.ticket }) {
            actions.append(.finish(owner.ticket, .failed(.transportClosed(reason))))
        }
        for queued in queue[queueStart...] {
            actions.append(.finish(queued.ticket, .failed(.transportClosed(reason))))
        }
        outstanding.removeAll()
        queue.removeAll()
        queueStart = 0
        creditStallDeadline = nil
        return actions
    }

    // MARK: - Internals

    private mutating func grant(_ numHCICommandPackets: UInt8) {
        credits = Int(numHCICommandPackets)
        creditStallDeadline = nil
    }

    /// Sends queued commands, in order, while credits last and the head's opcode is free.
    private mutating func pump(now: Duration, into actions: inout [Action]) {
        while queueStart < queue.count, credits > 0 {
            let head = queue[queueStart]
            guard outstanding[head.packet.opcode] == nil else { break }
            queueStart += 1
            credits -= 1
            outstanding[head.packet.opcode] = Outstanding(ticket: head.ticket, deadline: now + commandTimeout)
            actions.append(.send(head.packet))
        }
        if queueStart == queue.count {
            queue.removeAll(keepingCapacity: true)
            queueStart = 0
        } else if queueStart > 64 {
            queue.removeFirst(queueStart)
            queueStart = 0
        }
        // Zero credits, nothing outstanding to bring more, something waiting: bound the wait.
        if credits == 0, outstanding.isEmpty, queueStart < queue.count {
            if creditStallDeadline == nil { creditStallDeadline = now + commandTimeout }
        } else {
            creditStallDeadline = nil
        }
    }
}
