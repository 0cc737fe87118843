import Bluetooth
import CCrypto

/// A failure of the cryptographic toolbox: libcrypto missing or refusing, or a peer's public
/// key that is not a point of P-256.
public enum SecurityCryptoError: Error, Hashable, Sendable, CustomStringConvertible {
    /// libcrypto failed (a `CHCRYPTO_E*` code of the shim).
    case libcrypto(code: Int32)
    /// The public key is not on the curve (or is the point at infinity): CVE-2018-5383.
    case invalidPublicKey
    /// An input of the wrong length.
    case length(String, expected: Int, actual: Int)

    public var description: String {
        switch self {
        case .libcrypto(let code): return "libcrypto failed (code \(code))"
        case .invalidPublicKey: return "the public key is not a point of P-256"
        case .length(let what, let expected, let actual): return "\(what): \(actual) octets, expected \(expected)"
        }
    }
}

/// The Security Manager's cryptographic toolbox, on libcrypto (AES-128, AES-CMAC, P-256).
///
/// Every value is written most significant octet first, as the specification writes its
/// functions and sample data; SMP PDUs carry them least significant octet first, so the
/// protocol layer reverses them at the wire.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.2 (cryptographic toolbox), Appendix D (sample data)
public enum SecurityFunctions {
    /// e: AES-128 of one block (§2.2.1).
    public static func e(_ key: [UInt8], _ plaintext: [UInt8]) throws(SecurityCryptoError) -> [UInt8] {
        try check(key, 16, "e key")
        try check(plaintext, 16, "e plaintext")
        var out = [UInt8](repeating: 0, count: 16)
        let result = key.withUnsafeBufferPointer { k in
            plaintext.withUnsafeBufferPointer { p in
                out.withUnsafeMutableBufferPointer { o in chcrypto_aes128_encrypt(k.baseAddress, p.baseAddress, o.baseAddress) }
            }
        }
        guard result == 0 else { throw .libcrypto(code: result) }
        return out
    }

    /// AES-CMAC (RFC 4493) under a 128-bit key.
    public static func cmac(_ key: [UInt8], _ message: [UInt8]) throws(SecurityCryptoError) -> [UInt8] {
        try check(key, 16, "AES-CMAC key")
        var out = [UInt8](repeating: 0, count: 16)
        let result = key.withUnsafeBufferPointer { k in
            message.withUnsafeBufferPointer { m in
                out.withUnsafeMutableBufferPointer { o in
                    chcrypto_aes_cmac(k.baseAddress, m.baseAddress, m.count, o.baseAddress)
                }
            }
        }
        guard result == 0 else { throw .libcrypto(code: result) }
        return out
    }

    /// ah: the random address hash, `e(k, 0…0 ‖ r) mod 2^24` (§2.2.2); `r` is 3 octets.
    public static func ah(_ k: [UInt8], _ r: [UInt8]) throws(SecurityCryptoError) -> [UInt8] {
        try check(r, 3, "ah r")
        return Array(try e(k, [UInt8](repeating: 0, count: 13) + r).suffix(3))
    }

    /// c1: LE legacy pairing confirm value (§2.2.3). `preq`/`pres` are the Pairing Request and
    /// Response commands (7 octets, most significant first: the code is the last octet),
    /// `iat`/`rat` the address types (0 public, 1 random), `ia`/`ra` the addresses (6 octets).
    public static func c1(
        _ k: [UInt8], _ r: [UInt8], preq: [UInt8], pres: [UInt8], iat: UInt8, rat: UInt8, ia: [UInt8], ra: [UInt8]
    ) throws(SecurityCryptoError) -> [UInt8] {
        try check(preq, 7, "c1 preq")
        try check(pres, 7, "c1 pres")
        try check(ia, 6, "c1 ia")
        try check(ra, 6, "c1 ra")
        try check(r, 16, "c1 r")
        let p1 = pres + preq + [rat & 1, iat & 1]
        let p2 = [UInt8](repeating: 0, count: 4) + ia + ra
        return try e(k, xor(try e(k, xor(r, p1)), p2))
    }

