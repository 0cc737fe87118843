import Bluetooth
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The process's environment variables and the user's home directory, from `environ`,
/// `getenv` and the password database (no Foundation).
package enum ProcessEnvironment {
    /// The variable `name`, or nil when it is unset.
    package static func value(_ name: String) -> String? {
        EnvironmentLock.withLock { getenv(name).map { String(cString: $0) } }
    }

    /// Every variable of `environ` (an entry without `=` is skipped; the first of two equal
    /// names wins, as `getenv` would find it).
    package static func all() -> [String: String] {
        EnvironmentLock.withLock { unlockedAll() }
    }

    private static func unlockedAll() -> [String: String] {
        var variables: [String: String] = [:]
        var entry: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                let name = String(text[..<equals])
                if variables[name] == nil { variables[name] = String(text[text.index(after: equals)...]) }
            }
            entry += 1
        }
        return variables
    }

    /// `$HOME`, else the home directory of the real user in the password database
    /// (`getpwuid_r`), else nil.
    package static func homeDirectory(environment: [String: String]? = nil) -> String? {
        let home = environment.map { $0["HOME"] } ?? value("HOME")
        if let home, !home.isEmpty { return home }
        return passwordDatabaseHome(uid: getuid())
    }

    /// The `pw_dir` of `uid` in the password database, or nil when it has no entry.
    package static func passwordDatabaseHome(uid: uid_t) -> String? {
        var size = sysconf(Int32(_SC_GETPW_R_SIZE_MAX))
        if size <= 0 { size = 4096 }
        // ERANGE: the entry does not fit; try a larger buffer (bounded).
        while size <= 1 << 20 {
            var buffer = [CChar](repeating: 0, count: size)
            // pw_dir points into `buffer`: read it before the buffer's pointer is gone.
            let (status, home) = buffer.withUnsafeMutableBufferPointer { storage -> (Int32, String?) in
                var record = passwd()
                var result: UnsafeMutablePointer<passwd>?
                let status = getpwuid_r(uid, &record, storage.baseAddress!, storage.count, &result)
                guard status == 0, result != nil, let directory = record.pw_dir else { return (status, nil) }
                return (status, String(cString: directory))
            }
            if status == ERANGE {
                size *= 2
                continue
            }
            guard let home, !home.isEmpty else { return nil }
            return home
        }
        return nil
    }
}
