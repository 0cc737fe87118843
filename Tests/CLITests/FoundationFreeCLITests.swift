import BLE
import SystemSupport
import ATT
import Bluetooth
import Emulator
import GATT
import Testing
import TestSupport

@testable import GATTClientCLI

#if canImport(Glibc)
    import Glibc
#endif

/// What replaced Foundation in the CLI: `dump --services` reading `services --json` back,
/// `sensortag --csv` written with POSIX calls, `scan --name` matching without Foundation.
@Suite struct FoundationFreeCLITests {
    static func temporaryDirectory() throws -> String {
        var template = Array("/tmp/gattclient-cli-test-XXXXXX".utf8CString)
        guard let result = mkdtemp(&template) else { throw Errno.current }
        return String(cString: result)
    }

    func run(_ body: (inout BufferedOutput) async throws -> Void) async throws -> [String] {
        var output = BufferedOutput.capturing()
        try await body(&output)
        output.flush()
        return output.capturedLines
    }

    /// `services --json` output, written to a file, reads back into the database discovered.
    @Test func servicesJSONReadsBack() async throws {
        let central = InMemoryCentral(database: try InMemoryCentral.sensorTagLike())
        var options = GlobalOptions()
        options.json = true
        let peer = PeerAddress("54:6C:0E:12:34:56")!
        let lines = try await run {
            try await ServicesCommand(peer: peer, central: central).run(options: options, replayMatchAny: false, output: &$0)
        }
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let path = directory + "/services.json"
        try FileSystem.writeFileAtomically(Array(lines.joined(separator: "\n").utf8), toPath: path)
        let database = try ServicesJSON.load(path: path)

        // The same database as a client discovers from the server directly.
        let direct = InMemoryCentral(database: try InMemoryCentral.sensorTagLike())
        let channel = try await direct.connect(to: peer, timeout: .seconds(5))
        let client = GATTClient(connection: ATTConnection(channel: channel, configuration: ATTBearer.Configuration(rxMTU: 23)))
        let discovered = try await client.loadDatabase(findIncludes: false)
        await client.close()
        #expect(database.services.map(\.uuid) == discovered.services.map(\.uuid))
        #expect(database.services.map(\.handleRange) == discovered.services.map(\.handleRange))
        for (read, found) in zip(database.services, discovered.services) {
            #expect(read.characteristics.map(\.uuid) == found.characteristics.map(\.uuid))
            #expect(read.characteristics.map(\.valueHandle) == found.characteristics.map(\.valueHandle))
            #expect(read.characteristics.map(\.properties) == found.characteristics.map(\.properties))
            #expect(read.characteristics.map { $0.descriptors.map(\.handle) } == found.characteristics.map { $0.descriptors.map(\.handle) })
        }
        #expect(try database.characteristic(uuid: 0x2A19).properties == [.read, .notify])
    }

    @Test(arguments: [
        (#"{"services":[{"uuid":"180F","start":1,"end":3,"primary":false,"name":"Battery","characteristics":[{"uuid":"2A19","declarationHandle":2,"valueHandle":3,"properties":["read"],"descriptors":[]}]}]}"#, nil),
        ("", "is not JSON: JSON: unexpected end of text at offset 0"),
        (#"{"services":[1,]}"#, "is not JSON: JSON: unexpected character ']' at offset 15"),
        (#"{"services":{}}"#, #"no "services" list"#),
        (#"{"services":[1]}"#, #"no "services" list"#),
        (#"{"services":[{"uuid":"180F","start":1}]}"#, "services[0] needs uuid, start and end"),
        (#"{"services":[{"uuid":"180F","start":1,"end":70000}]}"#, "services[0] needs uuid, start and end"),
        (#"{"services":[{"uuid":"180F","start":1,"end":3,"characteristics":[{"uuid":"2A19","valueHandle":3}]}]}"#,
         "services[0].characteristics[0] needs uuid, declarationHandle and valueHandle"),
        (#"{"services":[{"uuid":"180F","start":1,"end":3,"characteristics":{}}]}"#, "services[0].characteristics is not a list of objects"),
    ] as [(String, String?)])
    func servicesJSONDocuments(text: String, failure: String?) throws {
        do {
            let database = try ServicesJSON.database(json: Array(text.utf8), path: "f.json")
            #expect(failure == nil, "read: \(database)")
            #expect(database.services.first?.isPrimary == false)
            #expect(database.services.first?.characteristics.first?.properties == [.read])
        } catch {
            #expect(failure.map { error.description.hasPrefix("f.json") && error.description.contains($0) } == true, "\(error)")
        }
    }

    @Test func servicesJSONMissingFile() throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let path = directory + "/none.json"
        #expect(throws: (any Error).self) { try ServicesJSON.load(path: path) }
        do {
            _ = try ServicesJSON.load(path: path)
        } catch {
            #expect("\(error)" == "cannot read \(path): No such file or directory")
        }
    }

    /// `--csv`: a header, then one row per field of each reading.
    @Test func sensortagCSV() async throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let path = directory + "/readings.csv"
        var command = SensorTagCommand(peer: PeerAddress(address: EmulatedSensorTag.defaultAddress, type: .public))
        command.sensors = [.humidity]
        command.periodMilliseconds = 100
        command.count = 2
        command.csvPath = path
        var options = GlobalOptions()
        options.transport = "sim"
        options.json = true
        let lines = try await run { try await command.run(options: options, replayMatchAny: false, output: &$0) }
        #expect(lines.count == 2)
        let rows = String(decoding: try FileSystem.readFile(atPath: path), as: UTF8.self).split(separator: "\n")
        #expect(rows.first == "time,sensor,field,value")
        #expect(rows.count == 1 + 2 * 2, "\(rows)")
        #expect(rows.dropFirst().allSatisfy { $0.split(separator: ",").count == 4 && $0.contains(",humidity,") })
        #expect(rows.dropFirst().contains { $0.contains(",humidityPercent,") })

        // A file that cannot be created: refused before connecting, with the reason.
        command.csvPath = path + "/sub.csv"
        do {
            _ = try await run { try await command.run(options: options, replayMatchAny: false, output: &$0) }
            Issue.record("--csv into a file succeeded")
        } catch let failure as CommandFailure {
            #expect(failure.message.hasPrefix("--csv: cannot create the file: open \(path)/sub.csv: Not a directory"), "\(failure)")
        }
    }

    @Test(arguments: [
        ("Adafruit Bluefruit LE", "bluefruit", true), ("CC2650 SensorTag", "SENSORTAG", true),
        ("CC2650 SensorTag", "tag ", false), ("Ünïcode", "üNï", true), ("x", "", true),
    ])
    func scanNameFilter(name: String, text: String, matches: Bool) {
        #expect(ScanCommand.name(name, contains: text) == matches)
    }
}
