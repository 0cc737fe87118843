import BLE
import Capture
import ATT
import Bluetooth
import HCI
import L2CAP

/// Writes `dump --json` records in the schema of Wireshark's view (`captures/oracle/README.md`
/// of the shared material): one `att` record per ATT PDU and one `adv_report` record per HCI
/// advertising report. Keys and values follow that schema exactly (lower-case hex, addresses
/// as Wireshark prints them) so that the two can be compared field by field; anything of ours
/// that the schema does not have goes under the one extra key `gatt`.
struct OracleRecordWriter {
    /// `hci_h4` or `hci_mon`.
    var transport: StaticString
    /// Microseconds of the capture's first record: `time` counts from it.
    var origin: Int64?

    init(format: CaptureFormat) {
        if case .btsnoop(let datalink) = format, datalink == .monitor {
            transport = "hci_mon"
        } else {
            transport = "hci_h4"
        }
    }

    /// Moves the time origin to the first record (every record calls this, shown or not).
    mutating func noteTime(of record: CaptureRecord) {
        if origin == nil { origin = record.timestamp }
    }

    /// Microseconds since the first record.
    mutating func microseconds(of record: CaptureRecord) -> Int64 {
        let start = origin ?? record.timestamp
        if origin == nil { origin = start }
        return record.timestamp - start
    }

    // MARK: advertising reports

    static let subeventNames: [UInt8: String] = [
        0x02: "LE_ADVERTISING_REPORT", 0x0B: "LE_DIRECTED_ADVERTISING_REPORT", 0x0D: "LE_EXTENDED_ADVERTISING_REPORT",
    ]

    // The same names as literals, for the hot path (written without an escape check, found
    // without hashing).
    static func legacyEventLiteral(_ type: UInt8) -> StaticString {
        switch type {
        case 0: "ADV_IND"
        case 1: "ADV_DIRECT_IND"
        case 2: "ADV_SCAN_IND"
        case 3: "ADV_NONCONN_IND"
        case 4: "SCAN_RSP"
        default: "UNKNOWN"
        }
    }

    static func subeventLiteral(_ subevent: UInt8) -> StaticString {
        switch subevent {
        case 0x02: "LE_ADVERTISING_REPORT"
        case 0x0B: "LE_DIRECTED_ADVERTISING_REPORT"
        case 0x0D: "LE_EXTENDED_ADVERTISING_REPORT"
        default: "UNKNOWN"
        }
    }

    static func addressTypeLiteral(_ type: UInt8) -> StaticString? {
        switch type {
        case 0x00: "public"
        case 0x01: "random"
        case 0x02: "public_identity"
        case 0x03: "random_identity"
        case 0xFE: "random_unresolved"
        case 0xFF: "anonymous"
        default: nil
        }
    }

    mutating func write(_ item: AdvertisingReportItem, record: CaptureRecord, into json: inout JSONWriter) {
        let data: [UInt8]?
        switch item.report {
        case .legacy(let report): data = report.data
        case .extended(let report): data = report.data
        case .directed: data = nil
        }
        // A walk over the Length octets says whether one runs past the end; only then is the
        // data parsed whole (for its first problem).
        let overrun = data.map(Self.lengthOverruns) ?? false
        let advertisingData = overrun ? data.map { AdvertisingData($0) } : nil

        if overrun {
            // Wireshark flags a report whose AD structures run past the data as malformed.
            json.beginObject()
            json.field("kind", literal: "adv_report")
            json.field("frame", record.number)
            json.field("malformed", true)
            if let problem = advertisingData?.problem {
                json.beginObject("gatt")
                json.field("problem", problem.description)
                json.endObject()
            }
            json.endObject()
            return
        }
        let micros = microseconds(of: record)
        // Room for the whole record at once: the fixed fields take under 1 500 octets; the data
        // twice its length in hex, and again in the AD elements, each under 32 more octets.
        let dataCount = data?.count ?? 0
        let transport = transport
        let written = json.withCursor(reserving: 2_048 + 36 * dataCount) { json in
            Self.write(item, record: record, micros: micros, transport: transport, data: data, into: &json)
        }
        if !written { Self.write(item, record: record, micros: micros, transport: transport, data: data, into: &json) }
    }

