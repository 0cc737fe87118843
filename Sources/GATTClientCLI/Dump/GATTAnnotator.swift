import BLE
import Capture
import ATT
import Bluetooth
import GATT
import HCI
import L2CAP

/// GATT context for `dump` and `monitor`: names each ATT PDU's handle by its service,
/// characteristic and descriptor (learnt from the discovery traffic in the capture, or from a
/// `services --json` file) and decodes values of characteristics it knows (battery level,
/// SensorTag readings, Nordic UART text, strings, CCCD writes).
struct GATTAnnotator {
    /// A UUID's name (or its text when it has none) and its text, built once per UUID. A class:
    /// an annotation holds up to three, and copying one is then one reference, not four.
    final class UUIDText {
        let name: String
        let uuid: String
        /// `name` and `uuid` as JSON strings (the JSON dump writes them as they are).
        let nameJSON: [UInt8]
        let uuidJSON: [UInt8]

        init(_ uuid: BluetoothUUID) {
            name = GATTClientCLI.name(uuid)
            self.uuid = uuid.description
            nameJSON = JSONWriter.encodedString(name)
            uuidJSON = JSONWriter.encodedString(self.uuid)
        }
    }

    struct Annotation {
        var handle: UInt16
        var service: BluetoothUUID?
        var characteristic: BluetoothUUID?
        var descriptor: BluetoothUUID?
        var decoded: String?
        /// The texts of `service`, `characteristic`, `descriptor` (from the annotator's cache).
        var serviceText: UUIDText?
        var characteristicText: UUIDText?
        var descriptorText: UUIDText?

        /// Appends `text` (nothing when it is empty).
        func writeText(to out: inout [UInt8]) {
            let start = out.count
            var first = true
            func part(_ text: String) {
                if !first { out.appendText(" / ") }
                first = false
                out.appendString(text)
            }
            if let service { part(serviceText?.name ?? name(service)) }
            if let characteristic { part(characteristicText?.name ?? name(characteristic)) }
            if let descriptor, descriptor != .bit16(0x2803) || characteristic == nil {
                part(descriptorText?.name ?? name(descriptor))
            }
            if let decoded {
                // As `text`: the separator only after a name that wrote something.
                if out.count > start { out.appendText(": ") }
                out.appendString(decoded)
            }
        }

        var text: String {
            var parts: [String] = []
            if let service { parts.append(serviceText?.name ?? name(service)) }
            if let characteristic { parts.append(characteristicText?.name ?? name(characteristic)) }
            if let descriptor, descriptor != .bit16(0x2803) || characteristic == nil {
                parts.append(descriptorText?.name ?? name(descriptor))
            }
            var out = parts.joined(separator: " / ")
            if let decoded { out += (out.isEmpty ? "" : ": ") + decoded }
            return out
        }

        /// Room its JSON fields take at most (keys, names, UUIDs, the decoded text unescaped).
        var jsonRoom: Int {
            128 + (serviceText.map { $0.nameJSON.count + $0.uuidJSON.count } ?? 96)
                + (characteristicText.map { $0.nameJSON.count + $0.uuidJSON.count } ?? 96)
                + (descriptorText.map { $0.nameJSON.count + $0.uuidJSON.count } ?? 96) + (decoded?.utf8.count ?? 0)
        }

        func write<W: JSONFieldWriting>(into json: inout W) {
            if let service {
                let text = serviceText ?? UUIDText(service)
                json.field("service", encoded: text.nameJSON)
                json.field("serviceUUID", encoded: text.uuidJSON)
            }
            if let characteristic {
                let text = characteristicText ?? UUIDText(characteristic)
                json.field("characteristic", encoded: text.nameJSON)
                json.field("characteristicUUID", encoded: text.uuidJSON)
            }
            if let descriptor {
                let text = descriptorText ?? UUIDText(descriptor)
                json.field("descriptor", encoded: text.nameJSON)
                json.field("descriptorUUID", encoded: text.uuidJSON)
            }
            if let decoded { json.field("decoded", decoded) }
        }
    }

