import Bluetooth

/// Reads that turn cursor failures into `HCIError.malformed` naming the structure (`context`),
/// plus the range checks every HCI event shares. Internal helpers of the event decoders.
extension ByteReader {
    mutating func hciUInt8(_ context: String) throws(HCIError) -> UInt8 {
        do { return try readUInt8() } catch { throw HCIError(error, context: context) }
    }

    mutating func hciInt8(_ context: String) throws(HCIError) -> Int8 {
        do { return try readInt8() } catch { throw HCIError(error, context: context) }
    }

    mutating func hciUInt16(_ context: String) throws(HCIError) -> UInt16 {
        do { return try readUInt16LE() } catch { throw HCIError(error, context: context) }
    }

    mutating func hciUInt64(_ context: String) throws(HCIError) -> UInt64 {
        do { return try readUInt64LE() } catch { throw HCIError(error, context: context) }
    }

    mutating func hciAddress(_ context: String) throws(HCIError) -> BluetoothAddress {
        do { return try BluetoothAddress(parsingLittleEndian: &self) } catch { throw HCIError(error, context: context) }
    }

    mutating func hciBytes(_ count: Int, _ context: String) throws(HCIError) -> ArraySlice<UInt8> {
        do { return try readBytes(count) } catch { throw HCIError(error, context: context) }
    }

    func hciExpectEnd(_ context: String) throws(HCIError) {
        do { try expectEnd() } catch { throw HCIError(error, context: context) }
    }

    /// A Connection_Handle: 12 bits, range 0x0000–0x0EFF.
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4.2
    mutating func hciConnectionHandle(_ context: String, field: String = "Connection_Handle") throws(HCIError) -> UInt16 {
        let start = offset
        let value = try hciUInt16(context)
        guard value <= ConnectionHandleRange.max else {
            throw HCIError.malformed(context: context, reason: .invalidValue(field: field, value: Int(value)), offset: start)
        }
        return value
    }
}

/// Valid Connection_Handle values. - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4.2
public enum ConnectionHandleRange {
    public static let max: UInt16 = 0x0EFF
}

/// `0x1234` style hex for descriptions.

func hciHexString<T: BinaryInteger>(_ value: T, _ digits: Int) -> String {
    "0x" + String(value, radix: 16).leftPadded(digits)
}
