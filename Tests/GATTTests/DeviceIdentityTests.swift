import Testing

@testable import GATT

/// GAP Appearance, Peripheral Preferred Connection Parameters, PnP ID and System ID decoded
/// strictly: the wrong length is nil, never a guess.
@Suite struct DeviceIdentityTests {
    @Test func appearance() {
        #expect((try? Appearance(decoding: [0x40, 0x03]))?.description == "0x0340 Heart Rate Sensor")
        #expect((try? Appearance(decoding: [0x41, 0x03]))?.description == "0x0341 Heart Rate Sensor, subcategory 1")
        #expect((try? Appearance(decoding: [0xC1, 0x03]))?.categoryName == "Human Interface Device")
        #expect((try? Appearance(decoding: [0x00, 0x00]))?.description == "0x0000 Unknown")
        #expect(Appearance(rawValue: 0x0FC0).description == "0x0fc0 category 0x3f")
        #expect((try? Appearance(decoding: [0x40])) == nil)
    }

    @Test func preferredParameters() {
        // 100–200 ms, latency 0, 10 s (the CC2650's).
        let ppcp = (try? PreferredConnectionParameters(decoding: [0x50, 0x00, 0xA0, 0x00, 0x00, 0x00, 0xE8, 0x03]))
        #expect(ppcp?.description == "interval 100 ms–200 ms, latency 0, supervision timeout 10000 ms")
        #expect((try? PreferredConnectionParameters(decoding: [0x06, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0xFF, 0xFF]))?.description
            == "interval 7.5 ms–any, latency 0, supervision timeout any")
        #expect((try? PreferredConnectionParameters(decoding: [0, 0, 0, 0, 0, 0, 0])) == nil)
    }

    @Test func pnpAndSystemID() {
        let pnp = (try? PnPID(decoding: [0x01, 0x0D, 0x00, 0x00, 0x00, 0x10, 0x01]))
        #expect(pnp?.vendorIDSource == 1 && pnp?.vendorID == 0x000D && pnp?.productVersion == 0x0110)
        #expect(pnp?.description.hasSuffix("(Bluetooth SIG 0x000d), product 0x0000, version 0x0110") == true)
        #expect((try? PnPID(decoding: [0x02, 0x6B, 0x1D, 0x01, 0x00, 0x00, 0x01]))?.description == "vendor USB IF 0x1d6b, product 0x0001, version 0x0100")
        #expect((try? PnPID(decoding: [0x01])) == nil)
        let system = (try? SystemID(decoding: [0x01, 0x3B, 0x9A, 0xFE, 0xFF, 0x0E, 0x6C, 0x54]))
        #expect(system?.description == "manufacturer 0xfffe9a3b01, OUI 54:6C:0E")
        #expect((try? SystemID(decoding: [1, 2, 3])) == nil)
    }
}
