/// A Connection Signature Resolving Key: the 128-bit key of data signing, distributed by SMP
/// (Signing Information, least significant octet first).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.4.2.2 and §3.6.6
public struct ConnectionSignatureResolvingKey: Hashable, Sendable {
    /// The key as a number.
    public var value: UInt128

    public init(_ value: UInt128) { self.value = value }

    /// From 16 octets least significant first, as SMP's Signing Information carries it and as
    /// BlueZ stores it. `nil` for another length.
    public init?<C: Collection>(littleEndian bytes: C) where C.Element == UInt8 {
        guard bytes.count == 16 else { return nil }
        value = bytes.reversed().reduce(UInt128(0)) { $0 << 8 | UInt128($1) }
    }
}

/// Data signing of ATT Signed Write Commands.
///
/// The signature of a message m under CSRK with counter SignCounter is the 64 most significant
/// bits of AES-CMAC_CSRK(m ‖ SignCounter). Bluetooth writes the CMAC operands as numbers, most
/// significant octet first, while the ATT PDU and the counter travel least significant octet
/// first; so the CMAC key is the CSRK most significant octet first and the CMAC input is the
/// octet-reversed `opcode ‖ handle ‖ value ‖ SignCounter(LE32)`. On the wire the Authentication
/// Signature is SignCounter (LE32) then the 64-bit MAC least significant octet first.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part H, §2.4.5 (signing algorithm); Vol 3, Part C, §10.4.1
///   (data signing); Vol 3, Part F, §3.4.5.4 (ATT_SIGNED_WRITE_CMD)
public enum ATTSigning {
    /// Octets of the Authentication Signature: SignCounter (4) + MAC (8).
    public static let signatureLength = 12

    /// The 64-bit MAC for `message` (the ATT PDU before its signature: opcode, handle, value,
    /// as on the wire) and `signCounter`.
    public static func mac<M: Collection>(
        csrk: ConnectionSignatureResolvingKey, message: M, signCounter: UInt32
    ) throws(GATTError) -> UInt64 where M.Element == UInt8 {
        var input = Array(message)
        input.reserveCapacity(input.count + 4)
        for shift in stride(from: 0, to: 32, by: 8) { input.append(UInt8(truncatingIfNeeded: signCounter >> shift)) }
        input.reverse()
        let t = try AESCMAC.compute(key: csrk.value, message: input)
        return UInt64(truncatingIfNeeded: t >> 64)
    }

    /// The 12-octet Authentication Signature as it follows the value in the PDU.
    public static func authenticationSignature<M: Collection>(
        csrk: ConnectionSignatureResolvingKey, message: M, signCounter: UInt32
    ) throws(GATTError) -> [UInt8] where M.Element == UInt8 {
        let mac = try mac(csrk: csrk, message: message, signCounter: signCounter)
        var out: [UInt8] = []
        out.reserveCapacity(signatureLength)
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: signCounter >> shift)) }
        for shift in stride(from: 0, to: 64, by: 8) { out.append(UInt8(truncatingIfNeeded: mac >> shift)) }
        return out
    }

    /// The whole signed PDU: `message` followed by its Authentication Signature.
    public static func sign<M: Collection>(
        csrk: ConnectionSignatureResolvingKey, message: M, signCounter: UInt32
    ) throws(GATTError) -> [UInt8] where M.Element == UInt8 {
        Array(message) + (try authenticationSignature(csrk: csrk, message: message, signCounter: signCounter))
    }

    /// Checks a received signed PDU (message then 12-octet signature): `true` when the MAC
    /// matches. The caller also checks that SignCounter is above the last one it accepted
    /// (Vol 3 Part C §10.4.2); `signCounter(of:)` reads it.
    public static func verify<P: Collection>(csrk: ConnectionSignatureResolvingKey, signedPDU: P) throws(GATTError)
        -> Bool
    where P.Element == UInt8 {
        let bytes = Array(signedPDU)
        guard bytes.count >= signatureLength + 1 else { return false }
        let messageEnd = bytes.count - signatureLength
        guard let counter = signCounter(of: bytes) else { return false }
        let expected = try authenticationSignature(csrk: csrk, message: bytes[..<messageEnd], signCounter: counter)
        return expected[...] == bytes[messageEnd...]
    }

    /// The SignCounter of a signed PDU, or `nil` when it is too short to carry a signature.
    public static func signCounter<P: Collection>(of signedPDU: P) -> UInt32? where P.Element == UInt8 {
        let bytes = Array(signedPDU)
        guard bytes.count >= signatureLength else { return nil }
        let start = bytes.count - signatureLength
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[start + $1]) << ($1 * 8) }
    }
}
