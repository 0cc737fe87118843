import Bluetooth
import HCI

/// Connecting as central: one attempt at a time, the others queued in order.
///
/// An attempt fills the Filter Accept List when it has several candidates (Vol 6, Part B,
/// §4.3.5, initiator filter policy 0x01), sends LE (Extended) Create Connection, and on Command
/// Disallowed while a scan runs (a controller that cannot scan and initiate at once, Vol 6,
/// Part B, §4.6.4) pauses the scan and tries once more. It then waits for the matching LE
/// (Enhanced) Connection Complete until its timeout; on the timeout or the caller's cancel it
/// sends LE Create Connection Cancel and waits, bounded, for the cancelled completion. A link it
/// makes is opened by the runner before the attempt completes; a paused scan is resumed first.
extension LEHostCore {
    mutating func startConnect(
        _ id: RequestID, _ candidates: [Candidate], timeout: Duration?, parameters: LEConnectionParameters?, now: Duration,
        into actions: inout [Action]
    ) {
        guard !candidates.isEmpty else {
            actions.append(.complete(id, .failed(.invalidArgument("no device to connect to"))))
            return
        }
        let parameters =
            parameters
            ?? configuration.intervalPerLink.map {
                ConnectionParameterPolicy.scaled(configuration.connectionParameters, links: links.count + 1, perLink: $0)
            } ?? configuration.connectionParameters
        if let why = ConnectionParameterPolicy.invalidity(parameters) {
            actions.append(.complete(id, .failed(.invalidArgument("connection parameters: \(why)"))))
            return
        }
        let queued = ConnectAttempt(
            id: id, candidates: candidates, timeout: timeout ?? configuration.connectTimeout, parameters: parameters)
        if attempt == nil {
            begin(queued, now: now, into: &actions)
        } else {
            attemptQueue.append(queued)
        }
    }

    private mutating func begin(_ next: ConnectAttempt, now: Duration, into actions: inout [Action]) {
        var next = next
        if next.cancelRequested {
            actions.append(.complete(next.id, .failed(.connectCancelled(address: next.address))))
            return
        }
        if next.usesFilter {
            next.phase = .filtering(next: 0)
            attempt = next
            send(LEClearFilterAcceptListCommand(), .connect(next.id), now: now, into: &actions)
        } else {
            attempt = next
            create(retried: false, now: now, into: &actions)
        }
    }

    /// LE Extended Create Connection when the host uses the extended commands, else LE Create
    /// Connection.
    private mutating func create(retried: Bool, now: Duration, into actions: inout [Action]) {
        guard var current = attempt else { return }
        if current.cancelRequested {
            finishConnect(.failed(.connectCancelled(address: current.address)), now: now, into: &actions)
            return
        }
        current.phase = .creating(retried: retried)
        attempt = current
        let policy: LEInitiatorFilterPolicy = current.usesFilter ? .filterAcceptList : .peerAddress
        let peerType: LEPeerAddressType = current.candidates[0].type == .public ? .public : .random
        let address = current.usesFilter ? .zero : current.address
        if usesExtendedCommands {
            let phy = LEInitiatingPHYParameters(
                scanInterval: configuration.initiatorScanInterval, scanWindow: configuration.initiatorScanWindow,
                connectionParameters: current.parameters)
            send(
                LEExtendedCreateConnectionV1Command(
                    initiatorFilterPolicy: policy, peerAddressType: peerType, peerAddress: address, le1M: phy),
                .connect(current.id), now: now, into: &actions)
        } else {
            send(
                LECreateConnectionCommand(
                    leScanInterval: configuration.initiatorScanInterval, leScanWindow: configuration.initiatorScanWindow,
                    initiatorFilterPolicy: policy, peerAddressType: peerType, peerAddress: address,
                    connectionParameters: current.parameters),
                .connect(current.id), now: now, into: &actions)
        }
    }

    mutating func connectCommandFinished(
        _ id: RequestID, _ outcome: HCICommandFlow.Outcome, now: Duration, into actions: inout [Action]
    ) {
        guard var current = attempt, current.id == id else { return }
        switch current.phase {
        case .filtering(let next):
            if let error = Self.failure(outcome) {
                finishConnect(.failed(.hci(error)), now: now, into: &actions)
            } else if next < current.candidates.count {
                let candidate = current.candidates[next]
                current.phase = .filtering(next: next + 1)
                attempt = current
                send(
                    LEAddDeviceToFilterAcceptListCommand(
                        addressType: candidate.type == .public ? .public : .random, address: candidate.address),
                    .connect(id), now: now, into: &actions)
            } else {
                create(retried: false, now: now, into: &actions)
            }
        case .creating(let retried):
            if let error = Self.acceptance(outcome) {
                if !retried, case .commandFailed(_, .commandDisallowed) = error, pauseScanning(for: id, now: now, into: &actions) {
                    return
                }
                finishConnect(.failed(.hci(error)), now: now, into: &actions)
                return
            }
            if let early = current.early {
                current.early = nil
                current.phase = .waiting(deadline: now + current.timeout)
                attempt = current
                attemptCompleted(early, now: now, into: &actions)
            } else if current.cancelRequested {
                actions.append(.log(.info, "connecting to \(current.address): cancelled; cancelling"))
                current.phase = .cancelling(.cancelled)
                attempt = current
                send(LECreateConnectionCancelCommand(), .connect(id), now: now, into: &actions)
            } else {
                current.phase = .waiting(deadline: now + current.timeout)
                attempt = current
            }
        case .pausingScan:
            // Scanning is off now (or failed to go off: the retry will tell).
            if let error = Self.failure(outcome) { controlFailed("disabling scanning", error, into: &actions) }
            create(retried: true, now: now, into: &actions)
        case .cancelling(let ending):
            if let error = Self.failure(outcome) {
                // Command Disallowed: the connection completed before the cancel; its event follows.
                actions.append(.log(.debug, "LE Create Connection Cancel: \(error)"))
                if case .transportClosed(let reason) = error {
                    finishConnect(.failed(.closed(reason)), now: now, into: &actions)
                    return
                }
            }
            current.phase = .awaitingCancelled(deadline: now + configuration.cancelTimeout, ending)
            attempt = current
        case .queued, .waiting, .awaitingCancelled, .opening, .resumingScan:
            break
        }
    }