    /// s1: LE legacy pairing STK, `e(k, r1[64 LSB] ‖ r2[64 LSB])` (§2.2.4).
    public static func s1(_ k: [UInt8], _ r1: [UInt8], _ r2: [UInt8]) throws(SecurityCryptoError) -> [UInt8] {
        try check(r1, 16, "s1 r1")
        try check(r2, 16, "s1 r2")
        return try e(k, Array(r1.suffix(8)) + Array(r2.suffix(8)))
    }

    /// f4: Secure Connections confirm value, `AES-CMAC_X(U ‖ V ‖ Z)` (§2.2.6).
    public static func f4(_ u: [UInt8], _ v: [UInt8], _ x: [UInt8], _ z: UInt8) throws(SecurityCryptoError) -> [UInt8] {
        try check(u, 32, "f4 U")
        try check(v, 32, "f4 V")
        return try cmac(x, u + v + [z])
    }

    /// f5: Secure Connections key generation: (MacKey, LTK) from the DHKey `w`, the nonces and
    /// the addresses `a1`/`a2` (7 octets: type, then the address) (§2.2.7).
    public static func f5(
        _ w: [UInt8], _ n1: [UInt8], _ n2: [UInt8], _ a1: [UInt8], _ a2: [UInt8]
    ) throws(SecurityCryptoError) -> (macKey: [UInt8], ltk: [UInt8]) {
        try check(w, 32, "f5 W")
        try check(n1, 16, "f5 N1")
        try check(n2, 16, "f5 N2")
        try check(a1, 7, "f5 A1")
        try check(a2, 7, "f5 A2")
        let salt: [UInt8] = [0x6C, 0x88, 0x83, 0x91, 0xAA, 0xF5, 0xA5, 0x38, 0x60, 0x37, 0x0B, 0xDB, 0x5A, 0x60, 0x83, 0xBE]
        let t = try cmac(salt, w)
        let keyID: [UInt8] = [0x62, 0x74, 0x6C, 0x65]  // "btle"
        let length: [UInt8] = [0x01, 0x00]  // 256
        let macKey = try cmac(t, [0] + keyID + n1 + n2 + a1 + a2 + length)
        let ltk = try cmac(t, [1] + keyID + n1 + n2 + a1 + a2 + length)
        return (macKey, ltk)
    }

    /// f6: Secure Connections DHKey check value (§2.2.8); `ioCap` is AuthReq ‖ OOB flag ‖ IO
    /// capability (3 octets).
    public static func f6(
        _ w: [UInt8], _ n1: [UInt8], _ n2: [UInt8], _ r: [UInt8], _ ioCap: [UInt8], _ a1: [UInt8], _ a2: [UInt8]
    ) throws(SecurityCryptoError) -> [UInt8] {
        try check(n1, 16, "f6 N1")
        try check(n2, 16, "f6 N2")
        try check(r, 16, "f6 R")
        try check(ioCap, 3, "f6 IOcap")
        try check(a1, 7, "f6 A1")
        try check(a2, 7, "f6 A2")
        return try cmac(w, n1 + n2 + r + ioCap + a1 + a2)
    }

    /// g2: the six-digit numeric comparison value, `AES-CMAC_X(U ‖ V ‖ Y) mod 2^32` (§2.2.9);
    /// shown as that value mod 10^6.
    public static func g2(_ u: [UInt8], _ v: [UInt8], _ x: [UInt8], _ y: [UInt8]) throws(SecurityCryptoError) -> UInt32 {
        try check(u, 32, "g2 U")
        try check(v, 32, "g2 V")
        try check(y, 16, "g2 Y")
        return try cmac(x, u + v + y).suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// h6: link key conversion, `AES-CMAC_W(keyID)` (§2.2.10).
    public static func h6(_ w: [UInt8], _ keyID: [UInt8]) throws(SecurityCryptoError) -> [UInt8] {
        try check(keyID, 4, "h6 keyID")
        return try cmac(w, keyID)
    }

    /// h7: link key conversion with a salt, `AES-CMAC_SALT(W)` (§2.2.11).
    public static func h7(_ salt: [UInt8], _ w: [UInt8]) throws(SecurityCryptoError) -> [UInt8] {
        try cmac(salt, w)
    }

    private static func check(_ value: [UInt8], _ length: Int, _ what: String) throws(SecurityCryptoError) {
        guard value.count == length else { throw .length(what, expected: length, actual: value.count) }
    }

    private static func xor(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] { zip(a, b).map { $0 ^ $1 } }
}

/// A P-256 key pair for LE Secure Connections (§2.3.5.6): the private scalar stays in this value
/// and is never printed.
public struct P256KeyPair: Sendable {
    /// The public key's coordinates, most significant octet first.
    public let x: [UInt8]
    public let y: [UInt8]
    private let privateKey: [UInt8]

