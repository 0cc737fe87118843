import Bluetooth
import Security
import Testing

/// The cryptographic toolbox against the sample data of Core 5.4 Vol 3 Part H, Appendix D (and
/// the c1/s1 examples of §2.2.3–§2.2.4), values most significant octet first as the spec writes.
@Suite("Security: the cryptographic toolbox (Appendix D sample data)")
struct SecurityFunctionsTests {
    static func hex(_ text: String) -> [UInt8] { Hex.decode(String(text.filter { $0 != " " }))! }

    // D.1: the P-256 example.
    static let privateA = hex("3f49f6d4 a3c55f38 74c9b3e3 d2103f50 4aff607b eb40b799 5899b8a6 cd3c1abd")
    static let privateB = hex("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd")
    static let publicAX = hex("20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6")
    static let publicAY = hex("dc809c49 652aeb6d 63329abf 5a52155c 766345c2 8fed3024 741c8ed0 1589d28b")
    static let publicBX = hex("1ea1f0f0 1faf1d96 09592284 f19e4c00 47b58afd 8615a69f 559077b2 2faaa190")
    static let publicBY = hex("4c55f33e 429dad37 7356703a 9ab85160 472d1130 e28e3676 5f89aff9 15b1214a")
    static let dhKey = hex("ec0234a3 57c8ad05 341010a6 0a397d9b 99796b13 b4f866f1 868d34f3 73bfa698")

    @Test func ecdhGivesTheSampleDHKeyBothWays() throws {
        let a = try P256KeyPair(privateKey: Self.privateA, x: Self.publicAX, y: Self.publicAY)
        let b = try P256KeyPair(privateKey: Self.privateB, x: Self.publicBX, y: Self.publicBY)
        #expect(try a.dhKey(peerX: Self.publicBX, peerY: Self.publicBY) == Self.dhKey)
        #expect(try b.dhKey(peerX: Self.publicAX, peerY: Self.publicAY) == Self.dhKey)
    }

    @Test func generatedKeysAgree() throws {
        let a = try P256KeyPair.generate()
        let b = try P256KeyPair.generate()
        #expect(a.x != b.x)
        #expect(try a.dhKey(peerX: b.x, peerY: b.y) == b.dhKey(peerX: a.x, peerY: a.y))
    }

    /// CVE-2018-5383: a point off the curve (the sample key with Y changed; Y = 0; the point at
    /// infinity's all-zero encoding) is refused and yields no key.
    @Test(arguments: [
        (publicBX, Array(publicBY.dropLast()) + [publicBY.last! ^ 1]),
        (publicBX, [UInt8](repeating: 0, count: 32)),
        ([UInt8](repeating: 0, count: 32), [UInt8](repeating: 0, count: 32)),
    ])
    func aPublicKeyOffTheCurveIsRefused(x: [UInt8], y: [UInt8]) throws {
        let a = try P256KeyPair(privateKey: Self.privateA, x: Self.publicAX, y: Self.publicAY)
        #expect(throws: SecurityCryptoError.invalidPublicKey) { try a.dhKey(peerX: x, peerY: y) }
        #expect(throws: SecurityCryptoError.invalidPublicKey) { try P256KeyPair.checkPublicKey(x: x, y: y) }
    }

    @Test func f4() throws {
        let value = try SecurityFunctions.f4(
            Self.publicAX, Self.privateB, Self.hex("d5cb8454 d177733e ffffb2ec 712baeab"), 0)
        #expect(value == Self.hex("f2c916f1 07a9bd1c f1eda1be a974872d"))
    }

    @Test func f5() throws {
        let (macKey, ltk) = try SecurityFunctions.f5(
            Self.dhKey, Self.hex("d5cb8454 d177733e ffffb2ec 712baeab"), Self.hex("a6e8e7cc 25a75f6e 216583f7 ff3dc4cf"),
            Self.hex("00561237 37bfce"), Self.hex("00a71370 2dcfc1"))
        #expect(macKey == Self.hex("2965f176 a1084a02 fd3f6a20 ce636e20"))
        #expect(ltk == Self.hex("69867911 69d7cd23 980522b5 94750a38"))
    }

    @Test func f6() throws {
        let value = try SecurityFunctions.f6(
            Self.hex("2965f176 a1084a02 fd3f6a20 ce636e20"), Self.hex("d5cb8454 d177733e ffffb2ec 712baeab"),
            Self.hex("a6e8e7cc 25a75f6e 216583f7 ff3dc4cf"), Self.hex("12a3343b b453bb54 08da42d2 0c2d0fc8"),
            Self.hex("010102"), Self.hex("00561237 37bfce"), Self.hex("00a71370 2dcfc1"))
        #expect(value == Self.hex("e3c47398 9cd0e8c5 d26c0b09 da958f61"))
    }

    @Test func g2() throws {
        let value = try SecurityFunctions.g2(
            Self.publicAX, Self.privateB, Self.hex("d5cb8454 d177733e ffffb2ec 712baeab"),
            Self.hex("a6e8e7cc 25a75f6e 216583f7 ff3dc4cf"))
        #expect(value == 0x2F9E_D5BA)
        #expect(value % 1_000_000 == 0x2F9E_D5BA % 1_000_000)
    }

    @Test func h6h7ah() throws {
        let key = Self.hex("ec0234a3 57c8ad05 341010a6 0a397d9b")
        #expect(try SecurityFunctions.h6(key, Self.hex("6c656272")) == Self.hex("2d9ae102 e76dc91c e8d3a9e2 80b16399"))
        #expect(
            try SecurityFunctions.h7(Self.hex("00000000 00000000 00000000 746D7031"), key)
                == Self.hex("fb173597 c6a3c0ec d2998c2a 75a57011"))
        #expect(try SecurityFunctions.ah(key, Self.hex("708194")) == Self.hex("0dfbaa"))
    }

    /// §2.2.3 and §2.2.4: the legacy confirm value and STK examples.
    @Test func c1s1() throws {
        let zero = [UInt8](repeating: 0, count: 16)
        let confirm = try SecurityFunctions.c1(
            zero, Self.hex("5783D52156AD6F0E6388274EC6702EE0"), preq: Self.hex("07071000000101"),
            pres: Self.hex("05000800000302"), iat: 1, rat: 0, ia: Self.hex("A1A2A3A4A5A6"), ra: Self.hex("B1B2B3B4B5B6"))
        #expect(confirm == Self.hex("1e1e3fef878988ead2a74dc5bef13b86"))
        let stk = try SecurityFunctions.s1(
            zero, Self.hex("000F0E0D0C0B0A091122334455667788"), Self.hex("010203040506070899AABBCCDDEEFF00"))
        #expect(stk == Self.hex("9a1fe1f0e8b0f49b5b4216ae796da062"))
    }

    @Test func lengthsAreChecked() {
        #expect(throws: SecurityCryptoError.length("e key", expected: 16, actual: 15)) {
            try SecurityFunctions.e([UInt8](repeating: 0, count: 15), [UInt8](repeating: 0, count: 16))
        }
    }
}