    /// An advertising report whose AD structures are whole.
    private static func write<W: JSONFieldWriting>(
        _ item: AdvertisingReportItem, record: CaptureRecord, micros: Int64, transport: StaticString, data: [UInt8]?,
        into json: inout W
    ) {
        json.beginObject()
        json.field("kind", literal: "adv_report")
        json.field("frame", record.number)
        json.field("time", microseconds: micros)
        // Wireshark's time stays a string; `t` is the same as a number (seconds since the first record).
        json.field("t", secondsFromMicroseconds: micros)
        json.field("transport", literal: transport)
        json.field("subevent", Int(item.subevent.rawValue))
        json.field("subevent_name", literal: Self.subeventLiteral(item.subevent.rawValue))
        json.field("index", item.index)
        switch item.report {
        case .legacy(let report):
            json.field("event_type", Int(report.eventType.rawValue))
            json.field("event_type_name", literal: Self.legacyEventLiteral(report.eventType.rawValue))
            address(report.addressType, report.address, into: &json)
            json.field("rssi", Int(report.rssi))
        case .directed(let report):
            json.field("event_type", Int(report.eventType.rawValue))
            json.field("event_type_name", literal: Self.legacyEventLiteral(report.eventType.rawValue))
            address(report.addressType, report.address, into: &json)
            json.field("rssi", Int(report.rssi))
            json.field("direct_address_type", Int(report.directAddressType.rawValue))
            json.field("direct_address", address: report.directAddress)
        case .extended(let report):
            json.field("event_type", Int(report.eventType.rawValue))
            address(report.addressType, report.address, into: &json)
            json.field("rssi", Int(report.rssi))
            json.field("primary_phy", Int(report.primaryPHY.rawValue))
            json.field("secondary_phy", Int(report.secondaryPHY.rawValue))
            json.field("sid", Int(report.advertisingSID))
            json.field("periodic_interval", Int(report.periodicAdvertisingInterval))
            json.field("direct_address_type", Int(report.directAddressType.rawValue))
            json.field("tx_power", Int(report.txPower))
            json.field("direct_address", address: report.directAddress)
        }
        if let data {
            json.field("data_length", data.count)
            json.field("data", hex: data[...])
            json.beginArray("ad")
            // The complete structures up to the end or a zero Length (no overrun here: that
            // record was written above), as `AdvertisingData.wiresharkElements` lists them.
            var index = 0
            while index < data.count, data[index] != 0 {
                let length = Int(data[index])
                json.beginObject()
                json.field("type", Int(data[index + 1]))
                json.field("data", hex: data[(index + 2)..<(index + 1 + length)])
                json.endObject()
                index += 1 + length
            }
            json.endArray()
        }
        json.endObject()
    }

    /// Whether a Length octet of `data` runs past its end (`ADProblem.lengthOverrun`).
    static func lengthOverruns(_ data: [UInt8]) -> Bool {
        var index = 0
        while index < data.count {
            let length = Int(data[index])
            if length == 0 { return false }
            if length > data.count - index - 1 { return true }
            index += 1 + length
        }
        return false
    }

    private static func address<W: JSONFieldWriting>(_ type: LEAddressType, _ address: BluetoothAddress, into json: inout W) {
        json.field("address_type", Int(type.rawValue))
        if let name = Self.addressTypeLiteral(type.rawValue) {
            json.field("address_type_name", literal: name)
        } else {
            json.fieldNull("address_type_name")
        }
        json.field("address", address: address)
    }

    // MARK: ATT

