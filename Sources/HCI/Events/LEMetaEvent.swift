import Bluetooth

/// HCI_LE_Meta: every LE event, distinguished by Subevent_Code. Unknown subevents decode as raw
/// bytes; a known subevent with malformed parameters throws.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.7.65
public enum LEMetaEvent: Hashable, Sendable, CustomStringConvertible {
    case connectionComplete(LEConnectionCompleteEvent)
    case advertisingReport(LEAdvertisingReportEvent)
    case connectionUpdateComplete(LEConnectionUpdateCompleteEvent)
    case readRemoteFeaturesComplete(LEReadRemoteFeaturesCompleteEvent)
    case remoteConnectionParameterRequest(LERemoteConnectionParameterRequestEvent)
    case dataLengthChange(LEDataLengthChangeEvent)
    /// Enhanced Connection Complete v1 (0x0A) or v2 (0x29, `version2` set).
    case enhancedConnectionComplete(LEEnhancedConnectionCompleteEvent)
    case directedAdvertisingReport(LEDirectedAdvertisingReportEvent)
    case phyUpdateComplete(LEPHYUpdateCompleteEvent)
    case extendedAdvertisingReport(LEExtendedAdvertisingReportEvent)
    case channelSelectionAlgorithm(LEChannelSelectionAlgorithmEvent)
    /// A subevent this module does not decode: its code and parameters after the code.
    case unknown(subevent: LESubeventCode, parameters: [UInt8])

    /// Parses the LE Meta event parameters: Subevent_Code, then the subevent's parameters (which
    /// must use every remaining octet).
    public init(parsing reader: inout ByteReader) throws(HCIError) {
        let code = LESubeventCode(rawValue: try reader.hciUInt8("HCI_LE_Meta"))
        switch code.rawValue {
        case 0x01: self = .connectionComplete(try LEConnectionCompleteEvent(parsing: &reader))
        case 0x02: self = .advertisingReport(try LEAdvertisingReportEvent(parsing: &reader))
        case 0x03: self = .connectionUpdateComplete(try LEConnectionUpdateCompleteEvent(parsing: &reader))
        case 0x04: self = .readRemoteFeaturesComplete(try LEReadRemoteFeaturesCompleteEvent(parsing: &reader))
        case 0x06: self = .remoteConnectionParameterRequest(try LERemoteConnectionParameterRequestEvent(parsing: &reader))
        case 0x07: self = .dataLengthChange(try LEDataLengthChangeEvent(parsing: &reader))
        case 0x0A: self = .enhancedConnectionComplete(try LEEnhancedConnectionCompleteEvent(parsing: &reader, version2: false))
        case 0x0B: self = .directedAdvertisingReport(try LEDirectedAdvertisingReportEvent(parsing: &reader))
        case 0x0C: self = .phyUpdateComplete(try LEPHYUpdateCompleteEvent(parsing: &reader))
        case 0x0D: self = .extendedAdvertisingReport(try LEExtendedAdvertisingReportEvent(parsing: &reader))
        case 0x14: self = .channelSelectionAlgorithm(try LEChannelSelectionAlgorithmEvent(parsing: &reader))
        case 0x29: self = .enhancedConnectionComplete(try LEEnhancedConnectionCompleteEvent(parsing: &reader, version2: true))
        default: self = .unknown(subevent: code, parameters: Array(reader.readRemaining()))
        }
    }

    public var subeventCode: LESubeventCode {
        switch self {
        case .connectionComplete: return .connectionComplete
        case .advertisingReport: return .advertisingReport
        case .connectionUpdateComplete: return .connectionUpdateComplete
        case .readRemoteFeaturesComplete: return .readRemoteFeaturesComplete
        case .remoteConnectionParameterRequest: return .remoteConnectionParameterRequest
        case .dataLengthChange: return .dataLengthChange
        case .enhancedConnectionComplete(let event): return event.subeventCode
        case .directedAdvertisingReport: return .directedAdvertisingReport
        case .phyUpdateComplete: return .phyUpdateComplete
        case .extendedAdvertisingReport: return .extendedAdvertisingReport
        case .channelSelectionAlgorithm: return .channelSelectionAlgorithm
        case .unknown(let code, _): return code
        }
    }

    /// Writes Subevent_Code and the parameters. Throws when a report list cannot be encoded.
    public func write(to writer: inout ByteWriter) throws(HCIError) {
        writer.writeUInt8(subeventCode.rawValue)
        switch self {
        case .connectionComplete(let event): event.write(to: &writer)
        case .advertisingReport(let event): try event.write(to: &writer)
        case .connectionUpdateComplete(let event): event.write(to: &writer)
        case .readRemoteFeaturesComplete(let event): event.write(to: &writer)
        case .remoteConnectionParameterRequest(let event): event.write(to: &writer)
        case .dataLengthChange(let event): event.write(to: &writer)
        case .enhancedConnectionComplete(let event): event.write(to: &writer)
        case .directedAdvertisingReport(let event): try event.write(to: &writer)
        case .phyUpdateComplete(let event): event.write(to: &writer)
        case .extendedAdvertisingReport(let event): try event.write(to: &writer)
        case .channelSelectionAlgorithm(let event): event.write(to: &writer)
        case .unknown(_, let parameters): writer.writeBytes(parameters)
        }
    }

    public var description: String {
        switch self {
        case .connectionComplete(let event): return event.description
        case .advertisingReport(let event): return event.description
        case .connectionUpdateComplete(let event): return event.description
        case .readRemoteFeaturesComplete(let event): return event.description
        case .remoteConnectionParameterRequest(let event): return event.description
        case .dataLengthChange(let event): return event.description
        case .enhancedConnectionComplete(let event): return event.description
        case .directedAdvertisingReport(let event): return event.description
        case .phyUpdateComplete(let event): return event.description
        case .extendedAdvertisingReport(let event): return event.description
        case .channelSelectionAlgorithm(let event): return event.description
        case .unknown(let code, let parameters): return "\(code): \(Hex.encode(parameters))"
        }
    }
}
