import BLE
import Bluetooth

/// `-v`: a connection's own events on standard error, where the transport shows them — the
/// parameters it started with, the negotiated ATT_MTU, parameter updates, data length and PHY
/// changes, and the end of the link with its reason by name.
enum ConnectionVisibility {
    /// The line for a link that ended, e.g. `disconnected: Connection Timeout (0x08): the link was lost`.
    static func describe(_ reason: DisconnectReason) -> String {
        switch reason {
        case .local: "disconnected by us (Remote User Terminated Connection (0x13) sent)"
        case .remote(let status): "disconnected by the peer: \(status)"
        case .timeout: "disconnected: the link was lost (supervision or LL response timeout)"
        case .transportClosed: "disconnected: the transport closed"
        }
    }

    /// The lines describing a new connection.
    static func opened(_ peripheral: Peripheral, mtu: Int) -> [String] {
        var lines = ["\(peripheral.peer): connected, ATT_MTU \(mtu)"]
        if let parameters = peripheral.connectionParameters {
            lines.append("\(peripheral.peer): \(parameters)")
        } else {
            lines.append("\(peripheral.peer): connection parameters not available (the kernel path hides the link layer)")
        }
        return lines
    }

    /// Waits for `watcher` to report the link's end (its streams end with the link), at most a
    /// second, then cancels it.
    static func finish(_ watcher: Task<Void, Never>?) async {
        guard let watcher else { return }
        let bound = Task {
            try? await Task.sleep(for: .seconds(1))
            watcher.cancel()
        }
        await watcher.value
        bound.cancel()
    }

    /// Reports `peripheral`'s connection to `report` until the link ends: what it is now, then
    /// each change. The returned task ends with the link (or when cancelled).
    static func watch(_ peripheral: Peripheral, report: @escaping @Sendable (String) -> Void) async -> Task<Void, Never> {
        for line in opened(peripheral, mtu: await peripheral.mtu) { report(line) }
        let peer = peripheral.peer
        let events = peripheral.linkEvents()
        let states = peripheral.states()
        return Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await event in events { report("\(peer): \(event)") }
                }
                group.addTask {
                    for await state in states {
                        if case .disconnected(let reason) = state { report("\(peer): \(describe(reason))") }
                    }
                }
            }
        }
    }
}
