import Bluetooth
import L2CAP

/// How an adapter is opened beyond its transport: what `gattclient`'s global options say.
package struct AdapterOptions: Sendable {
    /// `--security low|medium|high|fips`: the kernel ATT socket's `BT_SECURITY`.
    package var security: String?
    /// `--record FILE`: a btsnoop of what crosses the transport.
    package var record: String?
    /// Bounds opening a transport (a TCP connect) and each connection.
    package var timeout: Duration = .seconds(30)
    /// `--replay-match any`: a replayed peer answers requests in any order.
    package var replayMatchAny = false
    /// `--replay-conn`: the recorded connection to replay.
    package var replayConnection: UInt16?

    /// Where the library's warnings go, each naming its subject (`peripheral: …`, `warning: …`):
    /// the library never prints; `gattclient` writes them to standard error after `gattclient: `.
    package var warning: @Sendable (String) -> Void = { _ in }

    /// `--bonds DIR`: where bonds are kept (else the environment's default, ``BondStore``).
    package var bondsDirectory: String?
    /// `--repair`: a peer that lost its bond is paired again rather than refused.
    package var allowRepair = false
    /// `--mtu N`: the ATT_MTU our client offers in Exchange MTU (23–517; default 517): a small one
    /// tests a peripheral's small-MTU paths.
    package var clientMTU = GATTSession.preferredMTU
    /// `--min-key-size N`: the smallest encryption key size (octets, 7–16) a pairing may give,
    /// on every transport; a smaller one fails the pairing before anything is stored.
    package var minimumKeySize = 16
    /// `--max-bonds N`: the most bonds centrals may make with our peripheral (``BondStore``).
    package var maximumPeripheralBonds = BondStore.defaultPeripheralLimit
    /// `--interval`, `--latency`, `--supervision-timeout`, `--phy`, `--data-length`: what every
    /// central link is asked for (refused where the transport cannot ask).
    package var link = LinkPreferences()
    /// `--eatt N`: Enhanced ATT bearers opened on every central link (after encryption).
    package var enhancedBearers: Int?
    /// `--eatt-required`: a peer that refuses Enhanced ATT fails the connection instead of going
    /// on with the unenhanced bearer (said as a warning).
    package var enhancedBearersRequired = false
    /// `--parameter-requests`: what a peripheral may ask for when it requests new parameters.
    package var parameterRequests = ConnectionParameterRequestPolicy.acceptValid
    /// The bounds of what the scans remember of the devices they heard.
    package var scanCache = ScanCacheLimits()
    /// The adapter's clock (the scan caches' expiry); tests give a ``ManualClock``.
    package var clock: any BluetoothClock = SystemClock()

    package init() {}
}
