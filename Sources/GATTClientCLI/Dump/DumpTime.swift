import Capture
import HCI

/// A `--from` / `--to` bound.
public enum DumpTimeBound: Equatable, Sendable, CustomStringConvertible {
    /// Seconds after the first record (`--from 2.5`), in microseconds.
    case relative(microseconds: Int64)
    /// An RFC 3339 time (`--from 2026-12-03T06:20:00Z`), in Unix microseconds.
    case absolute(unixMicroseconds: Int64)

    /// The bound in Unix microseconds, given the first record's time.
    func unixMicroseconds(origin: Int64) -> Int64 {
        switch self {
        case .relative(let microseconds): return origin &+ microseconds
        case .absolute(let time): return time
        }
    }

    public var description: String {
        switch self {
        case .relative(let microseconds):
            let (seconds, fraction) = CaptureTime.split(microseconds)
            return "\(seconds)." + String(fraction).leftPadded(6)
        case .absolute(let time):
            return CaptureTime.rfc3339(time)
        }
    }
}

/// How the text dump shows each record's time.
public enum DumpTimeFormat: Equatable, Sendable {
    /// Seconds since the first record (the default).
    case relative
    /// `-t`: the local time of day, `HH:MM:SS.uuuuuu`.
    case timeOfDay
    /// `-T`: the local date and time, `YYYY-MM-DD HH:MM:SS.uuuuuu`.
    case dateAndTime
}

/// `--from` / `--to`: seconds after the first record (`2.5`), or an RFC 3339 time
/// (`2026-12-03T06:20:00Z`, `2026-12-03 07:20:00.5+01:00`).
func parseTimeBound(_ text: String, what: String) throws(UsageError) -> DumpTimeBound {
    if Double(text) != nil {
        let seconds = try parseSeconds(
            text, what, allowZero: true, expected: "seconds after the first record (0 or more, or an RFC 3339 time)")
        return .relative(microseconds: Int64((seconds * 1_000_000).rounded()))
    }
    guard let time = parseRFC3339(text) else {
        throw UsageError(
            "\(what) takes seconds after the first record or an RFC 3339 time like 2026-12-03T06:20:00Z, not '\(text)'")
    }
    return .absolute(unixMicroseconds: time)
}

/// Unix microseconds of an RFC 3339 date-time (`T` or a space between date and time; a
/// fraction of up to 6 digits, more are refused rather than rounded; `Z` or `±HH:MM`).
/// - SeeAlso: RFC 3339 §5.6
func parseRFC3339(_ text: String) -> Int64? {
    let octets = Array(text.utf8)
    var index = 0
    func number(_ digits: Int) -> Int64? {
        guard index + digits <= octets.count else { return nil }
        var value: Int64 = 0
        for octet in octets[index..<(index + digits)] {
            guard (0x30...0x39).contains(octet) else { return nil }
            value = value * 10 + Int64(octet - 0x30)
        }
        index += digits
        return value
    }
    func expect(_ characters: Set<UInt8>) -> Bool {
        guard index < octets.count, characters.contains(octets[index]) else { return false }
        index += 1
        return true
    }
    guard let year = number(4), expect([0x2D]), let month = number(2), expect([0x2D]), let day = number(2),
        expect([0x54, 0x74, 0x20]), let hour = number(2), expect([0x3A]), let minute = number(2), expect([0x3A]),
        let second = number(2)
    else { return nil }
    var microsecond: Int64 = 0
    if index < octets.count, octets[index] == 0x2E {
        index += 1
        var digits = 0
        while index < octets.count, (0x30...0x39).contains(octets[index]) {
            guard digits < 6 else { return nil }
            microsecond = microsecond * 10 + Int64(octets[index] - 0x30)
            digits += 1
            index += 1
        }
        guard digits > 0 else { return nil }
        for _ in digits..<6 { microsecond *= 10 }
    }
    var offsetMinutes: Int64 = 0
    if expect([0x5A, 0x7A]) {
        offsetMinutes = 0
    } else if index < octets.count, octets[index] == 0x2B || octets[index] == 0x2D {
        let negative = octets[index] == 0x2D
        index += 1
        guard let hours = number(2), expect([0x3A]), let minutes = number(2), hours <= 23, minutes <= 59 else { return nil }
        offsetMinutes = (hours * 60 + minutes) * (negative ? -1 : 1)
    } else {
        return nil
    }
    guard index == octets.count else { return nil }
    let daysInMonth: [Int64] = [31, year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    guard (1...12).contains(month), day >= 1, day <= daysInMonth[Int(month - 1)], hour <= 23, minute <= 59, second <= 60 else {
        return nil
    }
    // A leap second reads as the last microsecond before the next minute's start.
    let utc = CaptureTime.unixMicroseconds(
        year: year, month: month, day: day, hour: hour, minute: minute, second: min(second, 59),
        microsecond: second == 60 ? 999_999 : microsecond)
    return utc - offsetMinutes * 60_000_000
}

/// Refuses `dump` options that cannot be honoured together.
func checkDumpCombinations(_ dump: DumpOptions, json: Bool) throws(UsageError) {
    if dump.follow && dump.summary {
        throw UsageError("--summary prints its counts at the end of the capture, and --follow has no end: drop one")
    }
    if dump.follow && dump.readsStandardInput {
        throw UsageError("--follow follows a file; standard input (-) is already read as it arrives, until its writer closes it")
    }
    if let from = dump.from, let to = dump.to, case .relative(let low) = from, case .relative(let high) = to, low > high {
        throw UsageError("--from \(from) is after --to \(to)")
    }
    if let from = dump.from, let to = dump.to, case .absolute(let low) = from, case .absolute(let high) = to, low > high {
        throw UsageError("--from \(from) is after --to \(to)")
    }
    if dump.writePath != nil {
        if dump.summary { throw UsageError("-w writes the matching records as btsnoop; --summary prints counts: drop one") }
        if json { throw UsageError("-w writes the matching records as btsnoop; --json prints them: drop one") }
        if dump.time != .relative { throw UsageError("-t and -T set how the text dump shows time; -w writes no text") }
        if dump.services != nil { throw UsageError("--services names handles in the printed dump; -w writes no text") }
        if let path = dump.writePath, path.lowercased().hasSuffix(".pcap") {
            let stem = path.prefix(upTo: path.lastIndex(of: ".") ?? path.endIndex)
            throw UsageError("-w writes btsnoop, or pcapng for a name ending .pcapng, not pcap: name it \(stem).pcapng or \(stem).btsnoop")
        }
    }
    if dump.time != .relative, json || dump.summary {
        throw UsageError("-t and -T set how the text dump shows time; \(json ? "--json has its own time fields" : "--summary prints no times")")
    }
}

/// The text dump's time column for `-t` / `-T`: local time, the civil part built once per
/// second.
struct LocalTimeColumn {
    var withDate: Bool
    private var second: Int64?
    private var civil = ""

    init(withDate: Bool) { self.withDate = withDate }

    mutating func text(_ microseconds: Int64) -> String {
        let (seconds, fraction) = CaptureTime.split(microseconds)
        if second != seconds {
            second = seconds
            let t = CaptureTime.localTime(seconds: seconds)
            func pad(_ value: Int64, _ width: Int) -> String { String(value).leftPadded(width) }
            var text = pad(t.hour, 2) + ":" + pad(t.minute, 2) + ":" + pad(t.second, 2)
            if withDate { text = pad(t.year, 4) + "-" + pad(t.month, 2) + "-" + pad(t.day, 2) + " " + text }
            civil = text
        }
        return civil + "." + String(fraction).leftPadded(6)
    }
}
