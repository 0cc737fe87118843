import ATT
import Bluetooth
import Emulator
import HCI
import Testing
import TestSupport

/// A controller on a link with both emulated devices, driven by a manual clock.
func makeController(devices: [Simulation.Device] = Simulation.Device.defaultSet) async throws
    -> (simulation: Simulation, probe: HCIProbe, clock: ManualClock)
{
    let clock = ManualClock()
    let simulation = try await Simulation.start(devices: devices, clock: clock)
    let probe = HCIProbe(transport: simulation.hostTransport)
    await probe.start()
    // LE Meta is masked after reset (Vol 4 Part E §7.3.1): unmask what an LE host needs.
    _ = try await probe.send(SetEventMaskCommand(eventMask: ControllerInitialization.leHostEventMask))
    _ = try await probe.send(LESetEventMaskCommand(leEventMask: ControllerInitialization.leHostLEEventMask))
    return (simulation, probe, clock)
}

@Suite("Emulator: virtual controller commands")
struct EmulatorControllerCommandTests {
    /// Every implemented command with valid parameters, and how it must be answered.
    static let commands: [(String, HCICommandPacket, Bool)] = {
        func packet<C: HCICommand>(_ command: C) -> HCICommandPacket { try! HCICommandPacket(command) }
        return [
            ("Reset", packet(ResetCommand()), true),
            ("Read Local Version", packet(ReadLocalVersionInformationCommand()), true),
            ("Read Local Supported Commands", packet(ReadLocalSupportedCommandsCommand()), true),
            ("Read Local Supported Features", packet(ReadLocalSupportedFeaturesCommand()), true),
            ("Read Buffer Size", packet(ReadBufferSizeCommand()), true),
            ("Read BD_ADDR", packet(ReadBDADDRCommand()), true),
            ("Set Event Mask", packet(SetEventMaskCommand(eventMask: SetEventMaskCommand.defaultMask)), true),
            ("LE Set Event Mask", packet(LESetEventMaskCommand(leEventMask: HCIEventMask(rawValue: 0x1F))), true),
            ("LE Read Buffer Size", packet(LEReadBufferSizeV1Command()), true),
            ("LE Read Local Supported Features", packet(LEReadLocalSupportedFeaturesCommand()), true),
            (
                "LE Set Random Address",
                packet(LESetRandomAddressCommand(randomAddress: BluetoothAddress("C1:22:33:44:55:66")!)), true
            ),
            (
                "LE Set Scan Parameters",
                packet(
                    LESetScanParametersCommand(
                        leScanType: .active, leScanInterval: 0x10, leScanWindow: 0x10, ownAddressType: .public,
                        scanningFilterPolicy: .acceptAll)), true
            ),
            ("LE Set Scan Enable", packet(LESetScanEnableCommand(leScanEnable: false)), true),
            ("LE Rand", packet(LERandCommand()), true),
            ("Write LE Host Support", packet(WriteLEHostSupportCommand(leSupportedHost: true)), true),
            (
                "LE Set Advertising Parameters",
                packet(LESetAdvertisingParametersCommand(advertisingIntervalMin: 0xA0, advertisingIntervalMax: 0xA0)),
                true
            ),
            (
                "LE Set Advertising Data", packet(LESetAdvertisingDataCommand(advertisingData: [0x02, 0x01, 0x06])),
                true
            ),
            ("LE Set Scan Response Data", packet(LESetScanResponseDataCommand(scanResponseData: [])), true),
            ("LE Set Advertising Enable", packet(LESetAdvertisingEnableCommand(advertisingEnable: false)), true),
            (
                "LE Create Connection",
                packet(
                    LECreateConnectionCommand(
                        leScanInterval: 0x10, leScanWindow: 0x10, peerAddressType: .public,
                        peerAddress: BluetoothAddress("11:22:33:44:55:66")!,
                        connectionParameters: LEConnectionParameters(
                            connectionIntervalMin: 24, connectionIntervalMax: 40, supervisionTimeout: 400))), false
            ),
        ]
    }()

    @Test(arguments: commands.indices)
    func everyImplementedCommandIsAnsweredWithSuccess(_ index: Int) async throws {
        let (name, packet, completes) = Self.commands[index]
        let (simulation, probe, _) = try await makeController()
        let (answer, _) = try await probe.sendPacket(packet)
        switch answer {
        case .commandComplete(let complete):
            #expect(completes, "\(name) answered by Command Complete")
            #expect(complete.status == .success, "\(name)")
        case .commandStatus(let status):
            #expect(!completes, "\(name) answered by Command Status")
            #expect(status.status == .success, "\(name)")
        default:
            Issue.record("\(name): unexpected \(answer)")
        }
        await simulation.stop()
    }