    mutating func write(_ item: ATTItem, record: CaptureRecord, gatt: GATTAnnotator.Annotation? = nil, into json: inout JSONWriter) {
        guard let pdu = item.pdu ?? item.lenientPDU else {
            json.beginObject()
            json.field("kind", literal: "att")
            json.field("frame", record.number)
            json.field("malformed", true)
            if let error = item.error {
                json.beginObject("gatt")
                json.field("problem", error.description)
                json.endObject()
            }
            json.endObject()
            return
        }
        let micros = microseconds(of: record)
        let transport = transport
        // Room for the record at once: the fixed fields take under 1 000 octets, what a PDU's
        // fields show under 64 octets per octet of it, the GATT names what their texts take.
        let room = 1_024 + 64 * item.bytes.count + (gatt?.jsonRoom ?? 0)
        let frame = record.number
        let written = json.withCursor(reserving: room) { json in
            Self.write(item, pdu: pdu, frame: frame, micros: micros, transport: transport, gatt: gatt, into: &json)
        }
        if !written { Self.write(item, pdu: pdu, frame: frame, micros: micros, transport: transport, gatt: gatt, into: &json) }
    }

    /// An ATT record whose PDU decoded (strictly or leniently).
    private static func write<W: JSONFieldWriting>(
        _ item: ATTItem, pdu: ATTPDU, frame: Int, micros: Int64, transport: StaticString, gatt: GATTAnnotator.Annotation?,
        into json: inout W
    ) {
        json.beginObject()
        json.field("kind", literal: "att")
        json.field("frame", frame)
        json.field("time", microseconds: micros)
        // Wireshark's time stays a string; `t` is the same as a number (seconds since the first record).
        json.field("t", secondsFromMicroseconds: micros)
        json.field("transport", literal: transport)
        switch item.direction {
        case .sent: json.field("dir", literal: "host_to_controller")
        case .received: json.field("dir", literal: "controller_to_host")
        case .unknown: json.fieldNull("dir")
        }
        json.field("conn", Int(item.connectionHandle))
        json.field("cid", Int(item.channelID))
        let opcode = item.opcode
        json.field("opcode", Int(opcode.rawValue))
        json.field("op", literal: opcode.wiresharkLiteral)
        switch opcode.isSentByServer {
        case true?: json.field("sender", literal: "server")
        case false?: json.field("sender", literal: "client")
        case nil: json.fieldNull("sender")
        }
        json.field("pdu", hex: item.bytes)
        fields(of: pdu, item: item, into: &json)
        if item.pdu == nil || gatt != nil {
            json.beginObject("gatt")
            if item.pdu == nil, let error = item.error {
                json.field("problem", "strict decoder: \(error)")
            }
            gatt?.write(into: &json)
            json.endObject()
        }
        json.endObject()
    }

    private static func range<W: JSONFieldWriting>(_ start: UInt16, _ end: UInt16, into json: inout W) {
        json.field("start_handle", Int(start))
        json.field("end_handle", Int(end))
    }

    private static func uuid(_ uuid: BluetoothUUID) -> String { uuid.text(uppercase: false) }

