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
        _ = try await probe.send(
            LESetExtendedScanEnableCommand(enable: true, filterDuplicates: .disabled, duration: 25))
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
        guard
            case .commandComplete(let legacy) = try await probe.send(LESetScanEnableCommand(leScanEnable: true)).answer
        else { return }
        #expect(legacy.status == .commandDisallowed)
        // Reset forgets the choice.
        _ = try await probe.send(ResetCommand())
        guard
            case .commandComplete(let after) = try await probe.send(LESetScanEnableCommand(leScanEnable: false)).answer
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

@Suite("Emulator: virtual controller extended advertising")
struct EmulatorControllerExtendedAdvertisingTests {
    static let setAddress = BluetoothAddress("D5:44:33:22:11:00")!
    /// Every LE subevent the host mask has, plus Scan Timeout (bit 16) and Advertising Set
    /// Terminated (bit 17).
    static let mask = HCIEventMask(rawValue: ControllerInitialization.leHostLEEventMask.rawValue | 1 << 16 | 1 << 17)

    static func advertiseExtended(_ probe: HCIProbe, duration: UInt16 = 0) async throws {
        _ = try await probe.send(LESetEventMaskCommand(leEventMask: mask))
        let commands: [HCICommandPacket] = [
            try HCICommandPacket(
                LESetExtendedAdvertisingParametersV1Command(
                    advertisingHandle: 0, advertisingEventProperties: [.useLegacyPDUs, .connectable, .scannable],
                    primaryAdvertisingIntervalMin: 0xA0, primaryAdvertisingIntervalMax: 0xA0, ownAddressType: .random)),
            try HCICommandPacket(
                LESetAdvertisingSetRandomAddressCommand(advertisingHandle: 0, randomAddress: setAddress)),
            try HCICommandPacket(
                LESetExtendedAdvertisingDataCommand(
                    advertisingHandle: 0, operation: .firstFragment, advertisingData: [0x02, 0x01])),
            try HCICommandPacket(
                LESetExtendedAdvertisingDataCommand(
                    advertisingHandle: 0, operation: .lastFragment, advertisingData: [0x06])),
            try HCICommandPacket(
                LESetExtendedScanResponseDataCommand(
                    advertisingHandle: 0, scanResponseData: [0x04, 0x09, 0x45, 0x78, 0x74])),
            try HCICommandPacket(
                LESetExtendedAdvertisingEnableCommand(
                    enable: true, sets: [LEExtendedAdvertisingSetEnable(advertisingHandle: 0, duration: duration)])),
        ]
        for command in commands {
            guard case .commandComplete(let complete) = try await probe.sendPacket(command).answer else {
                Issue.record("\(command.opcode) not completed")
                continue
            }
            #expect(complete.status == .success, "\(command.opcode)")
        }
    }

    @Test func anExtendedAdvertisingSetIsScannedAndConnected() async throws {
        let clock = ManualClock()
        let link = VirtualLink()
        let (_, peripheral) = try await EmulatorPeripheralRoleTests.probe(
            link, clock, EmulatorPeripheralRoleTests.peripheralAddress)
        let (_, central) = try await EmulatorPeripheralRoleTests.probe(
            link, clock, EmulatorPeripheralRoleTests.centralAddress)
        try await Self.advertiseExtended(peripheral)

        _ = try await central.send(
            LESetScanParametersCommand(
                leScanType: .active, leScanInterval: 0x10, leScanWindow: 0x10, ownAddressType: .public,
                scanningFilterPolicy: .acceptAll))
        _ = try await central.send(LESetScanEnableCommand(leScanEnable: true, filterDuplicates: true))
        await clock.advance(by: .milliseconds(100))
        let reports = advertisingReports(try await central.drain())
        #expect(reports.map(\.eventType) == [.advInd, .scanRsp])
        #expect(reports.map(\.data) == [[0x02, 0x01, 0x06], [0x04, 0x09, 0x45, 0x78, 0x74]])
        #expect(reports.allSatisfy { $0.address == Self.setAddress && $0.addressType == .random })
        _ = try await central.send(LESetScanEnableCommand(leScanEnable: false))

        _ = try await central.send(
            LECreateConnectionCommand(
                leScanInterval: 0x10, leScanWindow: 0x10, peerAddressType: .random, peerAddress: Self.setAddress,
                connectionParameters: LEConnectionParameters(
                    connectionIntervalMin: 24, connectionIntervalMax: 40, supervisionTimeout: 400)))
        await clock.advance(by: .milliseconds(100))
        guard case .leMeta(.enhancedConnectionComplete(let complete)) = try await peripheral.nextEvent() else {
            Issue.record("no LE Enhanced Connection Complete at the peripheral")
            return
        }
        #expect(complete.role == .peripheral && complete.peerAddress == EmulatorPeripheralRoleTests.centralAddress)
        let handle = complete.connectionHandle
        #expect(
            try await peripheral.nextEvent()
                == .leMeta(
                    .unknown(
                        subevent: LESubeventCode(rawValue: 0x12),
                        parameters: [0x00, 0x00, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x00])))
        #expect(link.peripherals.isEmpty)
        peripheral.transport.close()
        central.transport.close()
    }

    @Test func anAdvertisingDurationEndsWithAdvertisingTimeout() async throws {
        let clock = ManualClock()
        let link = VirtualLink()
        let (_, peripheral) = try await EmulatorPeripheralRoleTests.probe(
            link, clock, EmulatorPeripheralRoleTests.peripheralAddress)
        try await Self.advertiseExtended(peripheral, duration: 10)
        #expect(link.peripherals.count == 1)
        await clock.advance(by: .milliseconds(150))
        let events = try await peripheral.drain().compactMap(event)
        #expect(
            events == [
                .leMeta(.unknown(subevent: LESubeventCode(rawValue: 0x12), parameters: [0x3C, 0x00, 0x00, 0x00, 0x00]))
            ])
        #expect(link.peripherals.isEmpty)
        // The set can be removed once stopped.
        guard
            case .commandComplete(let removed) = try await peripheral.send(
                LERemoveAdvertisingSetCommand(advertisingHandle: 0)
            ).answer
        else { return }
        #expect(removed.status == .success)
        peripheral.transport.close()
    }
}
