import Bluetooth

/// One AD structure as it appears on the wire: type and data octets, untyped.
public struct ADElement: Hashable, Sendable {
    public var type: ADType
    public var data: [UInt8]
    /// Offset of the structure's Length octet in the advertising data.
    public var offset: Int

    public init(type: ADType, data: [UInt8], offset: Int) {
        self.type = type
        self.data = data
        self.offset = offset
    }
}

/// What was wrong with advertising data. Reported, never thrown: the report carrying the data is
/// still valid.
public enum ADProblem: Hashable, Sendable, CustomStringConvertible {
    /// The Length octet at `offset` announces `length` octets (type included) but only
    /// `available` follow it. Parsing stops there.
    case lengthOverrun(offset: Int, length: Int, available: Int)
    /// The structure at `offset` has a known type whose data does not have the shape the type
    /// requires (e.g. a 16-bit UUID list of odd length); it is kept as `.other`.
    case invalidContent(offset: Int, type: ADType, length: Int)

    public var description: String {
        switch self {
        case .lengthOverrun(let offset, let length, let available):
            return "AD length \(length) at offset \(offset) runs past the end (\(available) octet(s) left)"
        case .invalidContent(let offset, let type, let length):
            return "AD structure \(type) at offset \(offset) has an invalid length \(length)"
        }
    }
}

/// Advertising or scan response data: a sequence of AD structures (Length, AD Type, data).
///
/// Parsing never fails. A Length octet of zero ends the data early (Core Spec 5.4, Vol 3,
/// Part C, §11: "early termination"; the rest is padding, not an error, as Wireshark also treats
/// it). A Length running past the end stops parsing and is reported in `problems`; the partial
/// structure Wireshark still lists is kept in `truncatedElement`.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part C, §11; Core Specification Supplement 11, Part A
public struct AdvertisingData: Hashable, Sendable, CustomStringConvertible {
    /// Every complete structure, in order, untyped.
    public var elements: [ADElement]
    /// The same structures, typed (`.other` for unknown types and malformed content).
    public var structures: [ADStructure]
    /// Problems found, in order; empty for well-formed data.
    public var problems: [ADProblem]
    /// Offset of a zero Length octet that ended the data early.
    public var earlyTerminationOffset: Int?
    /// After a `.lengthOverrun`: the type octet and the data octets that were present (Wireshark's
    /// view of the last structure), `nil` when not even the type octet was present.
    public var truncatedElement: ADElement?

    /// The first problem, if any.
    public var problem: ADProblem? { problems.first }
    public var isWellFormed: Bool { problems.isEmpty }

    /// Parses advertising data; never fails.
    public init<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        let bytes = Array(bytes)
        elements = []
        structures = []
        problems = []
        earlyTerminationOffset = nil
        truncatedElement = nil
        var index = 0
        while index < bytes.count {
            let length = Int(bytes[index])
            if length == 0 {
                earlyTerminationOffset = index
                break
            }
            let available = bytes.count - index - 1
            guard length <= available else {
                problems.append(.lengthOverrun(offset: index, length: length, available: available))
                if available >= 1 {
                    truncatedElement = ADElement(
                        type: ADType(rawValue: bytes[index + 1]), data: Array(bytes[(index + 2)...]), offset: index)
                }
                break
            }
            let type = ADType(rawValue: bytes[index + 1])
            let data = bytes[(index + 2)..<(index + 1 + length)]
            elements.append(ADElement(type: type, data: Array(data), offset: index))
            if let structure = ADStructure(type: type, data: data) {
                structures.append(structure)
            } else {
                problems.append(.invalidContent(offset: index, type: type, length: length - 1))
                structures.append(.other(type, Array(data)))
            }
            index += 1 + length
        }
    }

    /// Wireshark's list of AD structures: the complete ones plus the truncated tail, if any.
    public var wiresharkElements: [ADElement] {
        guard let truncatedElement else { return elements }
        return elements + [truncatedElement]
    }

    /// Encodes structures as advertising data. Throws when the result exceeds `maxLength`
    /// (31 for legacy advertising, up to 1650 for extended) or a structure cannot be encoded.
    public static func encode(_ structures: [ADStructure], maxLength: Int = 31) throws(HCIError) -> [UInt8] {
        var writer = ByteWriter(capacity: maxLength)
        for structure in structures { try structure.write(to: &writer) }
        guard writer.count <= maxLength else {
            throw HCIError.invalidArgument(context: "advertising data", reason: "\(writer.count) octets, at most \(maxLength)")
        }
        return writer.bytes
    }

    /// Merged view of the typed structures (name, UUIDs, service and manufacturer data, …).
    public var summary: AdvertisingDataSummary { AdvertisingDataSummary(self) }

    public var description: String {
        var parts = structures.map(\.description)
        parts.append(contentsOf: problems.map(\.description))
        return parts.joined(separator: "; ")
    }
}
