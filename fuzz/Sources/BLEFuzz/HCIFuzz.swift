import Capture
import Bluetooth
import HCI
import L2CAP

/// Targets over the HCI codec: events, AD structures, extended reports, H4 framing, captures.
enum HCIFuzz {
    /// HCIEvent and HCIPacket decode: typed error, or a value that encodes and decodes back equal.
    static func event(_ bytes: [UInt8]) {
        if let event = try? HCIEvent(bytes: bytes) {
            _ = event.description
            if let encoded = try? event.encoded() {
                let again = try? HCIEvent(bytes: encoded)
                require(again == event, "HCI event re-decode differs: \(event) vs \(String(describing: again))")
            }
        }
        // The same octets as an H4 packet (first octet the packet indicator).
        if let packet = try? HCIPacket(h4: bytes) {
            _ = packet.description
            if let encoded = try? packet.h4Encoded() {
                let again = try? HCIPacket(h4: encoded)
                require(again == packet, "HCI packet re-decode differs: \(packet) vs \(String(describing: again))")
            }
        }
    }

    /// AD structures: every element lies inside the input; well-formed data re-encodes to equal structures.
    static func advertisingData(_ bytes: [UInt8]) {
        let data = AdvertisingData(bytes)
        for element in data.elements {
            require(element.offset >= 0 && element.offset + element.data.count <= bytes.count, "AD element outside input")
        }
        _ = data.description
        _ = data.summary
        _ = data.wiresharkElements
        if data.isWellFormed, let encoded = try? AdvertisingData.encode(data.structures, maxLength: 1650) {
            let again = AdvertisingData(encoded)
            require(again.structures == data.structures, "AD re-encode changed the structures")
        }
    }

    /// Extended-report reassembly: pending chains ≤ maxChains, reassembled data ≤ maxDataLength.
    static func extendedReassembly(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        var reassembler = ExtendedAdvertisingReassembler(maxDataLength: 300, maxChains: 4)
        var steps = 0
        while !input.isEmpty && steps < 256 {
            steps += 1
            let parameters = input.longChunk(limit: 600)
            var reader = ByteReader(parameters)
            guard let event = try? LEExtendedAdvertisingReportEvent(parsing: &reader) else { continue }
            for report in event.reports {
                for output in reassembler.receive(report) {
                    if case .report(let whole) = output {
                        require(whole.data.count <= 300,
                            "reassembled \(whole.data.count) octets past maxDataLength")
                    }
                }
                require(reassembler.pendingCount <= 4, "pending chains \(reassembler.pendingCount) > maxChains")
            }
        }
        _ = reassembler.reset()
        require(reassembler.pendingCount == 0, "chains pending after reset")
    }

    /// H4 framing: packets are whole and parse or fail typed; buffer bounded; a failure is sticky.
    static func h4(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        var framer = H4Framer()
        var failed = false
        while !input.isEmpty {
            let piece = input.take(Int(input.byte() % 64) + 1)
            framer.append(piece)
            while true {
                do {
                    guard let (type, packet) = try framer.nextPacket() else { break }
                    require(!failed, "a packet after the framer failed")
                    var reader = ByteReader(packet)
                    _ = try? HCIPacket(type: type, parsing: &reader)
                } catch {
                    failed = true
                    require(framer.isFailed, "nextPacket threw but the framer is not failed")
                    break
                }
            }
            // Drained after every read: at most one partial packet plus the last read.
            require(framer.bufferedCount <= 1 + 4 + 65_535 + 65, "H4 buffer grew to \(framer.bufferedCount)")
        }
    }

    /// btsnoop/pcap/pcapng readers + CaptureDecoder: typed error or records within the file, count bounded.
    static func capture(_ bytes: [UInt8]) {
        guard var reader = try? CaptureReader(bytes: bytes) else { return }
        var decoder = CaptureDecoder()
        var visitor = CountingVisitor()
        var records = 0
        while true {
            let record: CaptureRecord?
            do { record = try reader.nextRecord() } catch { break }
            guard let record else { break }
            records += 1
            // Every record takes at least a few octets of the file.
            require(records <= bytes.count, "more records (\(records)) than octets in the file")
            require(record.bytes.count <= bytes.count, "record larger than the file")
            decoder.decode(record, visitor: &visitor)
        }
        require(reader.offset <= bytes.count, "reader offset past the end")
        _ = reader.damage?.description
        summaryPaths(bytes)
    }

    /// `dump --summary`'s counting paths (`count` per record, `countAll` over the file buffer)
    /// tally exactly what the full decode does, and end with the same damage.
    static func summaryPaths(_ bytes: [UInt8]) {
        guard var decodeReader = try? CaptureReader(bytes: bytes),
            var countReader = try? CaptureReader(bytes: bytes),
            var countAllReader = try? CaptureReader(bytes: bytes)
        else { return }
        var decoded = CaptureTally(), counted = CaptureTally(), countedAll = CaptureTally()
        var decoder = CaptureDecoder()
        while let record = decodeReader.next() { decoder.decode(record, visitor: &decoded) }
        decoder = CaptureDecoder()
        while let record = countReader.next() { decoder.count(record, visitor: &counted) }
        decoder = CaptureDecoder()
        decoder.countAll(&countAllReader, visitor: &countedAll)
        require(counted == decoded, "count differs from decode: \(counted) vs \(decoded)")
        require(countedAll == decoded, "countAll differs from decode: \(countedAll) vs \(decoded)")
        let damage = decodeReader.damage?.description
        require(countAllReader.damage?.description == damage, "countAll ends with other damage")
        require(countAllReader.recordCount == decodeReader.recordCount, "countAll read another number of records")
    }
}

/// Counts what the capture decoder reports (and touches every description).
struct CountingVisitor: CaptureVisitor {
    var count = 0
    mutating func visit(record: CaptureRecord, packet: HCIPacket?, error: HCIError?) {
        count += 1
        _ = packet?.description
    }
    mutating func visit(advertisingReport: AdvertisingReportItem, record: CaptureRecord) { count += 1 }
    mutating func visit(att: ATTItem, record: CaptureRecord) {
        count += 1
        _ = att.pdu.map { "\($0)" }
    }
    mutating func visit(
        l2capFrame: L2CAPBasicFrame, connectionHandle: UInt16, direction: CaptureDirection, record: CaptureRecord
    ) { count += 1 }
    mutating func visit(l2capDrop: L2CAPReassembler.Drop, record: CaptureRecord) { count += 1 }
    mutating func visit(sduDrop reason: String, connectionHandle: UInt16, channelID: UInt16, record: CaptureRecord) {
        count += 1
    }
}