    /// A fresh key pair from libcrypto's generator (seeded by the operating system).
    public static func generate() throws(SecurityCryptoError) -> P256KeyPair {
        var d = [UInt8](repeating: 0, count: 32)
        var x = [UInt8](repeating: 0, count: 32)
        var y = [UInt8](repeating: 0, count: 32)
        let result = d.withUnsafeMutableBufferPointer { dp in
            x.withUnsafeMutableBufferPointer { xp in
                y.withUnsafeMutableBufferPointer { yp in chcrypto_p256_generate(dp.baseAddress, xp.baseAddress, yp.baseAddress) }
            }
        }
        guard result == 0 else { throw .libcrypto(code: result) }
        return P256KeyPair(x: x, y: y, privateKey: d)
    }

    /// A key pair from known values (the specification's sample data; tests only).
    public init(privateKey: [UInt8], x: [UInt8], y: [UInt8]) throws(SecurityCryptoError) {
        guard privateKey.count == 32 else { throw .length("private key", expected: 32, actual: privateKey.count) }
        try P256KeyPair.checkPublicKey(x: x, y: y)
        self.init(x: x, y: y, privateKey: privateKey)
    }

    private init(x: [UInt8], y: [UInt8], privateKey: [UInt8]) {
        self.x = x
        self.y = y
        self.privateKey = privateKey
    }

    /// Throws ``SecurityCryptoError/invalidPublicKey`` unless (x, y) is a point of P-256.
    public static func checkPublicKey(x: [UInt8], y: [UInt8]) throws(SecurityCryptoError) {
        guard x.count == 32, y.count == 32 else { throw .invalidPublicKey }
        let result = x.withUnsafeBufferPointer { xp in y.withUnsafeBufferPointer { yp in chcrypto_p256_check_public(xp.baseAddress, yp.baseAddress) } }
        if result == Int32(CHCRYPTO_EPOINT) { throw .invalidPublicKey }
        guard result == 0 else { throw .libcrypto(code: result) }
    }

    /// The DHKey with the peer's public key (§2.3.5.6.1), after checking that it lies on the curve
    /// (CVE-2018-5383): an invalid key throws and yields nothing.
    public func dhKey(peerX: [UInt8], peerY: [UInt8]) throws(SecurityCryptoError) -> [UInt8] {
        guard peerX.count == 32, peerY.count == 32 else { throw .invalidPublicKey }
        var out = [UInt8](repeating: 0, count: 32)
        let result = privateKey.withUnsafeBufferPointer { d in
            peerX.withUnsafeBufferPointer { xp in
                peerY.withUnsafeBufferPointer { yp in
                    out.withUnsafeMutableBufferPointer { o in
                        chcrypto_p256_dhkey(d.baseAddress, xp.baseAddress, yp.baseAddress, o.baseAddress)
                    }
                }
            }
        }
        if result == Int32(CHCRYPTO_EPOINT) { throw .invalidPublicKey }
        guard result == 0 else { throw .libcrypto(code: result) }
        return out
    }
}

extension P256KeyPair: CustomStringConvertible, CustomReflectable {
    /// The public key only: the private scalar is never shown.
    public var description: String { "P-256 key pair, public X " + Hex.encode(x) }
    public var customMirror: Mirror { Mirror(self, children: ["x": x, "y": y]) }
}
