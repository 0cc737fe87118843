import Bluetooth
import HCI

/// The LE signaling channel (CID 0x0005) of a host with no credit-based channels: it answers
/// every request the peer may send and never sends requests itself.
///
/// - Connection Parameter Update Request: as Central, accepted (result 0x0000, and the host is
///   asked to apply the parameters with HCI_LE_Connection_Update) when valid and within the
///   ``ConnectionParameterRequestPolicy``, rejected (0x0001) otherwise; as Peripheral, Command Reject (not understood) as §4.20 requires.
/// - LE Credit Based and (enhanced) Credit Based Connection Requests: refused with "SPSM not
///   supported" (0x0002) — no SPSM is registered, EATT included.
/// - Credit Based Reconfigure Request: "Destination CIDs invalid" (0x0003).
/// - Disconnection Request: no channel has a CID the peer may name, so Command Reject (invalid
///   CID in request) with the request's CIDs.
/// - Flow Control Credit Indication: no channel, ignored.
/// - Responses and Command Reject: we sent no request, ignored.
/// - Any other Code, or a request whose Data does not fit its Code: Command Reject (not
///   understood). A C-frame over MTUsig: Command Reject (signaling MTU exceeded).
/// - A C-frame without a whole header, with Identifier 0x00 or a Length that disagrees with
///   the C-frame: dropped unanswered (its Identifier cannot be trusted).
/// - SeeAlso: Core Spec 5.4, Vol 3, Part A, §4 and §4.1–§4.28
public struct LESignalingResponder: Sendable {
    /// The smallest MTUsig on LE-U, and the one this host announces.
    public static let minimumSignalingMTU = 23

    /// What one C-frame led to.
    public struct Outcome: Hashable, Sendable {
        /// The command to send back on CID 0x0005.
        public var response: L2CAPSignalingPacket?
        /// Connection parameters to apply with HCI_LE_Connection_Update (accepted request).
        public var connectionParameterUpdate: ConnectionParameterUpdateRequest?
        /// What was not simply answered: dropped, ignored, refused or rejected input.
        public var report: LEL2CAPReport?

        public init(
            response: L2CAPSignalingPacket? = nil, connectionParameterUpdate: ConnectionParameterUpdateRequest? = nil,
            report: LEL2CAPReport? = nil
        ) {
            self.response = response
            self.connectionParameterUpdate = connectionParameterUpdate
            self.report = report
        }
    }

    /// The local role on the connection.
    public let role: LERole
    /// Largest C-frame payload accepted.
    public let signalingMTU: Int
    /// What a Connection Parameter Update Request may ask for (as Central).
    public let parameterPolicy: ConnectionParameterRequestPolicy

    public init(
        role: LERole, signalingMTU: Int = LESignalingResponder.minimumSignalingMTU,
        parameterPolicy: ConnectionParameterRequestPolicy = .acceptValid
    ) {
        precondition(
            signalingMTU >= Self.minimumSignalingMTU && signalingMTU <= Int(UInt16.max), "MTUsig is 23 to 65535")
        self.role = role
        self.signalingMTU = signalingMTU
        self.parameterPolicy = parameterPolicy
    }

    /// Handles the payload of one C-frame.
    public func receive(_ payload: ArraySlice<UInt8>) -> Outcome {
        if payload.count > signalingMTU, payload.count >= 2 {
            let code = L2CAPSignalingCode(rawValue: payload[payload.startIndex])
            let identifier = payload[payload.startIndex + 1]
            guard !code.isResponse, identifier != 0 else {
                return Outcome(
                    report: .ignoredSignaling(
                        code: code, identifier: identifier, reason: .overSignalingMTU(payload.count)))
            }
            return Outcome(
                response: reply(identifier, .commandReject(.signalingMTUExceeded(actualMTU: UInt16(signalingMTU)))),
                report: .rejectedSignaling(code: code, identifier: identifier, reason: .overSignalingMTU(payload.count))
            )
        }
        let packet: L2CAPSignalingPacket
        do {
            packet = try L2CAPSignalingPacket(bytes: payload)
        } catch {
            return Outcome(report: .malformedSignaling(error))
        }
        let command: LESignalingCommand
        do {
            command = try packet.command()
        } catch {
            if packet.code.isResponse {
                return Outcome(
                    report: .ignoredSignaling(
                        code: packet.code, identifier: packet.identifier, reason: .malformed(error)))
            }
            return notUnderstood(packet, reason: .malformed(error))
        }
        return handle(command, packet: packet)
    }

