import Bluetooth
import HCI

/// Advertising, the peripheral role: the configuration commands and the enable, connections
/// accepted while the parameters allow, advertising again after each while there is room and
/// after every disconnect of an accepted link.
extension LEHostCore {
    mutating func startAdvertising(
        _ id: RequestID, _ parameters: LEAdvertisingParameters, now: Duration, into actions: inout [Action]
    ) {
        if let why = parameters.invalidity {
            actions.append(.complete(id, .failed(.invalidArgument(why))))
            return
        }
        guard advertising == nil else {
            actions.append(.complete(id, .failed(.invalidArgument("already advertising"))))
            return
        }
        let setup: [HCICommandPacket]
        do throws(HCIError) {
            setup = try configuration(parameters) + [advertisingEnable(true)]
        } catch {
            actions.append(.complete(id, .failed(.hci(error))))
            return
        }
        advertising = Advertising(id: id, parameters: parameters, setup: setup)
        sendNextSetup(id, into: &actions)
    }

    private mutating func sendNextSetup(_ id: RequestID, into actions: inout [Action]) {
        guard var session = advertising, session.id == id, !session.setup.isEmpty else { return }
        let next = session.setup.removeFirst()
        advertising = session
        send(next, .advertiseSetup(id), into: &actions)
    }

    mutating func advertiseSetupFinished(
        _ id: RequestID, _ outcome: HCICommandFlow.Outcome, now: Duration, into actions: inout [Action]
    ) {
        guard let session = advertising, session.id == id, !session.started else {
            // Stopped while it was being set up: the stop answered the caller.
            return
        }
        if let error = Self.failure(outcome) {
            advertising = nil
            actions.append(.advertisingEnded)
            actions.append(.complete(id, .failed(.hci(error))))
            return
        }
        if !session.setup.isEmpty {
            sendNextSetup(id, into: &actions)
            return
        }
        advertising?.started = true
        actions.append(
            .log(
                .info,
                "advertising (\(usesExtendedAdvertising ? "extended set, legacy PDUs" : "legacy"), \(session.parameters.legacyType))"
            ))
        actions.append(.complete(id, .done))
    }

    /// Stops advertising (`id` nil: the stream of connections ended); accepted links stay up.
    mutating func stopAdvertising(_ id: RequestID?, now: Duration, into actions: inout [Action]) {
        guard let session = advertising else {
            if let id { actions.append(.complete(id, .done)) }
            return
        }
        advertising = nil
        actions.append(.advertisingEnded)
        if !session.started { actions.append(.complete(session.id, .failed(.invalidArgument("advertising was stopped")))) }
        do throws(HCIError) {
            send(try advertisingEnable(false), .advertisingStop(id), into: &actions)
        } catch {
            if let id { actions.append(.complete(id, .failed(.hci(error)))) }
        }
    }

    /// Enables advertising again (the controller stopped when a central connected) while there is
    /// room for another connection.
    mutating func resumeAdvertising(now: Duration, into actions: inout [Action]) {
        guard closedReason == nil, let session = advertising, session.started, !session.resuming,
            session.accepted.count < session.parameters.maximumConnections,
            let enable = try? advertisingEnable(true)
        else { return }
        advertising?.resuming = true
        send(enable, .advertisingResume(session.id), into: &actions)
    }

    /// LE Set (Extended) Advertising Enable.
    func advertisingEnable(_ enabled: Bool) throws(HCIError) -> HCICommandPacket {
        if usesExtendedAdvertising {
            return try HCICommandPacket(
                LESetExtendedAdvertisingEnableCommand(
                    enable: enabled, sets: [LEExtendedAdvertisingSetEnable(advertisingHandle: Self.advertisingSetHandle)]))
        }
        return try HCICommandPacket(LESetAdvertisingEnableCommand(advertisingEnable: enabled))
    }

    /// The commands that configure advertising as `parameters` say.
    private func configuration(_ parameters: LEAdvertisingParameters) throws(HCIError) -> [HCICommandPacket] {
        let handle = Self.advertisingSetHandle
        var packets: [HCICommandPacket] = []
        if usesExtendedAdvertising {
            packets.append(
                try HCICommandPacket(
                    LESetExtendedAdvertisingParametersV1Command(
                        advertisingHandle: handle, advertisingEventProperties: parameters.extendedProperties,
                        primaryAdvertisingIntervalMin: UInt32(parameters.intervalMin),
                        primaryAdvertisingIntervalMax: UInt32(parameters.intervalMax),
                        ownAddressType: parameters.randomAddress == nil ? .public : .random)))
            if let random = parameters.randomAddress {
                packets.append(
                    try HCICommandPacket(LESetAdvertisingSetRandomAddressCommand(advertisingHandle: handle, randomAddress: random)))
            }
            packets.append(
                try HCICommandPacket(
                    LESetExtendedAdvertisingDataCommand(advertisingHandle: handle, advertisingData: parameters.advertisingData)))
            if parameters.connectable || !parameters.scanResponseData.isEmpty {
                packets.append(
                    try HCICommandPacket(
                        LESetExtendedScanResponseDataCommand(advertisingHandle: handle, scanResponseData: parameters.scanResponseData)))
            }
        } else {
            if let random = parameters.randomAddress {
                packets.append(try HCICommandPacket(LESetRandomAddressCommand(randomAddress: random)))
            }
            packets.append(
                try HCICommandPacket(
                    LESetAdvertisingParametersCommand(
                        advertisingIntervalMin: parameters.intervalMin, advertisingIntervalMax: parameters.intervalMax,
                        advertisingType: parameters.legacyType,
                        ownAddressType: parameters.randomAddress == nil ? .public : .random)))
            packets.append(try HCICommandPacket(LESetAdvertisingDataCommand(advertisingData: parameters.advertisingData)))
            packets.append(try HCICommandPacket(LESetScanResponseDataCommand(scanResponseData: parameters.scanResponseData)))
        }
        return packets
    }
}
