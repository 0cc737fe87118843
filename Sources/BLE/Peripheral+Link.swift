import Host

/// The link under a ``Peripheral``: RSSI, connection parameters, PHY and data length, where our
/// host runs in user space (`tcp:`, `unix:`, `serial:`, `hci-user:`, `sim`). On the kernel path
/// (its kernel owns the link) and in a replay these throw a usage error and the properties are nil.
/// - SeeAlso: Core Spec 5.4, Vol 4, Part E, §7.5.4, §7.8.18, §7.8.33, §7.8.47, §7.8.49
extension Peripheral {
    /// The PHYs in use each way (LE 1M until an update), nil where the transport hides the link.
    public nonisolated var phy: LinkPHY? { session.link.control?.phy() }

    /// The data length in force (27 octets each way until an update), nil where the transport
    /// hides the link.
    public nonisolated var dataLength: DataLength? { session.link.control?.dataLength() }

    private func control(_ what: String) throws(BLEError) -> LinkControl {
        guard let control = session.link.control else {
            throw BLEError(
                "\(what): \(type(of: session.central).linkControlRefusal)", kind: "usage", exitCode: .usage)
        }
        return control
    }

    /// `body` on the link's control, its failure said as `what`.
    private func onLink<T: Sendable>(
        _ what: String, _ body: @Sendable (LinkControl) async throws -> T
    ) async throws(BLEError) -> T {
        let control = try control(what)
        do {
            return try await body(control)
        } catch {
            throw Self.linkFailure(error, doing: what)
        }
    }

    /// The link's received signal strength now, in dBm (HCI_Read_RSSI; 127: the controller
    /// cannot tell).
    public func readRSSI() async throws(BLEError) -> Int {
        try await onLink("reading the RSSI of \(peer)") { try await $0.readRSSI() }
    }

    /// Asks for new connection parameters (HCI_LE_Connection_Update as central) and waits,
    /// bounded, for the link layer's answer; the parameters in force afterwards (also in
    /// ``connectionParameters`` and as `.parametersUpdated` in ``linkEvents()``).
    public func updateConnectionParameters(_ request: ConnectionParameterRequest) async throws(BLEError) -> ConnectionParameters {
        _ = try control("updating the connection parameters of \(peer)")
        let parameters = try request.hciParameters()
        return try await onLink("updating the connection parameters of \(peer) to \(request)") {
            try await $0.updateParameters(parameters)
        }
    }

    /// Asks for `phy` both ways (HCI_LE_Set_PHY) and waits, bounded, for LE PHY Update Complete;
    /// the PHYs in use afterwards, which the peer may have kept (it supports what it supports).
    /// - Throws: when the controller does not know the command, does not support the PHY, or
    ///   never answers (its command credit is taken back): the link goes on as it was.
    public func setPHY(_ phy: PHY) async throws(BLEError) -> LinkPHY {
        _ = try control("setting the PHY of \(peer)")
        if case .other(let value) = phy {
            throw BLEError("PHY 0x\(String(value, radix: 16)): LE 1M, LE 2M or LE Coded", kind: "usage", exitCode: .usage)
        }
        return try await onLink("LE Set PHY \(phy)") { try await $0.setPHY(phy) }
    }

    /// The PHYs in use, as the controller says now (HCI_LE_Read_PHY).
    public func readPHY() async throws(BLEError) -> LinkPHY {
        try await onLink("LE Read PHY") { try await $0.readPHY() }
    }

    /// Asks the link layer to send up to `octets` (27…251) per packet (HCI_LE_Set_Data_Length)
    /// and waits, bounded, for the outcome of the data length update; the data length in force
    /// afterwards (what the peer accepted).
    public func setDataLength(_ octets: Int) async throws(BLEError) -> DataLength {
        _ = try control("setting the data length of \(peer)")
        guard (27...251).contains(octets) else {
            throw BLEError("data length \(octets): 27…251 octets", kind: "usage", exitCode: .usage)
        }
        return try await onLink("LE Set Data Length \(octets) octets") { control in
            try await control.setDataLength(octets)
            return control.dataLength()
        }
    }

    static func linkFailure(_ error: any Error, doing what: String) -> BLEError {
        if let failure = error as? BLEError { return failure }
        let text = LinkControl.describeRefusal(error, doing: what)
        if case .hci(.commandFailed(_, let status))? = error as? LEHostError {
            return BLEError(text, kind: "hci", hciStatus: status)
        }
        if case .notConnected? = error as? LEHostError {
            return BLEError("\(what): not connected", kind: "disconnected")
        }
        return BLEError(text, kind: "hci")
    }
}
