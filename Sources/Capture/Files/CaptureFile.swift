import HCI
import Bluetooth
import L2CAP
import ATT

import SystemSupport
import Bluetooth

/// Opening capture files from disk (POSIX, no Foundation).
public enum CaptureFile {
    /// Opens the capture at `path` and sniffs its format (btsnoop, pcap or pcapng): a reader
    /// that streams it through a bounded window (`CaptureReader.windowSize`), whatever its size.
    /// `follow` keeps reading as another program appends to it (`CaptureReader.waitForInput()`
    /// waits on inotify at its current end).
    /// A wait also ends when `interrupt` (if not -1) becomes readable.
    public static func open(
        path: String, follow: Bool = false, interrupt: Int32 = -1, windowSize: Int = CaptureReader.windowSize
    ) throws(HCIError) -> CaptureReader {
        try CaptureReader(input: CaptureInput(path: path, follow: follow, interrupt: interrupt), windowSize: windowSize)
    }

    /// A reader of the capture arriving on standard input (`btmon -w /dev/stdout | …`, adb).
    public static func standardInput() throws(HCIError) -> CaptureReader {
        try CaptureReader(input: CaptureInput())
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
