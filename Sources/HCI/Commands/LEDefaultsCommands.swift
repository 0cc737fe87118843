import Bluetooth

/// HCI_LE_Rand: 64 random bits from the controller.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.23
public struct LERandCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.leRand
    public init() {}

    /// Status, Random_Number (8 octets).
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var randomNumber: UInt64

        public init(status: HCIStatus = .success, randomNumber: UInt64) {
            self.status = status
            self.randomNumber = randomNumber
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(reader, context: "\(LERandCommand.opcode) return parameters")
            status = try r.status()
            randomNumber = try r.uint64()
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeUInt64LE(randomNumber)
        }

        public var description: String { "\(status), random \(CommandFormat.hex(randomNumber, digits: 16))" }
    }
}

/// HCI_LE_Read_Supported_States: which LL state combinations the controller supports.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.27
public struct LEReadSupportedStatesCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.leReadSupportedStates
    public init() {}

    /// Status, LE_States (8 octets).
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var leStates: UInt64

        public init(status: HCIStatus = .success, leStates: UInt64) {
            self.status = status
            self.leStates = leStates
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(reader, context: "\(LEReadSupportedStatesCommand.opcode) return parameters")
            status = try r.status()
            leStates = try r.uint64()
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeUInt64LE(leStates)
        }

        public var description: String { "\(status), states \(CommandFormat.hex(leStates, digits: 16))" }
    }
}

/// HCI_LE_Read_Suggested_Default_Data_Length.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.34
public struct LEReadSuggestedDefaultDataLengthCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.leReadSuggestedDefaultDataLength
    public init() {}

    /// Status, Suggested_Max_TX_Octets, Suggested_Max_TX_Time.
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var suggestedMaxTXOctets: UInt16
        public var suggestedMaxTXTime: UInt16

        public init(status: HCIStatus = .success, suggestedMaxTXOctets: UInt16, suggestedMaxTXTime: UInt16) {
            self.status = status
            self.suggestedMaxTXOctets = suggestedMaxTXOctets
            self.suggestedMaxTXTime = suggestedMaxTXTime
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(
                reader, context: "\(LEReadSuggestedDefaultDataLengthCommand.opcode) return parameters")
            status = try r.status()
            suggestedMaxTXOctets = try r.uint16()
            suggestedMaxTXTime = try r.uint16()
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeUInt16LE(suggestedMaxTXOctets)
            writer.writeUInt16LE(suggestedMaxTXTime)
        }

        public var description: String { "\(status), TX \(suggestedMaxTXOctets) octets, \(suggestedMaxTXTime) µs" }
    }
}

/// HCI_LE_Write_Suggested_Default_Data_Length: the data length for new connections.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.35
public struct LEWriteSuggestedDefaultDataLengthCommand: HCICommand {
    public static let opcode = HCIOpcode.leWriteSuggestedDefaultDataLength
    public var suggestedMaxTXOctets: UInt16
    public var suggestedMaxTXTime: UInt16

    public init(suggestedMaxTXOctets: UInt16, suggestedMaxTXTime: UInt16) {
        self.suggestedMaxTXOctets = suggestedMaxTXOctets
        self.suggestedMaxTXTime = suggestedMaxTXTime
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        suggestedMaxTXOctets = try r.uint16()
        suggestedMaxTXTime = try r.uint16()
        try r.end()
        reader = r.reader
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt16LE(suggestedMaxTXOctets)
        writer.writeUInt16LE(suggestedMaxTXTime)
    }

    public var description: String {
        "\(Self.opcode.displayName): TX \(suggestedMaxTXOctets) octets, \(suggestedMaxTXTime) µs"
    }
}

/// HCI_LE_Read_Maximum_Data_Length: the controller's largest LL payloads.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.46
public struct LEReadMaximumDataLengthCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.leReadMaximumDataLength
    public init() {}

    /// Status, Supported_Max_TX_Octets, Supported_Max_TX_Time, Supported_Max_RX_Octets,
    /// Supported_Max_RX_Time.
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var supportedMaxTXOctets: UInt16
        public var supportedMaxTXTime: UInt16
        public var supportedMaxRXOctets: UInt16
        public var supportedMaxRXTime: UInt16

        public init(
            status: HCIStatus = .success, supportedMaxTXOctets: UInt16, supportedMaxTXTime: UInt16,
            supportedMaxRXOctets: UInt16, supportedMaxRXTime: UInt16
        ) {
            self.status = status
            self.supportedMaxTXOctets = supportedMaxTXOctets
            self.supportedMaxTXTime = supportedMaxTXTime
            self.supportedMaxRXOctets = supportedMaxRXOctets
            self.supportedMaxRXTime = supportedMaxRXTime
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(
                reader, context: "\(LEReadMaximumDataLengthCommand.opcode) return parameters")
            status = try r.status()
            supportedMaxTXOctets = try r.uint16()
            supportedMaxTXTime = try r.uint16()
            supportedMaxRXOctets = try r.uint16()
            supportedMaxRXTime = try r.uint16()
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeUInt16LE(supportedMaxTXOctets)
            writer.writeUInt16LE(supportedMaxTXTime)
            writer.writeUInt16LE(supportedMaxRXOctets)
            writer.writeUInt16LE(supportedMaxRXTime)
        }

        public var description: String {
            "\(status), TX \(supportedMaxTXOctets) octets \(supportedMaxTXTime) µs, "
                + "RX \(supportedMaxRXOctets) octets \(supportedMaxRXTime) µs"
        }
    }
}

/// HCI_LE_Set_Default_PHY: preferred PHYs for new connections.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.48
public struct LESetDefaultPHYCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetDefaultPHY
    public var allPHYs: LEAllPHYsPreference
    public var txPHYs: LEPHYMask
    public var rxPHYs: LEPHYMask

    public init(allPHYs: LEAllPHYsPreference = [], txPHYs: LEPHYMask, rxPHYs: LEPHYMask) {
        self.allPHYs = allPHYs
        self.txPHYs = txPHYs
        self.rxPHYs = rxPHYs
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        allPHYs = LEAllPHYsPreference(rawValue: try r.uint8())
        txPHYs = LEPHYMask(rawValue: try r.uint8())
        rxPHYs = LEPHYMask(rawValue: try r.uint8())
        try r.end()
        reader = r.reader
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt8(allPHYs.rawValue)
        writer.writeUInt8(txPHYs.rawValue)
        writer.writeUInt8(rxPHYs.rawValue)
    }

    public var description: String {
        let tx = allPHYs.contains(.noTXPreference) ? "TX any" : "TX \(txPHYs)"
        let rx = allPHYs.contains(.noRXPreference) ? "RX any" : "RX \(rxPHYs)"
        return "\(Self.opcode.displayName): \(tx), \(rx)"
    }
}
