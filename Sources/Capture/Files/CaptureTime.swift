import HCI
import Bluetooth
import L2CAP
import ATT

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Timestamp arithmetic for capture files, without Foundation: every reader and writer
/// speaks microseconds since the Unix epoch as `Int64`.
public enum CaptureTime {
    /// btsnoop counts microseconds since midnight, 1 January 0 AD; this is the Unix epoch on
    /// that scale (`0x00dcddb30f2f8000`).
    public static let btsnoopEpochOffset: Int64 = 0x00dc_ddb3_0f2f_8000

    /// The wall clock (CLOCK_REALTIME) in Unix microseconds, for recording.
    public static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000 + Int64(time.tv_nsec) / 1000
    }

    /// Unix microseconds from a raw btsnoop timestamp (wrapping: file values are untrusted).
    @inlinable
    public static func unixMicroseconds(btsnoop raw: UInt64) -> Int64 {
        Int64(bitPattern: raw) &- btsnoopEpochOffset
    }

    /// The raw btsnoop timestamp of Unix microseconds.
    @inlinable
    public static func btsnoop(unixMicroseconds: Int64) -> UInt64 {
        UInt64(bitPattern: unixMicroseconds &+ btsnoopEpochOffset)
    }

    /// Whole seconds (rounded towards −∞) and the microseconds past them (0..<1_000_000).
    @inlinable
    public static func split(_ microseconds: Int64) -> (seconds: Int64, microseconds: Int32) {
        var seconds = microseconds / 1_000_000
        var fraction = microseconds % 1_000_000
        if fraction < 0 {
            seconds -= 1
            fraction += 1_000_000
        }
        return (seconds, Int32(fraction))
    }

    /// `YYYY-MM-DD HH:MM:SS.uuuuuu` in UTC (proleptic Gregorian calendar).
    public static func utcString(_ microseconds: Int64) -> String {
        let (seconds, fraction) = split(microseconds)
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (year, month, day) = civil(daysSinceEpoch: days)
        func pad(_ value: Int64, _ width: Int) -> String { String(value).leftPadded(width) }
        let yearText = year < 0 ? "-" + pad(-year, 4) : pad(year, 4)
        return yearText + "-" + pad(month, 2) + "-" + pad(day, 2) + " "
            + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2)
            + "." + pad(Int64(fraction), 6)
    }

    /// `YYYY-MM-DDTHH:MM:SS.uuuuuuZ`: RFC 3339 in UTC.
    public static func rfc3339(_ microseconds: Int64) -> String {
        var text = utcString(microseconds)
        if let space = text.firstIndex(of: " ") { text.replaceSubrange(space...space, with: "T") }
        return text + "Z"
    }

    /// Unix microseconds of a UTC civil time (proleptic Gregorian; no range checks: the caller
    /// validates the fields).
    public static func unixMicroseconds(
        year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64, microsecond: Int64
    ) -> Int64 {
        let days = daysSinceEpoch(year: year, month: month, day: day)
        return ((days * 24 + hour) * 60 + minute) * 60_000_000 + second * 1_000_000 + microsecond
    }

    /// Days from 1970-01-01 to a civil date (Howard Hinnant's days-from-civil, the inverse of
    /// `civil(daysSinceEpoch:)`).
    static func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The local civil time (the TZ environment's zone, as btmon shows it) of whole Unix
    /// seconds: year, month, day, hour, minute, second.
    public static func localTime(seconds: Int64) -> (year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64) {
        var time = time_t(seconds)
        var parts = tm()
        guard localtime_r(&time, &parts) != nil else {
            // Out of the C library's range: UTC from our own arithmetic.
            let days = (seconds >= 0 ? seconds : seconds - 86_399) / 86_400
            let secondOfDay = seconds - days * 86_400
            let (year, month, day) = civil(daysSinceEpoch: days)
            return (year, month, day, secondOfDay / 3600, secondOfDay / 60 % 60, secondOfDay % 60)
        }
        return (
            Int64(parts.tm_year) + 1900, Int64(parts.tm_mon) + 1, Int64(parts.tm_mday), Int64(parts.tm_hour),
            Int64(parts.tm_min), Int64(parts.tm_sec)
        )
    }

    /// Year, month (1–12) and day (1–31) of a day count from 1970-01-01 (Howard Hinnant's
    /// days-to-civil algorithm on 400-year eras).
    static func civil(daysSinceEpoch: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }
}

extension CaptureRecord {
    /// Whole seconds since the Unix epoch and the microseconds past them.
    @inlinable
    public var timestampParts: (seconds: Int64, microseconds: Int32) { CaptureTime.split(timestamp) }

    /// Seconds since the Unix epoch as a floating-point value.
    @inlinable
    public var timestampSeconds: Double { Double(timestamp) / 1_000_000 }

    /// Seconds elapsed since `earlier`'s timestamp (for relative times in dumps).
    @inlinable
    public func seconds(since earlier: CaptureRecord) -> Double {
        Double(timestamp &- earlier.timestamp) / 1_000_000
    }

    /// The timestamp as `YYYY-MM-DD HH:MM:SS.uuuuuu` UTC.
    public var timestampUTC: String { CaptureTime.utcString(timestamp) }
}
