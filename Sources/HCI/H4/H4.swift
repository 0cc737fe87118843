/// The UART transport layer (H4): every HCI packet on a stream is preceded by a one-octet
/// packet indicator (`HCIPacketType`).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part A, §2
public enum H4 {
    /// `type`'s indicator followed by `packet` (an HCI packet starting with its header).
    public static func frame(type: HCIPacketType, packet: some Collection<UInt8>) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(packet.count + 1)
        bytes.append(type.rawValue)
        bytes.append(contentsOf: packet)
        return bytes
    }

    /// Octets of the HCI header of `type`, which ends with its length field.
    /// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §5.4.1 (command), §5.4.2 (ACL), §5.4.3
    ///   (synchronous), §5.4.4 (event), §5.4.5 (ISO)
    public static func headerLength(of type: HCIPacketType) -> Int {
        switch type {
        case .command: return 3  // opcode (2), Parameter_Total_Length (1)
        case .acl: return 4  // handle and flags (2), Data_Total_Length (2)
        case .sco: return 3  // handle and flags (2), Data_Total_Length (1)
        case .event: return 2  // Event_Code (1), Parameter_Total_Length (1)
        case .iso: return 4  // handle and flags (2), ISO_Data_Load_Length (14 bits) + RFU (2)
        }
    }

    /// The largest packet of `type` its header can describe (header included).
    public static func maximumPacketLength(of type: HCIPacketType) -> Int {
        switch type {
        case .command: return 3 + 255
        case .acl: return 4 + 65_535
        case .sco: return 3 + 255
        case .event: return 2 + 255
        case .iso: return 4 + 16_383
        }
    }
}
