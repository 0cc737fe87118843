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