    @Test func unknownCommandIsAnsweredUnknownHCICommand() async throws {
        let (simulation, probe, _) = try await makeController()
        for opcode: UInt16 in [0xFC01, 0x0C13, 0x2031] {  // vendor, Write Local Name, LE Set Default PHY
            let packet = try HCICommandPacket(opcode: HCIOpcode(rawValue: opcode), parameters: [0x01, 0x02])
            let (answer, _) = try await probe.sendPacket(packet)
            guard case .commandComplete(let complete) = answer else {
                Issue.record("0x\(String(opcode, radix: 16)): \(answer)")
                continue
            }
            #expect(complete.returnParameters == [0x01])
        }
        await simulation.stop()
    }

    @Test func malformedParametersAreRefusedNotIgnored() async throws {
        let (simulation, probe, _) = try await makeController()
        // LE Set Scan Enable with one octet missing.
        let (answer, _) = try await probe.sendPacket(try HCICommandPacket(opcode: .leSetScanEnable, parameters: [0x01]))
        guard case .commandComplete(let complete) = answer else {
            Issue.record("\(answer)")
            return
        }
        #expect(complete.status == .invalidHCICommandParameters)
        await simulation.stop()
    }

    @Test func informationalReturnsDescribeTheController() async throws {
        let (simulation, probe, _) = try await makeController()
        guard case .commandComplete(let commands) = try await probe.send(ReadLocalSupportedCommandsCommand()).answer
        else { throw TestTimeout(what: "an answer from the controller", seconds: 0) }
        let supported = try commands.decodeReturn(for: ReadLocalSupportedCommandsCommand.self).supportedCommands
        for opcode in simulation.controller.implementedCommands {
            #expect(supported.supports(opcode) == true, "\(opcode)")
        }
        #expect(supported.supports(.leSetExtendedScanEnable) == true)
        #expect(supported.supports(.leSetExtendedAdvertisingEnable) == true)
        #expect(supported.supports(.leSetPHY) == true)
        #expect(supported.supports(.leSetDefaultPHY) == false)

        guard case .commandComplete(let buffers) = try await probe.send(LEReadBufferSizeV1Command()).answer
        else { throw TestTimeout(what: "an answer from the controller", seconds: 0) }
        let le = try buffers.decodeReturn(for: LEReadBufferSizeV1Command.self)
        #expect(le.leACLDataPacketLength == 27)
        #expect(le.totalNumLEACLDataPackets == 4)
        guard case .commandComplete(let shared) = try await probe.send(ReadBufferSizeCommand()).answer
        else { throw TestTimeout(what: "an answer from the controller", seconds: 0) }
        let acl = try shared.decodeReturn(for: ReadBufferSizeCommand.self)
        #expect(acl.aclDataPacketLength == 27 && acl.totalNumACLDataPackets == 4)

        guard case .commandComplete(let features) = try await probe.send(ReadLocalSupportedFeaturesCommand()).answer
        else { throw TestTimeout(what: "an answer from the controller", seconds: 0) }
        let lmp = try features.decodeReturn(for: ReadLocalSupportedFeaturesCommand.self).lmpFeatures
        #expect(lmp.contains(bit: LMPFeatures.leSupportedController))
        #expect(lmp.contains(bit: LMPFeatures.brEDRNotSupported))

        guard case .commandComplete(let address) = try await probe.send(ReadBDADDRCommand()).answer
        else { throw TestTimeout(what: "an answer from the controller", seconds: 0) }
        #expect(
            try address.decodeReturn(for: ReadBDADDRCommand.self).address == VirtualController.Configuration().address)
        await simulation.stop()
    }

    @Test func ourDriverInitialisesAgainstTheVirtualController() async throws {
        let simulation = try await Simulation.start(devices: [])
        let driver = HCIControllerDriver(transport: simulation.hostTransport, commandTimeout: .seconds(30 * testTimeoutScale))
        let info = try await withTimeout { try await driver.initialize() }
        #expect(info.address == VirtualController.Configuration().address)
        #expect(info.aclBuffers == ControllerInfo.ACLBuffers(packetLength: 27, packetCount: 4, shared: false))
        #expect(info.supportedCommands == simulation.controller.supportedCommands)
        #expect(info.leFeatures == [.leDataPacketLengthExtension, .le2MPHY, .leCodedPHY, .leExtendedAdvertising])
        await driver.close()
        await simulation.stop()
    }
}
