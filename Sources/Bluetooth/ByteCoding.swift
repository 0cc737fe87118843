/// A value that decodes from the octets of an attribute value (a characteristic's, a
/// descriptor's): exact lengths, little-endian, as GATT carries them.
public protocol ByteDecodable: Sendable {
    init(decoding bytes: [UInt8]) throws(ByteCodingError)
}

/// A value that encodes into the octets of an attribute value.
public protocol ByteEncodable: Sendable {
    func encoded() -> [UInt8]
}

/// Both ways.
public typealias ByteCodable = ByteDecodable & ByteEncodable

/// A value of the wrong length for its type: `expected` octets (the least for a variable-length
/// type), `actual` given, and the field where it went wrong when there are several; or a value
/// of the right length with a field out of its range (`reason` says which and why).
public struct ByteCodingError: Error, Hashable, Sendable, CustomStringConvertible {
    public var expected: Int
    public var actual: Int
    public var field: String?
    /// A field out of its range (the length was right): what is wrong with it.
    public var reason: String?

    public init(expected: Int, actual: Int, field: String? = nil) {
        self.expected = expected
        self.actual = actual
        self.field = field
    }

    /// `field` of a value of `length` octets is out of its range: `reason`.
    public init(field: String, outOfRange reason: String, length: Int) {
        self.init(expected: length, actual: length, field: field)
        self.reason = reason
    }

    public var description: String {
        if let reason { return (field.map { "\($0): " } ?? "") + reason }
        return (field.map { "\($0): " } ?? "") + "expected \(expected) octet\(expected == 1 ? "" : "s"), got \(actual)"
    }
}

extension ByteCodingError {
    /// `bytes` must hold exactly `count` octets.
    @inlinable
    public static func check(_ bytes: [UInt8], count: Int, field: String? = nil) throws(ByteCodingError) {
        guard bytes.count == count else { throw ByteCodingError(expected: count, actual: bytes.count, field: field) }
    }
}

// MARK: - Integers: little-endian, exact length

extension FixedWidthInteger where Self: Sendable {
    /// Little-endian, exactly `bitWidth / 8` octets.
    @inlinable
    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        let size = Self.bitWidth / 8
        try ByteCodingError.check(bytes, count: size)
        var value: Self = 0
        for index in (0..<size).reversed() { value = value << 8 | Self(truncatingIfNeeded: bytes[index]) }
        self = value
    }

    /// Little-endian, `bitWidth / 8` octets.
    @inlinable
    public func encoded() -> [UInt8] {
        (0..<(Self.bitWidth / 8)).map { UInt8(truncatingIfNeeded: self >> ($0 * 8)) }
    }
}

extension UInt8: ByteCodable {}
extension UInt16: ByteCodable {}
extension UInt32: ByteCodable {}
extension UInt64: ByteCodable {}
extension Int8: ByteCodable {}
extension Int16: ByteCodable {}
extension Int32: ByteCodable {}
extension Int64: ByteCodable {}

// MARK: - Bool, String, raw octets

/// One octet: 0 false, anything else true (the GATT `boolean` format, Assigned Numbers §2.4.1).
extension Bool: ByteCodable {
    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        try ByteCodingError.check(bytes, count: 1)
        self = bytes[0] != 0
    }

    public func encoded() -> [UInt8] { [self ? 1 : 0] }
}

/// UTF-8 (the `utf8s` format), any length; octets that are not UTF-8 become U+FFFD.
extension String: ByteCodable {
    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        self = String(decoding: bytes, as: UTF8.self)
    }

    public func encoded() -> [UInt8] { Array(utf8) }
}

/// The octets as they are.
extension Array: ByteDecodable, ByteEncodable where Element == UInt8 {
    public init(decoding bytes: [UInt8]) throws(ByteCodingError) { self = bytes }
    public func encoded() -> [UInt8] { self }
}

// MARK: - IEEE 11073-20601 floats

/// What SFLOAT and FLOAT share: `mantissa` × 10^`exponent`, and five special values.
public protocol MedicalFloat: Hashable, Sendable, CustomStringConvertible {
    static var nan: Self { get }
    /// Not at this resolution.
    static var nres: Self { get }
    static var infinity: Self { get }
    static var negativeInfinity: Self { get }
    static var reserved: Self { get }
    var mantissa: Int { get }
    var exponent: Int { get }
}

extension MedicalFloat {
    /// The value: NaN for NaN, NRes and reserved; ±infinity.
    public var doubleValue: Double {
        switch self {
        case .infinity: return .infinity
        case .negativeInfinity: return -.infinity
        case .nan, .nres, .reserved: return .nan
        default: return Double(mantissa) * pow10(exponent)
        }
    }

    /// The decimal value (`36.45`), or `NaN`, `NRes`, `+INFINITY`, `-INFINITY`, `reserved`.
    public var description: String {
        switch self {
        case .nan: return "NaN"
        case .nres: return "NRes"
        case .infinity: return "+INFINITY"
        case .negativeInfinity: return "-INFINITY"
        case .reserved: return "reserved"
        default: return decimal(mantissa, exponent)
        }
    }
}

