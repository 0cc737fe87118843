import Bluetooth
import Testing
@testable import GATT

@Suite struct SensorTagProfileTests {
    @Test func uuidsAreInTIBase() {
        #expect(SensorTag.uuid(0xAA01).description == "F000AA01-0451-4000-B000-000000000000")
        #expect(SensorTag.shortID(SensorTag.uuid(0xAA82)) == 0xAA82)
        #expect(SensorTag.shortID(.bit16(0x2A19)) == nil)
        #expect(SensorTag.Sensor.barometer.period == SensorTag.uuid(0xAA44))
        #expect(SensorTag.sensor(data: SensorTag.uuid(0xAA71)) == .optical)
        #expect(SensorTag.Sensor.movement.enableValue(accelerometerRange: .g4) == [0x7F, 0x01])
    }

    @Test(arguments: [
        (SensorTag.Sensor.ir, [0x68, 0x0B, 0x40, 0x0C] as [UInt8], "object 22.81 °C, ambient 24.5 °C"),
        (.humidity, [0x66, 0x66, 0x00, 0x80], "26.0 °C, 50.0 %RH"),
        (.barometer, [0x28, 0x0A, 0x00, 0x0C, 0x8B, 0x01], "26.0 °C, 1011.32 hPa"),
        (.optical, [0x34, 0x2A], "104.48 lux"),
        (.keys, [0x05], "user + reed"),
        (.keys, [0x00], "no key"),
        (.battery, [0x5C], "92 %"),
    ])
    func conversions(sensor: SensorTag.Sensor, raw: [UInt8], text: String) throws {
        let reading = try #require(SensorTag.decode(sensor, raw))
        #expect(reading.description == text)
    }

    @Test func movementUsesTheConfiguredRange() throws {
        // gyro x = 1311 (≈ 10 °/s); accel z = 4096: 1 G at ±8 G, 0.25 G at ±2 G; mag y = -30 µT.
        var raw = [UInt8](repeating: 0, count: 18)
        raw[0] = 0x1F; raw[1] = 0x05
        raw[10] = 0x00; raw[11] = 0x10
        raw[14] = 0xE2; raw[15] = 0xFF
        guard case .movement(let gyro, let accel, let mag)? = SensorTag.decode(.movement, raw, accelerometerRange: .g8) else {
            Issue.record("no movement reading")
            return
        }
        #expect(abs(gyro.x - 10.002) < 0.001)
        #expect(accel.z == 1.0)
        #expect(mag.y == -30)
        guard case .movement(_, let accel2, _)? = SensorTag.decode(.movement, raw, accelerometerRange: .g2) else { return }
        #expect(accel2.z == 0.25)
    }

    @Test func wrongLengthsAreNotReadings() {
        #expect(SensorTag.decode(.ir, [0x00, 0x00, 0x00]) == nil)
        #expect(SensorTag.decode(.movement, [UInt8](repeating: 0, count: 17)) == nil)
        #expect(SensorTag.decode(.battery, [101]) == nil)
    }
}

@Suite struct NordicUARTProfileTests {
    @Test func controllerPacketsCarryTheirChecksum() throws {
        #expect(NordicUART.button(1, pressed: true) == Array("!B11:".utf8))
        #expect(NordicUART.button(9, pressed: true) == nil)
        let color = NordicUART.color(red: 255, green: 0, blue: 0)
        #expect(color.prefix(5) == [0x21, 0x43, 0xFF, 0x00, 0x00])
        #expect(NordicUART.isValidControllerPacket(color))
        var broken = color
        broken[4] = 1
        #expect(!NordicUART.isValidControllerPacket(broken))
    }

    @Test func chunksRespectMTUAndUTF8() {
        let text = Array("héllo wörld, ünïcode".utf8)
        let chunks = NordicUART.chunks(text, mtu: 8)
        #expect(chunks.allSatisfy { $0.count <= 5 })
        #expect(chunks.joined().elementsEqual(text))
        #expect(chunks.allSatisfy { String(validating: $0, as: UTF8.self) != nil })
        #expect(NordicUART.chunks([], mtu: 23).isEmpty)
        #expect(NordicUART.service.description == "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
    }
}
