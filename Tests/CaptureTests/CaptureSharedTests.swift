import Bluetooth
import Foundation
import Testing

@testable import HCI
@testable import Capture
import TestSupport

/// The shared real-world captures (`<package root>/../shared/captures`, see its MANIFEST.md).
enum CaptureShared {
    static let directory: String = {
        var parts = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)  // CaptureSharedTests.swift, HCITests, Tests
        return parts.joined(separator: "/") + "/../shared/captures"
    }()

    static var isAvailable: Bool {
        (try? CaptureFile.readAll(path: directory + "/MANIFEST.md")) != nil
    }

    static let skipMessage = "shared captures not found at <package root>/../shared/captures: skipped"
}

@Suite(.cpuBound, .enabled(if: CaptureShared.isAvailable, "\(CaptureShared.skipMessage)"))
struct CaptureSharedTests {
    /// File, packets (tshark and `btmon -a`), ACL packets (`btmon -a`), per MANIFEST.md.
    @Test(arguments: [
        ("horizon-treadmill-ftms.btsnoop", 2572, 1659),
        ("revcar-acl-only.btsnoop", 149, 149),
        ("smartpen-reads-extadv.btsnoop", 7250, 4867),
        ("android-pixel6-extadv-scan.btsnoop", 222, 0),
    ] as [(String, Int, Int)])
    func recordCountsMatchTheManifest(file: String, packets: Int, acl: Int) throws {
        var reader = try CaptureFile.open(path: CaptureShared.directory + "/" + file)
        #expect(reader.format == .btsnoop(.h4))
        var count = 0
        var aclCount = 0
        var directions: Set<CaptureDirection> = []
        while let record = try reader.nextRecord() {
            count += 1
            #expect(record.number == count)
            #expect(record.packetType != nil, "record \(record.number): \(record.kind)")
            if record.packetType == .acl { aclCount += 1 }
            if record.packetType == .command { #expect(record.direction == .sent) }
            if record.packetType == .event { #expect(record.direction == .received) }
            directions.insert(record.direction)
        }
        #expect(reader.damage == nil)
        #expect(count == packets)
        #expect(aclCount == acl)
        #expect(directions == [.sent, .received])
    }

    @Test func ubertoothCaptureIsRefusedWithTheLinkType() throws {
        let path = CaptureShared.directory + "/ubertooth-ll-le-sc-pairing.pcapng"
        #expect(
            throws: HCIError.captureFile(
                "link type 256 (BLUETOOTH_LE_LL_WITH_PHDR) is not supported: only HCI captures (btsnoop datalink "
                    + "1002/2001, pcap/pcapng link type 201, 187 or 254) can be decoded; this is an over-the-air "
                    + "sniffer capture of the link layer, not HCI")
        ) { try CaptureFile.open(path: path) }
    }

    @Test func everyCaptureOpensOrExplainsWhy() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: CaptureShared.directory)
            .filter { $0.hasSuffix(".btsnoop") || $0.hasSuffix(".pcap") || $0.hasSuffix(".pcapng") || $0.hasSuffix(".log") }
        #expect(files.count >= 5)
        for file in files {
            do {
                var reader = try CaptureFile.open(path: CaptureShared.directory + "/" + file)
                #expect(try reader.readAll().count > 0, "\(file)")
            } catch {
                guard case .captureFile(let message) = error else {
                    Issue.record("\(file): \(error)")
                    continue
                }
                #expect(file.hasSuffix(".pcapng") && message.contains("is not supported"))
            }
        }
    }

    /// Wireshark's view (the gzip'd oracle next to the captures): every ATT PDU and advertising
    /// report it lists sits in the record with the same frame number, direction, connection
    /// handle and relative time, and single-fragment ATT PDUs have the same bytes.
    @Test(arguments: [
        "horizon-treadmill-ftms.btsnoop", "revcar-acl-only.btsnoop", "smartpen-reads-extadv.btsnoop",
        "android-pixel6-extadv-scan.btsnoop",
    ])
    func recordsAgreeWithWireshark(file: String) async throws {
        let oraclePath = CaptureShared.directory + "/oracle/" + file + ".oracle.jsonl.gz"
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gzip"),
            FileManager.default.fileExists(atPath: oraclePath)
        else {
            print("skipped: /usr/bin/gzip or \(oraclePath) missing")
            return
        }
        let (code, text) = try await ChildProcess.run(["/usr/bin/gzip", "-dc", oraclePath])
        #expect(code == 0)

        var reader = try CaptureFile.open(path: CaptureShared.directory + "/" + file)
        let records = try reader.readAll()
        let start = try #require(records.first).timestamp
        var checked = 0
        var comparedPDUs = 0
        for line in text.split(separator: UInt8(ascii: "\n")) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
            guard let kind = object["kind"] as? String, kind == "att" || kind == "adv_report",
                let frame = object["frame"] as? Int, let time = object["time"] as? String
            else { continue }
            let record = try #require(records.indices.contains(frame - 1) ? records[frame - 1] : nil, "frame \(frame)")
            #expect(record.number == frame)
            // "12.345678901" seconds since the first frame, to microseconds.
            let parts = time.split(separator: ".")
            let micro = Int64(parts[0])! * 1_000_000 + Int64(parts[1].prefix(6))!
            #expect(record.timestamp - start == micro, "frame \(frame)")
            if kind == "adv_report" {
                #expect(record.kind == .packet(.event) && record.bytes.first == 0x3E, "frame \(frame)")
            } else {
                #expect(record.kind == .packet(.acl), "frame \(frame)")
                let direction = object["dir"] as? String
                #expect(record.direction == (direction == "host_to_controller" ? .sent : .received), "frame \(frame)")
                let bytes = Array(record.bytes)
                try #require(bytes.count >= 4)
                #expect(Int(bytes[0]) | Int(bytes[1] & 0x0F) << 8 == object["conn"] as? Int, "frame \(frame)")
                let aclLength = Int(bytes[2]) | Int(bytes[3]) << 8
                if bytes.count >= 8, aclLength == bytes.count - 4, bytes[1] & 0x30 != 0x10,
                    Int(bytes[4]) | Int(bytes[5]) << 8 == aclLength - 4, let pdu = object["pdu"] as? String
                {
                    #expect(Hex.encode(bytes[8...]) == pdu, "frame \(frame)")
                    comparedPDUs += 1
                }
            }
            checked += 1
        }
        #expect(checked > 0)
        if file != "android-pixel6-extadv-scan.btsnoop" { #expect(comparedPDUs > 0) }
    }
}
