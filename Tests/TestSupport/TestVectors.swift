import Bluetooth

/// Bytes from spaced hex text (test vectors only).
public func leBytes(_ text: String) -> [UInt8] {
    guard let bytes = Hex.decode(text) else { preconditionFailure("bad hex in test vector: \(text)") }
    return bytes
}
