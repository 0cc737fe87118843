import Bluetooth
import Testing

@testable import ATT

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Loads fixture traces and plays the host side of one through an ``ATTConnection`` over a
/// ``ScriptedATTChannel``.
enum TraceReplay {
    /// `<package root>/Fixtures/traces` (no Foundation in this test module: its overloads slow
    /// the type checking of every `#expect`).
    static let directory: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)  // ATTTests/TraceReplaySupport.swift, Tests
        return parts.joined(separator: "/") + "/Fixtures/traces"
    }()

    struct FixtureMissing: Error, CustomStringConvertible {
        var path: String
        var description: String { "cannot read fixture \(path)" }
    }

    static func load(_ name: String) throws -> ATTTrace {
        let path = directory + "/" + name
        guard let file = fopen(path, "rb") else { throw FixtureMissing(path: path) }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return try ATTTrace(parsing: String(decoding: bytes, as: UTF8.self))
    }

    struct Outcome {
        /// Requests issued and answered as the trace says.
        var requests = 0
        /// Requests the trace answers with an Error Response (thrown as `peerError`).
        var peerErrors: [ATTError] = []
        /// Notifications and indications taken from `inbound`, in order.
        var inbound: [ATTPDU] = []
    }

    /// Walks the trace in order as the host's application would: issues each `>` request or
    /// command (the bearer itself produces the `>` responses to peer requests and the
    /// confirmations), checks each request's outcome against the trace's next `<` response,
    /// and takes each `<` notification or indication from `inbound` when the trace reaches it.
    /// Returns once the script is used up.
    static func replayAsClient(
        _ trace: ATTTrace,
        connection: ATTConnection,
        channel: ScriptedATTChannel,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Outcome {
        var outcome = Outcome()
        var inbound = connection.inbound.makeAsyncIterator()
        let entries = trace.entries
        for (index, entry) in entries.enumerated() {
            let opcode = ATTOpcode(entry.bytes[0])
            switch (entry.direction, opcode.kind) {
            case (.hostToPeer, .request?):
                let pdu = try ATTPDU(decoding: entry.bytes)
                guard
                    let answer = entries[(index + 1)...].first(where: {
                        $0.direction == .peerToHost && ATTOpcode($0.bytes[0]).kind == .response
                    })
                else {
                    continue  // the trace ends before the answer
                }
                let expected = try ATTPDU(decoding: answer.bytes)
                let result: Result<ATTPDU, ATTError>
                do throws(ATTError) {
                    if case .exchangeMTURequest(let request) = pdu {
                        _ = try await connection.exchangeMTU(Int(request.clientRxMTU))
                        result = .success(expected)
                    } else {
                        result = .success(try await connection.request(pdu))
                    }
                } catch {
                    result = .failure(error)
                }
                switch (expected, result) {
                case (.errorResponse(let error), .failure(let thrown)):
                    #expect(
                        thrown == .peerError(request: error.requestOpcode, handle: error.handle, code: error.errorCode),
                        "trace line \(answer.line)", sourceLocation: sourceLocation)
                    outcome.peerErrors.append(thrown)
                case (_, .success(let response)):
                    #expect(response == expected, "trace line \(answer.line)", sourceLocation: sourceLocation)
                case (_, .failure(let thrown)):
                    Issue.record("trace line \(entry.line): \(thrown)", sourceLocation: sourceLocation)
                    return outcome
                }
                outcome.requests += 1
            case (.hostToPeer, .command?):
                try await connection.send(try ATTPDU(decoding: entry.bytes))
            case (.peerToHost, .notification?), (.peerToHost, .indication?):
                let pdu = await inbound.next()
                #expect(
                    pdu == (try ATTPDU(decoding: entry.bytes)), "trace line \(entry.line)",
                    sourceLocation: sourceLocation)
                if let pdu { outcome.inbound.append(pdu) }
            default:
                // `<` responses are checked with their request; `<` requests are answered by
                // the bearer or the server handler; `>` responses and confirmations are
                // produced by the bearer, and the script checks them.
                continue
            }
        }
        await channel.waitUntilComplete()
        return outcome
    }
}
