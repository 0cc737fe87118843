import Capture
import ATT
import Bluetooth
import Foundation
import HCI
import L2CAP
import Testing

/// What replay takes from a capture: bearers, their PDUs with record numbers, advertising reports.
@Suite("Replay: capture extraction")
struct ReplayCaptureTests {
    /// The ATT rows of a fixture's Wireshark oracle: (frame, sent by the capture's host, pdu).
    static func oracleATT(_ path: String) throws -> [(frame: Int, sent: Bool, pdu: String)] {
        let text = try String(contentsOfFile: path + ".oracle.jsonl", encoding: .utf8)
        var rows: [(Int, Bool, String)] = []
        for line in text.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard object["kind"] as? String == "att" else { continue }
            let frame = try #require(object["frame"] as? Int)
            let direction = try #require(object["dir"] as? String)
            rows.append((frame, direction == "host_to_controller", try #require(object["pdu"] as? String)))
        }
        return rows
    }

    @Test func bumbleSessionHasOneBearerWithWiresharksPDUs() throws {
        let capture = try ReplayCapture(path: ReplayFixtures.bumble)
        #expect(capture.name == "bumble-sensortag-session.btsnoop")
        #expect(capture.damage == nil)
        var expected = ReplayBearer(connectionHandle: 1, channelID: 4, firstRecord: 40, pduCount: 47)
        // From the LE Connection Complete at record 39.
        expected.peerAddress = BluetoothAddress("F4:6C:0E:12:34:56")
        expected.peerAddressType = .random
        #expect(capture.bearers == [expected])
        #expect(try capture.bearer(peerAddress: BluetoothAddress("F4:6C:0E:12:34:56")) == expected)
        let trace = try capture.trace(of: capture.bearer())
        let oracle = try Self.oracleATT(ReplayFixtures.bumble)
        #expect(trace.entries.count == oracle.count)
        for (entry, row) in zip(trace.entries, oracle) {
            #expect(entry.line == row.frame)
            #expect((entry.direction == .hostToPeer) == row.sent)
            #expect(Hex.encode(entry.bytes) == row.pdu)
        }
        #expect(trace.entries.filter { $0.direction == .hostToPeer }.count == 21)
        #expect(try ReplayATTChannel(capture: capture).recordedClientMTU == 247)
    }

    @Test func advertisingReportsInCaptureOrder() throws {
        let reports = try ReplayCapture.advertisingReports(path: ReplayFixtures.bumble)
        #expect(reports.map(\.record) == [33, 34])
        for report in reports {
            #expect(report.item.subevent == .extendedAdvertisingReport)
            guard case .extended(let extended) = report.item.report else {
                Issue.record("report at record \(report.record) is not extended")
                continue
            }
            #expect(extended.address == BluetoothAddress("F4:6C:0E:12:34:56"))
        }
        #expect(reports[0].timestamp < reports[1].timestamp)
        // The synthetic capture: every report Wireshark lists, in order.
        let synthetic = try ReplayCapture(path: ReplayFixtures.synthetic)
        let text = try String(contentsOfFile: ReplayFixtures.synthetic + ".oracle.jsonl", encoding: .utf8)
        let oracleFrames = text.split(separator: "\n").compactMap { line -> Int? in
            guard line.contains("\"kind\":\"adv_report\"") else { return nil }
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return object?["frame"] as? Int
        }
        // Wireshark's oracle script emits no record for LE Directed Advertising Reports: the
        // event at record 13 holds two.
        var expectedFrames = oracleFrames
        expectedFrames.insert(contentsOf: [13, 13], at: try #require(expectedFrames.firstIndex { $0 > 13 }))
        #expect(synthetic.advertisingReports.map(\.record) == expectedFrames)
        #expect(
            synthetic.advertisingReports.filter { $0.record == 13 }.map(\.item.subevent) == [
                .directedAdvertisingReport, .directedAdvertisingReport,
            ])
    }

    /// The fixed channel, then two Enhanced ATT channels whose two CIDs are paired from the
    /// credit based connection signaling (Wireshark 4.0 does not see those channels).
    /// Issue 24: the bearers of a connection replayed together — a request recorded on one
    /// Enhanced ATT bearer is answered when it comes on another of ours.
    @Test func aPoolAnswersARequestOnWhicheverBearerItComes() async throws {
        let capture = try ReplayCapture(path: ReplayFixtures.synthetic)
        let pool = try ReplayBearerPool(capture: capture, connectionHandle: 64)
        #expect(pool.enhancedBearerCount == 2)
        #expect(pool.bearers.map(\.channelID) == [0x04, 0x40, 0x41])
        let first = try capture.trace(of: pool.bearers[1])
        let request = try #require(first.entries.first { $0.direction == .hostToPeer })
        let answer = try #require(first.entries.first { $0.direction == .peerToHost && $0.line > request.line })
        // The second EATT bearer's recording starts with a notification: ours of that rank has it.
        let second = pool.channel(2)
        #expect(second.maximumSDUSize == 64)
        var notified = second.incoming.makeAsyncIterator()
        #expect(try await notified.next()?.first == 0x1B)
        // On our first EATT bearer: its own recording answers.
        let enhanced = pool.channel(1)
        try await enhanced.send(request.bytes)
        var incoming = enhanced.incoming.makeAsyncIterator()
        #expect(try await incoming.next() == answer.bytes)
        #expect(!pool.unusedRequests.contains(request))
        // The same request on our second bearer: the one left, recorded on the unenhanced bearer.
        try await second.send(request.bytes)
        #expect(try await notified.next()?.first == 0x0B)
        // A third time: no unused recording of it is left.
        await #expect(throws: ReplayError.self) { try await pool.channel(0).send(request.bytes) }
    }

    @Test func syntheticCaptureBearersPairEnhancedATTChannels() throws {
        let capture = try ReplayCapture(path: ReplayFixtures.synthetic)
        let oracle = try Self.oracleATT(ReplayFixtures.synthetic)
        let fixed = try capture.bearer(connectionHandle: 64, channelID: 4)
        #expect(fixed.pduCount == oracle.count)
        #expect(fixed.firstRecord == oracle.first?.frame)
        // From the LE Connection Complete at record 22.
        let peer = BluetoothAddress("54:6C:0E:12:34:56")
        #expect(fixed.peerAddress == peer && fixed.peerAddressType == .public)
        var eatt = [
            ReplayBearer(connectionHandle: 64, channelID: 0x40, peerChannelID: 0x80, firstRecord: 77, pduCount: 2),
            ReplayBearer(connectionHandle: 64, channelID: 0x41, peerChannelID: 0x81, firstRecord: 80, pduCount: 2),
        ]
        for index in eatt.indices {
            eatt[index].peerAddress = peer
            eatt[index].peerAddressType = .public
            // Both the request and the response offered MTU 64: the bearers' ATT_MTU.
            eatt[index].enhancedMTU = 64
        }
        #expect(fixed.enhancedMTU == nil)
        #expect(capture.bearers == [fixed] + eatt)
        #expect(try capture.bearer(connectionHandle: 64, channelID: 0x81) == eatt[1])
        let second = try capture.trace(of: eatt[1])
        #expect(second.entries.map(\.direction) == [.peerToHost, .hostToPeer])
        #expect(second.entries.map { $0.bytes[0] } == [0x1B, 0x52])
        #expect(
            eatt[0].description
                == "connection handle 0x0040 to 54:6C:0E:12:34:56, CID 0x0040 (peer CID 0x0080)"
                + " (2 ATT PDUs from record 77)")
    }