    private struct BearerKey: Hashable {
        var connection: UInt16
        var channel: UInt16
        /// Direction the request travelled.
        var direction: CaptureDirection
    }

    /// Used for every connection when the user gave a database (`--services FILE`).
    private let seed: AttributeObserver?
    private var observers: [UInt16: AttributeObserver] = [:]
    private var requests: [BearerKey: ATTPDU] = [:]
    /// The movement sensor's accelerometer range, per connection, from configuration writes.
    private var accelerometerRanges: [UInt16: SensorTag.AccelerometerRange] = [:]
    /// Names and texts of the UUIDs seen so far (a capture names few, over and over), at most
    /// `uuidTextLimit` of them.
    private var uuidTexts: [BluetoothUUID: UUIDText] = [:]
    static let uuidTextLimit = 1024

    init(database: GATTDatabase? = nil) {
        seed = database.map { AttributeObserver(database: $0) }
    }

    mutating func annotate(_ item: ATTItem) -> Annotation? {
        guard let pdu = item.pdu ?? item.lenientPDU else { return nil }
        // The connection's observer, changed in place (a copy out of the dictionary and back
        // would copy its tables at every response).
        let connection = item.connectionHandle
        // One lookup of the connection's observer; it is then reached by its index.
        let observer: Dictionary<UInt16, AttributeObserver>.Index
        if let index = observers.index(forKey: connection) {
            observer = index
        } else {
            observers[connection] = seed ?? AttributeObserver()
            observer = observers.index(forKey: connection)!
        }
        let key = BearerKey(connection: item.connectionHandle, channel: item.channelID, direction: item.direction)
        var request: ATTPDU?
        switch pdu.opcode.kind {
        case .request?:
            requests[key] = pdu
        case .response?:
            let other: CaptureDirection = item.direction == .sent ? .received : .sent
            request = requests.removeValue(forKey: BearerKey(connection: item.connectionHandle, channel: item.channelID, direction: other))
            observers.values[observer].learn(request: request, response: pdu)
        default:
            break
        }
        if case .readByTypeResponse(let response) = pdu, case .readByTypeRequest(let asked)? = request,
            asked.attributeType == .bit16(0x2803), let first = response.entries.first
        {
            // Characteristic discovery: each declaration decoded (properties, value handle, UUID).
            let declarations = response.entries.map { entry in
                "0x\(hex(entry.handle, 4)) " + ((try? CharacteristicDeclarationValue(decoding: entry.value))?.description ?? "malformed \(Hex.encode(entry.value))")
            }
            var annotation = Annotation(handle: first.handle, service: observers.values[observer].context(of: first.handle).service)
            annotation.decoded = "declarations " + declarations.joined(separator: "; ")
            annotation.serviceText = annotation.service.map { text(of: $0) }
            return annotation
        }
        guard let (handle, value) = Self.subject(pdu, request: request) else { return nil }
        let context = observers.values[observer].context(of: handle)
        guard context.service != nil || context.characteristic != nil || context.descriptor != nil else { return nil }
        var annotation = Annotation(
            handle: handle, service: context.service, characteristic: context.characteristic,
            descriptor: context.isValue ? nil : context.descriptor)
        if let value { annotation.decoded = decode(value, context: context, connection: item.connectionHandle, isWrite: pdu.isWrite) }
        annotation.serviceText = annotation.service.map { text(of: $0) }
        annotation.characteristicText = annotation.characteristic.map { text(of: $0) }
        annotation.descriptorText = annotation.descriptor.map { text(of: $0) }
        return annotation
    }

