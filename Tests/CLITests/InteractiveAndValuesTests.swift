import BLE
import Bluetooth
import Emulator
import Foundation
import GATT
import Testing
import TestSupport

@testable import GATTClientCLI

/// Issue 20: `services --values` compared with the emulated SensorTag's database; value decoding
/// by type (no text guessed for a value that is not text).
@Suite("gattclient services --values and value decoding", .serialized, .timeLimit(.minutes(2)))
struct ServicesValuesTests {
    @Test func everyReadableValueAndDescriptorMatchesTheDatabase() async throws {
        let run = await runInProcess(["--json", "--no-cache", "--transport", "sim", "services", "--values", "54:6C:0E:9A:3B:01"])
        #expect(run.code == 0, "\(run.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let database = try SensorTagDatabase.database(address: EmulatedSensorTag.defaultAddress)
        var compared = 0, descriptors = 0
        for service in try #require(object["services"] as? [[String: Any]]) {
            for characteristic in try #require(service["characteristics"] as? [[String: Any]]) {
                let handle = UInt16(try #require(characteristic["valueHandle"] as? Int))
                let properties = try #require(characteristic["properties"] as? [String])
                let uuid = try #require(characteristic["uuid"] as? String)
                if properties.contains("read") {
                    let value = try #require(characteristic["value"] as? String, "0x\(String(handle, radix: 16)) read")
                    // The connection-parameters characteristic holds the link's parameters, set at connection.
                    if uuid != "F000CCC1-0451-4000-B000-000000000000" {
                        #expect(value == Hex.encode(database.attribute(at: handle)?.value ?? []), "0x\(String(handle, radix: 16))")
                    }
                    compared += 1
                } else {
                    #expect(characteristic["value"] == nil, "no read property, not read")
                }
                for descriptor in try #require(characteristic["descriptors"] as? [[String: Any]]) {
                    let handle = UInt16(try #require(descriptor["handle"] as? Int))
                    #expect(descriptor["value"] as? String == Hex.encode(database.attribute(at: handle)?.value ?? [0xFF]))
                    if descriptor["uuid"] as? String == "2901" {
                        #expect(descriptor["decoded"] as? String == String(decoding: database.attribute(at: handle)?.value ?? [], as: UTF8.self))
                    }
                    descriptors += 1
                }
            }
        }
        #expect(compared >= 30 && descriptors >= 30, "\(compared) values, \(descriptors) descriptors")

        let text = await runInProcess(["--no-cache", "--transport", "sim", "services", "--values", "54:6C:0E:9A:3B:01"])
        for line in [
            "    = 64  100 %",
            "    = 5000a0000000e803  interval 100 ms–200 ms, latency 0, supervision timeout 10000 ms",
            "    = 010d0000001001  vendor Texas Instruments Inc. (Bluetooth SIG 0x000d), product 0x0000, version 0x0110",
            "    descriptor Characteristic User Description (2901)  0x0027  = 49522054656d702e2044617461  \"IR Temp. Data\"",
            "    descriptor Client Characteristic Configuration (2902)  0x0022  = 0000  notifications and indications off",
        ] {
            #expect(text.stdout.contains(line), "\(line)\n\(text.stdout)")
        }
    }

    /// A value read by handle is shown by its type (learnt with one Find Information): the
    /// battery's 0x64 is `100 %`, never the text "d".
    @Test func aValueReadByHandleIsShownByItsType() async throws {
        let run = await runInProcess(["--no-cache", "--transport", "sim", "read", "54:6C:0E:9A:3B:01", "0x0021"])
        #expect(run.stdout == "0x0021: 64  100 %\n", "\(run.stdout)")
        let json = await runInProcess(["--json", "--no-cache", "--transport", "sim", "read", "54:6C:0E:9A:3B:01", "0x0007"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["uuid"] as? String == "2A04")
        #expect(object["name"] as? String == "Peripheral Preferred Connection Parameters")
        #expect(object["decoded"] as? String == "interval 100 ms–200 ms, latency 0, supervision timeout 10000 ms")
    }

    @Test func standardValuesDecodeStrictly() {
        #expect(ValueText.decoded([0x64], uuid: .bit16(0x2A19)) == "100 %")
        #expect(ValueText.decoded([0x65], uuid: .bit16(0x2A19)) == nil, "101 % is not a battery level, and not text")
        #expect(ValueText.decoded([0x41, 0x42], uuid: nil) == nil, "a value of unknown type: no guess")
        #expect(ValueText.decoded([0x41, 0x42], uuid: .bit16(0x2A37)) == nil, "a SIG type we do not decode: no guess")
        #expect(ValueText.decoded([0x41, 0x42], uuid: BluetoothUUID("F000AA65-0451-4000-B000-000000000000")) == "AB")
        #expect(StandardValues.decode([0x01, 0x00, 0xFF, 0xFF], uuid: .bit16(0x2A05)) == "handles 0x0001-0xffff changed")
        #expect(StandardValues.decode([0x01, 0x00, 0xFF], uuid: .bit16(0x2A05)) == nil)
        #expect(StandardValues.decode([0x12, 0x03, 0x00, 0x19, 0x2A], uuid: .bit16(0x2803)) == "Battery Level (2A19), value 0x0003, [read, notify]")
        #expect(StandardValues.decode([0x04, 0x00, 0xAD, 0x27, 0x01, 0x00, 0x00], uuid: .bit16(0x2904))?.hasPrefix("uint8, exponent 0, unit ") == true)
        #expect(StandardValues.decode([0x02, 0x00], uuid: .bit16(0x2902)) == "indications on")
    }
}

/// Issue 20: `gattclient adapters` (the kernel rows are checked in the kernel VM, check 12).
@Suite("gattclient adapters", .serialized, .timeLimit(.minutes(2)))
struct AdaptersCommandTests {
    @Test func theSimulatedControllerSaysWhatItIs() async throws {
        let run = await runInProcess(["--transport", "sim", "adapters"])
        #expect(run.code == 0, "\(run.stderr)")
        for line in [
            "  HCI version       5.0 (0x09), revision 0x0001",
            "  LE ACL buffers    4 × 27 octets",
            "  LE features       LE Extended Advertising",
        ] {
            #expect(run.stdout.contains(line), "\(line)\n\(run.stdout)")
        }
        let json = await runInProcess(["--json", "--transport", "sim", "adapters"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["kind"] as? String == "adapter" && object["transport"] as? String == "sim")
        #expect(object["leFeatures"] as? [String] == ["LE Extended Advertising"])
        #expect((object["aclBuffers"] as? [String: Any])?["packetCount"] as? Int == 4)
    }

    @Test func refusedWhereItCannotAnswer() async {
        let replay = await runInProcess(["--transport", "replay:/nonexistent.btsnoop", "adapters"])
        #expect(replay.code == 64 && replay.stderr.contains("a replayed capture has no controller"), "\(replay.stderr)")
        let extra = await runInProcess(["adapters", "hci0"])
        #expect(extra.code == 64)
        if !FileManager.default.fileExists(atPath: "/sys/class/bluetooth") {
            // This machine's kernel has no Bluetooth: said, exit 69.
            let kernel = await runInProcess(["adapters"])
            #expect(kernel.code == 69 && kernel.stderr.contains("no Bluetooth support"), "\(kernel.stderr)")
        }
    }
}
