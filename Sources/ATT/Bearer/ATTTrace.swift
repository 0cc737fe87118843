import Bluetooth

/// A readable ATT conversation: the fixture format of STYLE.md 15.
///
/// ```
/// # Exchange MTU: client Rx MTU 517
/// > 02 05 02
/// < 03 f7 00          # server Rx MTU 247
/// ```
///
/// - `> hex`: host → peer, an SDU our side must send;
/// - `< hex`: peer → host, an SDU the scripted peer sends back;
/// - `#` starts a comment (a whole line, or the rest of a line after the hex);
/// - blank lines are ignored. Hex digits may be separated by spaces or colons.
public struct ATTTrace: Hashable, Sendable {
    public enum Direction: Hashable, Sendable {
        /// `>`: sent by our side.
        case hostToPeer
        /// `<`: sent by the peer.
        case peerToHost
    }

    /// One PDU line of a trace.
    public struct Entry: Hashable, Sendable {
        /// 1-based line number in the trace text (or record number of a capture).
        public var line: Int
        public var direction: Direction
        public var bytes: [UInt8]

        public init(line: Int, direction: Direction, bytes: [UInt8]) {
            self.line = line
            self.direction = direction
            self.bytes = bytes
        }
    }

    /// A line of the trace text that is neither a PDU, a comment nor blank.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        public var line: Int
        public var reason: String

        public init(line: Int, reason: String) {
            self.line = line
            self.reason = reason
        }

        public var description: String { "trace line \(line): \(reason)" }
    }

    public var entries: [Entry]

    public init(entries: [Entry]) {
        self.entries = entries
    }

    /// Parses trace text; every malformed line throws naming its number.
    public init(parsing text: String) throws(ParseError) {
        var entries: [Entry] = []
        var lineNumber = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            var line = Substring(rawLine)
            if let hash = line.firstIndex(of: "#") {
                line = line[..<hash]
            }
            line = line.trimmingWhitespace()
            if line.isEmpty { continue }
            let direction: Direction
            switch line.first {
            case ">": direction = .hostToPeer
            case "<": direction = .peerToHost
            default:
                throw ParseError(line: lineNumber, reason: "expected '>', '<' or '#', found \"\(line)\"")
            }
            let hexText = line.dropFirst().trimmingWhitespace()
            guard !hexText.isEmpty else {
                throw ParseError(line: lineNumber, reason: "no PDU bytes after '\(line.first!)'")
            }
            guard let bytes = Hex.decode(String(hexText)) else {
                throw ParseError(line: lineNumber, reason: "not hex: \"\(hexText)\"")
            }
            entries.append(Entry(line: lineNumber, direction: direction, bytes: bytes))
        }
        self.entries = entries
    }

    /// The trace as text (`> hex` / `< hex` lines), parseable by ``init(parsing:)``.
    public var text: String {
        var out = ""
        for entry in entries {
            out += entry.direction == .hostToPeer ? "> " : "< "
            out += Hex.encode(entry.bytes)
            out += "\n"
        }
        return out
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> Substring {
        var result = self
        while let first = result.first, first == " " || first == "\t" || first == "\r" {
            result = result.dropFirst()
        }
        while let last = result.last, last == " " || last == "\t" || last == "\r" {
            result = result.dropLast()
        }
        return result
    }
}
