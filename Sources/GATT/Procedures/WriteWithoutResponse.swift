import ATT
import Bluetooth

/// Write Without Response and Signed Write Without Response: single commands, nothing to wait
/// for, so builders rather than state machines. Each checks the value fits ATT_MTU.
///
/// - SeeAlso: Core Spec 5.4, Vol 3, Part G, §4.9.1 and §4.9.2
public enum WriteWithoutResponse {
    /// An ATT_WRITE_CMD for `value` (at most ATT_MTU − 3 octets).
    public static func command(handle: UInt16, value: [UInt8], mtu: Int = GATTLimits.defaultMTU) throws(GATTError)
        -> ATTPDU
    {
        if let error = checkMTU(mtu) { throw error }
        let maximum = min(mtu - 3, GATTLimits.maximumAttributeValueLength)
        guard value.count <= maximum else { throw GATTError.valueTooLong(length: value.count, maximum: maximum) }
        return .writeCommand(WriteCommand(handle: handle, value: value))
    }

    /// An ATT_SIGNED_WRITE_CMD for `value` (at most ATT_MTU − 15 octets), signed with `csrk`
    /// and `signCounter` (the caller keeps the counter, increasing it after each command).
    /// On an encrypted link use `command(handle:value:mtu:)` instead (Vol 3 Part G §4.9.2).
    public static func signedCommand(
        handle: UInt16, value: [UInt8], csrk: ConnectionSignatureResolvingKey, signCounter: UInt32,
        mtu: Int = GATTLimits.defaultMTU
    ) throws(GATTError) -> ATTPDU {
        if let error = checkMTU(mtu) { throw error }
        let maximum = min(mtu - 15, GATTLimits.maximumAttributeValueLength)
        guard value.count <= maximum else { throw GATTError.valueTooLong(length: value.count, maximum: maximum) }
        var message: [UInt8] = [
            ATTOpcode.signedWriteCommand.rawValue, UInt8(truncatingIfNeeded: handle),
            UInt8(truncatingIfNeeded: handle >> 8),
        ]
        message += value
        let mac = try ATTSigning.mac(csrk: csrk, message: message, signCounter: signCounter)
        return .signedWriteCommand(SignedWriteCommand(handle: handle, value: value, signCounter: signCounter, mac: mac))
    }
}