    /// The same session in the Linux monitor datalink (2001) replays the same entries.
    @Test func monitorDatalinkGivesTheSameTrace() throws {
        let h4 = try ReplayCapture(path: ReplayFixtures.bumble)
        var writer = try BTSnoopWriter(datalink: .monitor)
        for record in try CaptureFile.open(path: ReplayFixtures.bumble) {
            try writer.append(record)
        }
        let monitor = try ReplayCapture(bytes: writer.takeBytes(), name: "monitor.btsnoop")
        #expect(monitor.bearers == h4.bearers)
        #expect(try monitor.trace(of: monitor.bearer()) == h4.trace(of: h4.bearer()))
        #expect(monitor.advertisingReports.map(\.record) == h4.advertisingReports.map(\.record))
    }

    @Test func captureWithoutATTIsAClearError() throws {
        let (bytes, _) = try ReplayFixtures.capture(of: ATTTrace(entries: []))
        let capture = try ReplayCapture(bytes: bytes, name: "reset-only.btsnoop")
        let expected = ReplayError(capture: "reset-only.btsnoop", .noATT(records: 2, advertisingReports: 0))
        #expect(throws: expected) { try capture.bearer() }
        #expect(throws: expected) { try ReplayATTChannel(capture: capture) }
        #expect(
            expected.description
                == "reset-only.btsnoop: no ATT PDU in the capture (2 records, 0 advertising reports):"
                + " nothing to replay as a GATT peer")
    }

    @Test func unknownBearerListsTheCapturesBearers() throws {
        let capture = try ReplayCapture(path: ReplayFixtures.bumble)
        do {
            _ = try ReplayATTChannel(capture: capture, connectionHandle: 2)
            Issue.record("connection handle 2 is not in the capture")
        } catch {
            #expect(
                error.description
                    == "bumble-sensortag-session.btsnoop: no ATT bearer on connection handle 0x0002; the capture has:"
                    + " connection handle 0x0001 to F4:6C:0E:12:34:56, CID 0x0004 (47 ATT PDUs from record 40)")
        }
    }

    @Test func unknownPeerAddressIsRefused() throws {
        let capture = try ReplayCapture(path: ReplayFixtures.bumble)
        let address = try #require(BluetoothAddress("00:11:22:33:44:55"))
        #expect {
            try capture.bearer(peerAddress: address)
        } throws: { error in
            guard let error = error as? ReplayError, case .noSuchBearer(nil, nil, address, capture.bearers) = error.kind
            else { return false }
            return error.description.contains("no ATT bearer on any connection to 00:11:22:33:44:55;")
        }
    }

    @Test func missingFileNamesIt() {
        #expect {
            try ReplayCapture(path: "/nonexistent/dir/none.btsnoop")
        } throws: { error in
            guard let error = error as? ReplayError, case .capture(.system) = error.kind else { return false }
            return error.capture == "none.btsnoop" && error.description.hasPrefix("none.btsnoop: ")
        }
    }

    /// A connection handle reused after Disconnection Complete is a new bearer.
    @Test func handleReusedAfterDisconnectionIsANewBearer() throws {
        let first = try ATTTrace(parsing: "> 0a0300\n< 0b41\n")
        let second = try ATTTrace(parsing: "> 0a0500\n< 0b42\n")
        let (bytesA, _) = try ReplayFixtures.capture(of: first)
        let (bytesB, _) = try ReplayFixtures.capture(of: second)
        // File A, a Disconnection Complete on 0x0040, then the records of B after its header.
        var writer = try BTSnoopWriter(datalink: .h4, includeHeader: false)
        let disconnection = try ATTCaptureFramer(connectionHandle: 0x0040).disconnectionComplete()
        try writer.append(.event, disconnection, direction: .received, timestamp: 3_000)
        let bytes = bytesA + writer.takeBytes() + bytesB.dropFirst(16)
        let capture = try ReplayCapture(bytes: bytes, name: "two.btsnoop")
        #expect(
            capture.bearers == [
                ReplayBearer(connectionHandle: 0x40, channelID: 4, firstRecord: 3, pduCount: 2),
                ReplayBearer(connectionHandle: 0x40, channelID: 4, firstRecord: 8, pduCount: 2),
            ])
        #expect(
            try capture.trace(of: capture.bearer(connectionHandle: 0x40)).entries.map(\.bytes)
                == first.entries.map(\.bytes))
        #expect(try capture.trace(of: capture.bearers[1]).entries.map(\.line) == [8, 9])
    }

    /// pcap link type 187 records no direction: replay refuses, naming the record.
    @Test func captureWithoutDirectionsIsRefused() throws {
        var file = ByteWriter()
        file.writeUInt32LE(0xA1B2_C3D4)
        file.writeUInt16LE(2)
        file.writeUInt16LE(4)
        file.writeUInt32LE(0)
        file.writeUInt32LE(0)
        file.writeUInt32LE(65_535)
        file.writeUInt32LE(187)
        let acl = try ATTCaptureFramer().aclPackets([0x0A, 0x03, 0x00], direction: .sent)[0]
        file.writeUInt32LE(1)
        file.writeUInt32LE(0)
        file.writeUInt32LE(UInt32(acl.count + 1))
        file.writeUInt32LE(UInt32(acl.count + 1))
        file.writeUInt8(0x02)
        file.writeBytes(acl)
        let capture = try ReplayCapture(bytes: file.bytes, name: "h4.pcap")
        #expect(throws: ReplayError(capture: "h4.pcap", .unknownDirection(record: 1))) {
            try ReplayATTChannel(capture: capture)
        }
    }
}
