import HCI

/// Link control on an open connection: the PHY (LE Set PHY, LE Read PHY), the data length (LE
/// Set Data Length) and the RSSI (Read RSSI). A controller that does not know a command refuses
/// it (Unknown HCI Command, Unsupported Feature), or never answers it — Bumble's controller
/// leaves LE Set PHY unanswered — and then the command flow's timeout ends the request and gives
/// the command credit back: the request fails, the link goes on.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.5.4, §7.8.33, §7.8.47, §7.8.49, §7.7.65.12
extension LEHostCore {
    /// The largest TX_Octets and TX_Time LE Set Data Length takes (0x001B–0x00FB, 0x0148–0x4290).
    public static let dataLengthOctets: ClosedRange<UInt16> = 27...251
    public static let dataLengthTime: ClosedRange<UInt16> = 328...17040
    /// How long LE Set Data Length waits for LE Data Length Change after Command Complete before
    /// taking it that nothing changed (the controller then sends none); the data length update
    /// procedure takes a few connection events.
    public static let dataLengthChangeWait: Duration = .seconds(1)

    /// The TX time that carries `octets` on LE 1M, the slowest uncoded PHY: (octets + 14) × 8 µs
    /// (preamble, access address, header and MIC), as the Core derives connMaxTxTime.
    /// - SeeAlso: Core Spec 5.4, Vol 6, Part B, §4.5.10
    public static func dataLengthTime(forOctets octets: UInt16) -> UInt16 {
        min(dataLengthTime.upperBound, max(dataLengthTime.lowerBound, (octets + 14) * 8))
    }

    mutating func controlLink(_ request: Request, _ id: RequestID, now: Duration, into actions: inout [Action]) {
        let handle: UInt16
        switch request {
        case .setPHY(let h, _, _, _), .readPHY(let h), .setDataLength(let h, _, _), .readRSSI(let h): handle = h
        default: return
        }
        guard links[handle]?.open == true else {
            actions.append(.complete(id, .failed(.notConnected(handle: handle))))
            return
        }
        switch request {
        case .setPHY(_, let tx, let rx, let options):
            let known: LEPHYMask = [.le1M, .le2M, .leCoded]
            guard tx.isSubset(of: known), rx.isSubset(of: known) else {
                actions.append(.complete(id, .failed(.invalidArgument("PHYs \(tx)/\(rx): only LE 1M, LE 2M and LE Coded exist"))))
                return
            }
            var all: LEAllPHYsPreference = []
            if tx.isEmpty { all.insert(.noTXPreference) }
            if rx.isEmpty { all.insert(.noRXPreference) }
            procedures[id] = Procedure(kind: .phy, handle: handle)
            send(
                LESetPHYCommand(connectionHandle: handle, allPHYs: all, txPHYs: tx, rxPHYs: rx, phyOptions: options),
                .procedure(id), now: now, into: &actions)
        case .readPHY:
            send(LEReadPHYCommand(connectionHandle: handle), .query(id), now: now, into: &actions)
        case .setDataLength(_, let octets, let time):
            guard Self.dataLengthOctets.contains(octets), Self.dataLengthTime.contains(time) else {
                actions.append(
                    .complete(
                        id, .failed(.invalidArgument("data length \(octets) octets, \(time) µs: 27…251 octets, 328…17040 µs"))))
                return
            }
            procedures[id] = Procedure(kind: .dataLength, handle: handle)
            send(
                LESetDataLengthCommand(connectionHandle: handle, txOctets: octets, txTime: time), .procedure(id), now: now,
                into: &actions)
        case .readRSSI:
            send(ReadRSSICommand(handle: handle), .query(id), now: now, into: &actions)
        default:
            return
        }
    }

    /// The result of a command answered by Command Complete: its return parameters, or the
    /// refusal, the timeout, the closed transport.
    static func queryResult(_ outcome: HCICommandFlow.Outcome) -> Result {
        switch outcome {
        case .failed(let error):
            return .failed(.hci(error))
        case .accepted(let status):
            // Command Status with success for a command answered by Command Complete: malformed.
            return .failed(
                .hci(
                    .malformed(
                        context: "\(status.opcode)", reason: .invalidValue(field: "Command_Status", value: 0), offset: 0)))
        case .complete(let event):
            do throws(HCIError) {
                switch event.opcode {
                case ReadRSSICommand.opcode:
                    return .rssi(try event.decodeReturn(for: ReadRSSICommand.self).rssi)
                case LEReadPHYCommand.opcode:
                    let phys = try event.decodeReturn(for: LEReadPHYCommand.self)
                    return .phy(tx: LEPHY(rawValue: phys.txPHY.rawValue), rx: LEPHY(rawValue: phys.rxPHY.rawValue))
                case LESetDataLengthCommand.opcode:
                    _ = try event.decodeReturn(for: LESetDataLengthCommand.self)
                    return .done
                default:
                    if let status = event.status, status != .success {
                        return .failed(.hci(.commandFailed(opcode: event.opcode, status: status)))
                    }
                    return .done
                }
            } catch {
                return .failed(.hci(error))
            }
        }
    }

    /// LE PHY Update Complete: the link's PHYs (a link event when they changed), and the end of
    /// our LE Set PHY on that link (the controller reports even an unchanged PHY to the host
    /// that asked, §7.8.49).
    mutating func phyUpdated(_ update: LEPHYUpdateCompleteEvent, into actions: inout [Action]) {
        let handle = update.connectionHandle
        if update.status == .success, var link = links[handle] {
            let changed = link.phy.tx != update.txPHY || link.phy.rx != update.rxPHY
            link.phy = (update.txPHY, update.rxPHY)
            links[handle] = link
            if link.open, changed { actions.append(.linkEvent(handle: handle, .phyUpdated(tx: update.txPHY, rx: update.rxPHY))) }
        }
        for (id, procedure) in procedures.sorted(by: { $0.key < $1.key }) where procedure.handle == handle && procedure.kind == .phy {
            procedures[id] = nil
            if update.status == .success {
                actions.append(.complete(id, .phy(tx: update.txPHY, rx: update.rxPHY)))
            } else {
                actions.append(.complete(id, .failed(.hci(.commandFailed(opcode: LESetPHYCommand.opcode, status: update.status)))))
            }
        }
    }
}
