import Bluetooth
import Testing

@testable import HCI
@testable import Kernel

/// The peer of these vectors: C0:00:00:00:00:01, LE public (Address_Type 0x01).
let pairingPeer = ManagementAddress(address: BluetoothAddress("C0:00:00:00:00:01")!, type: 0x01)
let pairingPeerHex = "01 00 00 00 00 C0 01"
/// A 16-octet key 00 01 … 0F (least significant first) and an 8-octet Rand 0x1122334455667788.
let pairingKeyHex = "00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F"
let pairingKey = kernelHex(pairingKeyHex)

@Suite("Kernel management: pairing and key commands and events (mgmt-api.txt)")
struct KernelPairingManagementCodecTests {
    static let commands: [KernelManagementCodecTests.CommandVector] = [
        KernelManagementCodecTests.vector("Set Bondable on hci0", "09 00 00 00 01 00 01", SetBondableCommand(bondable: true), index: 0),
        KernelManagementCodecTests.vector(
            "Set Secure Connections on", "2D 00 00 00 01 00 01", SetSecureConnectionsCommand(mode: 1), index: 0),
        KernelManagementCodecTests.vector(
            "Set IO Capability KeyboardDisplay", "18 00 00 00 01 00 04", SetIOCapabilityCommand(capability: 4), index: 0),
        KernelManagementCodecTests.vector(
            "Pair Device NoInputNoOutput", "19 00 00 00 08 00 \(pairingPeerHex) 03",
            PairDeviceCommand(peer: pairingPeer, capability: 3), index: 0),
        KernelManagementCodecTests.vector(
            "Unpair Device, disconnect", "1B 00 01 00 08 00 \(pairingPeerHex) 01",
            UnpairDeviceCommand(peer: pairingPeer, disconnect: true), index: 1),
        KernelManagementCodecTests.vector(
            "User Confirmation Reply", "1C 00 00 00 07 00 \(pairingPeerHex)", UserConfirmationReplyCommand(peer: pairingPeer), index: 0),
        KernelManagementCodecTests.vector(
            "User Confirmation Negative Reply", "1D 00 00 00 07 00 \(pairingPeerHex)",
            UserConfirmationNegativeReplyCommand(peer: pairingPeer), index: 0),
        KernelManagementCodecTests.vector(
            "User Passkey Reply 123456", "1E 00 00 00 0B 00 \(pairingPeerHex) 40 E2 01 00",
            UserPasskeyReplyCommand(peer: pairingPeer, passkey: 123_456), index: 0),
        KernelManagementCodecTests.vector(
            "User Passkey Negative Reply", "1F 00 00 00 07 00 \(pairingPeerHex)",
            UserPasskeyNegativeReplyCommand(peer: pairingPeer), index: 0),
        KernelManagementCodecTests.vector(
            "Load Long Term Keys: one P-256 key", "13 00 00 00 26 00 01 00 \(pairingPeerHex) 03 00 10 00 00 00 00 00 00 00 00 00 00 \(pairingKeyHex)",
            LoadLongTermKeysCommand(keys: [
                ManagementLongTermKey(
                    peer: pairingPeer, keyType: .authenticatedP256, central: false, encryptionSize: 16, ediv: 0, rand: 0,
                    value: pairingKey)
            ]), index: 0),
        KernelManagementCodecTests.vector(
            "Load Long Term Keys: none (forget all)", "13 00 00 00 02 00 00 00", LoadLongTermKeysCommand(keys: []), index: 0),
        KernelManagementCodecTests.vector(
            "Load Identity Resolving Keys: one", "30 00 00 00 19 00 01 00 \(pairingPeerHex) \(pairingKeyHex)",
            LoadIdentityResolvingKeysCommand(keys: [ManagementIdentityResolvingKey(peer: pairingPeer, value: pairingKey)]), index: 0),
    ]

    @Test("command encodes to the vector and decodes back", arguments: commands)
    func commandRoundTrip(_ vector: KernelManagementCodecTests.CommandVector) throws {
        let packet = try vector.packet()
        #expect(try packet.encoded() == vector.bytes)
        var reader = ByteReader(try ManagementCommandPacket(bytes: vector.bytes).parameters)
        #expect(AnyHashable(try vector.reparse(&reader)) == AnyHashable(vector.expected))
    }

    @Test("a legacy LTK keeps EDIV, Rand and the Central flag; the names are mgmt-api.txt's")
    func legacyKeyLayout() throws {
        let key = ManagementLongTermKey(
            peer: ManagementAddress(le: BluetoothAddress("C0:00:00:00:00:01")!, type: .random), keyType: .unauthenticated,
            central: true, encryptionSize: 7, ediv: 0xBEEF, rand: 0x1122_3344_5566_7788, value: pairingKey)
        var writer = ByteWriter()
        key.write(to: &writer)
        #expect(writer.bytes == kernelHex("01 00 00 00 00 C0 02 00 01 07 EF BE 88 77 66 55 44 33 22 11 \(pairingKeyHex)"))
        var reader = ByteReader(writer.bytes)
        #expect(try ManagementLongTermKey(parsing: &reader) == key)
        #expect(ManagementOpcode.pairDevice.description == "Pair Device")
        #expect(ManagementEventCode.newLongTermKey.description == "New Long Term Key")
        #expect(ManagementLongTermKey.KeyType(authenticated: true, secureConnections: false) == .authenticated)
        #expect(ManagementLongTermKey.KeyType.debugP256.isSecureConnections)
        #expect(!ManagementLongTermKey.KeyType.debugP256.isAuthenticated)
    }