    private func handle(_ command: LESignalingCommand, packet: L2CAPSignalingPacket) -> Outcome {
        let id = packet.identifier
        switch command {
        case .commandReject, .disconnectionResponse, .connectionParameterUpdateResponse,
            .leCreditBasedConnectionResponse,
            .creditBasedConnectionResponse, .creditBasedReconfigureResponse:
            return Outcome(report: .ignoredSignaling(code: packet.code, identifier: id, reason: .unsolicitedResponse))
        case .flowControlCreditIndication(let indication):
            return Outcome(
                report: .ignoredSignaling(code: packet.code, identifier: id, reason: .unknownChannel(indication.cid)))
        case .disconnectionRequest(let request):
            return Outcome(
                response: reply(
                    id,
                    .commandReject(.invalidCIDInRequest(localCID: request.destinationCID, remoteCID: request.sourceCID))
                ),
                report: .rejectedSignaling(
                    code: packet.code, identifier: id, reason: .unknownChannel(request.destinationCID)))
        case .connectionParameterUpdateRequest(let request):
            guard role == .central else { return notUnderstood(packet, reason: .peripheralRole) }
            switch parameterPolicy.decide(request) {
            case .failure(let refusal):
                return Outcome(
                    response: reply(
                        id, .connectionParameterUpdateResponse(ConnectionParameterUpdateResponse(result: .rejected))),
                    report: .rejectedConnectionParameters(request, reason: refusal.reason))
            case .success(let applied):
                return Outcome(
                    response: reply(
                        id, .connectionParameterUpdateResponse(ConnectionParameterUpdateResponse(result: .accepted))),
                    connectionParameterUpdate: applied)
            }
        case .leCreditBasedConnectionRequest(let request):
            return Outcome(
                response: reply(id, .leCreditBasedConnectionResponse(.refused(.spsmNotSupported))),
                report: .refusedChannel(spsm: request.spsm, count: 1))
        case .creditBasedConnectionRequest(let request):
            return Outcome(
                response: reply(id, .creditBasedConnectionResponse(.refusingAll(request, result: .spsmNotSupported))),
                report: .refusedChannel(spsm: request.spsm, count: request.sourceCIDs.count))
        case .creditBasedReconfigureRequest(let request):
            return Outcome(
                response: reply(
                    id, .creditBasedReconfigureResponse(CreditBasedReconfigureResponse(result: .invalidDestinationCID))),
                report: .rejectedSignaling(
                    code: packet.code, identifier: id, reason: .unknownChannel(request.destinationCIDs[0])))
        }
    }

    private func notUnderstood(_ packet: L2CAPSignalingPacket, reason: LEL2CAPReport.SignalingReason) -> Outcome {
        Outcome(
            response: reply(packet.identifier, .commandReject(.commandNotUnderstood)),
            report: .rejectedSignaling(code: packet.code, identifier: packet.identifier, reason: reason))
    }

    /// Builds a response. Every response built here has a valid Identifier (the request's,
    /// never 0) and a Data field within the limits, so encoding cannot fail.
    private func reply(_ identifier: UInt8, _ command: LESignalingCommand) -> L2CAPSignalingPacket {
        var writer = ByteWriter(capacity: command.encodedLength)
        do { try command.write(to: &writer) } catch {
            preconditionFailure("response \(command) cannot be encoded: \(error)")
        }
        return L2CAPSignalingPacket(code: command.code, identifier: identifier, data: writer.bytes[...])
    }
}
