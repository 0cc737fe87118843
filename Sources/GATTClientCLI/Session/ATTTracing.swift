import BLE
import ATT
import Bluetooth

/// `-v`: every ATT PDU sent and received, decoded, one line each on standard error.
enum ATTTracing {
    /// `base` seen through: each SDU traced to `descriptor` as it passes.
    static func channel(_ base: any ATTChannel, errorDescriptor descriptor: Int32 = 2) -> ObservedATTChannel {
        ObservedATTChannel(
            base, onReceive: { trace("<", $0, to: descriptor) }, onSend: { trace(">", $0, to: descriptor) })
    }

    static func trace(_ arrow: String, _ sdu: [UInt8], to descriptor: Int32) {
        let text: String
        if let pdu = try? ATTPDU(decoding: sdu) {
            text = pdu.description
        } else {
            text = "ATT (malformed) " + Hex.encode(sdu)
        }
        printError("\(arrow) \(text)", to: descriptor)
    }
}
