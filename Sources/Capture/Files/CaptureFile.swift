import HCI
import Bluetooth
import L2CAP
import ATT

import SystemSupport
import Bluetooth

/// Opening capture files from disk (POSIX, no Foundation).
public enum CaptureFile {
    /// Reads the whole file at `path` and sniffs its format: btsnoop, pcap or pcapng.
    public static func open(path: String) throws(HCIError) -> CaptureReader {
        try CaptureReader(bytes: readAll(path: path))
    }

    /// The whole content of the file at `path` (`FileSystem.readFile`).
    public static func readAll(path: String) throws(HCIError) -> [UInt8] {
        do {
            return try FileSystem.readFile(atPath: path)
        } catch {
            throw .system(operation: "\(error.operation) \(path)", errno: error.errno)
        }
    }
}
