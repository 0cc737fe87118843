import Bluetooth

/// A Bluetooth Core version number as HCI_Version / LMP_Version carry it. Open.
/// - SeeAlso: Assigned Numbers §2.1 (Link Layer / HCI versions)
public struct CoreVersion: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let v4_0 = CoreVersion(rawValue: 0x06)
    public static let v4_2 = CoreVersion(rawValue: 0x08)
    public static let v5_0 = CoreVersion(rawValue: 0x09)
    public static let v5_4 = CoreVersion(rawValue: 0x0D)

    static let names = [
        "1.0b", "1.1", "1.2", "2.0", "2.1", "3.0", "4.0", "4.1", "4.2", "5.0", "5.1", "5.2", "5.3", "5.4", "6.0",
    ]

    /// `"5.4"`, `nil` when unknown.
    public var name: String? { Int(rawValue) < Self.names.count ? Self.names[Int(rawValue)] : nil }

    public var description: String {
        let hex = CommandFormat.hex(rawValue, digits: 2)
        return name.map { "\($0) (\(hex))" } ?? hex
    }
}

/// HCI_Read_Local_Version_Information.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.4.1
public struct ReadLocalVersionInformationCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.readLocalVersionInformation
    public init() {}

    /// Status, HCI_Version, HCI_Subversion, LMP_Version, Company_Identifier, LMP_Subversion.
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var hciVersion: CoreVersion
        public var hciSubversion: UInt16
        public var lmpVersion: CoreVersion
        /// Company_Identifier (Assigned Numbers).
        public var companyID: UInt16
        public var lmpSubversion: UInt16

        public init(
            status: HCIStatus = .success, hciVersion: CoreVersion, hciSubversion: UInt16, lmpVersion: CoreVersion,
            companyID: UInt16, lmpSubversion: UInt16
        ) {
            self.status = status
            self.hciVersion = hciVersion
            self.hciSubversion = hciSubversion
            self.lmpVersion = lmpVersion
            self.companyID = companyID
            self.lmpSubversion = lmpSubversion
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(
                reader, context: "\(ReadLocalVersionInformationCommand.opcode) return parameters")
            status = try r.status()
            hciVersion = CoreVersion(rawValue: try r.uint8())
            hciSubversion = try r.uint16()
            lmpVersion = CoreVersion(rawValue: try r.uint8())
            companyID = try r.uint16()
            lmpSubversion = try r.uint16()
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeUInt8(hciVersion.rawValue)
            writer.writeUInt16LE(hciSubversion)
            writer.writeUInt8(lmpVersion.rawValue)
            writer.writeUInt16LE(companyID)
            writer.writeUInt16LE(lmpSubversion)
        }

        public var description: String {
            "\(status), HCI \(hciVersion) revision \(CommandFormat.hex(hciSubversion, digits: 4)), "
                + "LMP \(lmpVersion) subversion \(CommandFormat.hex(lmpSubversion, digits: 4)), "
                + "company \(CommandFormat.hex(companyID, digits: 4))"
        }
    }
}

/// The 64-octet Supported_Commands bitmap.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §6.27
public struct HCISupportedCommands: Hashable, Sendable, CustomStringConvertible {
    public static let octetCount = 64
    /// Exactly 64 octets.
    public let octets: [UInt8]

    /// `nil` unless `octets` has exactly 64 elements.
    public init?(octets: [UInt8]) {
        guard octets.count == Self.octetCount else { return nil }
        self.octets = octets
    }

    /// Octet `octet` (0–63), bit `bit` (0–7) of the spec's table; `false` outside the bitmap.
    public func supports(octet: Int, bit: Int) -> Bool {
        guard (0..<Self.octetCount).contains(octet), (0..<8).contains(bit) else { return false }
        return octets[octet] >> UInt8(bit) & 1 == 1
    }

    /// How many bits are set.
    public var count: Int { octets.reduce(0) { $0 + $1.nonzeroBitCount } }

    /// Whether the controller claims `opcode`; `nil` when the table below has no position for it
    /// (HCI_Read_Local_Supported_Commands itself has none).
    public func supports(_ opcode: HCIOpcode) -> Bool? {
        guard let position = Self.positions[opcode] else { return nil }
        return supports(octet: position.octet, bit: position.bit)
    }

