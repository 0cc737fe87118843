import Testing
import Bluetooth

/// Issue 25: the digit writers every dump shares (two decimal digits and one octet's hex per
/// table load) write what the standard library's formatting writes.
@Suite struct TextDigitsTests {
    /// Every power of ten and its neighbours, and random values of every width: the count is
    /// the standard library's digit count, the digits its text.
    @Test func decimalsAreTheStandardLibrarysText() {
        var values: [UInt64] = [0, UInt64.max, UInt64.max - 1]
        var power: UInt64 = 1
        for _ in 0..<20 {
            values += [power - 1, power, power + 1]
            if power > UInt64.max / 10 { break }
            power *= 10
        }
        var generator = SystemRandomNumberGenerator()
        for bits in 1...64 {
            for _ in 0..<16 { values.append(UInt64.random(in: 0...UInt64.max, using: &generator) >> UInt64(64 - bits)) }
        }
        for value in values {
            let text = String(value)
            #expect(TextDigits.decimalCount(value) == text.utf8.count, "\(value)")
            var buffer = [UInt8](repeating: 0, count: 24)
            let written = buffer.withUnsafeMutableBufferPointer { p in
                TextDigits.putDecimal(value, digits: TextDigits.decimalCount(value), at: p.baseAddress!)
                return TextDigits.decimalCount(value)
            }
            #expect(Array(buffer[..<written]) == Array(text.utf8), "\(value)")
            #expect(buffer[written...].allSatisfy { $0 == 0 }, "\(value): nothing written past its digits")
        }
    }

    /// A width above the value's digits pads with zeros; one below keeps its lowest digits
    /// (odd and even widths: the last single digit and the pairs).
    @Test func widthsPadAndTruncate() {
        for (value, digits, expected) in [
            (42 as UInt64, 6, "000042"), (7, 3, "007"), (0, 5, "00000"), (123_456, 3, "456"), (123_456, 4, "3456"),
            (9, 1, "9"), (1_000_000, 7, "1000000"),
        ] {
            var buffer = [UInt8](repeating: 0, count: digits)
            buffer.withUnsafeMutableBufferPointer { TextDigits.putDecimal(value, digits: digits, at: $0.baseAddress!) }
            #expect(String(decoding: buffer, as: UTF8.self) == expected, "\(value) in \(digits)")
        }
    }

    /// Every octet, and random runs of every length up to 64, contiguous or not: two lower-case
    /// hex digits an octet, nothing else.
    @Test func hexIsTwoLowerCaseDigitsAnOctet() {
        func plain(_ octets: some Sequence<UInt8>) -> String {
            octets.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        }
        let every = (0...255).map { UInt8($0) }
        var text: [UInt8] = []
        text.appendHexBytes(every)
        #expect(String(decoding: text, as: UTF8.self) == plain(every))
        var generator = SystemRandomNumberGenerator()
        for length in 0...64 {
            let octets = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            var contiguous: [UInt8] = [0x2A]
            contiguous.appendHexBytes(octets[...])
            #expect(String(decoding: contiguous, as: UTF8.self) == "*" + plain(octets))
            var lazy: [UInt8] = []
            lazy.appendHexBytes(octets.lazy.map { $0 })  // no contiguous storage: copied first
            #expect(String(decoding: lazy, as: UTF8.self) == plain(octets))
        }
    }

    /// Every length up to and past the word-move range: the octets arrive, nothing around them
    /// changes. The source is allocated at exactly its length, so a read past its end is an
    /// AddressSanitizer error in the sanitized run.
    @Test func shortCopiesMoveExactlyTheirOctets() {
        for count in 0...40 {
            let source = UnsafeMutablePointer<UInt8>.allocate(capacity: Swift.max(count, 1))
            defer { source.deallocate() }
            for index in 0..<count { source[index] = UInt8(truncatingIfNeeded: 0x41 + index) }
            var target = [UInt8](repeating: 0xEE, count: count + 16)
            target.withUnsafeMutableBufferPointer { TextDigits.putCopy(source, count: count, at: $0.baseAddress! + 8) }
            #expect(target[..<8].allSatisfy { $0 == 0xEE }, "\(count): nothing before")
            #expect(Array(target[8..<(8 + count)]) == (0..<count).map { UInt8(truncatingIfNeeded: 0x41 + $0) }, "\(count)")
            #expect(target[(8 + count)...].allSatisfy { $0 == 0xEE }, "\(count): nothing after")
        }
    }

    /// A number in hex at every width from 1 to 20 digits, both cases: the standard library's
    /// digits, padded with zeros to the width.
    @Test func hexNumbersPadToTheirWidth() {
        var generator = SystemRandomNumberGenerator()
        var values: [UInt64] = [0, 1, 0xF, 0x10, 0xFF, 0x100, 0xABCD, UInt64.max]
        for bits in 1...64 { values.append(UInt64.random(in: 0...UInt64.max, using: &generator) >> UInt64(64 - bits)) }
        for value in values {
            for digits in 1...20 {
                for uppercase in [false, true] {
                    var text: [UInt8] = [0x2A]
                    text.appendHex(value, digits: digits, uppercase: uppercase)
                    let plain = String(value, radix: 16, uppercase: uppercase)
                    let expected = "*" + String(repeating: "0", count: Swift.max(0, digits - plain.count)) + plain
                    #expect(String(decoding: text, as: UTF8.self) == expected, "\(value) \(digits) \(uppercase)")
                }
            }
        }
        var small: [UInt8] = []
        small.appendHex(UInt8(0xA5), digits: 2)
        small.appendHex(UInt16(0xFFFF), digits: 4, uppercase: true)
        #expect(String(decoding: small, as: UTF8.self) == "a5FFFF")
    }
}
