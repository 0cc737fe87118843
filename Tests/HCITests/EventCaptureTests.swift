import Bluetooth
import Foundation
import Testing

@testable import HCI
import TestSupport

/// The shared captures (`<package root>/../shared/captures`), when present.
enum EventsSharedCaptures {
    static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/captures")

    static var available: Bool { FileManager.default.fileExists(atPath: directory.appendingPathComponent("oracle").path) }

    static var btsnoopFiles: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".btsnoop") }.sorted()
    }

    /// A minimal btsnoop reader, for tests only: 16-octet header ("btsnoop\0", version 1,
    /// datalink 1002 = H4), then records of a 24-octet big-endian header (original length,
    /// included length, flags, drops, timestamp) and `included length` octets of H4 packet.
    static func h4Records(_ name: String) throws -> [ArraySlice<UInt8>] {
        let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
        var reader = ByteReader(bytes)
        let magic = try reader.readBytes(8)
        guard Array(magic) == Array("btsnoop\0".utf8) else { throw CaptureError("\(name): not a btsnoop file") }
        guard try reader.readUInt32BE() == 1 else { throw CaptureError("\(name): version is not 1") }
        guard try reader.readUInt32BE() == 1002 else { throw CaptureError("\(name): datalink is not H4 (1002)") }
        var records: [ArraySlice<UInt8>] = []
        while !reader.isAtEnd {
            _ = try reader.readUInt32BE()  // original length
            let included = Int(try reader.readUInt32BE())
            _ = try reader.readUInt32BE()  // flags
            _ = try reader.readUInt32BE()  // cumulative drops
            _ = try reader.readUInt64BE()  // timestamp
            records.append(try reader.readBytes(included))
        }
        return records
    }

    /// The oracle's JSON lines for a capture (gunzipped with `zcat`).
    static func oracle(_ name: String) async throws -> [[String: Any]] {
        let (code, data) = try await ChildProcess.run(
            ["zcat", directory.appendingPathComponent("oracle/\(name).oracle.jsonl.gz").path])
        guard code == 0 else { throw CaptureError("zcat failed for \(name)") }
        return try data.split(separator: UInt8(ascii: "\n")).map {
            guard let object = try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] else {
                throw CaptureError("oracle line is not an object")
            }
            return object
        }
    }

    struct CaptureError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

/// One advertising report in the oracle's terms.
private struct ReportView: Equatable {
    var eventType: Int
    var addressType: Int
    var address: String
    var rssi: Int
    var data: String
    var ad: [String]
    var malformed: Bool
}

private func view(eventType: Int, addressType: LEAddressType, address: BluetoothAddress, rssi: Int8, data: [UInt8]) -> ReportView {
    let ad = AdvertisingData(data)
    let overrun = ad.problems.contains { if case .lengthOverrun = $0 { return true } else { return false } }
    return ReportView(
        eventType: eventType, addressType: Int(addressType.rawValue), address: address.format(uppercase: false),
        rssi: Int(rssi), data: Hex.encode(data), ad: ad.wiresharkElements.map { "\($0.type.rawValue):\(Hex.encode($0.data))" },
        malformed: overrun)
}

@Suite("HCI events: shared captures", .cpuBound)
struct EventCaptureTests {
    @Test(
        .enabled(if: EventsSharedCaptures.available, "skipped: /work/shared/captures (package root/../shared) is absent"),
        arguments: EventsSharedCaptures.available ? EventsSharedCaptures.btsnoopFiles : [])
    func decodesEveryPacketAndMatchesOracleReports(_ name: String) async throws {
        var reports: [Int: [ReportView]] = [:]  // frame → reports in order
        var eventCount = 0
        var reassembler = ExtendedAdvertisingReassembler()
        var extendedIn = 0
        var extendedOut = 0
        for (index, record) in try EventsSharedCaptures.h4Records(name).enumerated() {
            let frame = index + 1
            let packet: HCIPacket
            do {
                packet = try HCIPacket(h4: record)
            } catch {
                Issue.record("\(name) frame \(frame): \(error) — \(Hex.encode(record))")
                continue
            }
            #expect(!packet.description.isEmpty)
            // Re-encoding gives the same octets.
            #expect((try? packet.h4Encoded()) == Array(record), "\(name) frame \(frame)")
            guard case .event(let event) = packet else { continue }
            eventCount += 1
            guard case .leMeta(let meta) = event else { continue }
            switch meta {
            case .advertisingReport(let e):
                reports[frame] = e.reports.map {
                    view(eventType: Int($0.eventType.rawValue), addressType: $0.addressType, address: $0.address, rssi: $0.rssi, data: $0.data)
                }
            case .directedAdvertisingReport(let e):
                reports[frame] = e.reports.map {
                    view(eventType: Int($0.eventType.rawValue), addressType: $0.addressType, address: $0.address, rssi: $0.rssi, data: [])
                }
            case .extendedAdvertisingReport(let e):
                reports[frame] = e.reports.map {
                    view(eventType: Int($0.eventType.rawValue), addressType: $0.addressType, address: $0.address, rssi: $0.rssi, data: $0.data)
                }
                for report in e.reports {
                    extendedIn += 1
                    for output in reassembler.receive(report) {
                        if case .report = output { extendedOut += 1 }
                    }
                }
            default: break
            }
        }
        #expect(eventCount > 0 || name.contains("acl-only"))
        #expect(extendedOut <= extendedIn)

        let oracle = try await EventsSharedCaptures.oracle(name)
        let summary = try #require(oracle.first { $0["kind"] as? String == "summary" })
        let counts = try #require(summary["counts"] as? [String: Any])
        let expectedCount = try #require(counts["adv_report"] as? Int)
        #expect(reports.values.reduce(0) { $0 + $1.count } == expectedCount, "\(name): advertising report count")

        var compared = 0
        var malformed = 0
        for record in oracle where record["kind"] as? String == "adv_report" {
            let frame = try #require(record["frame"] as? Int)
            let position = try #require(record["index"] as? Int)
            guard let ours = reports[frame], position < ours.count else {
                Issue.record("\(name) frame \(frame): oracle report \(position) missing")
                continue
            }
            let ad = (record["ad"] as? [[String: Any]] ?? []).map { "\($0["type"] as? Int ?? -1):\($0["data"] as? String ?? "")" }
            let isMalformed = record["malformed"] as? Bool ?? false
            if isMalformed { malformed += 1 }
            let expected = ReportView(
                eventType: record["event_type"] as? Int ?? -1, addressType: record["address_type"] as? Int ?? -1,
                address: record["address"] as? String ?? "", rssi: record["rssi"] as? Int ?? 0,
                data: record["data"] as? String ?? "", ad: ad, malformed: isMalformed)
            #expect(ours[position] == expected, "\(name) frame \(frame) report \(position)")
            compared += 1
        }
        #expect(compared == expectedCount)
        if name.hasPrefix("smartpen") { #expect(malformed == 120) }
    }
}
