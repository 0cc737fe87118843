import Bluetooth

/// One-line, btmon-like descriptions of ATT PDUs:
/// `ATT Read By Group Type Request (0x10) handles 0x0001-0xffff type 2800 (Primary Service)`.
extension ATTPDU: CustomStringConvertible {
    public var description: String {
        var text: [UInt8] = []
        writeText(to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Appends `description` (without its leading `ATT ` when `titled` is false).
    public func writeText(to text: inout [UInt8], titled: Bool = true) {
        if titled { text.appendText("ATT ") }
        text.appendString(opcode.title)
        text.appendText(" (0x")
        text.appendHex(opcode.rawValue, digits: 2)
        text.append(UInt8(ascii: ")"))
        writeDetails(to: &text)
    }

    /// The parameters part of `description`, with a leading space (nothing when none).
    func writeDetails(to text: inout [UInt8]) {
        func handle(_ value: UInt16) { text.appendPrefixedHex(value, digits: 4) }
        func range(_ start: UInt16, _ end: UInt16) {
            handle(start)
            text.append(UInt8(ascii: "-"))
            handle(end)
        }
        func separator(_ index: Int) { if index > 0 { text.appendText(", ") } }
        func handleAndValue(_ value: UInt16, offset: UInt16? = nil, _ bytes: [UInt8]) {
            text.appendText(" handle ")
            handle(value)
            if let offset {
                text.appendText(" offset ")
                text.appendDecimal(offset)
            }
            text.appendText(" value ")
            writeValue(bytes, to: &text)
        }
        switch self {
        case .errorResponse(let p):
            text.append(UInt8(ascii: " "))
            text.appendString(p.requestOpcode.title)
            text.appendText(" (0x")
            text.appendHex(p.requestOpcode.rawValue, digits: 2)
            text.appendText(") handle ")
            handle(p.handle)
            text.appendText(": ")
            text.appendString(p.errorCode.description)
        case .exchangeMTURequest(let p):
            text.appendText(" client rx mtu ")
            text.appendDecimal(p.clientRxMTU)
        case .exchangeMTUResponse(let p):
            text.appendText(" server rx mtu ")
            text.appendDecimal(p.serverRxMTU)
        case .findInformationRequest(let p):
            text.appendText(" handles ")
            range(p.startingHandle, p.endingHandle)
        case .findInformationResponse(let p):
            text.appendText(" format ")
            if p.format == .uuid16 {
                text.appendText("16-bit")
            } else if p.format == .uuid128 {
                text.appendText("128-bit")
            } else {
                text.appendText("0x")
                text.appendHex(p.format.rawValue, digits: 2)
            }
            text.appendText(": ")
            for (index, entry) in p.entries.enumerated() {
                separator(index)
                handle(entry.handle)
                text.append(UInt8(ascii: " "))
                writeUUID(entry.uuid, to: &text)
            }
        case .findByTypeValueRequest(let p):
            text.appendText(" handles ")
            range(p.startingHandle, p.endingHandle)
            text.appendText(" type ")
            writeUUID(.bit16(p.attributeType), to: &text)
            text.appendText(" value ")
            text.appendHexBytes(p.attributeValue)
        case .findByTypeValueResponse(let p):
            text.append(UInt8(ascii: " "))
            for (index, entry) in p.entries.enumerated() {
                separator(index)
                range(entry.foundAttributeHandle, entry.groupEndHandle)
            }
        case .readByTypeRequest(let p):
            text.appendText(" handles ")
            range(p.startingHandle, p.endingHandle)
            text.appendText(" type ")
            writeUUID(p.attributeType, to: &text)
        case .readByTypeResponse(let p):
            text.appendText(" length ")
            text.appendDecimal(p.length)
            text.appendText(": ")
            for (index, entry) in p.entries.enumerated() {
                separator(index)
                handle(entry.handle)
                text.append(UInt8(ascii: " "))
                text.appendHexBytes(entry.value)
            }
        case .readRequest(let p):
            text.appendText(" handle ")
            handle(p.handle)
        case .readResponse(let p):
            text.appendText(" value ")
            writeValue(p.value, to: &text)
        case .readBlobRequest(let p):
            text.appendText(" handle ")
            handle(p.handle)
            text.appendText(" offset ")
            text.appendDecimal(p.offset)
        case .readBlobResponse(let p):
            text.appendText(" value ")
            writeValue(p.value, to: &text)
        case .readMultipleRequest(let p):
            text.appendText(" handles ")
            for (index, value) in p.handles.enumerated() {
                separator(index)
                handle(value)
            }
        case .readMultipleResponse(let p):
            text.appendText(" values ")
            writeValue(p.values, to: &text)
        case .readByGroupTypeRequest(let p):
            text.appendText(" handles ")
            range(p.startingHandle, p.endingHandle)
            text.appendText(" type ")
            writeUUID(p.attributeGroupType, to: &text)
        case .readByGroupTypeResponse(let p):
            text.appendText(" length ")
            text.appendDecimal(p.length)
            text.appendText(": ")
            for (index, entry) in p.entries.enumerated() {
                separator(index)
                range(entry.handle, entry.endGroupHandle)
                text.append(UInt8(ascii: " "))
                // A service declaration value (a 2- or 16-octet UUID) as a UUID, else hex.
                if entry.value.count == 2 || entry.value.count == 16, let uuid = BluetoothUUID(littleEndian: entry.value) {
                    writeUUID(uuid, to: &text)
                } else {
                    text.appendHexBytes(entry.value)
                }
            }
        case .writeRequest(let p):
            handleAndValue(p.handle, p.value)
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation:
            break
        case .writeCommand(let p):
            handleAndValue(p.handle, p.value)
        case .signedWriteCommand(let p):
            handleAndValue(p.handle, p.value)
            text.appendText(" sign counter ")
            text.appendDecimal(p.signCounter)
            text.appendText(" mac ")
            text.appendHexBytes(p.signature.suffix(8))
        case .prepareWriteRequest(let p):
            handleAndValue(p.handle, offset: p.offset, p.value)
        case .prepareWriteResponse(let p):
            handleAndValue(p.handle, offset: p.offset, p.value)
        case .executeWriteRequest(let p):
            text.appendText(" flags 0x")
            text.appendHex(p.flags.rawValue, digits: 2)
            text.appendText(" (")
            text.appendString(p.flags.description)
            text.append(UInt8(ascii: ")"))
        case .handleValueNotification(let p):
            handleAndValue(p.handle, p.value)
        case .handleValueIndication(let p):
            handleAndValue(p.handle, p.value)
        case .readMultipleVariableRequest(let p):
            text.appendText(" handles ")
            for (index, value) in p.handles.enumerated() {
                separator(index)
                handle(value)
            }
        case .readMultipleVariableResponse(let p):
            text.append(UInt8(ascii: " "))
            for (index, entry) in p.entries.enumerated() {
                separator(index)
                text.appendText("length ")
                text.appendDecimal(entry.length)
                text.appendText(" value ")
                writeValue(entry.value, to: &text)
                if entry.isTruncated { text.appendText(" (truncated)") }
            }
        case .multipleHandleValueNotification(let p):
            text.append(UInt8(ascii: " "))
            for (index, entry) in p.entries.enumerated() {
                separator(index)
                handle(entry.handle)
                text.appendText(" value ")
                writeValue(entry.value, to: &text)
            }
        case .unknown(_, let parameters):
            if !parameters.isEmpty {
                text.appendText(" parameters ")
                text.appendHexBytes(parameters)
            }
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

/// `2800 (Primary Service)`, `180f`, or a canonical lower-case 128-bit UUID.
private func writeUUID(_ uuid: BluetoothUUID, to text: inout [UInt8]) {
    uuid.writeText(to: &text, uppercase: false)
    if case .bit16(let short) = uuid, let name = ATTPDU.declarationTypeName(short) {
        text.appendText(" (")
        text.appendString(name)
        text.append(UInt8(ascii: ")"))
    }
}

/// Hex of a value, with its length when long; empty values print as `(empty)`.
private func writeValue(_ value: [UInt8], to text: inout [UInt8]) {
    if value.isEmpty {
        text.appendText("(empty)")
    } else if value.count > 32 {
        text.appendHexBytes(value.prefix(32))
        text.appendText("... (")
        text.appendDecimal(value.count)
        text.appendText(" octets)")
    } else {
        text.appendHexBytes(value)
    }
}
