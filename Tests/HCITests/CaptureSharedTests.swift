import Foundation
import Testing

@testable import HCI

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

@Suite(.enabled(if: CaptureShared.isAvailable, "\(CaptureShared.skipMessage)"))
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
}
