import Bluetooth
import Testing
@testable import ATT

/// Every strict prefix of every valid vector: the error the layout says, at the offset and
/// field it says — or, where the spec lets a shorter PDU be valid (values, whole entries,
/// a truncated last Read Multiple Variable value), a decode that re-encodes to the prefix.
@Suite("ATT PDU truncation sweeps")
struct ATTPDUTruncationTests {
    /// What a prefix must give.
    enum Outcome: Equatable {
        case valid
        case error(ATTError)
    }

    /// The expected outcome for the first `n` octets of `vector`, from its layout alone.
    static func expected(_ vector: PDUVector, prefix n: Int) -> Outcome {
        let bytes = vector.bytes
        let opcode = ATTOpcode(bytes[0])
        func malformed(_ field: String, _ offset: Int, _ reason: ATTError.MalformedReason) -> Outcome {
            .error(.malformed(opcode: opcode, field: field, offset: offset, reason: reason))
        }
        // Fixed fields.
        var start = 0
        for (field, size) in vector.fields {
            if n < start + size {
                return malformed(field, start, .truncated(needed: size, available: n - start))
            }
            start += size
        }
        let rest = n - start
        switch vector.tail {
        case .none, .value:
            return .valid
        case .list(let field, let size):
            // Read Multiple (Variable) Request handle lists may be empty at the PDU level;
            // response lists must hold at least one entry.
            if rest == 0 { return field == "Set Of Handles" ? .valid : malformed(field, start, .emptyList) }
            let partial = rest % size
            if partial == 0 { return .valid }
            return malformed(field, n - partial, .truncated(needed: size, available: partial))
        case .attributeType128(let field):
            // `fields` ends with a 2-octet type: exactly 2 octets is a valid 16-bit request.
            let typeStart = start - 2
            let typeLength = n - typeStart
            return typeLength == 2 ? .valid : malformed(field, typeStart, .invalidLength(typeLength))
        case .signature:
            return rest >= 12 ? .valid : malformed("Authentication Signature", start, .truncated(needed: 12, available: rest))
        case .lengthValueTuples:
            if rest == 0 { return malformed("Length Value Tuple List", start, .emptyList) }
            var p = start
            while p < n {
                if n - p == 1 { return malformed("Value Length", p, .truncated(needed: 2, available: 1)) }
                let length = Int(bytes[p]) | Int(bytes[p + 1]) << 8
                p += 2 + length
            }
            return .valid
        case .handleLengthValueTuples:
            if rest == 0 { return malformed("Handle Length Value Tuple List", start, .emptyList) }
            var p = start
            while p < n {
                let left = n - p
                if left < 2 { return malformed("Attribute Handle", p, .truncated(needed: 2, available: left)) }
                if left < 4 { return malformed("Value Length", p + 2, .truncated(needed: 2, available: left - 2)) }
                let length = Int(bytes[p + 2]) | Int(bytes[p + 3]) << 8
                if left < 4 + length {
                    return malformed("Attribute Value", p + 4, .truncated(needed: length, available: left - 4))
                }
                p += 4 + length
            }
            return .valid
        }
    }

    @Test("every strict prefix", arguments: PDUVectors.all)
    func sweep(_ vector: PDUVector) {
        let bytes = vector.bytes
        for n in 1..<bytes.count {
            let prefix = Array(bytes[0..<n])
            let expectation = Self.expected(vector, prefix: n)
            do {
                let pdu = try ATTPDU(decoding: prefix, mtu: nil)
                #expect(expectation == .valid, "prefix \(n) of \(vector.hex) decoded as \(pdu)")
                #expect(pdu.encoded == prefix, "prefix \(n) re-encodes differently")
            } catch {
                #expect(expectation == .error(error), "prefix \(n) of \(vector.hex)")
            }
        }
    }

    @Test("the typed decoder gives the same errors", arguments: PDUVectors.all.filter { $0.pdu.body != nil })
    func typedSweep(_ vector: PDUVector) throws {
        let body = try #require(vector.pdu.body)
        let bytes = vector.bytes
        for n in 1..<bytes.count {
            let viaEnum = Result { () throws(ATTError) in try ATTPDU(decoding: Array(bytes[0..<n])) }
            let viaType = Result { () throws(ATTError) in try Self.decode(like: body, Array(bytes[0..<n])) }
            #expect(viaEnum == viaType, "prefix \(n)")
        }
    }

    static func decode<T: ATTPDUCodable>(like _: T, _ bytes: [UInt8]) throws(ATTError) -> ATTPDU {
        try T(decoding: bytes).pdu
    }

    @Test("an empty PDU is malformed")
    func emptyPDU() {
        #expect(throws: ATTError.malformed(opcode: ATTOpcode(0), field: "Opcode", offset: 0, reason: .empty)) {
            try ATTPDU(decoding: [UInt8]())
        }
        #expect(throws: ATTError.malformed(opcode: .readRequest, field: "Opcode", offset: 0, reason: .empty)) {
            try ReadRequest(decoding: [UInt8]())
        }
    }
}
