import ATT
import Bluetooth
import Emulator
import HCI
import L2CAP
import Synchronization
import Testing

/// No host may get data for a connection before LE Connection Complete, and a peripheral must
/// be ready when the central's host can first send. A CI run lost the first Exchange MTU
/// Request of a central (no answer within 30 s) because the central's host heard of the
/// connection before the peripheral's controller had its handle for it.
@Suite("Emulator: connection establishment orders events and data")
struct ConnectionOrderTests {
    /// Sends a notification from inside `connected(_:)`, before the central's host can know the
    /// connection, and records whether it had heard of the connection when a frame arrived.
    final class EagerPeripheral: VirtualPeripheral {
        let address = BluetoothAddress("00:1B:DC:E0:5A:10")!
        let addressType = AddressType.public
        let advertisingData: [UInt8] = [0x02, 0x01, 0x06]
        let scanResponseData: [UInt8] = []
        let isConnectable = true
        struct State {
            var entered = false
            var connected = false
            var received: [(connectedBefore: Bool, payload: [UInt8])] = []
            var gate: CheckedContinuation<Void, Never>?
            var opened = false
        }
        let state = Mutex(State())

        /// Takes its time, as a host behind another controller does (its own events to send).
        func connected(_ link: VirtualLinkConnection) async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { state -> Bool in
                    state.entered = true
                    if state.opened { return true }
                    state.gate = continuation
                    return false
                }
                if open { continuation.resume() }
            }
            state.withLock { $0.connected = true }
            await link.send(channelID: 4, payload: [0x1B, 0x03, 0x00, 0x2A])
        }

        func open() {
            let gate = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.opened = true
                defer { state.gate = nil }
                return state.gate
            }
            gate?.resume()
        }
        func received(_ frame: L2CAPBasicFrame) async {
            state.withLock { $0.received.append(($0.connected, Array(frame.payload))) }
        }
        func disconnected(reason: HCIStatus) async {}
    }

    @Test func thePeripheralIsReadyFirstAndItsEarlyDataFollowsTheCentralsConnectionComplete() async throws {
        let clock = ManualClock()
        let link = VirtualLink()
        let device = EagerPeripheral()
        link.add(device)
        let (_, central) = try await EmulatorPeripheralRoleTests.probe(
            link, clock, EmulatorPeripheralRoleTests.centralAddress)
        _ = try await central.send(
            LECreateConnectionCommand(
                leScanInterval: 0x10, leScanWindow: 0x10, peerAddressType: .public, peerAddress: device.address,
                connectionParameters: LEConnectionParameters(
                    connectionIntervalMin: 24, connectionIntervalMax: 40, supervisionTimeout: 400)))
        let advancing = Task { await clock.advance(by: .milliseconds(100)) }
        // While the peripheral's side is still taking the connection, the central's host has
        // not heard of it (so it cannot send to a peripheral that is not ready).
        let deadline = ContinuousClock.now + .seconds(20)
        while !device.state.withLock({ $0.entered }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(device.state.withLock { $0.entered })
        let meanwhile = try await central.drain().compactMap(event)
        #expect(!meanwhile.contains { if case .leMeta(.connectionComplete) = $0 { true } else { false } })
        device.open()
        await advancing.value

        // The central's host: LE Connection Complete first, then what the peripheral sent.
        guard case .leMeta(.connectionComplete(let complete))? = event(try await central.next()) else {
            Issue.record("the first packet after the connection is not LE Connection Complete")
            return
        }
        #expect(device.state.withLock { $0.connected }, "the peripheral knew of the connection first")
        let next = try await central.next()
        let early = try #require(acl(next), "then the peripheral's notification")
        #expect(early.handle == complete.connectionHandle)
        let expected = L2CAPBasicFrame(channelID: 4, payload: [0x1B, 0x03, 0x00, 0x2A][...]).encode()
        #expect(early.data == expected)

        // The central's first PDU, sent the moment its host knows the connection, arrives.
        let request: [UInt8] = [0x02, 0x05, 0x02]
        try await central.sendACL(
            ACLDataPacket(
                handle: complete.connectionHandle, packetBoundary: .firstNonFlushable,
                data: L2CAPBasicFrame(channelID: 4, payload: request[...]).encode()))
        _ = try await central.drain()
        let received = device.state.withLock { $0.received }
        #expect(received.map(\.payload) == [request])
        #expect(received.allSatisfy { $0.connectedBefore })
        central.transport.close()
    }
}
