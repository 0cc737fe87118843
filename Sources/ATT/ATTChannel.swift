/// The transport the ATT bearer runs over: one L2CAP channel (fixed CID 4 or an EATT channel)
/// carrying whole SDUs. L2CAP implements it; ATT knows nothing of HCI.
public protocol ATTChannel: Sendable {
    /// The largest SDU the channel can carry in each direction, if the transport limits it
    /// (the kernel's L2CAP MTU); `nil` when only ATT_MTU limits.
    var maximumSDUSize: Int? { get async }
    /// Sends one SDU (one ATT PDU).
    func send(_ sdu: [UInt8]) async throws
    /// The SDUs received, in order; finishes when the channel closes, throws on failure.
    var incoming: AsyncThrowingStream<[UInt8], Error> { get }
    /// Closes the channel; pending sends fail and `incoming` finishes.
    func close() async
}