    /// Octet and bit of the commands this module names (Core 5.4 Vol 4 Part E §6.27).
    public static let positions: [HCIOpcode: (octet: Int, bit: Int)] = [
        .disconnect: (0, 5), .setEventMask: (5, 6), .reset: (5, 7), .writeLocalName: (7, 0),
        .readLocalName: (7, 1), .writeLEHostSupport: (24, 6), .readLocalVersionInformation: (14, 3),
        .readLocalSupportedFeatures: (14, 5), .readLocalExtendedFeatures: (14, 6), .readBufferSize: (14, 7),
        .readBDADDR: (15, 1), .readRSSI: (15, 5),
        .leSetEventMask: (25, 0), .leReadBufferSizeV1: (25, 1), .leReadLocalSupportedFeatures: (25, 2),
        .leSetRandomAddress: (25, 4), .leSetAdvertisingParameters: (25, 5),
        .leReadAdvertisingPhysicalChannelTxPower: (25, 6), .leSetAdvertisingData: (25, 7),
        .leSetScanResponseData: (26, 0), .leSetAdvertisingEnable: (26, 1), .leSetScanParameters: (26, 2),
        .leSetScanEnable: (26, 3), .leCreateConnection: (26, 4), .leCreateConnectionCancel: (26, 5),
        .leReadFilterAcceptListSize: (26, 6), .leClearFilterAcceptList: (26, 7),
        .leAddDeviceToFilterAcceptList: (27, 0), .leRemoveDeviceFromFilterAcceptList: (27, 1),
        .leConnectionUpdate: (27, 2), .leRand: (27, 7), .leEnableEncryption: (28, 0),
        .leLongTermKeyRequestReply: (28, 1), .leLongTermKeyRequestNegativeReply: (28, 2), .leReadSupportedStates: (28, 3),
        .leRemoteConnectionParameterRequestReply: (33, 4), .leRemoteConnectionParameterRequestNegativeReply: (33, 5),
        .leSetDataLength: (33, 6), .leReadSuggestedDefaultDataLength: (33, 7),
        .leWriteSuggestedDefaultDataLength: (34, 0), .leReadMaximumDataLength: (35, 3), .leReadPHY: (35, 4),
        .leSetDefaultPHY: (35, 5), .leSetPHY: (35, 6), .leSetAdvertisingSetRandomAddress: (36, 1),
        .leSetExtendedAdvertisingParametersV1: (36, 2), .leSetExtendedAdvertisingData: (36, 3),
        .leSetExtendedScanResponseData: (36, 4), .leSetExtendedAdvertisingEnable: (36, 5),
        .leReadMaximumAdvertisingDataLength: (36, 6), .leReadNumberOfSupportedAdvertisingSets: (36, 7),
        .leRemoveAdvertisingSet: (37, 0), .leClearAdvertisingSets: (37, 1), .leSetExtendedScanParameters: (37, 5),
        .leSetExtendedScanEnable: (37, 6), .leExtendedCreateConnectionV1: (37, 7), .leReadBufferSizeV2: (41, 5),
        .leSetExtendedAdvertisingParametersV2: (46, 2), .leExtendedCreateConnectionV2: (47, 0),
    ]

    public var description: String { "\(count) commands supported" }
}

/// HCI_Read_Local_Supported_Commands.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.4.2
public struct ReadLocalSupportedCommandsCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.readLocalSupportedCommands
    public init() {}

    /// Status, Supported_Commands (64 octets).
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var supportedCommands: HCISupportedCommands

        public init(status: HCIStatus = .success, supportedCommands: HCISupportedCommands) {
            self.status = status
            self.supportedCommands = supportedCommands
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(
                reader, context: "\(ReadLocalSupportedCommandsCommand.opcode) return parameters")
            status = try r.status()
            // 64 octets read, so the initializer cannot fail.
            supportedCommands = HCISupportedCommands(octets: try r.bytes(HCISupportedCommands.octetCount))!
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeBytes(supportedCommands.octets)
        }

        public var description: String { "\(status), \(supportedCommands)" }
    }
}

