import Bluetooth
import HCI
import Host
import L2CAP
import Testing

/// `LEHostCore` alone: inputs in, actions out, times given by the test (no transport, no task,
/// no sleep). The same behaviour through the actor and a scripted controller is in
/// HostLEHostTests; these pin down the order of what the host does.
@Suite("LE host core (sans-I/O)")
struct HostCoreTests {
    typealias Core = LEHostCore
    static let peer = BluetoothAddress("C0:11:22:33:44:55")!
    static let other = BluetoothAddress("00:AA:BB:CC:DD:EE")!

    /// A core and what it asked for, with helpers to answer and to read the actions.
    struct Harness {
        var core = LEHostCore(configuration: LEHost.Configuration(), usesExtendedCommands: false, usesExtendedAdvertising: false)
        var now: Duration = .zero
        var lastID: UInt64 = 0
        /// Commands sent and not yet answered, in order.
        var outstanding: [(Core.CommandToken, HCICommandPacket)] = []
        /// Every action but commands and logs, in order.
        var effects: [Core.Action] = []

        mutating func id() -> Core.RequestID {
            lastID += 1
            return Core.RequestID(rawValue: lastID)
        }

        mutating func take(_ actions: [Core.Action]) {
            for action in actions {
                switch action {
                case .command(let token, let packet): outstanding.append((token, packet))
                case .log: break
                default: effects.append(action)
                }
            }
        }

        mutating func request(_ request: Core.Request) -> Core.RequestID {
            let id = id()
            take(core.request(request, id, now: now))
            return id
        }

        mutating func event(_ bytes: [UInt8]) throws {
            take(core.receive(try HCIEvent(bytes: bytes), now: now))
        }

        /// The opcodes sent and not yet answered.
        var pending: [HCIOpcode] { outstanding.map(\.0).isEmpty ? [] : outstanding.map(\.1.opcode) }

        /// Answers the oldest outstanding command, which must have `opcode`.
        mutating func answer(
            _ opcode: HCIOpcode, status: HCIStatus = .success, complete: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
        ) {
            guard !outstanding.isEmpty else {
                Issue.record("no command outstanding; expected \(opcode)", sourceLocation: sourceLocation)
                return
            }
            let (token, packet) = outstanding.removeFirst()
            #expect(packet.opcode == opcode, sourceLocation: sourceLocation)
            let outcome: HCICommandFlow.Outcome
            if complete {
                outcome = .complete(CommandCompleteEvent(numHCICommandPackets: 1, opcode: opcode, returnParameters: [status.rawValue]))
            } else if status == .success {
                outcome = .accepted(CommandStatusEvent(status: .success, numHCICommandPackets: 1, opcode: opcode))
            } else {
                outcome = .failed(.commandFailed(opcode: opcode, status: status))
            }
            take(core.commandFinished(token, outcome, now: now))
        }

        mutating func advance(to time: Duration) {
            now = time
            take(core.expire(now: now))
        }

        /// The effects so far, emptied.
        mutating func drain() -> [Core.Action] {
            defer { effects.removeAll() }
            return effects
        }
    }

    static func completion(handle: UInt16, peer: BluetoothAddress, type: UInt8, status: UInt8 = 0, role: UInt8 = 0) -> [UInt8] {
        HostScriptedController.connectionComplete(status: status, handle: handle, peer: peer, peerType: type, role: role)
    }

    static func connected(_ handle: UInt16, _ actions: [Core.Action]) -> Bool {
        actions.contains { if case .complete(_, .connected(handle)) = $0 { true } else { false } }
    }

    /// Connects `peer` on `handle` through the whole exchange; returns the request.
    static func connect(_ h: inout Harness, handle: UInt16, peer: BluetoothAddress = peer) throws {
        let id = h.request(.connect([.init(address: peer, type: .random)], timeout: .seconds(10), parameters: nil))
        h.answer(.leCreateConnection)
        try h.event(completion(handle: handle, peer: peer, type: 0x01))
        #expect(h.drain() == [.openLink(LEConnectionCompletion(try leComplete(handle: handle, peer: peer)))])
        h.take(h.core.linkOpened(handle, now: h.now))
        #expect(h.drain() == [.complete(id, .connected(handle: handle))])
    }

    static func leComplete(handle: UInt16, peer: BluetoothAddress) throws -> LEConnectionCompleteEvent {
        guard case .leMeta(.connectionComplete(let complete)) = try HCIEvent(bytes: completion(handle: handle, peer: peer, type: 0x01))
        else { throw HostStreamEnded(what: "not a connection complete") }
        return complete
    }