    /// LE (Enhanced) Connection Complete.
    mutating func connectionCompleted(_ completion: LEConnectionCompletion, now: Duration, into actions: inout [Action]) {
        if completion.status == .success, completion.role == .peripheral, advertising?.parameters.connectable == true {
            links[completion.handle] = Link(
                completion: completion, parameters: completion.parameters, acceptedByAdvertising: true)
            actions.append(.openLink(completion))
            return
        }
        let matches =
            attempt.map { current in
                completion.status != .success
                    || (completion.role == .central
                        && current.candidates.contains {
                            completion.peerAddress == $0.address && completion.peerAddressType.addressType == $0.type
                        })
            } ?? false
        let sent: Bool
        switch attempt?.phase {
        case .creating?, .waiting?, .cancelling?, .awaitingCancelled?: sent = true
        default: sent = false
        }
        guard matches, sent, var current = attempt else {
            if completion.status != .success {
                actions.append(.log(.info, "connection complete \(completion.status) with no connect pending"))
                return
            }
            // Not ours to keep (we are not advertising; the attempt was abandoned): drop it.
            actions.append(
                .log(
                    .warning,
                    "unexpected LE connection 0x\(String(completion.handle, radix: 16)) to \(completion.peerAddress) (\(completion.role)); disconnecting"
                ))
            statistics.unexpectedConnections += 1
            send(
                DisconnectCommand(connectionHandle: completion.handle, reason: .remoteUserTerminatedConnection),
                .control("Disconnect of an unexpected connection"), now: now, into: &actions)
            return
        }
        if case .creating = current.phase {
            current.early = completion
            attempt = current
            return
        }
        attemptCompleted(completion, now: now, into: &actions)
    }

    /// The attempt's completion, once its Create Connection was accepted.
    private mutating func attemptCompleted(_ completion: LEConnectionCompletion, now: Duration, into actions: inout [Action]) {
        guard var current = attempt else { return }
        let ending: Ending?
        switch current.phase {
        case .cancelling(let how), .awaitingCancelled(_, let how): ending = how
        default: ending = nil
        }
        guard completion.status == .success else {
            switch ending {
            case .cancelled?: finishConnect(.failed(.connectCancelled(address: current.address)), now: now, into: &actions)
            case .timedOut?:
                finishConnect(
                    .failed(.connectTimeout(address: current.address, timeout: current.timeout)), now: now, into: &actions)
            case nil:
                finishConnect(
                    .failed(.connectionFailed(address: current.address, status: completion.status)), now: now, into: &actions)
            }
            return
        }
        if ending != nil { actions.append(.log(.info, "connected to \(current.address) as the attempt was being cancelled")) }
        current.phase = .opening(handle: completion.handle)
        attempt = current
        links[completion.handle] = Link(completion: completion, parameters: completion.parameters)
        actions.append(.openLink(completion))
    }

    /// The attempt is over: a paused scan resumes first, then the caller learns, and the next
    /// attempt begins.
    mutating func finishConnect(_ result: Result, now: Duration, into actions: inout [Action]) {
        guard var current = attempt else { return }
        if current.pausedScan, let paused = scan, paused.phase == .paused, closedReason == nil {
            current.phase = .resumingScan(result)
            attempt = current
            scan?.phase = .resuming
            let enable: HCICommandPacket?
            if paused.extended {
                enable = try? HCICommandPacket(
                    LESetExtendedScanEnableCommand(
                        enable: true, filterDuplicates: paused.options.filterDuplicates ? .enabled : .disabled))
            } else {
                enable = try? HCICommandPacket(
                    LESetScanEnableCommand(leScanEnable: true, filterDuplicates: paused.options.filterDuplicates))
            }
            if let enable {
                send(enable, .scanResume(current.id), into: &actions)
                return
            }
        }
        attempt = nil
        actions.append(.complete(current.id, result))
        while attempt == nil, !attemptQueue.isEmpty {
            begin(attemptQueue.removeFirst(), now: now, into: &actions)
        }
    }
}
