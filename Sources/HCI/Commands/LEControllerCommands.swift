import Bluetooth

/// HCI_LE_Set_Event_Mask: which LE Meta subevents the controller may generate.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.1
public struct LESetEventMaskCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetEventMask
    /// LE_Event_Mask (8 octets); bit n enables LE subevent n + 1.
    public var leEventMask: HCIEventMask

    /// The spec's default mask (0x000000000000001F).
    public static let defaultMask = HCIEventMask(rawValue: 0x1F)

    public init(leEventMask: HCIEventMask) { self.leEventMask = leEventMask }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        leEventMask = HCIEventMask(rawValue: try r.uint64())
        try r.end()
        reader = r.reader
    }

    public func writeParameters(to writer: inout ByteWriter) { writer.writeUInt64LE(leEventMask.rawValue) }

    public var description: String { "\(Self.opcode.displayName): mask \(leEventMask)" }
}

/// HCI_LE_Read_Buffer_Size [v1]: the controller's LE ACL buffers (0 means shared with BR/EDR).
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.2
public struct LEReadBufferSizeV1Command: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.leReadBufferSizeV1
    public init() {}

    /// Status, LE_ACL_Data_Packet_Length, Total_Num_LE_ACL_Data_Packets.
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var leACLDataPacketLength: UInt16
        public var totalNumLEACLDataPackets: UInt8

        public init(status: HCIStatus = .success, leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8) {
            self.status = status
            self.leACLDataPacketLength = leACLDataPacketLength
            self.totalNumLEACLDataPackets = totalNumLEACLDataPackets
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(reader, context: "\(LEReadBufferSizeV1Command.opcode) return parameters")
            status = try r.status()
            leACLDataPacketLength = try r.uint16()
            totalNumLEACLDataPackets = try r.uint8()
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeUInt16LE(leACLDataPacketLength)
            writer.writeUInt8(totalNumLEACLDataPackets)
        }

        public var description: String {
            "\(status), LE ACL \(leACLDataPacketLength) octets x \(totalNumLEACLDataPackets)"
        }
    }
}

/// HCI_LE_Read_Buffer_Size [v2]: LE ACL and ISO buffers.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.2
public struct LEReadBufferSizeV2Command: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.leReadBufferSizeV2
    public init() {}

    /// Status, LE_ACL_Data_Packet_Length, Total_Num_LE_ACL_Data_Packets, ISO_Data_Packet_Length,
    /// Total_Num_ISO_Data_Packets.
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var leACLDataPacketLength: UInt16
        public var totalNumLEACLDataPackets: UInt8
        public var isoDataPacketLength: UInt16
        public var totalNumISODataPackets: UInt8

        public init(
            status: HCIStatus = .success, leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8,
            isoDataPacketLength: UInt16, totalNumISODataPackets: UInt8
        ) {
            self.status = status
            self.leACLDataPacketLength = leACLDataPacketLength
            self.totalNumLEACLDataPackets = totalNumLEACLDataPackets
            self.isoDataPacketLength = isoDataPacketLength
            self.totalNumISODataPackets = totalNumISODataPackets
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(reader, context: "\(LEReadBufferSizeV2Command.opcode) return parameters")
            status = try r.status()
            leACLDataPacketLength = try r.uint16()
            totalNumLEACLDataPackets = try r.uint8()
            isoDataPacketLength = try r.uint16()
            totalNumISODataPackets = try r.uint8()
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeUInt16LE(leACLDataPacketLength)
            writer.writeUInt8(totalNumLEACLDataPackets)
            writer.writeUInt16LE(isoDataPacketLength)
            writer.writeUInt8(totalNumISODataPackets)
        }

        public var description: String {
            "\(status), LE ACL \(leACLDataPacketLength) octets x \(totalNumLEACLDataPackets), "
                + "ISO \(isoDataPacketLength) octets x \(totalNumISODataPackets)"
        }
    }
}

