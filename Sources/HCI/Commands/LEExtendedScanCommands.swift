import Bluetooth

/// One PHY's entry in LE Set Extended Scan Parameters.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.64
public struct LEExtendedScanPHYParameters: Hashable, Sendable, CustomStringConvertible {
    public var scanType: LEScanType
    /// Scan_Interval in 0.625 ms units.
    public var scanInterval: UInt16
    /// Scan_Window in 0.625 ms units.
    public var scanWindow: UInt16

    public init(scanType: LEScanType, scanInterval: UInt16, scanWindow: UInt16) {
        self.scanType = scanType
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
    }

    public var description: String {
        "\(scanType), interval \(CommandFormat.slots(scanInterval)) (\(CommandFormat.hex(scanInterval, digits: 4))), "
            + "window \(CommandFormat.slots(scanWindow))"
    }
}

/// HCI_LE_Set_Extended_Scan_Parameters: one entry per PHY in Scanning_PHYs (LE 1M, LE Coded),
/// interleaved in bit order.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.64
public struct LESetExtendedScanParametersCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetExtendedScanParameters
    /// The PHYs this command may name (bit 1, LE 2M, is reserved here).
    public static let allowedScanningPHYs: LEPHYMask = [.le1M, .leCoded]

    public var ownAddressType: LEOwnAddressType
    public var scanningFilterPolicy: LEScanningFilterPolicy
    /// Parameters for LE 1M, when scanning there.
    public var le1M: LEExtendedScanPHYParameters?
    /// Parameters for LE Coded, when scanning there.
    public var leCoded: LEExtendedScanPHYParameters?

    public init(
        ownAddressType: LEOwnAddressType = .public, scanningFilterPolicy: LEScanningFilterPolicy = .acceptAll,
        le1M: LEExtendedScanPHYParameters?, leCoded: LEExtendedScanPHYParameters? = nil
    ) {
        self.ownAddressType = ownAddressType
        self.scanningFilterPolicy = scanningFilterPolicy
        self.le1M = le1M
        self.leCoded = leCoded
    }

    /// Scanning_PHYs as derived from the entries present.
    public var scanningPHYs: LEPHYMask {
        var mask: LEPHYMask = []
        if le1M != nil { mask.insert(.le1M) }
        if leCoded != nil { mask.insert(.leCoded) }
        return mask
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        ownAddressType = try r.enumeration(LEOwnAddressType.self, "Own_Address_Type")
        scanningFilterPolicy = try r.enumeration(LEScanningFilterPolicy.self, "Scanning_Filter_Policy")
        let at = r.offset
        let phys = LEPHYMask(rawValue: try r.uint8())
        guard !phys.isEmpty, Self.allowedScanningPHYs.isSuperset(of: phys) else {
            throw r.invalidValue("Scanning_PHYs", Int(phys.rawValue), at: at)
        }
        var le1M: LEExtendedScanPHYParameters?
        var leCoded: LEExtendedScanPHYParameters?
        for phy in phys.phys {
            let entry = LEExtendedScanPHYParameters(
                scanType: try r.enumeration(LEScanType.self, "Scan_Type"), scanInterval: try r.uint16(),
                scanWindow: try r.uint16())
            if phy == .le1M { le1M = entry } else { leCoded = entry }
        }
        self.le1M = le1M
        self.leCoded = leCoded
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        guard !scanningPHYs.isEmpty else {
            throw .malformed(
                context: Self.opcode.description, reason: .invalidValue(field: "Scanning_PHYs", value: 0), offset: 2)
        }
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt8(ownAddressType.rawValue)
        writer.writeUInt8(scanningFilterPolicy.rawValue)
        writer.writeUInt8(scanningPHYs.rawValue)
        for entry in [le1M, leCoded].compactMap({ $0 }) {
            writer.writeUInt8(entry.scanType.rawValue)
            writer.writeUInt16LE(entry.scanInterval)
            writer.writeUInt16LE(entry.scanWindow)
        }
    }

    public var description: String {
        var parts = ["own \(ownAddressType)", "\(scanningFilterPolicy)"]
        if let le1M { parts.append("LE 1M: \(le1M)") }
        if let leCoded { parts.append("LE Coded: \(leCoded)") }
        return "\(Self.opcode.displayName): " + parts.joined(separator: ", ")
    }
}

/// HCI_LE_Set_Extended_Scan_Enable: starts or stops extended scanning.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.65
public struct LESetExtendedScanEnableCommand: HCICommand {
    public static let opcode = HCIOpcode.leSetExtendedScanEnable

    public var enable: Bool
    public var filterDuplicates: LEFilterDuplicates
    /// Duration in 10 ms units; 0 scans until disabled.
    public var duration: UInt16
    /// Period in 1.28 s units; 0 scans continuously.
    public var period: UInt16

    public init(
        enable: Bool, filterDuplicates: LEFilterDuplicates = .disabled, duration: UInt16 = 0, period: UInt16 = 0
    ) {
        self.enable = enable
        self.filterDuplicates = filterDuplicates
        self.duration = duration
        self.period = period
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        enable = try r.bool("Enable")
        filterDuplicates = try r.enumeration(LEFilterDuplicates.self, "Filter_Duplicates")
        duration = try r.uint16()
        period = try r.uint16()
        try r.end()
        reader = r.reader
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt8(enable ? 1 : 0)
        writer.writeUInt8(filterDuplicates.rawValue)
        writer.writeUInt16LE(duration)
        writer.writeUInt16LE(period)
    }

