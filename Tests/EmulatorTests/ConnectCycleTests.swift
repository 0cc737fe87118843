import Host
import ATT
import Bluetooth
import Emulator
import GATT
import HCI
import L2CAP
import Synchronization
import Testing
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 9: 1 000 connect/disconnect cycles of our whole user-space host against the emulated
/// SensorTag (LEHost over the virtual controller, ATT, a GATT read each time, alternately a
/// disconnect from our side and from the device's), with what could leak measured before and
/// after and printed: open descriptors, threads, heap bytes in use (a leaked task, actor or
/// stream keeps its storage on the heap), the host's and the controller's connections.
@Suite("Emulator: 1 000 connect/disconnect cycles")
struct ConnectCycleTests {
    struct Snapshot: CustomStringConvertible {
        var descriptors: Int
        var threads: Int
        var heapBytes: Int

        static func take() -> Snapshot {
            Snapshot(descriptors: Self.descriptors(), threads: Self.threads(), heapBytes: Self.heap())
        }

        static func descriptors() -> Int {
            guard let directory = opendir("/proc/self/fd") else { return -1 }
            defer { closedir(directory) }
            var count = 0
            while readdir(directory) != nil { count += 1 }
            return count - 3  // ".", ".." and the directory's own descriptor
        }

        static func threads() -> Int {
            guard let file = fopen("/proc/self/status", "r") else { return -1 }
            defer { fclose(file) }
            var line: UnsafeMutablePointer<CChar>?
            var capacity = 0
            defer { free(line) }
            while getline(&line, &capacity, file) > 0, let line {
                let text = String(cString: line)
                if text.hasPrefix("Threads:") { return Int(text.dropFirst(8).trimmingPrefix(while: \.isWhitespace).prefix(while: \.isNumber)) ?? -1 }
            }
            return -1
        }

        static func heap() -> Int { heapBytesInUse() }

        var description: String {
            "\(descriptors) descriptors, \(threads) threads, \(heapBytes / 1024) KiB of heap in use"
        }
    }

    /// One cycle: connect, read the Device Name, then end the link from our side (even cycles)
    /// or have the device end it (odd: a write to the SensorTag's Connection Control
    /// "disconnect request", F000CCC3, at `disconnectRequest`).
    static func cycle(_ host: LEHost, disconnectRequest: UInt16, index: Int) async throws {
        let link = try await host.connect(to: EmulatedSensorTag.defaultAddress, type: .public, timeout: .seconds(30))
        let connection = ATTConnection(channel: link.channel)
        let client = GATTClient(connection: connection, configuration: .manual)
        #expect(try await client.read(handle: 0x0003) == Array("CC2650 SensorTag".utf8), "cycle \(index)")
        if index % 2 == 0 {
            try await host.disconnect(link)
        } else {
            // The device may end the link before its Write Response: either outcome is fine.
            _ = try? await client.write(handle: disconnectRequest, value: [0x01])
            for await _ in link.disconnected {}
        }
        await client.close()
        _ = await connection.waitUntilClosed()
    }

    /// F000CCC3's value handle, from one discovery.
    static func disconnectRequestHandle(_ host: LEHost) async throws -> UInt16 {
        let link = try await host.connect(to: EmulatedSensorTag.defaultAddress, type: .public, timeout: .seconds(30))
        let client = GATTClient(connection: ATTConnection(channel: link.channel))
        let database = try await client.discoverDatabase()
        let handle = try database.characteristic(uuid: BluetoothUUID("F000CCC3-0451-4000-B000-000000000000")!).valueHandle
        try await host.disconnect(link)
        await client.close()
        return handle
    }

    @Test func aThousandCyclesLeaveNothingBehind() async throws {
        let simulation = try await Simulation.start(
            devices: [.sensortag], configuration: .init(advertisingInterval: .milliseconds(2)))
        var configuration = LEHost.Configuration()
        configuration.commandTimeout = .seconds(30 * testTimeoutScale)  // the suite runs in parallel on two cores
        let host = try await LEHost.start(transport: simulation.hostTransport, configuration: configuration)
        let disconnectRequest = try await Self.disconnectRequestHandle(host)
        for index in 0..<20 { try await Self.cycle(host, disconnectRequest: disconnectRequest, index: index) }  // warm-up
        let before = Snapshot.take()
        let started = ContinuousClock.now
        try await withTimeout(600) {
            for index in 0..<1_000 { try await Self.cycle(host, disconnectRequest: disconnectRequest, index: index) }
        }
        let elapsed = ContinuousClock.now - started
        // Disconnections complete asynchronously on both sides: wait, bounded.
        try await withTimeout(30) {
            while true {
                let hostConnections = await host.activeConnections.count
                let controllerConnections = await simulation.controller.connectionHandles.count
                if hostConnections == 0 && controllerConnections == 0 { break }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        let after = Snapshot.take()
        let hostLeft = await host.activeConnections.count
        let controllerLeft = await simulation.controller.connectionHandles.count
        print(
            "1000 connect/disconnect cycles against the emulated SensorTag in \(elapsed): before \(before); "
                + "after \(after); connections left: host \(hostLeft), controller \(controllerLeft)")
        // One per cycle would be 1 000; the runtime and Dispatch may open one or two lazily.
        #expect(after.descriptors <= before.descriptors + 2, "descriptors: \(before.descriptors) → \(after.descriptors)")
        #expect(after.threads <= before.threads + 2, "threads: \(before.threads) → \(after.threads)")
        // The other suites allocate meanwhile; a leak of even one small object per cycle would
        // add its size × 1 000, and one task per cycle far more. (Before the timers moved from
        // sleeping tasks to Dispatch sources, cancelled timeouts kept ≈5 KB per cycle until
        // their deadlines: 5 MB here.)
        let heapGrowth = await settledHeapGrowth(since: before.heapBytes, below: 4 * 1_048_576)
        #expect(heapGrowth < 4 * 1_048_576, "heap grew by \(heapGrowth / 1024) KiB")
        await host.close()
        await simulation.stop()
    }
}
