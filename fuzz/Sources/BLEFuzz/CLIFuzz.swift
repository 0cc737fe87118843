import GATTClientCLI

/// The CLI argument parser.
enum CLIFuzz {
    /// CLI argument parser: an Invocation or a UsageError, never a trap. The input is the
    /// argument vector with arguments separated by NUL octets (as the kernel passes them).
    static func parseArguments(_ bytes: [UInt8]) {
        let arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        do {
            let invocation = try parse(arguments)
            _ = "\(invocation)"
        } catch {
            require(!error.message.isEmpty, "a UsageError without a message")
        }
    }
}
