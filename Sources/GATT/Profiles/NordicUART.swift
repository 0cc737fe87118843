import Bluetooth

/// The Nordic UART Service, as the Adafruit Bluefruit LE UART boards serve it: the central writes
/// text to RX and receives the peripheral's text as notifications on TX.
public enum NordicUART {
    public static let service = BluetoothUUID.bit128(0x6E40_0001_B5A3_F393_E0A9_E50E_24DC_CA9E)
    /// RX: WRITE and WRITE WITHOUT RESPONSE (central → peripheral).
    public static let rx = BluetoothUUID.bit128(0x6E40_0002_B5A3_F393_E0A9_E50E_24DC_CA9E)
    /// TX: NOTIFY (peripheral → central).
    public static let tx = BluetoothUUID.bit128(0x6E40_0003_B5A3_F393_E0A9_E50E_24DC_CA9E)

    /// Splits `text` into writes of at most ATT_MTU − 3 octets, never inside a UTF-8 sequence.
    public static func chunks(_ bytes: [UInt8], mtu: Int) -> [[UInt8]] {
        let size = max(1, mtu - 3)
        var out: [[UInt8]] = []
        var start = 0
        while start < bytes.count {
            var end = min(start + size, bytes.count)
            // Back off to a UTF-8 boundary (a continuation octet is 10xxxxxx).
            if end < bytes.count {
                var boundary = end
                while boundary > start, bytes[boundary] & 0xC0 == 0x80 { boundary -= 1 }
                if boundary > start { end = boundary }
            }
            out.append(Array(bytes[start..<end]))
            start = end
        }
        return out
    }

    /// A Bluefruit LE Connect controller packet: `!`, type, payload, and the checksum (the one's
    /// complement of the sum of every octet before it).
    public static func controllerPacket(type: UInt8, payload: [UInt8]) -> [UInt8] {
        let body = [UInt8(ascii: "!"), type] + payload
        let sum = body.reduce(UInt8(0)) { $0 &+ $1 }
        return body + [~sum]
    }

    /// Button `n` (1–8) pressed or released: `!B` n `1`/`0`.
    public static func button(_ number: Int, pressed: Bool) -> [UInt8]? {
        guard (1...8).contains(number) else { return nil }
        return controllerPacket(type: UInt8(ascii: "B"), payload: [UInt8(ascii: "0") + UInt8(number), UInt8(ascii: pressed ? "1" : "0")])
    }

    /// A colour: `!C` r g b.
    public static func color(red: UInt8, green: UInt8, blue: UInt8) -> [UInt8] {
        controllerPacket(type: UInt8(ascii: "C"), payload: [red, green, blue])
    }

    /// Whether a controller packet's checksum is right.
    public static func isValidControllerPacket(_ packet: [UInt8]) -> Bool {
        guard packet.count >= 3, packet[0] == UInt8(ascii: "!") else { return false }
        return controllerPacket(type: packet[1], payload: Array(packet[2..<(packet.count - 1)])) == packet
    }
}

extension NordicUART {
    /// `value` as text when it is text: valid UTF-8 of printable characters, tabs and line ends;
    /// nil for anything else (a Bluefruit controller packet such as `!B11:` carries a binary
    /// checksum).
    public static func text(_ value: [UInt8]) -> String? {
        guard let text = String(validating: value, as: UTF8.self) else { return nil }
        let printable = text.unicodeScalars.allSatisfy { scalar in
            scalar == "\n" || scalar == "\r" || scalar == "\t" || (scalar.value >= 0x20 && scalar.value != 0x7F)
        }
        return printable ? text : nil
    }
}
