import Bluetooth
import HCI
import L2CAP

extension LEHost {
    struct ScanSession {
        let id: UInt64
        var aggregator: ScanAggregator
        let continuation: AsyncThrowingStream<ScanEvent, Error>.Continuation
        let extended: Bool
        var filterDuplicates = false
        /// Scanning enabled in the controller (after its enable command).
        var enabled = false
        /// Disabled for a connection attempt the controller could not make while scanning.
        var paused = false
    }

    /// Scans until the returned stream terminates — the consuming task is cancelled, or the
    /// stream and its iterator are released (iterate it in place: `for try await e in
    /// host.scan()`; breaking out then ends it) — which disables scanning. Legacy or extended scanning per
    /// `options.procedure` and the host's command set; reports merged per device by a
    /// `ScanAggregator`. One scan at a time: a second one finishes with `.scanInProgress`.
    /// The stream fails with `LEHostError` when the controller refuses to scan or the host closes.
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.10, §7.8.11, §7.8.64, §7.8.65
    public nonisolated func scan(_ options: LEScanParameters = LEScanParameters()) -> AsyncThrowingStream<ScanEvent, Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: ScanEvent.self, throwing: Error.self, bufferingPolicy: .bufferingNewest(max(1, options.bufferLimit)))
        let id = scanIDs.withLock { id -> UInt64 in
            id += 1
            return id
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            // Recorded at once, so a scan started right after this one ended sees it ended.
            self.terminatedScans.withLock { _ = $0.insert(id) }
            Task { await self.scanTerminated(id) }
        }
        Task { await self.startScan(id, options, continuation) }
        return stream
    }

    private func startScan(
        _ id: UInt64, _ options: LEScanParameters, _ continuation: AsyncThrowingStream<ScanEvent, Error>.Continuation
    ) async {
        if let current = scan, terminatedScans.withLock({ $0.contains(current.id) }) { scanTerminated(current.id) }
        if let scanStop { await scanStop.value }
        if terminatedScans.withLock({ $0.remove(id) }) != nil { return }
        func fail(_ error: LEHostError) {
            continuation.finish(throwing: error)
            terminatedScans.withLock { _ = $0.remove(id) }
        }
        if let closedReason { return fail(.closed(closedReason)) }
        guard scan == nil else { return fail(.scanInProgress) }
        if let why = options.invalidity { return fail(.invalidArgument(why)) }
        let extended: Bool
        switch options.procedure {
        case .automatic: extended = usesExtendedCommands
        case .legacy: extended = false
        case .extended: extended = true
        }
        scan = ScanSession(
            id: id,
            aggregator: ScanAggregator(mode: options.reportMode, maximumDevices: options.maximumDevices),
            continuation: continuation, extended: extended, filterDuplicates: options.filterDuplicates)
        let scanType: LEScanType = options.active ? .active : .passive
        let driver = driver
        let starting = Task { () async -> HCIError? in
            do throws(HCIError) {
                if extended {
                    _ = try await driver.send(
                        LESetExtendedScanParametersCommand(
                            le1M: LEExtendedScanPHYParameters(
                                scanType: scanType, scanInterval: options.interval, scanWindow: options.window)))
                    _ = try await driver.send(
                        LESetExtendedScanEnableCommand(
                            enable: true, filterDuplicates: options.filterDuplicates ? .enabled : .disabled))
                } else {
                    _ = try await driver.send(
                        LESetScanParametersCommand(
                            leScanType: scanType, leScanInterval: options.interval, leScanWindow: options.window))
                    _ = try await driver.send(
                        LESetScanEnableCommand(leScanEnable: true, filterDuplicates: options.filterDuplicates))
                }
                return nil
            } catch {
                return error
            }
        }
        scanStarting = starting
        let failure = await starting.value
        if scanStarting == starting { scanStarting = nil }
        if let error = failure {
            if scan?.id == id { scan = nil }
            fail(.hci(error))
            // Parameters may have been set or scanning enabled before the failure: disable.
            await disableScanning(extended: extended)
            return
        }
        if scan?.id == id { scan?.enabled = true }
        logger.debug(
            "scanning (\(extended ? "extended" : "legacy"), \(options.active ? "active" : "passive"), duplicates \(options.filterDuplicates ? "filtered" : "reported"))"
        )
        if terminatedScans.withLock({ $0.contains(id) }) { scanTerminated(id) }
    }

    /// The scan stream ended: disable scanning (once the enable finished).
    func scanTerminated(_ id: UInt64) {
        // Not running (not started yet: `startScan` sees the mark; or already stopped): nothing to do.
        guard let session = scan, session.id == id else { return }
        terminatedScans.withLock { _ = $0.remove(id) }
        scan = nil
        guard closedReason == nil else { return }
        let previous = scanStop
        let starting = scanStarting
        scanStop = Task {
            // Its enable first (when it is still being started), then the stop.
            _ = await starting?.value
            await previous?.value
            await self.disableScanning(extended: session.extended)
        }
    }

    /// Disables the running scan for a connection attempt (a controller that cannot scan and
    /// initiate at once, Vol 6, Part B, §4.6.4 supported states): the scan's stream stays open;
    /// ``resumeScanning()`` enables it again. False when there was nothing to pause.
    func pauseScanning() async -> Bool {
        guard let session = scan, session.enabled, !session.paused else { return false }
        scan?.paused = true
        await disableScanning(extended: session.extended)
        counters.withLock { $0.scanPauses += 1 }
        logger.info("scanning paused for a connection attempt")
        return true
    }

    /// Enables the paused scan again (when it is still wanted).
    func resumeScanning() async {
        guard let session = scan, session.paused, closedReason == nil else { return }
        scan?.paused = false
        do throws(HCIError) {
            if session.extended {
                _ = try await driver.send(
                    LESetExtendedScanEnableCommand(enable: true, filterDuplicates: session.filterDuplicates ? .enabled : .disabled))
            } else {
                _ = try await driver.send(LESetScanEnableCommand(leScanEnable: true, filterDuplicates: session.filterDuplicates))
            }
            logger.info("scanning resumed")
        } catch {
            logger.warning("could not resume scanning: \(error)")
            if scan?.id == session.id {
                scan = nil
                session.continuation.finish(throwing: LEHostError.hci(error))
            }
        }
    }

    private func disableScanning(extended: Bool) async {
        guard closedReason == nil else { return }
        do throws(HCIError) {
            if extended {
                _ = try await driver.send(LESetExtendedScanEnableCommand(enable: false))
            } else {
                _ = try await driver.send(LESetScanEnableCommand(leScanEnable: false))
            }
            logger.debug("scanning stopped")
        } catch {
            if case .transportClosed = error { return }  // closing: scanning ends with the transport
            logger.warning("could not disable scanning: \(error)")
            counters.withLock { $0.failedCommands += 1 }
        }
    }

    func scanReport(_ event: LEMetaEvent) {
        guard let continuation = scan?.continuation else { return }
        // Mutated in place: a copy of the session would copy the device table per report.
        guard let events = scan?.aggregator.receive(event) else { return }
        for event in events {
            if case .dropped = continuation.yield(event) {
                counters.withLock { $0.droppedScanEvents += 1 }
            }
        }
    }
}