    // MARK: - Connecting

    @Test func aConnectSendsCreateConnectionAndCompletesOnceTheLinkIsOpen() throws {
        var h = Harness()
        try Self.connect(&h, handle: 0x0040)
        #expect(h.core.linkCount == 1)
        #expect(h.core.nextDeadline == nil, "nothing waits")
    }

    @Test func theTimeoutSendsCancelAndTheCancelledCompletionEndsTheConnect() throws {
        var h = Harness()
        let id = h.request(.connect([.init(address: Self.peer, type: .random)], timeout: .seconds(3), parameters: nil))
        h.now = .seconds(1)
        h.answer(.leCreateConnection)
        #expect(h.core.nextDeadline == .seconds(4), "the timeout counts from the Command Status")
        h.advance(to: .seconds(3.9))
        #expect(h.pending.isEmpty)
        h.advance(to: .seconds(4))
        #expect(h.pending == [.leCreateConnectionCancel])
        h.answer(.leCreateConnectionCancel, complete: true)
        #expect(h.core.nextDeadline == .seconds(6), "the cancelled completion is awaited for the cancel timeout")
        try h.event(Self.completion(handle: 0, peer: .zero, type: 0, status: 0x02))
        #expect(h.drain() == [.complete(id, .failed(.connectTimeout(address: Self.peer, timeout: .seconds(3))))])
        #expect(h.core.nextDeadline == nil)
    }

    @Test func theWaitForTheCancelledCompletionIsBounded() {
        var h = Harness()
        let id = h.request(.connect([.init(address: Self.peer, type: .random)], timeout: .seconds(1), parameters: nil))
        h.answer(.leCreateConnection)
        h.advance(to: .seconds(1))
        h.answer(.leCreateConnectionCancel, complete: true)
        h.advance(to: .seconds(3))
        #expect(h.drain() == [.complete(id, .failed(.timeout("the cancelled LE Connection Complete for \(Self.peer)")))])
    }

    @Test func aLinkMadeWhileCancellingIsKept() throws {
        var h = Harness()
        let id = h.request(.connect([.init(address: Self.peer, type: .random)], timeout: .seconds(1), parameters: nil))
        h.answer(.leCreateConnection)
        h.take(h.core.cancel(id, now: h.now))
        #expect(h.pending == [.leCreateConnectionCancel])
        // The controller connected before the cancel: Command Disallowed, then the completion.
        h.answer(.leCreateConnectionCancel, status: .commandDisallowed, complete: true)
        try h.event(Self.completion(handle: 0x0041, peer: Self.peer, type: 0x01))
        #expect(h.drain().count == 1, "opened")
        h.take(h.core.linkOpened(0x0041, now: h.now))
        #expect(h.drain() == [.complete(id, .connected(handle: 0x0041))])
    }

    @Test func connectsQueueAndACancelledQueuedConnectEndsWithoutACommand() throws {
        var h = Harness()
        let first = h.request(.connect([.init(address: Self.peer, type: .random)], timeout: nil, parameters: nil))
        let second = h.request(.connect([.init(address: Self.other, type: .public)], timeout: nil, parameters: nil))
        let third = h.request(.connect([.init(address: Self.other, type: .random)], timeout: nil, parameters: nil))
        #expect(h.pending == [.leCreateConnection], "one LE Create Connection at a time")
        h.take(h.core.cancel(third, now: h.now))
        #expect(h.drain() == [.complete(third, .failed(.connectCancelled(address: Self.other)))])
        h.answer(.leCreateConnection)
        try h.event(Self.completion(handle: 1, peer: Self.peer, type: 0x01))
        h.take(h.core.linkOpened(1, now: h.now))
        #expect(Self.connected(1, h.drain()))
        #expect(h.pending == [.leCreateConnection], "the next one begins")
        #expect(Array(h.outstanding[0].1.parameters[6..<12]) == Self.other.littleEndianBytes)
        h.answer(.leCreateConnection)
        try h.event(Self.completion(handle: 2, peer: Self.other, type: 0x00))
        h.take(h.core.linkOpened(2, now: h.now))
        let actions = h.drain()
        #expect(Self.connected(2, actions) && actions.contains { if case .complete(second, _) = $0 { true } else { false } })
        _ = first
    }