    static let events: [(hex: String, event: ManagementSecurityEvent)] = [
        ("0A 00 00 00 25 00 01 \(pairingPeerHex) 02 00 10 00 00 00 00 00 00 00 00 00 00 \(pairingKeyHex)",
         .newLongTermKey(
            storeHint: true,
            key: ManagementLongTermKey(
                peer: pairingPeer, keyType: .unauthenticatedP256, central: false, encryptionSize: 16, ediv: 0, rand: 0,
                value: pairingKey))),
        ("0F 00 00 00 0C 00 \(pairingPeerHex) 01 00 00 00 00", .userConfirmationRequest(peer: pairingPeer, justWorks: true, value: 0)),
        ("0F 00 00 00 0C 00 \(pairingPeerHex) 00 40 E2 01 00", .userConfirmationRequest(peer: pairingPeer, justWorks: false, value: 123_456)),
        ("10 00 00 00 07 00 \(pairingPeerHex)", .userPasskeyRequest(peer: pairingPeer)),
        ("11 00 00 00 08 00 \(pairingPeerHex) 05", .authenticationFailed(peer: pairingPeer, status: .authenticationFailed)),
        ("17 00 00 00 0C 00 \(pairingPeerHex) 3F 42 0F 00 00", .passkeyNotify(peer: pairingPeer, passkey: 999_999, entered: 0)),
        ("18 00 00 00 1E 00 01 06 05 04 03 02 41 \(pairingPeerHex) \(pairingKeyHex)",
         .newIdentityResolvingKey(
            storeHint: true, randomAddress: BluetoothAddress("41:02:03:04:05:06")!,
            key: ManagementIdentityResolvingKey(peer: pairingPeer, value: pairingKey))),
        ("19 00 00 00 19 00 00 \(pairingPeerHex) 01 \(pairingKeyHex)",
         .newSignatureResolvingKey(storeHint: false, peer: pairingPeer, type: 1, value: pairingKey)),
    ]

    @Test("pairing and key events decode; every strict prefix of their parameters is refused")
    func eventsDecode() throws {
        for (hex, expected) in Self.events {
            let packet = try ManagementEventPacket(bytes: kernelHex(hex))
            #expect(try ManagementSecurityEvent(packet) == expected)
            #expect(expected.peer == pairingPeer)
            for length in 0..<packet.parameters.count {
                let cut = ManagementEventPacket(code: packet.code, index: 0, parameters: packet.parameters.prefix(length))
                #expect(throws: HCIError.self) { try ManagementSecurityEvent(cut) }
            }
            let longer = ManagementEventPacket(code: packet.code, index: 0, parameters: ArraySlice(Array(packet.parameters) + [0]))
            #expect(throws: HCIError.self) { try ManagementSecurityEvent(longer) }
        }
        // Other events are not pairing events.
        #expect(try ManagementSecurityEvent(try ManagementEventPacket(bytes: kernelHex("06 00 00 00 04 00 C1 0A 00 00"))) == nil)
    }
}

@Suite("Kernel management channel over a seqpacket socketpair", .timeLimit(.minutes(1)))
struct KernelManagementChannelTests {
    @Test("a request gets its Command Complete; other processes' answers and events are told apart")
    func requestAndEvents() async throws {
        let (ours, kernel) = try kernelSeqpacketPair()
        defer { try? kernel.close() }
        let channel = ManagementChannel(socket: HCISocket(adopting: ours, device: nil, channel: .control))
        await channel.start()
        let request = Task { try await channel.request(SetBondableCommand(bondable: true), index: 0) }
        // The command reaches the kernel side.
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = try buffer.withUnsafeMutableBytes { try kernel.receive(into: $0, nonBlocking: false) }
        #expect(Array(buffer.prefix(count)) == kernelHex("09 00 00 00 01 00 01"))
        // An event, someone else's Command Complete (Set Powered), then ours.
        try kernel.send(kernelHex("10 00 00 00 07 00 \(pairingPeerHex)"))
        try kernel.send(kernelHex("01 00 00 00 07 00 05 00 00 01 02 00 00"))
        try kernel.send(kernelHex("01 00 00 00 07 00 09 00 00 11 02 00 00"))
        #expect(try await request.value == ManagementSettings(rawValue: 0x0211))
        var events = channel.events.makeAsyncIterator()
        let first = await events.next()
        #expect(first.map { try? ManagementSecurityEvent($0) } == .some(.userPasskeyRequest(peer: pairingPeer)))
        await channel.close()
        #expect(await events.next() == nil)
    }

    @Test("a failure status is thrown with the command; no answer times out; closing fails waiters")
    func failuresAndTimeouts() async throws {
        let (ours, kernel) = try kernelSeqpacketPair()
        defer { try? kernel.close() }
        let channel = ManagementChannel(socket: HCISocket(adopting: ours, device: nil, channel: .control))
        await channel.start()
        try kernel.send(kernelHex("02 00 00 00 03 00 19 00 05"))
        await #expect(throws: KernelBluetoothError.managementFailed(opcode: .pairDevice, index: 0, status: .authenticationFailed)) {
            _ = try await channel.request(PairDeviceCommand(peer: pairingPeer, capability: 3), index: 0)
        }
        await #expect(throws: KernelBluetoothError.system(operation: .managementCommand(opcode: .setIOCapability, index: 0), errno: .timedOut)) {
            _ = try await channel.request(SetIOCapabilityCommand(capability: 3), index: 0, timeout: .milliseconds(50))
        }
        let waiting = Task { try await channel.request(LoadLongTermKeysCommand(keys: []), index: 0) }
        try await Task.sleep(for: .milliseconds(20))
        await channel.close()
        await #expect(throws: KernelBluetoothError.self) { _ = try await waiting.value }
    }
}
