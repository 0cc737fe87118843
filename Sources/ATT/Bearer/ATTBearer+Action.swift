extension ATTBearer {
    /// What the driver must do, in the order given.
    public enum Action: Equatable, Sendable {
        /// Send this SDU on the channel.
        case send([UInt8])
        /// Start `timer`; call ``ATTBearer/timerFired(_:)`` when it runs out.
        case startTimer(Timer, Duration)
        /// Stop `timer`; a late firing is ignored anyway.
        case cancelTimer(Timer)
        /// Our request got its response (never an Error Response: that is `failTransaction`).
        case deliverResponse(TransactionID, ATTPDU)
        /// Our request or indication failed: `peerError` (Error Response), `timeout`,
        /// `protocolError` (wrong response), `malformed`, `bearerClosed`.
        case failTransaction(TransactionID, ATTError)
        /// The peer confirmed our indication.
        case indicationConfirmed(TransactionID)
        /// A Handle Value Notification or Multiple Handle Value Notification from the peer.
        case deliverNotification(ATTPDU)
        /// A Handle Value Indication from the peer. Once the application has it, call
        /// ``ATTBearer/indicationDelivered()`` to send the confirmation.
        case deliverIndication(ATTPDU)
        /// A request for the server role; answer with ``ATTBearer/respond(_:)``.
        case deliverRequest(ATTPDU)
        /// A command for the server role (Write Command, Signed Write Command); no answer.
        case deliverCommand(ATTPDU)
        /// ATT_MTU changed (after an Exchange MTU).
        case mtuChanged(Int)
        /// Something the peer got wrong that does not fail a transaction of ours (a response
        /// to nothing, a malformed notification, a confirmation without indication). The
        /// bearer goes on.
        case reportError(ATTError)
        /// The bearer is closed for `reason`; close the channel. Sent once.
        case close(reason: String)
    }
}
