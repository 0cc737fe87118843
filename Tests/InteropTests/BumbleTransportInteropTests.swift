import Bluetooth
import GATTClientCLI
import HCI
import Testing
import TestSupport

/// Our TCP transport against a real third-party controller: Bumble's, run by
/// scripts/bumble_peer.py. Skipped (with the reason printed) where `python3 -c 'import bumble'`
/// fails: the trait below is a skip, not a failure.
@Suite(
    "Interop: HCI transport against Bumble",
    .enabled("needs python3 with bumble (pip install bumble)") { await BumblePeer.isAvailable() })
struct BumbleTransportInteropTests {
    static let reset = HCIOpcode(rawValue: 0x0C03)
    static let readBDAddr = HCIOpcode(rawValue: 0x1009)
    static let leReadBufferSize = HCIOpcode(rawValue: 0x2002)
    static let readLocalVersion = HCIOpcode(rawValue: 0x1001)
    static let leSetScanParameters = HCIOpcode(rawValue: 0x200B)
    static let leSetScanEnable = HCIOpcode(rawValue: 0x200C)

    @Test func resetThenReadBDAddrAndLEBufferSize() async throws {
        let peer = try await BumblePeer.start()
        defer { peer.stop() }
        let transport = try await peer.uri.openRawTransport()
        defer { transport.close() }
        let host = EventReader(transport)

        let reset = try await host.command(Self.reset)
        #expect(reset.status == .success)
        #expect(reset.returnParameters == [0x00])
        #expect(reset.numHCICommandPackets >= 1)

        // Read_BD_ADDR: status, BD_ADDR (6 octets, little-endian).
        let bdAddr = try await host.command(Self.readBDAddr)
        #expect(bdAddr.status == .success)
        var reader = ByteReader(bdAddr.returnParameters)
        _ = try reader.readUInt8()
        let address = try BluetoothAddress(parsingLittleEndian: &reader)
        try reader.expectEnd()
        #expect(address == BluetoothAddress("F0:F1:F2:F3:F4:F5"))

        // LE_Read_Buffer_Size [v1]: status, LE_ACL_Data_Packet_Length (2), Total_Num_LE_ACL_Data_Packets (1).
        let buffers = try await host.command(Self.leReadBufferSize)
        #expect(buffers.status == .success)
        reader = ByteReader(buffers.returnParameters)
        _ = try reader.readUInt8()
        let packetLength = try reader.readUInt16LE()
        let packetCount = try reader.readUInt8()
        try reader.expectEnd()
        #expect(packetLength == 27)
        #expect(packetCount > 0)

        // Read_Local_Version_Information: status + 8 octets.
        let version = try await host.command(Self.readLocalVersion)
        #expect(version.status == .success)
        #expect(version.returnParameters.count == 9)
    }

    @Test func unknownCommandIsAnsweredWithUnknownHCICommand() async throws {
        let peer = try await BumblePeer.start()
        defer { peer.stop() }
        let transport = try await peer.uri.openRawTransport()
        defer { transport.close() }
        let host = EventReader(transport)
        // A vendor-specific opcode (OGF 0x3F) no Bumble handler knows: the harness's controller
        // answers 0x01 instead of staying silent as stock Bumble does.
        let vendor = HCIOpcode(ogf: 0x3F, ocf: 0x0123)
        let complete = try await host.command(vendor)
        #expect(complete.opcode == vendor)
        #expect(complete.status == HCIStatus(rawValue: 0x01))
    }

    @Test func activeScanSeesTheSensorTagAndItsScanResponseName() async throws {
        let peer = try await BumblePeer.start(devices: ["sensortag"])
        defer { peer.stop() }
        let sensorTag = try #require(peer.devices["sensortag"])
        let transport = try await peer.uri.openRawTransport()
        defer { transport.close() }
        let host = EventReader(transport)

        #expect(try await host.command(Self.reset).status == .success)
        // LE_Set_Scan_Parameters: active, interval = window = 10 ms, own address public, accept all.
        let parameters: [UInt8] = [0x01, 0x10, 0x00, 0x10, 0x00, 0x00, 0x00]
        #expect(try await host.command(Self.leSetScanParameters, parameters).status == .success)
        #expect(try await host.command(Self.leSetScanEnable, [0x01, 0x00]).status == .success)

        // Both the advertising report (the device) and the scan response (its name) arrive as
        // LE Meta events; the report formats themselves are the events module's to decode.
        let addressBytes = sensorTag.littleEndianBytes
        let name = Array("CC2650 SensorTag".utf8)
        var sawAddress = false
        var sawName = false
        var events = 0
        while !(sawAddress && sawName), events < 200 {
            let event = try await host.nextEvent()
            events += 1
            guard event.first == 0x3E, event.contains(subsequence: addressBytes) else { continue }
            sawAddress = true
            if event.contains(subsequence: name) { sawName = true }
        }
        #expect(sawAddress)
        #expect(sawName)
        #expect(try await host.command(Self.leSetScanEnable, [0x00, 0x00]).status == .success)
    }

    @Test func peerExitingClosesOurTransport() async throws {
        let peer = try await BumblePeer.start()
        let transport = try await peer.uri.openRawTransport()
        defer { transport.close() }
        let host = EventReader(transport)
        #expect(try await host.command(Self.reset).status == .success)
        peer.stop()
        await #expect {
            _ = try await host.nextEvent()
        } throws: { error in
            if case .transportClosed? = error as? HCIError { return true }
            return false
        }
    }
}

/// Sends commands and reads events from a transport, every wait bounded.
struct EventReader: Sendable {
    let transport: any HCITransport
    let timeout: Double

    init(_ transport: any HCITransport, timeout: Double = 5) {
        self.transport = transport
        self.timeout = timeout
    }

    /// The next HCI event (event code, length, parameters); other packet types are skipped.
    func nextEvent() async throws -> [UInt8] {
        let packets = transport.packets
        return try await withTimeout(timeout, "an HCI event") {
            for try await packet in packets where packet.type == .event {
                return packet.bytes
            }
            throw HCIError.transportClosed("packet stream ended")
        }
    }

    /// Sends a command and returns its Command Complete, skipping other events.
    func command(_ opcode: HCIOpcode, _ parameters: [UInt8] = []) async throws -> CommandCompleteEvent {
        var writer = ByteWriter()
        writer.writeUInt16LE(opcode.rawValue)
        writer.writeUInt8(UInt8(parameters.count))
        writer.writeBytes(parameters)
        try await transport.send(.command, writer.bytes)
        for _ in 0..<100 {
            let event = try await nextEvent()
            guard event.first == CommandCompleteEvent.eventCode.rawValue else { continue }
            var reader = ByteReader(event)
            _ = try reader.readUInt8()
            let length = try reader.readUInt8()
            #expect(Int(length) == reader.remainingCount)
            let complete = try CommandCompleteEvent(parsing: &reader)
            if complete.opcode == opcode { return complete }
        }
        throw TestTimeout(what: "Command Complete for \(opcode) within 100 events", seconds: timeout)
    }
}

extension Array where Element == UInt8 {
    func contains(subsequence: [UInt8]) -> Bool {
        guard !subsequence.isEmpty, count >= subsequence.count else { return subsequence.isEmpty }
        for start in 0...(count - subsequence.count)
        where self[start..<(start + subsequence.count)].elementsEqual(subsequence) {
            return true
        }
        return false
    }
}