/// IEEE 11073-20601 SFLOAT (`medfloat16`): a 12-bit signed mantissa and a 4-bit signed base-10
/// exponent, with the special values NaN, NRes (not at this resolution), ±INFINITY and a
/// reserved code. Health devices report measurements in it (Blood Pressure, Glucose).
/// - SeeAlso: IEEE 11073-20601, §F.8; Bluetooth Assigned Numbers §2.4.1 (format 0x16)
public struct MedFloat16: RawRepresentable, MedicalFloat, ByteCodable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let nan = MedFloat16(rawValue: 0x07FF)
    public static let nres = MedFloat16(rawValue: 0x0800)
    public static let infinity = MedFloat16(rawValue: 0x07FE)
    public static let negativeInfinity = MedFloat16(rawValue: 0x0802)
    /// The reserved special value (0x0801).
    public static let reserved = MedFloat16(rawValue: 0x0801)

    /// `mantissa` × 10^`exponent`; nil when either is out of range (mantissa −2045…2045,
    /// exponent −8…7: the mantissas beyond hold the special values).
    public init?(mantissa: Int, exponent: Int) {
        guard (-2045...2045).contains(mantissa), (-8...7).contains(exponent) else { return nil }
        rawValue = UInt16(truncatingIfNeeded: exponent) << 12 | UInt16(truncatingIfNeeded: mantissa) & 0x0FFF
    }

    /// The signed 12-bit mantissa (meaningless for a special value).
    public var mantissa: Int { Int(Int16(bitPattern: rawValue << 4) >> 4) }
    /// The signed 4-bit exponent.
    public var exponent: Int { Int(Int16(bitPattern: rawValue) >> 12) }

    /// NaN, NRes, ±INFINITY or the reserved code.
    public var isSpecial: Bool { exponent == 0 && (mantissa >= 2046 || mantissa <= -2046) }

    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        rawValue = try UInt16(decoding: bytes)
    }

    public func encoded() -> [UInt8] { rawValue.encoded() }
}

/// IEEE 11073-20601 FLOAT (`medfloat32`): a 24-bit signed mantissa and an 8-bit signed base-10
/// exponent, with NaN, NRes, ±INFINITY and a reserved code.
/// - SeeAlso: IEEE 11073-20601, §F.6; Bluetooth Assigned Numbers §2.4.1 (format 0x17)
public struct MedFloat32: RawRepresentable, MedicalFloat, ByteCodable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let nan = MedFloat32(rawValue: 0x007F_FFFF)
    public static let nres = MedFloat32(rawValue: 0x0080_0000)
    public static let infinity = MedFloat32(rawValue: 0x007F_FFFE)
    public static let negativeInfinity = MedFloat32(rawValue: 0x0080_0002)
    /// The reserved special value (0x00800001).
    public static let reserved = MedFloat32(rawValue: 0x0080_0001)

    /// `mantissa` × 10^`exponent`; nil when either is out of range (mantissa −8 388 605…8 388 605,
    /// exponent −128…127: the mantissas beyond hold the special values).
    public init?(mantissa: Int, exponent: Int) {
        guard (-8_388_605...8_388_605).contains(mantissa), (-128...127).contains(exponent) else { return nil }
        rawValue = UInt32(truncatingIfNeeded: exponent) << 24 | UInt32(truncatingIfNeeded: mantissa) & 0x00FF_FFFF
    }

    /// The signed 24-bit mantissa (meaningless for a special value).
    public var mantissa: Int { Int(Int32(bitPattern: rawValue << 8) >> 8) }
    /// The signed 8-bit exponent.
    public var exponent: Int { Int(Int8(truncatingIfNeeded: rawValue >> 24)) }

    /// NaN, NRes, ±INFINITY or the reserved code.
    public var isSpecial: Bool { exponent == 0 && (mantissa >= 8_388_606 || mantissa <= -8_388_606) }

    public init(decoding bytes: [UInt8]) throws(ByteCodingError) {
        rawValue = try UInt32(decoding: bytes)
    }

    public func encoded() -> [UInt8] { rawValue.encoded() }
}

/// 10^exponent, exactly for the small exponents health devices use.
private func pow10(_ exponent: Int) -> Double {
    var result = 1.0
    for _ in 0..<abs(exponent) { result *= 10 }
    return exponent < 0 ? 1 / result : result
}

/// `mantissa` × 10^`exponent` written in decimal without binary rounding: 3645 × 10^−2 → "36.45".
private func decimal(_ mantissa: Int, _ exponent: Int) -> String {
    let digits = String(mantissa.magnitude)
    let sign = mantissa < 0 ? "-" : ""
    if exponent >= 0 { return sign + digits + String(repeating: "0", count: mantissa == 0 ? 0 : exponent) }
    let places = -exponent
    let padded = String(repeating: "0", count: max(0, places + 1 - digits.count)) + digits
    let split = padded.index(padded.endIndex, offsetBy: -places)
    return sign + padded[..<split] + "." + padded[split...]
}