    @Test func aCompletionBeforeTheCommandStatusIsHandledWhenTheStatusComes() throws {
        var h = Harness()
        let id = h.request(.connect([.init(address: Self.peer, type: .random)], timeout: nil, parameters: nil))
        try h.event(Self.completion(handle: 7, peer: Self.peer, type: 0x01))
        #expect(h.drain().isEmpty)
        h.answer(.leCreateConnection)
        #expect(h.drain().count == 1, "opened once the attempt is known to be under way")
        h.take(h.core.linkOpened(7, now: h.now))
        #expect(h.drain() == [.complete(id, .connected(handle: 7))])
    }

    @Test func eitherTypeFillsTheFilterAcceptListFirst() {
        var h = Harness()
        _ = h.request(
            .connect([.init(address: Self.peer, type: .public), .init(address: Self.peer, type: .random)], timeout: nil, parameters: nil))
        h.answer(.leClearFilterAcceptList, complete: true)
        h.answer(.leAddDeviceToFilterAcceptList, complete: true)
        h.answer(.leAddDeviceToFilterAcceptList, complete: true)
        #expect(h.pending == [.leCreateConnection])
        #expect(h.outstanding[0].1.parameters[4] == 0x01, "initiator filter policy: the Filter Accept List")
    }

    @Test func anUnexpectedConnectionIsDisconnectedAndCounted() throws {
        var h = Harness()
        try h.event(Self.completion(handle: 9, peer: Self.peer, type: 0x01))
        #expect(h.pending == [.disconnect])
        #expect(h.core.statistics.unexpectedConnections == 1)
    }

    @Test func aRefusedLinkFailsTheConnectAndIsDisconnected() throws {
        var h = Harness()
        let id = h.request(.connect([.init(address: Self.peer, type: .random)], timeout: nil, parameters: nil))
        h.answer(.leCreateConnection)
        try h.event(Self.completion(handle: 3, peer: Self.peer, type: 0x01))
        _ = h.drain()
        h.take(h.core.linkRefused(3, now: h.now))
        #expect(h.drain() == [.complete(id, .failed(.connectionFailed(address: Self.peer, status: .unspecifiedError)))])
        #expect(h.pending == [.disconnect])
        #expect(h.core.linkCount == 0)
    }

    // MARK: - Scanning

    @Test func scanningPausesForAConnectionTheControllerRefusesWhileScanning() throws {
        var h = Harness()
        let scan = h.request(.scan(LEScanParameters()))
        h.answer(.leSetScanParameters, complete: true)
        h.answer(.leSetScanEnable, complete: true)
        let id = h.request(.connect([.init(address: Self.peer, type: .random)], timeout: nil, parameters: nil))
        h.answer(.leCreateConnection, status: .commandDisallowed)
        #expect(h.pending == [.leSetScanEnable], "scanning off for the attempt")
        #expect(h.outstanding[0].1.parameters.first == 0x00)
        h.answer(.leSetScanEnable, complete: true)
        h.answer(.leCreateConnection)
        try h.event(Self.completion(handle: 5, peer: Self.peer, type: 0x01))
        _ = h.drain()
        h.take(h.core.linkOpened(5, now: h.now))
        #expect(h.drain().isEmpty, "the connect completes once scanning is back on")
        #expect(h.pending == [.leSetScanEnable])
        #expect(h.outstanding[0].1.parameters.first == 0x01)
        h.answer(.leSetScanEnable, complete: true)
        #expect(h.drain() == [.complete(id, .connected(handle: 5))])
        #expect(h.core.statistics.scanPauses == 1)
        // Reports still reach the scan.
        try h.event([0x3E, 12, 0x02, 0x01, 0x00, 0x00] + Self.other.littleEndianBytes + [0x00, 0xC5])
        #expect(h.drain().contains { if case .scanEvents(scan, _) = $0 { true } else { false } })
    }

    @Test func aScanEndedWhileStartingIsDisabledAndTheNextOneWaitsForThat() {
        var h = Harness()
        let first = h.request(.scan(LEScanParameters()))
        h.take(h.core.stopScan(first, now: h.now))
        let second = h.request(.scan(LEScanParameters()))
        #expect(h.drain().isEmpty, "neither refused")
        h.answer(.leSetScanParameters, complete: true)
        h.answer(.leSetScanEnable, complete: true)
        #expect(h.pending == [.leSetScanEnable])
        #expect(h.outstanding[0].1.parameters.first == 0x00, "the first scan's disable")
        h.answer(.leSetScanEnable, complete: true)
        #expect(h.pending == [.leSetScanParameters], "then the second scan starts")
        let third = h.request(.scan(LEScanParameters()))
        #expect(h.drain() == [.scanEnded(third, .scanInProgress)])
        _ = second
    }

