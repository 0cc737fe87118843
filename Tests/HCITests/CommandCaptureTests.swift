import Bluetooth
import Testing

@testable import HCI
import TestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `<package root>/../shared/captures`, from this file's path.
private let commandCaptureDirectory: String = {
    var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(3)  // Tests/HCITests/CommandCaptureTests.swift
    return parts.joined(separator: "/") + "/../shared/captures"
}()

private let commandCaptureFiles = [
    "horizon-treadmill-ftms.btsnoop", "smartpen-reads-extadv.btsnoop", "android-pixel6-extadv-scan.btsnoop",
]

private func commandCaptureBytes(_ name: String) -> [UInt8]? {
    guard let file = fopen(commandCaptureDirectory + "/" + name, "rb") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count <= 0 { break }
        bytes.append(contentsOf: buffer[0..<count])
    }
    return bytes
}

private let commandCapturesPresent = commandCaptureFiles.allSatisfy { commandCaptureBytes($0) != nil }

/// The H4 packets of a btsnoop file with datalink 1002 (test-only minimal reader: 16-octet file
/// header, then 24-octet big-endian record headers).
private func commandCapturePackets(_ bytes: [UInt8]) throws -> [(type: UInt8, body: [UInt8])] {
    var reader = ByteReader(bytes)
    _ = try reader.readBytes(8)  // "btsnoop\0"
    _ = try reader.readUInt32BE()  // version
    let datalink = try reader.readUInt32BE()
    guard datalink == 1002 else { return [] }
    var packets: [(UInt8, [UInt8])] = []
    while !reader.isAtEnd {
        _ = try reader.readUInt32BE()  // original length
        let included = Int(try reader.readUInt32BE())
        _ = try reader.readBytes(16)  // flags, drops, timestamp
        var packet = try reader.subReader(included)
        let type = try packet.readUInt8()
        packets.append((type, Array(packet.readRemaining())))
    }
    return packets
}

@Suite(
    "HCI commands in recorded captures", .cpuBound,
    .enabled(if: commandCapturesPresent, "skipped: /work/shared/captures (../shared from the package) is absent"))
struct CommandCaptureTests {
    /// Every command a real host sent decodes (typed or raw) and re-encodes byte for byte.
    @Test(arguments: commandCaptureFiles)
    func commandsDecode(_ name: String) throws {
        let packets = try commandCapturePackets(try #require(commandCaptureBytes(name)))
        var typed = 0
        for (type, body) in packets where type == HCIPacketType.command.rawValue {
            var reader = ByteReader(body)
            let command = try AnyHCICommand(parsing: &reader)
            if command.command != nil { typed += 1 }
            #expect(try command.packet().encode() == body, "\(command)")
        }
        #expect(typed >= 10, "\(name): only \(typed) typed commands")
    }

    /// Every Command Complete's return parameters decode (typed for modelled commands).
    @Test(arguments: commandCaptureFiles)
    func returnsDecode(_ name: String) throws {
        let packets = try commandCapturePackets(try #require(commandCaptureBytes(name)))
        var typed = 0
        for (type, body) in packets where type == HCIPacketType.event.rawValue && body.first == 0x0E {
            var reader = ByteReader(body.dropFirst(2))
            let event = try CommandCompleteEvent(parsing: &reader)
            let result = try event.typedReturn
            if result.parameters != nil { typed += 1 }
            #expect(result.status == .success, "\(result)")
        }
        #expect(typed >= 8, "\(name): only \(typed) typed returns")
    }

    @Test func knownCaptureValues() throws {
        let packets = try commandCapturePackets(try #require(commandCaptureBytes("android-pixel6-extadv-scan.btsnoop")))
        let returns = try packets.filter { $0.type == 4 && $0.body.first == 0x0E }.map { packet in
            var reader = ByteReader(packet.body.dropFirst(2))
            return try CommandCompleteEvent(parsing: &reader)
        }
        let v2 = try #require(returns.first { $0.opcode == .leReadBufferSizeV2 })
        let buffers = try v2.decodeReturn(for: LEReadBufferSizeV2Command.self)
        #expect(buffers.leACLDataPacketLength == 251 && buffers.totalNumLEACLDataPackets == 15)
        #expect(buffers.isoDataPacketLength == 0x03FD && buffers.totalNumISODataPackets == 0x18)

        let features = try #require(returns.first { $0.opcode == .leReadLocalSupportedFeatures })
        let le = try features.decodeReturn(for: LEReadLocalSupportedFeaturesCommand.self).leFeatures
        #expect(le.contains(.leExtendedAdvertising) && le.contains(.leCodedPHY) && le.contains(.le2MPHY))

        let commands = try #require(returns.first { $0.opcode == .readLocalSupportedCommands })
        let supported = try commands.decodeReturn(for: ReadLocalSupportedCommandsCommand.self).supportedCommands
        for opcode in returns.map(\.opcode) where HCISupportedCommands.positions[opcode] != nil {
            #expect(supported.supports(opcode) == true, "\(opcode) answered but not claimed")
        }

        let params = try #require(returns.first { $0.opcode == .leSetExtendedAdvertisingParametersV1 })
        #expect(try params.decodeReturn(for: LESetExtendedAdvertisingParametersV1Command.self).selectedTxPower == -8)
    }
}
