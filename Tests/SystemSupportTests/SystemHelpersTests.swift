import Synchronization
import Testing

@testable import SystemSupport
import Bluetooth
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// FileSystem, DetachedThread and ProcessEnvironment: the POSIX helpers that replace
/// Foundation in gattclient.
@Suite("Bluetooth system helpers")
struct BluetoothSystemHelpersTests {
    static func temporaryDirectory() throws -> String {
        var template = Array("/tmp/bluetooth-fs-test-XXXXXX".utf8CString)
        guard let result = mkdtemp(&template) else { throw Errno.current }
        return String(cString: result)
    }

    @Test func readWriteRoundTrip() throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let path = directory + "/file.bin"
        // Larger than one read chunk, every octet value.
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try FileSystem.writeFileAtomically(bytes, toPath: path)
        #expect(try FileSystem.readFile(atPath: path) == bytes)
        try FileSystem.writeFileAtomically([], toPath: path)
        #expect(try FileSystem.readFile(atPath: path) == [])
        #expect(try FileSystem.contentsOfDirectory(atPath: directory) == ["file.bin"])
        var status = stat()
        #expect(stat(path, &status) == 0 && status.st_mode & 0o777 == 0o600)
    }

    @Test func readsFilesWithoutASize() throws {
        // /proc files report size 0: read until end of file all the same.
        let status = try FileSystem.readFile(atPath: "/proc/self/status")
        #expect(String(decoding: status, as: UTF8.self).hasPrefix("Name:"))
    }

    @Test func readErrorsNameTheOperation() throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        #expect(throws: FileSystemError(operation: "open", path: directory + "/none", errno: Errno(rawValue: ENOENT))) {
            try FileSystem.readFile(atPath: directory + "/none")
        }
        #expect(throws: FileSystemError(operation: "read", path: directory, errno: Errno(rawValue: EISDIR))) {
            try FileSystem.readFile(atPath: directory)
        }
        #expect(
            FileSystemError(operation: "open", path: "/x", errno: Errno(rawValue: ENOENT)).description
                == "open /x: No such file or directory")
    }

    @Test func atomicWriteFailuresLeaveNothing() throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        // No such directory: mkstemp fails.
        #expect(throws: FileSystemError(operation: "mkstemp", path: directory + "/no/f", errno: Errno(rawValue: ENOENT))) {
            try FileSystem.writeFileAtomically([1], toPath: directory + "/no/f")
        }
        // The target is a directory: rename fails, the temporary file is removed.
        try FileSystem.createDirectory(atPath: directory + "/d")
        #expect(throws: FileSystemError(operation: "rename", path: directory + "/d", errno: Errno(rawValue: EISDIR))) {
            try FileSystem.writeFileAtomically([1, 2, 3], toPath: directory + "/d")
        }
        #expect(try FileSystem.contentsOfDirectory(atPath: directory) == ["d"])
    }

    @Test func createDirectoryMakesParents() throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        try FileSystem.createDirectory(atPath: directory + "/a/b//c/")
        #expect(FileSystem.isDirectory(atPath: directory + "/a/b/c"))
        try FileSystem.createDirectory(atPath: directory + "/a/b/c")  // exists: fine
        let descriptor = try FileSystem.createFile(atPath: directory + "/a/file", contents: Array("x\n".utf8))
        try FileSystem.append(Array("y\n".utf8), to: descriptor, path: directory + "/a/file")
        close(descriptor)
        #expect(try FileSystem.readFile(atPath: directory + "/a/file") == Array("x\ny\n".utf8))
        #expect(FileSystem.fileExists(atPath: directory + "/a/file"))
        #expect(!FileSystem.isDirectory(atPath: directory + "/a/file"))
        #expect(throws: FileSystemError(operation: "mkdir", path: directory + "/a/file", errno: Errno(rawValue: ENOTDIR))) {
            try FileSystem.createDirectory(atPath: directory + "/a/file/sub")
        }
        #expect(throws: FileSystemError(operation: "mkdir", path: "", errno: Errno(rawValue: ENOENT))) {
            try FileSystem.createDirectory(atPath: "")
        }
    }

    @Test func removeFile() throws {
        let directory = try Self.temporaryDirectory()
        defer { removeTree(directory) }
        let path = directory + "/f"
        try FileSystem.writeFileAtomically([0], toPath: path)
        try FileSystem.removeFile(atPath: path)
        #expect(!FileSystem.fileExists(atPath: path))
        try FileSystem.removeFile(atPath: path, mustExist: false)
        #expect(throws: FileSystemError(operation: "unlink", path: path, errno: Errno(rawValue: ENOENT))) {
            try FileSystem.removeFile(atPath: path)
        }
    }

    @Test func detachedThreadRunsTheClosure() async throws {
        let done = Mutex<[Int]>([])
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        for n in 0..<4 {
            try DetachedThread.start {
                done.withLock { $0.append(n) }
                continuation.yield(n)
            }
        }
        var seen: [Int] = []
        for await n in stream {
            seen.append(n)
            if seen.count == 4 { break }
        }
        #expect(seen.sorted() == [0, 1, 2, 3])
        #expect(done.withLock { $0.sorted() } == [0, 1, 2, 3])
    }

    @Test func environment() {
        // (No setenv here: tests run in parallel threads, and glibc's getenv is not safe
        // against a concurrent setenv.)
        let all = ProcessEnvironment.all()
        #expect(!all.isEmpty)
        for name in ["PATH", "HOME", "NO_SUCH_VARIABLE_FOR_THIS_TEST"] {
            #expect(ProcessEnvironment.value(name) == all[name], "\(name)")
        }
        #expect(ProcessEnvironment.homeDirectory(environment: ["HOME": "/h"]) == "/h")
        // HOME unset or empty: the password database.
        let passwd = ProcessEnvironment.passwordDatabaseHome(uid: getuid())
        #expect(ProcessEnvironment.homeDirectory(environment: [:]) == passwd)
        #expect(ProcessEnvironment.homeDirectory(environment: ["HOME": ""]) == passwd)
        // Root is in every password database.
        #expect(ProcessEnvironment.passwordDatabaseHome(uid: 0) == "/root")
    }
}

/// The kernel pairing agent's one-per-adapter lock (issue 36 hole 9): flock on a file.
@Suite("File locks")
struct FileLockTests {
    @Test("a second holder is refused while the first holds the lock; after its release it is free")
    func exclusive() throws {
        let path = "/tmp/gattclient-lock-test-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileSystem.removeFile(atPath: path) }
        let first = try #require(try FileSystem.tryExclusiveLock(atPath: path))
        #expect(try FileSystem.tryExclusiveLock(atPath: path) == nil, "held by the first open file")
        FileSystem.releaseLock(first)
        let again = try #require(try FileSystem.tryExclusiveLock(atPath: path))
        FileSystem.releaseLock(again)
    }
}
