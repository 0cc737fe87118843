import Bluetooth

/// One-line, btmon-like descriptions of ATT PDUs:
/// `ATT Read By Group Type Request (0x10) handles 0x0001-0xffff type 2800 (Primary Service)`.
extension ATTPDU: CustomStringConvertible {
    public var description: String {
        "ATT " + opcode.title + " (0x" + hex2(opcode.rawValue) + ")" + details
    }

    /// The parameters part of `description`, with a leading space (empty when none).
    var details: String {
        switch self {
        case .errorResponse(let p):
            return " \(p.requestOpcode.title) (0x\(hex2(p.requestOpcode.rawValue))) handle \(handleText(p.handle)): \(p.errorCode)"
        case .exchangeMTURequest(let p):
            return " client rx mtu \(p.clientRxMTU)"
        case .exchangeMTUResponse(let p):
            return " server rx mtu \(p.serverRxMTU)"
        case .findInformationRequest(let p):
            return " handles " + rangeText(p.startingHandle, p.endingHandle)
        case .findInformationResponse(let p):
            let format = p.format == .uuid16 ? "16-bit" : p.format == .uuid128 ? "128-bit" : "0x" + hex2(p.format.rawValue)
            return " format \(format): " + p.entries.map { handleText($0.handle) + " " + uuidText($0.uuid) }.joined(separator: ", ")
        case .findByTypeValueRequest(let p):
            return " handles " + rangeText(p.startingHandle, p.endingHandle) + " type "
                + uuidText(.bit16(p.attributeType)) + " value " + Hex.encode(p.attributeValue)
        case .findByTypeValueResponse(let p):
            return " " + p.entries.map { rangeText($0.foundAttributeHandle, $0.groupEndHandle) }.joined(separator: ", ")
        case .readByTypeRequest(let p):
            return " handles " + rangeText(p.startingHandle, p.endingHandle) + " type " + uuidText(p.attributeType)
        case .readByTypeResponse(let p):
            return " length \(p.length): " + p.entries.map { handleText($0.handle) + " " + Hex.encode($0.value) }
                .joined(separator: ", ")
        case .readRequest(let p):
            return " handle " + handleText(p.handle)
        case .readResponse(let p):
            return " value " + valueText(p.value)
        case .readBlobRequest(let p):
            return " handle \(handleText(p.handle)) offset \(p.offset)"
        case .readBlobResponse(let p):
            return " value " + valueText(p.value)
        case .readMultipleRequest(let p):
            return " handles " + p.handles.map(handleText).joined(separator: ", ")
        case .readMultipleResponse(let p):
            return " values " + valueText(p.values)
        case .readByGroupTypeRequest(let p):
            return " handles " + rangeText(p.startingHandle, p.endingHandle) + " type " + uuidText(p.attributeGroupType)
        case .readByGroupTypeResponse(let p):
            return " length \(p.length): " + p.entries.map {
                rangeText($0.handle, $0.endGroupHandle) + " " + groupValueText($0.value)
            }.joined(separator: ", ")
        case .writeRequest(let p):
            return " handle \(handleText(p.handle)) value " + valueText(p.value)
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation:
            return ""
        case .writeCommand(let p):
            return " handle \(handleText(p.handle)) value " + valueText(p.value)
        case .signedWriteCommand(let p):
            return " handle \(handleText(p.handle)) value " + valueText(p.value)
                + " sign counter \(p.signCounter) mac " + Hex.encode(p.signature.suffix(8))
        case .prepareWriteRequest(let p):
            return " handle \(handleText(p.handle)) offset \(p.offset) value " + valueText(p.value)
        case .prepareWriteResponse(let p):
            return " handle \(handleText(p.handle)) offset \(p.offset) value " + valueText(p.value)
        case .executeWriteRequest(let p):
            return " flags 0x\(hex2(p.flags.rawValue)) (\(p.flags))"
        case .handleValueNotification(let p):
            return " handle \(handleText(p.handle)) value " + valueText(p.value)
        case .handleValueIndication(let p):
            return " handle \(handleText(p.handle)) value " + valueText(p.value)
        case .readMultipleVariableRequest(let p):
            return " handles " + p.handles.map(handleText).joined(separator: ", ")
        case .readMultipleVariableResponse(let p):
            return " " + p.entries.map {
                "length \($0.length) value " + valueText($0.value) + ($0.isTruncated ? " (truncated)" : "")
            }.joined(separator: ", ")
        case .multipleHandleValueNotification(let p):
            return " " + p.entries.map { handleText($0.handle) + " value " + valueText($0.value) }.joined(separator: ", ")
        case .unknown(_, let parameters):
            return parameters.isEmpty ? "" : " parameters " + Hex.encode(parameters)
        }
    }

    /// Names of the GATT declaration and descriptor types (Core 5.4 Vol 3 Part G §3), for the
    /// dump; the full SIG table lives in the GATT module.
    public static func declarationTypeName(_ uuid: UInt16) -> String? {
        switch uuid {
        case 0x2800: return "Primary Service"
        case 0x2801: return "Secondary Service"
        case 0x2802: return "Include"
        case 0x2803: return "Characteristic"
        case 0x2900: return "Characteristic Extended Properties"
        case 0x2901: return "Characteristic User Description"
        case 0x2902: return "Client Characteristic Configuration"
        case 0x2903: return "Server Characteristic Configuration"
        case 0x2904: return "Characteristic Presentation Format"
        case 0x2905: return "Characteristic Aggregate Format"
        case 0x2906: return "Valid Range"
        case 0x2907: return "External Report Reference"
        case 0x2908: return "Report Reference"
        default: return nil
        }
    }
}

private func handleText(_ handle: UInt16) -> String { "0x" + hex4(handle) }

private func rangeText(_ start: UInt16, _ end: UInt16) -> String { "0x" + hex4(start) + "-0x" + hex4(end) }

/// `2800 (Primary Service)`, `180f`, or a canonical lower-case 128-bit UUID.
private func uuidText(_ uuid: BluetoothUUID) -> String {
    let text = uuid.text(uppercase: false)
    if case .bit16(let short) = uuid, let name = ATTPDU.declarationTypeName(short) {
        return text + " (" + name + ")"
    }
    return text
}

/// A service declaration value (a 2- or 16-octet UUID) as a UUID, anything else as hex.
private func groupValueText(_ value: [UInt8]) -> String {
    if value.count == 2 || value.count == 16, let uuid = BluetoothUUID(littleEndian: value) {
        return uuidText(uuid)
    }
    return Hex.encode(value)
}

/// Hex of a value, with its length when long; empty values print as `(empty)`.
private func valueText(_ value: [UInt8]) -> String {
    if value.isEmpty { return "(empty)" }
    if value.count > 32 { return Hex.encode(value.prefix(32)) + "... (\(value.count) octets)" }
    return Hex.encode(value)
}