    @Test func aRefusedScanEndsItsStreamWithTheError() {
        var h = Harness()
        let scan = h.request(.scan(LEScanParameters()))
        h.answer(.leSetScanParameters, status: .commandDisallowed, complete: true)
        #expect(h.drain() == [.scanEnded(scan, .hci(.commandFailed(opcode: .leSetScanParameters, status: .commandDisallowed)))])
        #expect(h.pending == [.leSetScanEnable], "disabled in case it was on")
    }

    // MARK: - Procedures on a link

    @Test func disconnectWaitsForDisconnectionCompleteAndFailsAnUpdateUnderWay() throws {
        var h = Harness()
        try Self.connect(&h, handle: 0x0040)
        let parameters = LEConnectionParameters(
            connectionIntervalMin: 24, connectionIntervalMax: 40, maxLatency: 0, supervisionTimeout: 400)
        let update = h.request(.updateParameters(handle: 0x0040, parameters))
        h.answer(.leConnectionUpdate)
        #expect(h.core.nextDeadline == .seconds(10))
        let disconnect = h.request(.disconnect(handle: 0x0040, reason: .remoteUserTerminatedConnection))
        h.answer(.disconnect)
        try h.event(HostScriptedController.disconnectionComplete(handle: 0x0040, reason: 0x16))
        #expect(
            h.drain() == [
                .linkDown(handle: 0x0040, reason: .connectionTerminatedByLocalHost),
                .complete(update, .failed(.l2cap(.disconnected(handle: 0x0040, reason: .connectionTerminatedByLocalHost)))),
                .complete(disconnect, .disconnected(.connectionTerminatedByLocalHost)),
            ])
        #expect(h.core.nextDeadline == nil)
    }

    @Test func anUpdateIsBoundedAndCompletesWithTheNewParameters() throws {
        var h = Harness()
        try Self.connect(&h, handle: 0x0040)
        let parameters = LEConnectionParameters(
            connectionIntervalMin: 24, connectionIntervalMax: 40, maxLatency: 0, supervisionTimeout: 400)
        let first = h.request(.updateParameters(handle: 0x0040, parameters))
        h.answer(.leConnectionUpdate)
        try h.event(HostScriptedController.connectionUpdateComplete(handle: 0x0040, interval: 40, latency: 0, timeout: 400))
        let updated = LEConnection.Parameters(interval: 40, peripheralLatency: 0, supervisionTimeout: 400)
        #expect(h.drain() == [.parametersUpdated(handle: 0x0040, updated), .complete(first, .updated(updated))])
        let second = h.request(.updateParameters(handle: 0x0040, parameters))
        h.answer(.leConnectionUpdate)
        h.advance(to: .seconds(10))
        #expect(h.drain() == [.complete(second, .failed(.timeout("LE Connection Update Complete for handle 0x40")))])
    }

    @Test func peerParameterRequestsAreRepliedOrRefusedAndCounted() throws {
        var h = Harness()
        try Self.connect(&h, handle: 0x0040)
        try h.event(HostScriptedController.remoteParameterRequest(handle: 0x0040, min: 24, max: 40, latency: 0, timeout: 400))
        try h.event(HostScriptedController.remoteParameterRequest(handle: 0x0040, min: 1, max: 40, latency: 0, timeout: 400))
        #expect(h.pending == [.leRemoteConnectionParameterRequestReply, .leRemoteConnectionParameterRequestNegativeReply])
        #expect(h.core.statistics.acceptedParameterRequests == 1 && h.core.statistics.refusedParameterRequests == 1)
        h.answer(.leRemoteConnectionParameterRequestReply, status: .unknownConnectionIdentifier, complete: true)
        #expect(h.core.statistics.failedCommands == 1, "a failed reply is counted, nothing else fails")
    }

    // MARK: - Advertising

    @Test func advertisingAcceptsConnectionsAndAdvertisesAgainAfterEachDisconnect() throws {
        var h = Harness()
        let id = h.request(.advertise(LEAdvertisingParameters(advertisingData: [0x02, 0x01, 0x06])))
        for opcode: HCIOpcode in [.leSetAdvertisingParameters, .leSetAdvertisingData, .leSetScanResponseData] {
            #expect(h.pending == [opcode], "one configuration command at a time")
            h.answer(opcode, complete: true)
        }
        #expect(h.pending == [.leSetAdvertisingEnable])
        h.answer(.leSetAdvertisingEnable, complete: true)
        #expect(h.drain() == [.complete(id, .done)])
        try h.event(Self.completion(handle: 0x0050, peer: Self.peer, type: 0x01, role: 0x01))
        #expect(h.drain().count == 1, "opened")
        h.take(h.core.linkOpened(0x0050, now: h.now))
        #expect(h.drain() == [.accepted(handle: 0x0050)])
        #expect(h.pending.isEmpty, "room for one connection: no advertising while it is up")
        try h.event(HostScriptedController.disconnectionComplete(handle: 0x0050, reason: 0x13))
        #expect(h.drain() == [.linkDown(handle: 0x0050, reason: .remoteUserTerminatedConnection)])
        #expect(h.pending == [.leSetAdvertisingEnable], "advertising again")
        let stop = h.request(.stopAdvertising)
        h.answer(.leSetAdvertisingEnable, complete: true)
        #expect(h.pending == [.leSetAdvertisingEnable], "the stop's disable")
        h.answer(.leSetAdvertisingEnable, status: .commandDisallowed, complete: true)
        #expect(h.drain() == [.advertisingEnded, .complete(stop, .done)])
    }

    @Test func anAcceptedConnectionNobodyTakesIsDisconnectedAndAdvertisingResumes() throws {
        var h = Harness()
        let id = h.request(.advertise(LEAdvertisingParameters(advertisingData: [0x02, 0x01, 0x06])))
        for opcode: HCIOpcode in [.leSetAdvertisingParameters, .leSetAdvertisingData, .leSetScanResponseData, .leSetAdvertisingEnable] {
            h.answer(opcode, complete: true)
        }
        #expect(h.drain() == [.complete(id, .done)])
        try h.event(Self.completion(handle: 0x0051, peer: Self.peer, type: 0x01, role: 0x01))
        h.take(h.core.linkOpened(0x0051, now: h.now))
        _ = h.drain()
        h.take(h.core.acceptedConnectionDropped(0x0051, now: h.now))
        #expect(h.pending == [.disconnect])
        h.answer(.disconnect)
        try h.event(HostScriptedController.disconnectionComplete(handle: 0x0051, reason: 0x16))
        #expect(h.pending == [.leSetAdvertisingEnable], "room again: advertising")
    }

    @Test func aStopWhoseDisableIsUnansweredFailsWhenTheHostCloses() {
        var h = Harness()
        let id = h.request(.advertise(LEAdvertisingParameters(advertisingData: [])))
        for opcode: HCIOpcode in [.leSetAdvertisingParameters, .leSetAdvertisingData, .leSetScanResponseData, .leSetAdvertisingEnable] {
            h.answer(opcode, complete: true)
        }
        _ = h.drain()
        let stop = h.request(.stopAdvertising)
        #expect(h.pending == [.leSetAdvertisingEnable])
        h.take(h.core.close(reason: "unplugged"))
        #expect(h.drain().contains(.complete(stop, .failed(.closed("unplugged")))))
        _ = id
    }

    // MARK: - Closing

    @Test func closingFailsEveryWaitAndEndsEveryStream() throws {
        var h = Harness()
        try Self.connect(&h, handle: 0x0040)
        let scan = h.request(.scan(LEScanParameters()))
        let connect = h.request(.connect([.init(address: Self.other, type: .public)], timeout: nil, parameters: nil))
        let queued = h.request(.connect([.init(address: Self.other, type: .random)], timeout: nil, parameters: nil))
        let disconnect = h.request(.disconnect(handle: 0x0040, reason: .remoteUserTerminatedConnection))
        _ = h.drain()
        h.take(h.core.close(reason: "unplugged"))
        #expect(
            h.drain() == [
                .complete(connect, .failed(.closed("unplugged"))), .complete(queued, .failed(.closed("unplugged"))),
                .complete(disconnect, .failed(.closed("unplugged"))), .scanEnded(scan, .closed("unplugged")),
                .hostEnded("unplugged"),
            ])
        let late = h.request(.connect([.init(address: Self.peer, type: .random)], timeout: nil, parameters: nil))
        #expect(h.drain() == [.complete(late, .failed(.closed("unplugged")))])
        #expect(h.core.nextDeadline == nil && h.core.close(reason: "again").isEmpty)
    }
}
