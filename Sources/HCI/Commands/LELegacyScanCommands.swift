import Bluetooth

/// HCI_LE_Set_Scan_Parameters: legacy scanning type, timing, address and filter.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.10
public struct LESetScanParametersCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetScanParameters

    public var leScanType: LEScanType
    /// LE_Scan_Interval in 0.625 ms units (0x0004–0x4000).
    public var leScanInterval: UInt16
    /// LE_Scan_Window in 0.625 ms units, not larger than the interval.
    public var leScanWindow: UInt16
    public var ownAddressType: LEOwnAddressType
    public var scanningFilterPolicy: LEScanningFilterPolicy

    public init(
        leScanType: LEScanType, leScanInterval: UInt16, leScanWindow: UInt16,
        ownAddressType: LEOwnAddressType = .public, scanningFilterPolicy: LEScanningFilterPolicy = .acceptAll
    ) {
        self.leScanType = leScanType
        self.leScanInterval = leScanInterval
        self.leScanWindow = leScanWindow
        self.ownAddressType = ownAddressType
        self.scanningFilterPolicy = scanningFilterPolicy
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        leScanType = try r.enumeration(LEScanType.self, "LE_Scan_Type")
        leScanInterval = try r.uint16()
        leScanWindow = try r.uint16()
        ownAddressType = try r.enumeration(LEOwnAddressType.self, "Own_Address_Type")
        scanningFilterPolicy = try r.enumeration(LEScanningFilterPolicy.self, "Scanning_Filter_Policy")
        try r.end()
        reader = r.reader
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt8(leScanType.rawValue)
        writer.writeUInt16LE(leScanInterval)
        writer.writeUInt16LE(leScanWindow)
        writer.writeUInt8(ownAddressType.rawValue)
        writer.writeUInt8(scanningFilterPolicy.rawValue)
    }

    /// `LE Set Scan Parameters: active, interval 10.000 ms (0x0010), window 10.000 ms, own public, accept all`
    public var description: String {
        "\(Self.opcode.displayName): \(leScanType), interval \(CommandFormat.slots(leScanInterval)) "
            + "(\(CommandFormat.hex(leScanInterval, digits: 4))), window \(CommandFormat.slots(leScanWindow)), "
            + "own \(ownAddressType), \(scanningFilterPolicy)"
    }
}

/// HCI_LE_Set_Scan_Enable: starts or stops legacy scanning.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.11
public struct LESetScanEnableCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetScanEnable

    /// LE_Scan_Enable.
    public var leScanEnable: Bool
    /// Filter_Duplicates.
    public var filterDuplicates: Bool

    public init(leScanEnable: Bool, filterDuplicates: Bool = false) {
        self.leScanEnable = leScanEnable
        self.filterDuplicates = filterDuplicates
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        leScanEnable = try r.bool("LE_Scan_Enable")
        filterDuplicates = try r.bool("Filter_Duplicates")
        try r.end()
        reader = r.reader
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt8(leScanEnable ? 1 : 0)
        writer.writeUInt8(filterDuplicates ? 1 : 0)
    }

    public var description: String {
        "\(Self.opcode.displayName): \(leScanEnable ? "enable" : "disable"), "
            + (filterDuplicates ? "duplicates filtered" : "duplicates reported")
    }
}