    public var description: String {
        let durationText = duration == 0 ? "until disabled" : CommandFormat.tenMilliseconds(duration)
        let periodText = period == 0 ? "continuous" : CommandFormat.milliseconds(period, microsecondsPerUnit: 1_280_000)
        return "\(Self.opcode.displayName): \(enable ? "enable" : "disable"), \(filterDuplicates), "
            + "duration \(durationText), period \(periodText)"
    }
}

/// One PHY's entry in LE Extended Create Connection: scan timing and connection parameters.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.66
public struct LEInitiatingPHYParameters: Hashable, Sendable, CustomStringConvertible {
    /// Scan_Interval in 0.625 ms units (ignored by the controller for LE 2M).
    public var scanInterval: UInt16
    /// Scan_Window in 0.625 ms units (ignored for LE 2M).
    public var scanWindow: UInt16
    public var connectionParameters: LEConnectionParameters

    public static let encodedLength = 4 + LEConnectionParameters.encodedLength

    public init(scanInterval: UInt16, scanWindow: UInt16, connectionParameters: LEConnectionParameters) {
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.connectionParameters = connectionParameters
    }

    public var description: String {
        "scan \(CommandFormat.slots(scanInterval))/\(CommandFormat.slots(scanWindow)), \(connectionParameters)"
    }
}

/// HCI_LE_Extended_Create_Connection [v1]: initiating on the PHYs in Initiating_PHYs (LE 1M, LE 2M,
/// LE Coded), one entry each, interleaved in bit order. Answered by HCI_Command_Status.
/// (v2, opcode 0x2085, adds Advertising_Handle and Subevent for PAwR and is not modelled.)
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.8.66
public struct LEExtendedCreateConnectionV1Command: HCICommand {
    public static let opcode = HCIOpcode.leExtendedCreateConnectionV1
    public static var completion: HCICommandCompletion { .commandStatus }

    public var initiatorFilterPolicy: LEInitiatorFilterPolicy
    public var ownAddressType: LEOwnAddressType
    public var peerAddressType: LEPeerAddressType
    public var peerAddress: BluetoothAddress
    public var le1M: LEInitiatingPHYParameters?
    public var le2M: LEInitiatingPHYParameters?
    public var leCoded: LEInitiatingPHYParameters?

    public init(
        initiatorFilterPolicy: LEInitiatorFilterPolicy = .peerAddress, ownAddressType: LEOwnAddressType = .public,
        peerAddressType: LEPeerAddressType, peerAddress: BluetoothAddress, le1M: LEInitiatingPHYParameters?,
        le2M: LEInitiatingPHYParameters? = nil, leCoded: LEInitiatingPHYParameters? = nil
    ) {
        self.initiatorFilterPolicy = initiatorFilterPolicy
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.le1M = le1M
        self.le2M = le2M
        self.leCoded = leCoded
    }

    /// Initiating_PHYs as derived from the entries present.
    public var initiatingPHYs: LEPHYMask {
        var mask: LEPHYMask = []
        if le1M != nil { mask.insert(.le1M) }
        if le2M != nil { mask.insert(.le2M) }
        if leCoded != nil { mask.insert(.leCoded) }
        return mask
    }

    public init(parsingParameters reader: inout ByteReader) throws(HCIError) {
        var r = CommandParameterReader(reader, command: Self.opcode)
        initiatorFilterPolicy = try r.enumeration(LEInitiatorFilterPolicy.self, "Initiator_Filter_Policy")
        ownAddressType = try r.enumeration(LEOwnAddressType.self, "Own_Address_Type")
        peerAddressType = try r.enumeration(LEPeerAddressType.self, "Peer_Address_Type")
        peerAddress = try r.address()
        let at = r.offset
        let phys = LEPHYMask(rawValue: try r.uint8())
        guard !phys.isEmpty, phys.rawValue & ~0x07 == 0 else {
            throw r.invalidValue("Initiating_PHYs", Int(phys.rawValue), at: at)
        }
        var entries: [LEPHYType: LEInitiatingPHYParameters] = [:]
        for phy in phys.phys {
            entries[phy] = LEInitiatingPHYParameters(
                scanInterval: try r.uint16(), scanWindow: try r.uint16(),
                connectionParameters: try LEConnectionParameters(parsing: &r))
        }
        le1M = entries[.le1M]
        le2M = entries[.le2M]
        leCoded = entries[.leCoded]
        try r.end()
        reader = r.reader
    }

    public func validate() throws(HCIError) {
        guard !initiatingPHYs.isEmpty else {
            throw .malformed(
                context: Self.opcode.description, reason: .invalidValue(field: "Initiating_PHYs", value: 0), offset: 9)
        }
    }

    public func writeParameters(to writer: inout ByteWriter) {
        writer.writeUInt8(initiatorFilterPolicy.rawValue)
        writer.writeUInt8(ownAddressType.rawValue)
        writer.writeUInt8(peerAddressType.rawValue)
        peerAddress.write(littleEndian: &writer)
        writer.writeUInt8(initiatingPHYs.rawValue)
        for entry in [le1M, le2M, leCoded].compactMap({ $0 }) {
            writer.writeUInt16LE(entry.scanInterval)
            writer.writeUInt16LE(entry.scanWindow)
            entry.connectionParameters.write(to: &writer)
        }
    }

    public var description: String {
        let target =
            initiatorFilterPolicy == .peerAddress ? "peer \(peerAddress) (\(peerAddressType))" : "filter accept list"
        var parts = [target, "own \(ownAddressType)"]
        if let le1M { parts.append("LE 1M: \(le1M)") }
        if let le2M { parts.append("LE 2M: \(le2M)") }
        if let leCoded { parts.append("LE Coded: \(leCoded)") }
        return "\(Self.opcode.displayName): " + parts.joined(separator: ", ")
    }
}
