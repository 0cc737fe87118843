import ATT
import Bluetooth
import Testing

@testable import GATT

@Suite("GATT database discovery engine")
struct GATTDatabaseDiscoveryTests {
    /// Each database of the shared vectors, served by the simulated server at ATT_MTU 23 and
    /// 512: the engine finds exactly the database, in no more requests than a per-service walk.
    @Test(arguments: [23, 512])
    func sharedDatabases(mtu: Int) throws {
        guard let databases = try SharedVectors.fullDatabases() else {
            print("skipped: \(SharedVectors.missingMessage)")
            return
        }
        #expect(databases.count == 4)
        for (name, database) in databases.sorted(by: { $0.key < $1.key }) {
            var server = SimulatedAttributeServer(
                attributes: database.attributes, groupEnds: database.groupEnds, mtu: mtu)
            let outcome = server.run(DatabaseDiscovery(mtu: mtu))
            guard case .done(let found) = outcome else {
                Issue.record("\(name): \(outcome)")
                continue
            }
            #expect(found == GATTDatabase(services: database.services), "\(name) at ATT_MTU \(mtu)")
            try found.validate()

            // The per-service walk (includes, characteristics, descriptors per service).
            var walker = SimulatedAttributeServer(
                attributes: database.attributes, groupEnds: database.groupEnds, mtu: mtu)
            guard case .done(let primaries) = walker.run(DiscoverAllPrimaryServices(mtu: mtu)) else {
                Issue.record("\(name): walk")
                continue
            }
            var queue = primaries
            while !queue.isEmpty {
                let service = queue.removeFirst()
                if case .done(let includes) = walker.run(FindIncludedServices(service: service, mtu: mtu)) {
                    // Secondary services are reached through includes; walk them too.
                    queue += includes.filter { include in !primaries.contains { $0.startHandle == include.startHandle }
                    }
                    .map { Service(uuid: $0.uuid ?? 0, startHandle: $0.startHandle, endHandle: $0.endHandle) }
                }
                guard
                    case .done(let characteristics) = walker.run(DiscoverAllCharacteristics(service: service, mtu: mtu))
                else { continue }
                for characteristic in characteristics {
                    if let range = characteristic.descriptorRange {
                        _ = walker.run(DiscoverAllCharacteristicDescriptors(range: range, mtu: mtu))
                    }
                }
            }
            print("\(name) ATT_MTU \(mtu): engine \(server.requests) requests, per-service walk \(walker.requests)")
            #expect(server.requests <= walker.requests, "\(name): \(server.requests) vs \(walker.requests)")
        }
    }

    /// A SensorTag-like database (GAP, GATT, Battery, two 128-bit sensor services with CCCDs
    /// and user descriptions) at ATT_MTU 23: the exact request sequence and count.
    @Test func sensorTagLike() {
        let base = "-0451-4000-B000-000000000000"
        func tiUUID(_ short: String) -> BluetoothUUID { BluetoothUUID("F000" + short + base)! }
        typealias A = SimulatedAttributeServer.Attribute
        var attributes: [A] = [
            A(handle: 1, type: 0x2800, value: [0x00, 0x18]),
            A(handle: 2, type: 0x2803, value: [0x02, 0x03, 0x00, 0x00, 0x2A]), A(handle: 3, type: 0x2A00, value: []),
            A(handle: 4, type: 0x2800, value: [0x0F, 0x18]),
            A(handle: 5, type: 0x2803, value: [0x12, 0x06, 0x00, 0x19, 0x2A]),
            A(handle: 6, type: 0x2A19, value: [0x5C]),
            A(handle: 7, type: 0x2902, value: [0, 0]),
        ]
        var handle: UInt16 = 8
        var groupEnds: [UInt16: UInt16] = [1: 3, 4: 7]
        for sensor in ["AA00", "AA20"] {
            let start = handle
            attributes.append(A(handle: handle, type: 0x2800, value: tiUUID(sensor).littleEndianBytes))
            let prefix = String(sensor.prefix(3))
            // data (read, notify) + CCCD + CUD, config (read, write) + CUD, period (read, write) + CUD
            for (suffix, properties, hasCCCD) in [
                ("1", UInt8(0x12), true), ("2", UInt8(0x0A), false), ("3", UInt8(0x0A), false),
            ] {
                let uuid = tiUUID(prefix + suffix)
                attributes.append(
                    A(
                        handle: handle + 1, type: 0x2803,
                        value: [properties, UInt8(truncatingIfNeeded: handle + 2), UInt8((handle + 2) >> 8)]
                            + uuid.littleEndianBytes))
                attributes.append(A(handle: handle + 2, type: uuid, value: [0]))
                handle += 2
                if hasCCCD {
                    handle += 1
                    attributes.append(A(handle: handle, type: 0x2902, value: [0, 0]))
                }
                handle += 1
                attributes.append(A(handle: handle, type: 0x2901, value: Array("desc".utf8)))
            }
            groupEnds[start] = handle
            handle += 1
        }
        var server = SimulatedAttributeServer(attributes: attributes, groupEnds: groupEnds, mtu: 23)
        let outcome = server.run(DatabaseDiscovery(mtu: 23, findIncludes: false))
        guard case .done(let database) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(database.services.count == 4)
        #expect(database.characteristics.count == 8)
        #expect(database.characteristics.map { $0.descriptors.count } == [0, 1, 2, 1, 1, 2, 1, 1])
        #expect(database.characteristics.map(\.endHandle) == [3, 7, 12, 15, 18, 23, 26, 29])
        // Services: one round of two 16-bit entries, one per 128-bit service, then Attribute
        // Not Found (4). Characteristics over all services: two 16-bit declarations, then one
        // 128-bit declaration per response, then one more because a descriptor follows the
        // last value (8). Find Information once per descriptor gap (7).
        #expect(server.requests == 4 + 8 + 7)
    }

    @Test func failurePropagates() {
        var server = SimulatedAttributeServer(
            attributes: [
                .init(handle: 1, type: 0x2800, value: [0x00, 0x18]), .init(handle: 2, type: 0x2803, value: [1, 2]),
            ],
            groupEnds: [1: 2], mtu: 23)
        #expect(
            server.run(DatabaseDiscovery())
                == .fail(
                    .invalidAttributeValue(
                        type: 0x2803, handle: 2, reason: .invalidLength(2, allowed: [5, 19]))))
        var empty = SimulatedAttributeServer(attributes: [], groupEnds: [:], mtu: 23)
        #expect(empty.run(DatabaseDiscovery()) == .done(GATTDatabase()))
    }
}