/// LMP_Features page 0: the controller's BR/EDR and LE capability bits. Open.
/// - SeeAlso: Core Spec 5.4, Vol 2, Part C, §3.3
public struct LMPFeatures: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static let brEDRNotSupported = 37
    public static let leSupportedController = 38
    public static let simultaneousLEAndBREDRController = 39

    public func contains(bit: Int) -> Bool { bit >= 0 && bit < 64 && rawValue >> UInt64(bit) & 1 == 1 }

    public var description: String {
        var parts = [CommandFormat.hex(rawValue, digits: 16)]
        if contains(bit: Self.leSupportedController) { parts.append("LE Supported (Controller)") }
        if contains(bit: Self.brEDRNotSupported) { parts.append("BR/EDR Not Supported") }
        return parts.joined(separator: " ")
    }
}

/// HCI_Read_Local_Supported_Features.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.4.3
public struct ReadLocalSupportedFeaturesCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.readLocalSupportedFeatures
    public init() {}

    /// Status, LMP_Features (8 octets).
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var lmpFeatures: LMPFeatures

        public init(status: HCIStatus = .success, lmpFeatures: LMPFeatures) {
            self.status = status
            self.lmpFeatures = lmpFeatures
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(
                reader, context: "\(ReadLocalSupportedFeaturesCommand.opcode) return parameters")
            status = try r.status()
            lmpFeatures = LMPFeatures(rawValue: try r.uint64())
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeUInt64LE(lmpFeatures.rawValue)
        }

        public var description: String { "\(status), features \(lmpFeatures)" }
    }
}

/// HCI_Read_Buffer_Size: the controller's ACL and synchronous data buffers.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.4.5
public struct ReadBufferSizeCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.readBufferSize
    public init() {}

    /// Status, ACL_Data_Packet_Length, Synchronous_Data_Packet_Length, Total_Num_ACL_Data_Packets,
    /// Total_Num_Synchronous_Data_Packets.
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var aclDataPacketLength: UInt16
        public var synchronousDataPacketLength: UInt8
        public var totalNumACLDataPackets: UInt16
        public var totalNumSynchronousDataPackets: UInt16

        public init(
            status: HCIStatus = .success, aclDataPacketLength: UInt16, synchronousDataPacketLength: UInt8,
            totalNumACLDataPackets: UInt16, totalNumSynchronousDataPackets: UInt16
        ) {
            self.status = status
            self.aclDataPacketLength = aclDataPacketLength
            self.synchronousDataPacketLength = synchronousDataPacketLength
            self.totalNumACLDataPackets = totalNumACLDataPackets
            self.totalNumSynchronousDataPackets = totalNumSynchronousDataPackets
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(reader, context: "\(ReadBufferSizeCommand.opcode) return parameters")
            status = try r.status()
            aclDataPacketLength = try r.uint16()
            synchronousDataPacketLength = try r.uint8()
            totalNumACLDataPackets = try r.uint16()
            totalNumSynchronousDataPackets = try r.uint16()
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            writer.writeUInt16LE(aclDataPacketLength)
            writer.writeUInt8(synchronousDataPacketLength)
            writer.writeUInt16LE(totalNumACLDataPackets)
            writer.writeUInt16LE(totalNumSynchronousDataPackets)
        }

        public var description: String {
            "\(status), ACL \(aclDataPacketLength) octets x \(totalNumACLDataPackets), "
                + "SCO \(synchronousDataPacketLength) octets x \(totalNumSynchronousDataPackets)"
        }
    }
}

/// HCI_Read_BD_ADDR: the controller's public address.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.4.6
public struct ReadBDADDRCommand: HCICommandWithoutParameters {
    public static let opcode = HCIOpcode.readBDADDR
    public init() {}

    /// Status, BD_ADDR.
    public struct ReturnParameters: HCIReturnParameters {
        public var status: HCIStatus
        public var address: BluetoothAddress

        public init(status: HCIStatus = .success, address: BluetoothAddress) {
            self.status = status
            self.address = address
        }

        public init(parsing reader: inout ByteReader) throws(HCIError) {
            var r = CommandParameterReader(reader, context: "\(ReadBDADDRCommand.opcode) return parameters")
            status = try r.status()
            address = try r.address()
            try r.end()
            reader = r.reader
        }

        public func write(to writer: inout ByteWriter) {
            writer.writeUInt8(status.rawValue)
            address.write(littleEndian: &writer)
        }

        public var description: String { "\(status), address \(address)" }
    }
}
