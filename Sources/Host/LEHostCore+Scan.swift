import Bluetooth
import HCI

/// Scanning: one scan at a time, legacy or extended per its options and the command set; a new
/// scan starts only after the previous one's disable (else that late disable would stop it).
extension LEHostCore {
    mutating func startScan(_ id: RequestID, _ options: LEScanParameters, now: Duration, into actions: inout [Action]) {
        if let current = scan, current.stopRequested, !scanWaiting.contains(where: { $0.0 != id }) {
            // The previous scan ended while it was being started: this one follows its disable.
            scanWaiting.append((id, options))
            return
        }
        guard scan == nil else {
            actions.append(.scanEnded(id, .scanInProgress))
            return
        }
        if let why = options.invalidity {
            actions.append(.scanEnded(id, .invalidArgument(why)))
            return
        }
        if scanDisables > 0 {
            guard !scanWaiting.contains(where: { $0.0 != id }) else {
                actions.append(.scanEnded(id, .scanInProgress))
                return
            }
            scanWaiting.append((id, options))
            return
        }
        let extended: Bool
        switch options.procedure {
        case .automatic: extended = usesExtendedCommands
        case .legacy: extended = false
        case .extended: extended = true
        }
        scan = Scan(
            id: id, options: options, extended: extended,
            aggregator: ScanAggregator(mode: options.reportMode, maximumDevices: options.maximumDevices))
        let scanType: LEScanType = options.active ? .active : .passive
        if extended {
            send(
                LESetExtendedScanParametersCommand(
                    le1M: LEExtendedScanPHYParameters(scanType: scanType, scanInterval: options.interval, scanWindow: options.window)),
                .scanStart(id), now: now, into: &actions)
        } else {
            send(
                LESetScanParametersCommand(leScanType: scanType, leScanInterval: options.interval, leScanWindow: options.window),
                .scanStart(id), now: now, into: &actions)
        }
    }

    mutating func scanStartFinished(
        _ id: RequestID, _ outcome: HCICommandFlow.Outcome, now: Duration, into actions: inout [Action]
    ) {
        guard var current = scan, current.id == id, case .starting(let step) = current.phase else { return }
        if let error = Self.failure(outcome) {
            scan = nil
            actions.append(.scanEnded(id, .hci(error)))
            // Parameters may have been set or scanning enabled before the failure: disable.
            if case .transportClosed = error { return }
            disableScanning(extended: current.extended, now: now, into: &actions)
            return
        }
        if step == 0 {
            current.phase = .starting(step: 1)
            scan = current
            if current.extended {
                send(
                    LESetExtendedScanEnableCommand(
                        enable: true, filterDuplicates: current.options.filterDuplicates ? .enabled : .disabled),
                    .scanStart(id), now: now, into: &actions)
            } else {
                send(
                    LESetScanEnableCommand(leScanEnable: true, filterDuplicates: current.options.filterDuplicates),
                    .scanStart(id), now: now, into: &actions)
            }
            return
        }
        current.phase = .running
        scan = current
        let options = current.options
        actions.append(
            .log(
                .debug,
                "scanning (\(current.extended ? "extended" : "legacy"), \(options.active ? "active" : "passive"), duplicates \(options.filterDuplicates ? "filtered" : "reported"))"
            ))
        if current.stopRequested {
            scan = nil
            disableScanning(extended: current.extended, now: now, into: &actions)
        }
    }

    mutating func disableScanning(extended: Bool, now: Duration, into actions: inout [Action]) {
        guard closedReason == nil else { return }
        scanDisables += 1
        if extended {
            send(LESetExtendedScanEnableCommand(enable: false), .scanDisable, now: now, into: &actions)
        } else {
            send(LESetScanEnableCommand(leScanEnable: false), .scanDisable, now: now, into: &actions)
        }
    }

    /// Disables the running scan for a connection attempt; its stream stays open. False when
    /// there is nothing to pause (no scan, or one not enabled).
    mutating func pauseScanning(for id: RequestID, now: Duration, into actions: inout [Action]) -> Bool {
        guard var current = scan, current.phase == .running, var pending = attempt, pending.id == id else { return false }
        current.phase = .paused
        scan = current
        pending.phase = .pausingScan
        pending.pausedScan = true
        attempt = pending
        statistics.scanPauses += 1
        actions.append(.log(.info, "scanning paused for a connection attempt"))
        if current.extended {
            send(LESetExtendedScanEnableCommand(enable: false), .connect(id), now: now, into: &actions)
        } else {
            send(LESetScanEnableCommand(leScanEnable: false), .connect(id), now: now, into: &actions)
        }
        return true
    }

    /// The enable that resumes a paused scan is over.
    mutating func scanResumed(_ outcome: HCICommandFlow.Outcome, into actions: inout [Action]) {
        guard let current = scan, current.phase == .resuming else { return }
        if let error = Self.failure(outcome) {
            actions.append(.log(.warning, "could not resume scanning: \(error)"))
            scan = nil
            actions.append(.scanEnded(current.id, .hci(error)))
        } else {
            scan?.phase = .running
            actions.append(.log(.info, "scanning resumed"))
        }
    }

    mutating func scanReport(_ event: LEMetaEvent, into actions: inout [Action]) {
        guard let id = scan?.id else { return }
        // Mutated in place: a copy of the scan would copy the device table per report.
        guard let events = scan?.aggregator.receive(event), !events.isEmpty else { return }
        actions.append(.scanEvents(id, events))
    }
}
