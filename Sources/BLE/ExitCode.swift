/// The exit status `gattclient` gives an error (sysexits-style); ``BLEError/exitCode`` carries
/// it so a tool built on the library can exit as `gattclient` does.
package enum ExitCode: Int32, Sendable {
    /// Done.
    case success = 0
    /// A runtime failure: the peer refused, a timeout, a disconnect.
    case failure = 1
    /// EX_USAGE: the request itself is wrong (a bad address, a handle that is no handle).
    case usage = 64
    /// EX_UNAVAILABLE: the adapter or transport is not there or not ready.
    case unavailable = 69
    /// EX_NOPERM: the kernel refused for want of a capability.
    case permission = 77
}
