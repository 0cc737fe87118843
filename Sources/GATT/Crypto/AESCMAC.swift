import CCrypto

/// AES-128-CMAC (RFC 4493), computed by libcrypto through the CCrypto shim.
///
/// Octets are in RFC 4493's order: `key[0]` and the result's first octet are the most
/// significant. Bluetooth's functions (signing, Database Hash) state their own octet order on
/// top of this; see `ATTSigning` and `DatabaseHash`.
public enum AESCMAC {
    /// The 16-octet MAC of `message` under the 16-octet `key`.
    /// Throws `invalidParameter` for a key of another length, `crypto` when libcrypto fails.
    public static func compute<K: Collection, M: Collection>(key: K, message: M) throws(GATTError) -> [UInt8]
    where K.Element == UInt8, M.Element == UInt8 {
        let keyBytes = Array(key)
        guard keyBytes.count == 16 else {
            throw GATTError.invalidParameter("AES-CMAC key of \(keyBytes.count) octets (16 needed)")
        }
        let messageBytes = Array(message)
        var out = [UInt8](repeating: 0, count: 16)
        let result = keyBytes.withUnsafeBufferPointer { keyBuffer in
            messageBytes.withUnsafeBufferPointer { messageBuffer in
                out.withUnsafeMutableBufferPointer { outBuffer in
                    chcrypto_aes_cmac(
                        keyBuffer.baseAddress, messageBuffer.baseAddress, messageBuffer.count, outBuffer.baseAddress)
                }
            }
        }
        guard result == 0 else { throw GATTError.crypto(code: result) }
        return out
    }

    /// The MAC as a 128-bit number (first octet most significant).
    public static func compute<M: Collection>(key: UInt128, message: M) throws(GATTError) -> UInt128
    where M.Element == UInt8 {
        let mac = try compute(key: bigEndianBytes(key), message: message)
        return mac.reduce(UInt128(0)) { $0 << 8 | UInt128($1) }
    }

    /// The 16 octets of `value`, most significant first.
    static func bigEndianBytes(_ value: UInt128) -> [UInt8] {
        (0..<16).map { UInt8(truncatingIfNeeded: value >> ((15 - $0) * 8)) }
    }
}
