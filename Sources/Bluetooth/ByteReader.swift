/// Why a `ByteReader` stopped: the input ended early, or bytes were left over.
public struct ByteReaderError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable {
        /// `needed` octets were asked for at `offset`, only `available` remained.
        case truncated(needed: Int, available: Int)
        /// `count` octets remained where the structure should have ended.
        case trailingBytes(count: Int)
    }

    public var kind: Kind
    /// Offset from the start of the reader's input where the problem was found.
    public var offset: Int

    public init(_ kind: Kind, offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    public var description: String {
        switch kind {
        case .truncated(let needed, let available):
            return "truncated at offset \(offset): needed \(needed) octet(s), \(available) left"
        case .trailingBytes(let count):
            return "\(count) unexpected trailing octet(s) at offset \(offset)"
        }
    }
}

/// A cursor over wire bytes. Reads share storage with the input (`ArraySlice`), never copy.
///
/// Endianness is in every method name. Every read checks the bytes present and throws
/// `ByteReaderError` instead of trapping.
public struct ByteReader: Sendable {
    @usableFromInline internal var storage: ArraySlice<UInt8>
    @usableFromInline internal let base: Int

    @inlinable
    public init(_ bytes: ArraySlice<UInt8>) {
        self.storage = bytes
        self.base = bytes.startIndex
    }

    @inlinable
    public init(_ bytes: [UInt8]) {
        self.init(bytes[...])
    }

    /// Octets consumed so far.
    @inlinable public var offset: Int { storage.startIndex - base }
    /// Octets left.
    @inlinable public var remainingCount: Int { storage.count }
    @inlinable public var isAtEnd: Bool { storage.isEmpty }
    /// The unread octets, without consuming them.
    @inlinable public var remaining: ArraySlice<UInt8> { storage }

    @inlinable
    internal func truncated(_ needed: Int) -> ByteReaderError {
        ByteReaderError(.truncated(needed: needed, available: storage.count), offset: offset)
    }

    @inlinable
    public mutating func readUInt8() throws(ByteReaderError) -> UInt8 {
        guard let byte = storage.first else { throw truncated(1) }
        storage = storage.dropFirst()
        return byte
    }

    @inlinable
    public mutating func readInt8() throws(ByteReaderError) -> Int8 {
        Int8(bitPattern: try readUInt8())
    }

    @inlinable
    public func peekUInt8() throws(ByteReaderError) -> UInt8 {
        guard let byte = storage.first else { throw truncated(1) }
        return byte
    }

    @inlinable
    internal mutating func readLE<T: FixedWidthInteger & UnsignedInteger>(_ count: Int, as: T.Type) throws(ByteReaderError) -> T {
        guard storage.count >= count else { throw truncated(count) }
        var value: T = 0
        var index = storage.startIndex
        for shift in 0..<count {
            value |= T(storage[index]) << (shift * 8)
            index += 1
        }
        storage = storage[index...]
        return value
    }

    @inlinable
    internal mutating func readBE<T: FixedWidthInteger & UnsignedInteger>(_ count: Int, as: T.Type) throws(ByteReaderError) -> T {
        guard storage.count >= count else { throw truncated(count) }
        var value: T = 0
        var index = storage.startIndex
        for _ in 0..<count {
            value = (value << 8) | T(storage[index])
            index += 1
        }
        storage = storage[index...]
        return value
    }

    @inlinable public mutating func readUInt16LE() throws(ByteReaderError) -> UInt16 { try readLE(2, as: UInt16.self) }
    @inlinable public mutating func readUInt24LE() throws(ByteReaderError) -> UInt32 { try readLE(3, as: UInt32.self) }
    @inlinable public mutating func readUInt32LE() throws(ByteReaderError) -> UInt32 { try readLE(4, as: UInt32.self) }
    @inlinable public mutating func readUInt64LE() throws(ByteReaderError) -> UInt64 { try readLE(8, as: UInt64.self) }
    @inlinable public mutating func readUInt128LE() throws(ByteReaderError) -> UInt128 { try readLE(16, as: UInt128.self) }
    @inlinable public mutating func readUInt16BE() throws(ByteReaderError) -> UInt16 { try readBE(2, as: UInt16.self) }
    @inlinable public mutating func readUInt32BE() throws(ByteReaderError) -> UInt32 { try readBE(4, as: UInt32.self) }
    @inlinable public mutating func readUInt64BE() throws(ByteReaderError) -> UInt64 { try readBE(8, as: UInt64.self) }
    @inlinable public mutating func readInt16LE() throws(ByteReaderError) -> Int16 { Int16(bitPattern: try readUInt16LE()) }

    /// Reads `count` octets as a slice sharing the input's storage.
    @inlinable
    public mutating func readBytes(_ count: Int) throws(ByteReaderError) -> ArraySlice<UInt8> {
        guard count >= 0, storage.count >= count else { throw truncated(count) }
        let end = storage.startIndex + count
        let slice = storage[storage.startIndex..<end]
        storage = storage[end...]
        return slice
    }

    /// Reads everything left.
    @inlinable
    public mutating func readRemaining() -> ArraySlice<UInt8> {
        let slice = storage
        storage = storage[storage.endIndex...]
        return slice
    }

    @inlinable
    public mutating func skip(_ count: Int) throws(ByteReaderError) {
        _ = try readBytes(count)
    }

    /// A reader over the next `count` octets; this reader moves past them.
    @inlinable
    public mutating func subReader(_ count: Int) throws(ByteReaderError) -> ByteReader {
        let start = offset
        let bytes = try readBytes(count)
        var reader = ByteReader(bytes)
        reader.rebase(start)
        return reader
    }

    /// Makes `offset` report positions relative to an enclosing structure.
    @inlinable
    internal mutating func rebase(_ start: Int) {
        self = ByteReader(storage: storage, base: storage.startIndex - start)
    }

    @inlinable
    internal init(storage: ArraySlice<UInt8>, base: Int) {
        self.storage = storage
        self.base = base
    }

    /// Throws when octets remain: a structure must consume exactly its bytes.
    @inlinable
    public func expectEnd() throws(ByteReaderError) {
        guard storage.isEmpty else {
            throw ByteReaderError(.trailingBytes(count: storage.count), offset: offset)
        }
    }
}
