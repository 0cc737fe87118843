import ATT
import Bluetooth
import Testing

@testable import GATT

/// Drives a procedure with server answers and records what it sent.
struct ProcedureRun<P: GATTClientProcedure> {
    var sent: [ATTPDU] = []
    /// The last action: `.done`/`.fail`, or the `.send` left unanswered when replies ran out.
    var outcome: GATTProcedureAction<P.Result>

    /// Starts `procedure` and answers each request with the next of `replies`.
    init(_ procedure: P, replies: [ATTPDU]) {
        var procedure = procedure
        var action = procedure.start()
        var replies = replies[...]
        var guardCount = 0
        while case .send(let pdu) = action, let reply = replies.popFirst(), guardCount < 100_000 {
            sent.append(pdu)
            action = procedure.receive(reply)
            guardCount += 1
        }
        if case .send(let pdu) = action { sent.append(pdu) }
        outcome = action
    }

    var result: P.Result? {
        if case .done(let result) = outcome { return result }
        return nil
    }

    var error: GATTError? {
        if case .fail(let error) = outcome { return error }
        return nil
    }

    var sentHex: [String] { sent.map { Hex.encode($0.encoded) } }
}

/// An ATT PDU from hex (test literal); an undecodable literal is recorded as an issue.
func pdu(_ hex: String) -> ATTPDU {
    guard let bytes = Hex.decode(hex.replacingOccurrences(of: " ", with: "")) else {
        Issue.record("bad hex literal \(hex)")
        return .unknown(opcode: ATTOpcode(0), parameters: [])
    }
    do {
        return try ATTPDU(decoding: bytes)
    } catch {
        Issue.record("literal \(hex) does not decode: \(error)")
        return .unknown(opcode: ATTOpcode(0), parameters: [])
    }
}

/// Drives `procedure` along a scripted exchange: each PDU it sends must equal the next
/// client-to-server PDU of `script` (byte for byte); each server-to-client PDU is fed back.
/// Returns the final action, the PDUs left over, and a mismatch description if any.
func play<P: GATTClientProcedure>(
    _ procedure: inout P, script: ArraySlice<SharedVectors.PDU>, preferBlueZView: Bool = false
) -> (outcome: GATTProcedureAction<P.Result>?, rest: ArraySlice<SharedVectors.PDU>, mismatch: String?) {
    var script = script
    var action = procedure.start()
    while case .send(let request) = action {
        guard let expected = script.popFirst() else {
            return (nil, script, "sent \(Hex.encode(request.encoded)) after the script ended")
        }
        guard expected.dir == "c2s", expected.bytes == request.encoded else {
            return (
                nil, script,
                "sent \(Hex.encode(request.encoded)), script has \(expected.dir) \(Hex.encode(expected.bytes))"
            )
        }
        guard let reply = script.popFirst(), reply.dir == "s2c" else {
            return (nil, script, "no server answer to \(Hex.encode(request.encoded))")
        }
        let bytes = preferBlueZView ? (reply.asReadByBlueZ ?? reply.bytes) : reply.bytes
        guard let decoded = try? ATTPDU(decoding: bytes) else {
            return (nil, script, "server PDU \(Hex.encode(bytes)) does not decode")
        }
        action = procedure.receive(decoded)
    }
    return (action, script, nil)
}
