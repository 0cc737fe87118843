#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import GATT

/// Plausible, slowly varying SensorTag readings in TI's raw formats: the inverse of the
/// conversions in ``SensorTag/decode(_:_:accelerometerRange:)``. Deterministic: sample `n` of a
/// sensor is always the same, so tests can predict it.
public enum SensorTagReadings {
    /// The physical values of sample `n`, in the order of the sensor's raw fields (a room at
    /// about 22 °C, a tag lying still, face up): IR object, ambient °C; humidity °C, %RH;
    /// barometer °C, hPa; optical lux; movement gyro x y z °/s, accel x y z G, mag x y z µT;
    /// keys (none pressed); battery %.
    public static func physical(_ sensor: SensorTag.Sensor, sample n: Int) -> [Double] {
        let t = Double(n)
        func wave(_ period: Double, _ amplitude: Double, phase: Double = 0) -> Double {
            amplitude * sin(2 * Double.pi * (t / period + phase))
        }
        switch sensor {
        case .ir: return [24.5 + wave(60, 1.5), 22.0 + wave(120, 0.5)]
        case .humidity: return [22.3 + wave(120, 0.4), 45 + wave(90, 3)]
        case .barometer: return [22.6 + wave(120, 0.3), 1013.25 + wave(200, 1.2)]
        case .optical: return [320 + wave(50, 40)]
        case .movement:
            var values: [Double] = [wave(20, 0.8), wave(25, 0.6, phase: 0.3), wave(30, 0.4, phase: 0.6)]
            values += [wave(40, 0.02), wave(45, 0.02, phase: 0.25), 1.0 + wave(50, 0.01)]
            values += [22 + wave(80, 2), -5 + wave(80, 2, phase: 0.25), -40 + wave(80, 2, phase: 0.5)]
            return values
        case .keys: return [0]
        case .battery: return [Double(max(0, 100 - n / 600))]
        }
    }

    /// The raw value of sample `n`, as the data characteristic carries it.
    public static func raw(
        _ sensor: SensorTag.Sensor, sample n: Int, accelerometerRange: SensorTag.AccelerometerRange = .g8
    ) -> [UInt8] {
        encode(sensor, physical(sensor, sample: n), accelerometerRange: accelerometerRange)
    }

    /// TI's raw encoding of physical values (in the order of ``physical(_:sample:)``).
    public static func encode(
        _ sensor: SensorTag.Sensor, _ values: [Double], accelerometerRange: SensorTag.AccelerometerRange = .g8
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        func u16(_ value: Double) {
            let v = UInt16(clamping: Int(value.rounded()))
            bytes += [UInt8(v & 0xFF), UInt8(v >> 8)]
        }
        func s16(_ value: Double) {
            let v = UInt16(bitPattern: Int16(clamping: Int(value.rounded())))
            bytes += [UInt8(v & 0xFF), UInt8(v >> 8)]
        }
        func u24(_ value: Double) {
            let v = UInt32(clamping: Int(value.rounded()))
            bytes += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF)]
        }
        func value(_ i: Int) -> Double { i < values.count ? values[i] : 0 }
        switch sensor {
        case .ir:
            // °C = (raw >> 2) × 0.03125: 14 significant bits, the two low bits zero.
            u16(Double(Int((value(0) / 0.03125).rounded()) << 2))
            u16(Double(Int((value(1) / 0.03125).rounded()) << 2))
        case .humidity:
            u16((value(0) + 40) / 165 * 65536)
            let raw = Int((value(1) / 100 * 65536).rounded()) & ~0x3
            u16(Double(min(max(raw, 0), 0xFFFC)))
        case .barometer:
            u24(value(0) * 100)
            u24(value(1) * 100)
        case .optical:
            // lux = 0.01 × 2^e × m with a 12-bit mantissa: the smallest exponent that fits.
            let lux = max(0, value(0))
            var exponent = 0
            var mantissa = (lux / 0.01).rounded()
            while mantissa > 0x0FFF, exponent < 15 {
                exponent += 1
                mantissa = (lux / (0.01 * Double(1 << exponent))).rounded()
            }
            u16(Double(exponent << 12 | Int(min(mantissa, 0x0FFF))))
        case .movement:
            for i in 0..<3 { s16(value(i) * 65536 / 500) }
            let scale = 32768 / accelerometerRange.g
            for i in 3..<6 { s16(value(i) * scale) }
            for i in 6..<9 { s16(value(i)) }
        case .keys, .battery:
            bytes = [UInt8(clamping: Int(value(0)))]
        }
        return bytes
    }
}