    private mutating func text(of uuid: BluetoothUUID) -> UUIDText {
        if let text = uuidTexts[uuid] { return text }
        // A cache, bounded: a capture naming ever new UUIDs (random 128-bit ones) must not grow
        // the dump's memory with its length.
        if uuidTexts.count >= Self.uuidTextLimit { uuidTexts.removeAll(keepingCapacity: true) }
        let text = UUIDText(uuid)
        uuidTexts[uuid] = text
        return text
    }

    /// The attribute a PDU is about, and the value it carries.
    private static func subject(_ pdu: ATTPDU, request: ATTPDU?) -> (UInt16, [UInt8]?)? {
        switch pdu {
        case .readRequest(let p): return (p.handle, nil)
        case .readBlobRequest(let p): return (p.handle, nil)
        case .writeRequest(let p): return (p.handle, p.value)
        case .writeCommand(let p): return (p.handle, p.value)
        case .signedWriteCommand(let p): return (p.handle, p.value)
        case .prepareWriteRequest(let p): return (p.handle, nil)
        case .handleValueNotification(let p): return (p.handle, p.value)
        case .handleValueIndication(let p): return (p.handle, p.value)
        case .errorResponse(let p): return p.handle == 0 ? nil : (p.handle, nil)
        case .readResponse(let p):
            if case .readRequest(let r)? = request { return (r.handle, p.value) }
            return nil
        case .readBlobResponse:
            if case .readBlobRequest(let r)? = request { return (r.handle, nil) }
            return nil
        case .readByTypeResponse(let p):
            // Read Using Characteristic UUID: the first value found (declarations are named by
            // the discovery they belong to, not decoded).
            guard case .readByTypeRequest(let r)? = request, r.attributeType != .bit16(0x2803),
                  r.attributeType != .bit16(0x2802), let first = p.entries.first else { return nil }
            return (first.handle, first.value)
        default:
            return nil
        }
    }

    private mutating func decode(_ value: [UInt8], context: AttributeObserver.Context, connection: UInt16, isWrite: Bool) -> String? {
        if !context.isValue, let descriptor = context.descriptor {
            return Self.standard(value, uuid: descriptor)
        }
        guard context.isValue, let uuid = context.characteristic else { return nil }
        if uuid == SensorTag.Sensor.movement.configuration, value.count == 2, let range = SensorTag.AccelerometerRange(rawValue: value[1] & 0x03) {
            accelerometerRanges[connection] = range
            return "movement configuration 0x" + Hex.encode(value.reversed()) + ", accelerometer ±\(Int(range.g)) G"
        }
        if let sensor = SensorTag.sensor(data: uuid), !isWrite,
           let reading = SensorTag.decode(sensor, value, accelerometerRange: accelerometerRanges[connection] ?? .g8) {
            return reading.description
        }
        if let sensor = SensorTag.Sensor.allCases.first(where: { $0.configuration == uuid }), sensor != .movement, value.count == 1 {
            return value[0] == 0 ? "\(sensor.rawValue) off" : "\(sensor.rawValue) on"
        }
        if let sensor = SensorTag.Sensor.allCases.first(where: { $0.period == uuid }), value.count == 1 {
            return "\(sensor.rawValue) period \(Int(value[0]) * 10) ms"
        }
        return Self.standard(value, uuid: uuid)
    }

    /// A standard type's value (``StandardValues``), text in quotes with control characters shown.
    static func standard(_ value: [UInt8], uuid: BluetoothUUID) -> String? {
        guard let decoded = StandardValues.decode(value, uuid: uuid) else { return nil }
        return StandardValues.textTypes.contains(uuid) ? "\"" + visible(decoded) + "\"" : decoded
    }
}

private func name(_ uuid: BluetoothUUID) -> String {
    GATTNames.name(for: uuid) ?? uuid.description
}

extension ATTPDU {
    var isWrite: Bool {
        switch self {
        case .writeRequest, .writeCommand, .signedWriteCommand, .prepareWriteRequest: return true
        default: return false
        }
    }
}
