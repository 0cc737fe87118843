import ATT
import Bluetooth
import Emulator
import HCI
import Testing

@Suite("Emulator: virtual controller extended scanning and initiating")
struct EmulatorControllerExtendedTests {
    static let parameters = LESetExtendedScanParametersCommand(
        ownAddressType: .public, scanningFilterPolicy: .acceptAll,
        le1M: LEExtendedScanPHYParameters(scanType: .active, scanInterval: 0x10, scanWindow: 0x10))

    static func extendedReports(_ packets: [HCITransportPacket]) -> [LEExtendedAdvertisingReport] {
        packets.compactMap(event).flatMap { event -> [LEExtendedAdvertisingReport] in
            if case .leMeta(.extendedAdvertisingReport(let reports)) = event { return reports.reports }
            return []
        }
    }

    @Test func legacyPDUsAreReportedAsExtendedReports() async throws {
        let (simulation, probe, clock) = try await makeController()
        _ = try await probe.send(Self.parameters)
        _ = try await probe.send(LESetExtendedScanEnableCommand(enable: true, filterDuplicates: .enabled))
        await clock.advance(by: .milliseconds(200))
        let packets = try await probe.drain()
        #expect(advertisingReports(packets).isEmpty)
        let reports = Self.extendedReports(packets)
        let tag = reports.filter { $0.address == EmulatedSensorTag.defaultAddress }
        #expect(tag.map(\.eventType) == [.legacyAdvInd, .legacyScanRspToAdvInd])
        #expect(tag.allSatisfy { $0.primaryPHY == .le1M && $0.dataStatus == .complete })
        #expect(tag.last?.data == (try EmulatedSensorTag()).scanResponseData)
        #expect(reports.count == 4, "duplicates filtered")
        await simulation.stop()
    }

    @Test func aScanDurationEndsWithScanTimeout() async throws {
        let (simulation, probe, clock) = try await makeController(devices: [.sensortag])
        // LE Scan Timeout is subevent 0x11: mask bit 16.
        _ = try await probe.send(
            LESetEventMaskCommand(
                leEventMask: HCIEventMask(rawValue: ControllerInitialization.leHostLEEventMask.rawValue | 1 << 16)))
        _ = try await probe.send(Self.parameters)
        // 250 ms.
        _ = try await probe.send(LESetExtendedScanEnableCommand(enable: true, filterDuplicates: .disabled, duration: 25))
        await clock.advance(by: .milliseconds(500))
        let packets = try await probe.drain()
        #expect(Self.extendedReports(packets).count == 4, "two advertising events of ADV_IND + SCAN_RSP within 250 ms")
        let timeouts = packets.compactMap(event).filter {
            if case .leMeta(let meta) = $0 { return meta.subeventCode.rawValue == 0x11 }
            return false
        }
        #expect(timeouts.count == 1)
        #expect(await simulation.controller.isScanning == false)
        await simulation.stop()
    }

    @Test func legacyAndExtendedCommandsDoNotMix() async throws {
        let (simulation, probe, _) = try await makeController()
        _ = try await probe.send(Self.parameters)
        guard case .commandComplete(let legacy) = try await probe.send(LESetScanEnableCommand(leScanEnable: true)).answer
        else { return }
        #expect(legacy.status == .commandDisallowed)
        // Reset forgets the choice.
        _ = try await probe.send(ResetCommand())
        guard case .commandComplete(let after) = try await probe.send(LESetScanEnableCommand(leScanEnable: false)).answer
        else { return }
        #expect(after.status == .success)
        await simulation.stop()
    }

    @Test func extendedCreateConnectionCompletesWithTheEnhancedEvent() async throws {
        let (simulation, probe, clock) = try await makeController()
        let connection = LEConnectionParameters(
            connectionIntervalMin: 24, connectionIntervalMax: 40, supervisionTimeout: 400)
        let create = LEExtendedCreateConnectionV1Command(
            peerAddressType: .random, peerAddress: EmulatedBluefruit.defaultAddress,
            le1M: LEInitiatingPHYParameters(scanInterval: 0x10, scanWindow: 0x10, connectionParameters: connection))
        guard case .commandStatus(let status) = try await probe.send(create).answer else { return }
        #expect(status.status == .success)
        await clock.advance(by: .milliseconds(100))
        guard case .leMeta(.enhancedConnectionComplete(let complete)) = try await probe.nextEvent() else {
            Issue.record("no LE Enhanced Connection Complete")
            return
        }
        #expect(complete.status == .success && complete.role == .central)
        #expect(complete.peerAddress == EmulatedBluefruit.defaultAddress && complete.peerAddressType == .random)
        #expect(complete.connectionInterval == 24)
        await simulation.stop()
    }
}
