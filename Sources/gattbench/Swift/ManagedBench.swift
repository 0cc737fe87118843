import BLE
import Bluetooth
import Synchronization

/// `gattbench managed TRANSPORT SECONDS ADDRESS,ADDRESS,...`: the library's managed devices with
/// nothing but a count per value — the same work as Bumble's central in
/// benchmarks/many_devices.py, which measures this process's CPU and memory between the phase
/// lines it prints: `connected N` (every device connected and subscribed; N values so far),
/// `loaded N` (after SECONDS), `idle N` (13 s later, the counters stopped by then).
struct ManagedBenchmark {
    var transport: String
    var seconds: Double
    var addresses: [BluetoothAddress]

    static let counter = BluetoothUUID("C0DE0002-0000-4000-8000-00805F9B34FB")!

    func run() async throws {
        let adapter = try await Adapter.open(transport)
        let received = Received()
        var devices: [ManagedDevice] = []
        var followers: [Task<Void, Never>] = []
        for address in addresses {
            let device = await adapter.manage(PeerAddress(address: address, type: .random))
            try await device.subscribe(to: Self.counter)
            let events = device.events()
            followers.append(
                Task {
                    for await event in events {
                        if case .notification = event { received.count.withLock { $0 += 1 } }
                    }
                })
            devices.append(device)
        }
        for device in devices {
            for await state in device.states() where state == .connected { break }
        }
        print("connected \(received.count.withLock { $0 })")
        try await Task.sleep(for: .seconds(seconds))
        print("loaded \(received.count.withLock { $0 })")
        try await Task.sleep(for: .seconds(13))
        print("idle \(received.count.withLock { $0 })")
        await adapter.close()
        for follower in followers { await follower.value }
    }
}

/// The values counted so far, shared with the devices' followers.
final class Received: Sendable {
    let count = Mutex(0)
}