    private static func fields<W: JSONFieldWriting>(of pdu: ATTPDU, item: ATTItem, into json: inout W) {
        switch pdu {
        case .errorResponse(let p):
            json.beginObject("error")
            json.field("request_opcode", Int(p.requestOpcode.rawValue))
            json.field("handle", Int(p.handle))
            json.field("code", Int(p.errorCode.rawValue))
            if let name = p.errorCode.name { json.field("name", name) } else { json.fieldNull("name") }
            json.endObject()
        case .exchangeMTURequest(let p): json.field("mtu", Int(p.clientRxMTU))
        case .exchangeMTUResponse(let p): json.field("mtu", Int(p.serverRxMTU))
        case .findInformationRequest(let p): range(p.startingHandle, p.endingHandle, into: &json)
        case .findInformationResponse(let p):
            json.field("format", Int(p.format.rawValue))
            json.beginArray("entries")
            for entry in p.entries {
                json.beginObject()
                json.field("handle", Int(entry.handle))
                json.field("uuid", uuid(entry.uuid))
                json.endObject()
            }
            json.endArray()
        case .findByTypeValueRequest(let p):
            range(p.startingHandle, p.endingHandle, into: &json)
            json.field("uuid", uuid(.bit16(p.attributeType)))
            json.field("value", hex: p.attributeValue)
        case .findByTypeValueResponse(let p):
            json.beginArray("entries")
            for entry in p.entries {
                json.beginObject()
                json.field("handle", Int(entry.foundAttributeHandle))
                json.field("end_handle", Int(entry.groupEndHandle))
                json.endObject()
            }
            json.endArray()
        case .readByTypeRequest(let p):
            range(p.startingHandle, p.endingHandle, into: &json)
            json.field("uuid", uuid(p.attributeType))
        case .readByTypeResponse(let p):
            json.field("length", p.length)
            json.beginArray("entries")
            for entry in p.entries {
                json.beginObject()
                json.field("handle", Int(entry.handle))
                json.field("value", hex: entry.value)
                if item.answersCharacteristicDiscovery, entry.value.count == 5 || entry.value.count == 19 {
                    json.field("properties", Int(entry.value[0]))
                    json.field("value_handle", Int(entry.value[1]) | Int(entry.value[2]) << 8)
                    if let declared = BluetoothUUID(littleEndian: entry.value[3...]) {
                        json.field("uuid", uuid(declared))
                    }
                }
                json.endObject()
            }
            json.endArray()
        case .readRequest(let p): json.field("handle", Int(p.handle))
        case .readResponse(let p): json.field("value", hex: p.value)
        case .readBlobRequest(let p):
            json.field("handle", Int(p.handle))
            json.field("offset", Int(p.offset))
        case .readBlobResponse(let p): json.field("value", hex: p.value)
        case .readMultipleRequest(let p): handles(p.handles, into: &json)
        case .readMultipleResponse(let p): json.field("value", hex: p.values)
        case .readMultipleVariableRequest(let p): handles(p.handles, into: &json)
        case .readMultipleVariableResponse, .multipleHandleValueNotification:
            // The schema's `value`: the octets after the opcode (the length-value tuples).
            json.field("value", hex: item.bytes.dropFirst())
        case .readByGroupTypeRequest(let p):
            range(p.startingHandle, p.endingHandle, into: &json)
            json.field("uuid", uuid(p.attributeGroupType))
        case .readByGroupTypeResponse(let p):
            json.field("length", p.length)
            json.beginArray("entries")
            for entry in p.entries {
                json.beginObject()
                json.field("handle", Int(entry.handle))
                json.field("end_handle", Int(entry.endGroupHandle))
                if let service = BluetoothUUID(littleEndian: entry.value) { json.field("uuid", uuid(service)) }
                json.endObject()
            }
            json.endArray()
        case .writeRequest(let p):
            json.field("handle", Int(p.handle))
            json.field("value", hex: p.value)
        case .writeCommand(let p):
            json.field("handle", Int(p.handle))
            json.field("value", hex: p.value)
        case .signedWriteCommand(let p):
            json.field("handle", Int(p.handle))
            json.field("value", hex: p.value)
            json.field("sign_counter", Int(p.signCounter))
            json.field("signature", hex: item.bytes.suffix(8))  // the MAC, in wire order
        case .prepareWriteRequest(let p):
            json.field("handle", Int(p.handle))
            json.field("offset", Int(p.offset))
            json.field("value", hex: p.value)
        case .prepareWriteResponse(let p):
            json.field("handle", Int(p.handle))
            json.field("offset", Int(p.offset))
            json.field("value", hex: p.value)
        case .executeWriteRequest(let p): json.field("flags", Int(p.flags.rawValue))
        case .handleValueNotification(let p):
            json.field("handle", Int(p.handle))
            json.field("value", hex: p.value)
        case .handleValueIndication(let p):
            json.field("handle", Int(p.handle))
            json.field("value", hex: p.value)
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation, .unknown:
            break
        }
    }

    private static func handles<W: JSONFieldWriting>(_ handles: [UInt16], into json: inout W) {
        json.beginArray("handles")
        for handle in handles { json.element(Int(handle)) }
        json.endArray()
    }
}
