import HCI
import Bluetooth
import L2CAP
import ATT

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Bluetooth

/// Records HCI traffic to a btsnoop file descriptor, one `write` per record (a crash loses at
/// most the record being written). Owns the descriptor when it opened it.
///
/// A reference type because it owns a resource; not `Sendable`: one owner (the transport
/// driver) appends.
public final class BTSnoopFileWriter {
    private var encoder: BTSnoopWriter
    private var descriptor: Int32
    private let ownsDescriptor: Bool
    private let name: String

    public var datalink: BTSnoopDatalink { encoder.datalink }
    public var recordCount: Int { encoder.recordCount }

    /// Creates (or truncates) the file at `path`, mode 0600 (a recording can hold key material:
    /// pairing's keys cross SMP in clear), and writes the btsnoop header.
    public convenience init(path: String, datalink: BTSnoopDatalink = .h4) throws(HCIError) {
        let descriptor: Int32
        do {
            descriptor = try Errno.retryingSyscall {
                Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            }
        } catch {
            throw .system(operation: "create \(path)", errno: error)
        }
        // An existing file keeps its mode through O_CREAT: narrow it too.
        do {
            try Errno.retryingSyscall { fchmod(descriptor, 0o600) }
        } catch {
            _ = Glibc.close(descriptor)
            throw .system(operation: "chmod 0600 \(path)", errno: error)
        }
        do {
            try self.init(fileDescriptor: descriptor, datalink: datalink, takingOwnership: true, name: path)
        } catch {
            _ = Glibc.close(descriptor)
            throw error
        }
    }

    /// Writes the btsnoop header to an open descriptor (a file, a pipe). With
    /// `takingOwnership`, `close()` closes it.
    public init(
        fileDescriptor: Int32, datalink: BTSnoopDatalink = .h4, takingOwnership: Bool = false,
        name: String = "btsnoop output"
    ) throws(HCIError) {
        encoder = try BTSnoopWriter(datalink: datalink)
        descriptor = fileDescriptor
        ownsDescriptor = takingOwnership
        self.name = name
        try flush()
    }

    deinit {
        if ownsDescriptor, descriptor >= 0 { _ = Glibc.close(descriptor) }
    }

    /// Appends an HCI packet; see `BTSnoopWriter.append(_:_:direction:timestamp:controllerIndex:originalLength:)`.
    public func append(
        _ type: HCIPacketType, _ packet: some Collection<UInt8>, direction: CaptureDirection, timestamp: Int64,
        controllerIndex: UInt16 = 0
    ) throws(HCIError) {
        try encoder.append(type, packet, direction: direction, timestamp: timestamp, controllerIndex: controllerIndex)
        try flush()
    }

    /// Appends a monitor note (monitor datalink only).
    public func appendNote(
        _ opcode: MonitorOpcode, payload: some Collection<UInt8>, timestamp: Int64, controllerIndex: UInt16 = 0
    ) throws(HCIError) {
        try encoder.appendNote(opcode, payload: payload, timestamp: timestamp, controllerIndex: controllerIndex)
        try flush()
    }

    /// Appends a record read from another capture.
    public func append(_ record: CaptureRecord) throws(HCIError) {
        try encoder.append(record)
        try flush()
    }

    /// Closes the descriptor if this writer owns it. Further appends fail.
    public func close() throws(HCIError) {
        guard descriptor >= 0 else { return }
        let closing = descriptor
        descriptor = -1
        if ownsDescriptor, Glibc.close(closing) != 0 {
            throw .system(operation: "close \(name)", errno: .current)
        }
    }

    private func flush() throws(HCIError) {
        guard descriptor >= 0 else { throw .captureFile("\(name) is closed") }
        let pending = encoder.takeBytes()
        var written = 0
        while written < pending.count {
            let result = pending.withUnsafeBufferPointer { buffer in
                Glibc.write(descriptor, buffer.baseAddress! + written, buffer.count - written)
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw .system(operation: "write \(name)", errno: .current)
            }
            written += result
        }
    }
}