/// LE_Features: the Link Layer feature bits. Open: unnamed bits keep their value.
/// - SeeAlso: Core Spec 5.4, Vol 6, Part B, §4.6
public struct LEFeatures: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(bit: Int) { rawValue = bit >= 0 && bit < 64 ? 1 << UInt64(bit) : 0 }

    public static let leEncryption = LEFeatures(bit: 0)
    public static let connectionParametersRequestProcedure = LEFeatures(bit: 1)
    public static let extendedRejectIndication = LEFeatures(bit: 2)
    public static let peripheralInitiatedFeaturesExchange = LEFeatures(bit: 3)
    public static let lePing = LEFeatures(bit: 4)
    public static let leDataPacketLengthExtension = LEFeatures(bit: 5)
    public static let llPrivacy = LEFeatures(bit: 6)
    public static let extendedAdvertisingFilterPolicies = LEFeatures(bit: 7)
    public static let le2MPHY = LEFeatures(bit: 8)
    public static let stableModulationIndexTransmitter = LEFeatures(bit: 9)
    public static let stableModulationIndexReceiver = LEFeatures(bit: 10)
    public static let leCodedPHY = LEFeatures(bit: 11)
    public static let leExtendedAdvertising = LEFeatures(bit: 12)
    public static let lePeriodicAdvertising = LEFeatures(bit: 13)
    public static let channelSelectionAlgorithm2 = LEFeatures(bit: 14)
    public static let lePowerClass1 = LEFeatures(bit: 15)
    public static let minimumNumberOfUsedChannelsProcedure = LEFeatures(bit: 16)

    /// Bit names as the spec's table words them.
    static let names: [Int: String] = [
        0: "LE Encryption",
        1: "Connection Parameters Request Procedure",
        2: "Extended Reject Indication",
        3: "Peripheral-initiated Features Exchange",
        4: "LE Ping",
        5: "LE Data Packet Length Extension",
        6: "LL Privacy",
        7: "Extended Scanning Filter Policies",
        8: "LE 2M PHY",
        9: "Stable Modulation Index - Transmitter",
        10: "Stable Modulation Index - Receiver",
        11: "LE Coded PHY",
        12: "LE Extended Advertising",
        13: "LE Periodic Advertising",
        14: "Channel Selection Algorithm #2",
        15: "LE Power Class 1",
        16: "Minimum Number of Used Channels Procedure",
        17: "Connection CTE Request",
        18: "Connection CTE Response",
        19: "Connectionless CTE Transmitter",
        20: "Connectionless CTE Receiver",
        21: "Antenna Switching During CTE Transmission (AoD)",
        22: "Antenna Switching During CTE Reception (AoA)",
        23: "Receiving Constant Tone Extensions",
        24: "Periodic Advertising Sync Transfer - Sender",
        25: "Periodic Advertising Sync Transfer - Recipient",
        26: "Sleep Clock Accuracy Updates",
        27: "Remote Public Key Validation",
        28: "Connected Isochronous Stream - Central",
        29: "Connected Isochronous Stream - Peripheral",
        30: "Isochronous Broadcaster",
        31: "Synchronized Receiver",
        32: "Connected Isochronous Stream (Host Support)",
        33: "LE Power Control Request",
        34: "LE Power Change Indication",
        35: "LE Path Loss Monitoring",
        36: "Periodic Advertising ADI support",
        37: "Connection Subrating",
        38: "Connection Subrating (Host Support)",
        39: "Channel Classification",
        40: "Advertising Coding Selection",
        41: "Advertising Coding Selection (Host Support)",
        43: "Periodic Advertising with Responses - Advertiser",
        44: "Periodic Advertising with Responses - Scanner",
    ]

    /// Names of the bits set, lowest first; unnamed bits as `bit N`.
    public var names: [String] {
        (0..<64).filter { rawValue >> UInt64($0) & 1 == 1 }.map { Self.names[$0] ?? "bit \($0)" }
    }

    public var description: String {
        let list = names
        return CommandFormat.hex(rawValue, digits: 16) + (list.isEmpty ? "" : " (" + list.joined(separator: ", ") + ")")
    }
}

/// HCI_LE_Read_Local_Supported_Features.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.3
public struct LEReadLocalSupportedFeaturesCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.leReadLocalSupportedFeatures
    public init() {}

    /// Status, LE_Features (8 octets).
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var leFeatures: LEFeatures

        public init(status: HCIStatus = .success, leFeatures: LEFeatures) {
            self.status = status
            self.leFeatures = leFeatures
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(
                reader, context: "\(LEReadLocalSupportedFeaturesCommand.opcode) return parameters")
            status = try r.status()
            leFeatures = LEFeatures(rawValue: try r.uint64())
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeUInt64LE(leFeatures.rawValue)
        }

        public var description: String { "\(status), features \(leFeatures)" }
    }
}

/// HCI_LE_Set_Random_Address: the random address used when Own_Address_Type is random.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.4
public struct LESetRandomAddressCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetRandomAddress
    public var randomAddress: BluetoothAddress

    public init(randomAddress: BluetoothAddress) { self.randomAddress = randomAddress }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        randomAddress = try r.address()
        try r.end()
        reader = r.reader
    }

    public func writeParameters(to writer: inout ByteWriter) { randomAddress.write(littleEndian: &writer) }

    public var description: String {
        "\(Self.opcode.displayName): \(randomAddress) (\(randomAddress.randomAddressKind.rawValue))"
    }
}
