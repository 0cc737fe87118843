import Bluetooth
import HCI

/// Extended scanning and initiating on the 1M PHY: the peripherals' legacy advertising PDUs
/// reported as LE Extended Advertising Reports, scan durations ending with LE Scan Timeout,
/// and LE Extended Create Connection.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.64, §7.8.65, §7.8.66, §7.7.65.13, §7.7.65.17
extension VirtualController {
    /// Fixes the command kind (legacy or extended scanning/initiating) on first use; false
    /// when the host already used the other kind since reset (Vol 4 Part E §3.1.1).
    func claim(extended: Bool) -> Bool {
        if let kind = commandKind { return kind == extended }
        commandKind = extended
        return true
    }

    func setExtendedScanParameters(_ command: LESetExtendedScanParametersCommand) async {
        guard claim(extended: true), !scanning else {
            await complete(LESetExtendedScanParametersCommand.self, StatusReturnParameters(status: .commandDisallowed))
            return
        }
        // Only the 1M PHY is emulated; the devices advertise on it.
        guard let phy = command.le1M, command.leCoded == nil else {
            await complete(
                LESetExtendedScanParametersCommand.self,
                StatusReturnParameters(status: .unsupportedFeatureOrParameterValue))
            return
        }
        guard phy.scanWindow <= phy.scanInterval, phy.scanInterval >= 0x0004, phy.scanWindow >= 0x0004,
            command.scanningFilterPolicy == .acceptAll
        else {
            let status: HCIStatus =
                command.scanningFilterPolicy == .acceptAll
                ? .invalidHCICommandParameters : .unsupportedFeatureOrParameterValue
            await complete(LESetExtendedScanParametersCommand.self, StatusReturnParameters(status: status))
            return
        }
        scanParameters = LESetScanParametersCommand(
            leScanType: phy.scanType, leScanInterval: min(phy.scanInterval, 0x4000),
            leScanWindow: min(phy.scanWindow, 0x4000), ownAddressType: command.ownAddressType,
            scanningFilterPolicy: .acceptAll)
        await complete(LESetExtendedScanParametersCommand.self, StatusReturnParameters())
    }

    func setExtendedScanEnable(_ command: LESetExtendedScanEnableCommand) async {
        guard claim(extended: true) else {
            await complete(LESetExtendedScanEnableCommand.self, StatusReturnParameters(status: .commandDisallowed))
            return
        }
        guard command.enable else {
            scanning = false
            scanTimeout?.cancel()
            scanTimeout = nil
            await complete(LESetExtendedScanEnableCommand.self, StatusReturnParameters())
            scheduleAdvertisingEvents()
            return
        }
        if scanParameters.ownAddressType == .random, randomAddress == nil {
            await complete(
                LESetExtendedScanEnableCommand.self, StatusReturnParameters(status: .invalidHCICommandParameters))
            return
        }
        guard command.period == 0 else {
            // Periodic scanning (Duration within Period) is not emulated.
            await complete(
                LESetExtendedScanEnableCommand.self,
                StatusReturnParameters(status: .unsupportedFeatureOrParameterValue))
            return
        }
        if !scanning { reported = [] }
        scanning = true
        extendedReports = true
        filterDuplicates = command.filterDuplicates != .disabled
        scanTimeout?.cancel()
        scanTimeout = nil
        if command.duration != 0 {
            let expected = generation
            scanTimeout = clock.schedule(after: .milliseconds(10 * Int(command.duration))) { [weak self] in
                await self?.scanDurationElapsed(generation: expected)
            }
        }
        await complete(LESetExtendedScanEnableCommand.self, StatusReturnParameters())
        scheduleAdvertisingEvents()
    }

    /// The scan's Duration elapsed: scanning stops and the host hears LE Scan Timeout.
    func scanDurationElapsed(generation expected: Int) async {
        guard expected == generation, scanning, extendedReports else { return }
        scanTimeout = nil
        scanning = false
        scheduleAdvertisingEvents()
        await emit(.leMeta(.unknown(subevent: LESubeventCode(rawValue: 0x11), parameters: [])))
    }

    func extendedCreateConnection(_ command: LEExtendedCreateConnectionV1Command) async {
        guard claim(extended: true) else {
            await status(LEExtendedCreateConnectionV1Command.opcode, .commandDisallowed)
            return
        }
        guard let phy = command.le1M else {
            await status(LEExtendedCreateConnectionV1Command.opcode, .unsupportedFeatureOrParameterValue)
            return
        }
        await createConnection(
            LECreateConnectionCommand(
                leScanInterval: phy.scanInterval, leScanWindow: phy.scanWindow,
                initiatorFilterPolicy: command.initiatorFilterPolicy, peerAddressType: command.peerAddressType,
                peerAddress: command.peerAddress, ownAddressType: command.ownAddressType,
                connectionParameters: phy.connectionParameters),
            extended: true)
    }

    /// A legacy advertising PDU as an LE Extended Advertising Report.
    func extendedReport(_ report: LEAdvertisingReport, connectable: Bool) -> LEExtendedAdvertisingReport {
        let eventType: LEExtendedAdvertisingEventType =
            switch report.eventType {
            case .advInd: .legacyAdvInd
            case .advScanInd: .legacyAdvScanInd
            case .advNonconnInd: .legacyAdvNonconnInd
            case .advDirectInd: .legacyAdvDirectInd
            default: connectable ? .legacyScanRspToAdvInd : .legacyScanRspToAdvScanInd
            }
        return LEExtendedAdvertisingReport(
            eventType: eventType, addressType: report.addressType, address: report.address, primaryPHY: .le1M,
            rssi: report.rssi, data: report.data)
    }
}
