/// The Security Manager's fixed channel (CID 0x0006) as L2CAP sees it: L2CAP carries the
/// frames, the layer above answers them. The `Security` module provides the host's responder
/// (and, later, pairing); without one, SMP frames are dropped and reported like any channel L2CAP
/// does not serve.
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §2.1; Vol 3, Part H, §3
public protocol LESecurityManagerChannel: Sendable {
    /// One SMP PDU from the peer of one connection: what to send back and what to report.
    func answer(_ pdu: ArraySlice<UInt8>) -> LESecurityManagerChannelOutcome
}

/// What one SMP PDU led to.
public struct LESecurityManagerChannelOutcome: Hashable, Sendable {
    /// An SMP PDU to send to the peer on CID 0x0006.
    public var answer: [UInt8]?
    /// A line for the connection's report (refused, ignored, malformed).
    public var report: String?

    public init(answer: [UInt8]? = nil, report: String? = nil) {
        self.answer = answer
        self.report = report
    }
}
