import Bluetooth
import Emulator
import HCI
import Host
import Testing
import TestSupport

/// Connecting to an address whatever its type: one LE Create Connection through the Filter
/// Accept List holding both (Vol 6, Part B, §4.3.5), on the virtual controller.
@Suite("Emulator: the Filter Accept List and connecting to either address type")
struct FilterAcceptListTests {
    @Test(arguments: [true, false])
    func eitherTypeFindsThePublicAndTheRandomDevice(extended: Bool) async throws {
        let simulation = try await Simulation.start(
            configuration: .init(advertisingInterval: .milliseconds(10), extendedAdvertising: extended))
        var configuration = LEHost.Configuration()
        configuration.commandTimeout = .seconds(30 * testTimeoutScale)
        let host = try await LEHost.start(transport: simulation.hostTransport, configuration: configuration)
        try await withTimeout(30, "connecting through the Filter Accept List") {
            let board = try await host.connect(toEitherType: EmulatedBluefruit.defaultAddress, timeout: .seconds(10))
            #expect(board.peerAddress == EmulatedBluefruit.defaultAddress)
            #expect(board.peerAddressType.addressType == .random)
            let tag = try await host.connect(toEitherType: EmulatedSensorTag.defaultAddress, timeout: .seconds(10))
            #expect(tag.peerAddressType.addressType == .public)
            _ = try await host.disconnect(board)
            _ = try await host.disconnect(tag)
        }
        await host.close()
        await simulation.stop()
    }

    @Test func anAbsentAddressTimesOutAndTheAttemptIsCancelled() async throws {
        let simulation = try await Simulation.start(configuration: .init(advertisingInterval: .milliseconds(10)))
        var configuration = LEHost.Configuration()
        configuration.commandTimeout = .seconds(30 * testTimeoutScale)
        let host = try await LEHost.start(transport: simulation.hostTransport, configuration: configuration)
        let absent = BluetoothAddress("C0:FF:EE:00:00:01")!
        await #expect(throws: LEHostError.connectTimeout(address: absent, timeout: .milliseconds(300))) {
            _ = try await host.connect(toEitherType: absent, timeout: .milliseconds(300))
        }
        // The controller is free again: a second attempt runs (and finds the SensorTag).
        let tag = try await host.connect(toEitherType: EmulatedSensorTag.defaultAddress, timeout: .seconds(10))
        #expect(tag.peerAddressType.addressType == .public)
        await host.close()
        await simulation.stop()
    }

    static let parameters = LEConnectionParameters(
        connectionIntervalMin: 0x18, connectionIntervalMax: 0x28, supervisionTimeout: 0x48)

    @Test func theListCannotChangeWhileAnInitiatorUsesIt() async throws {
        let link = VirtualLink()
        let (controller, transport) = await VirtualController.attach(to: link, clock: SystemClock())
        let driver = HCIControllerDriver(transport: transport, commandTimeout: .seconds(30 * testTimeoutScale))
        _ = try await driver.send(ResetCommand())
        let absent = BluetoothAddress("C0:FF:EE:00:00:02")!
        #expect(try await driver.send(LEReadFilterAcceptListSizeCommand()).filterAcceptListSize == 16)
        // Policy 0x01 with an empty list has nothing to connect to.
        await #expect(throws: HCIError.self) {
            _ = try await driver.sendAccepted(
                LECreateConnectionCommand(
                    leScanInterval: 0x10, leScanWindow: 0x10, initiatorFilterPolicy: .filterAcceptList,
                    peerAddressType: .public, peerAddress: .zero, connectionParameters: Self.parameters))
        }
        _ = try await driver.send(LEAddDeviceToFilterAcceptListCommand(addressType: .random, address: absent))
        _ = try await driver.sendAccepted(
            LECreateConnectionCommand(
                leScanInterval: 0x10, leScanWindow: 0x10, initiatorFilterPolicy: .filterAcceptList,
                peerAddressType: .public, peerAddress: .zero, connectionParameters: Self.parameters))
        await #expect(throws: HCIError.commandFailed(opcode: .leClearFilterAcceptList, status: .commandDisallowed)) {
            _ = try await driver.send(LEClearFilterAcceptListCommand())
        }
        await #expect(
            throws: HCIError.commandFailed(opcode: .leAddDeviceToFilterAcceptList, status: .commandDisallowed)
        ) {
            _ = try await driver.send(LEAddDeviceToFilterAcceptListCommand(addressType: .public, address: absent))
        }
        _ = try await driver.send(LECreateConnectionCancelCommand())
        _ = try await driver.send(LEClearFilterAcceptListCommand())
        await controller.stop()
    }
}
