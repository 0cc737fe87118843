#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Bluetooth
internal import CHCI
import HCI

/// Thin typed wrappers over the CHCI L2CAP calls (address conversion, errno mapping).
enum KernelL2CAP {
    static func socketType(_ type: AddressType) -> UInt8 {
        type == .random ? UInt8(CHCI_ADDRESS_LE_RANDOM) : UInt8(CHCI_ADDRESS_LE_PUBLIC)
    }

    /// The LE address type of a socket address type; `nil` for BR/EDR (0) or anything else.
    static func addressType(socketType: UInt8) -> AddressType? {
        switch UInt32(socketType) {
        case CHCI_ADDRESS_LE_PUBLIC: return .public
        case CHCI_ADDRESS_LE_RANDOM: return .random
        default: return nil
        }
    }

    /// A bound, non-blocking L2CAP LE socket on CID 4 of `adapter` (zero: any adapter).
    static func openSocket(adapter: BluetoothAddress, addressType: AddressType, operation: KernelOperation) throws(KernelBluetoothError) -> SocketDescriptor {
        let local = adapter.littleEndianBytes
        let fd = try KernelBluetoothError.check(operation) {
            local.withUnsafeBufferPointer { chci_l2cap_le_socket($0.baseAddress, socketType(addressType), CHCI_NONBLOCK) }
        }
        return SocketDescriptor(rawValue: fd)
    }

    static func setSecurity(_ fd: Int32, _ level: L2CAPSecurityLevel) throws(KernelBluetoothError) {
        _ = try KernelBluetoothError.check(.setSecurity(level: level.rawValue)) { chci_l2cap_set_security(fd, level.rawValue) }
    }

    static func securityLevel(_ fd: Int32) throws(KernelBluetoothError) -> L2CAPSecurityLevel {
        let level = try KernelBluetoothError.check(.readSecurity) { chci_l2cap_get_security(fd) }
        return L2CAPSecurityLevel(rawValue: UInt8(truncatingIfNeeded: level))
    }

    static func mtu(_ fd: Int32) throws(KernelBluetoothError) -> L2CAPMTU {
        var send: UInt16 = 0
        var receive: UInt16 = 0
        _ = try KernelBluetoothError.check(.readMTU) { chci_l2cap_get_mtu(fd, &send, &receive) }
        return L2CAPMTU(send: send, receive: receive)
    }

    static func setReceiveMTU(_ fd: Int32, _ mtu: UInt16) throws(KernelBluetoothError) {
        _ = try KernelBluetoothError.check(.setMTU(mtu)) { chci_l2cap_set_receive_mtu(fd, mtu) }
    }

    /// Starts a connect on a non-blocking socket: `true` when already connected, `false` when
    /// in progress (wait for writability, then `connectResult`).
    static func startConnect(_ fd: Int32, to peer: BluetoothAddress, type: AddressType) throws(KernelBluetoothError) -> Bool {
        let remote = peer.littleEndianBytes
        let result = remote.withUnsafeBufferPointer { chci_l2cap_connect(fd, $0.baseAddress, socketType(type)) }
        if result == 0 { return true }
        if result == -EINPROGRESS { return false }
        throw .system(operation: .connectL2CAP(peer: peer, type: type), errno: Errno(rawValue: -result))
    }

    /// Waits (on writability, at most `timeout`) for a connect that returned EINPROGRESS, then
    /// reads its outcome (`SO_ERROR`). Timeout gives ETIMEDOUT, task cancellation ECANCELED; the
    /// caller closes the descriptor on any error.
    static func awaitConnect(_ fd: Int32, operation: KernelOperation, timeout: Duration) async throws(KernelBluetoothError) {
        switch await KernelReadiness.wait(fd, for: .write, timeout: timeout) {
        case .ready: _ = try KernelBluetoothError.check(operation) { chci_socket_error(fd) }
        case .timedOut: throw .system(operation: operation, errno: .timedOut)
        case .cancelled: throw .system(operation: operation, errno: .cancelled)
        }
    }

    /// One non-blocking accept: the new descriptor and the peer, or `nil` when none is pending.
    static func accept(_ fd: Int32) throws(KernelBluetoothError) -> (SocketDescriptor, BluetoothAddress, AddressType?)? {
        var octets = [UInt8](repeating: 0, count: 6)
        var type: UInt8 = 0
        let result = octets.withUnsafeMutableBufferPointer { chci_l2cap_accept(fd, $0.baseAddress, &type, CHCI_NONBLOCK) }
        if result == -EAGAIN || result == -EWOULDBLOCK { return nil }
        if result < 0 { throw .system(operation: .acceptL2CAP, errno: Errno(rawValue: -result)) }
        var reader = ByteReader(octets)
        let address = (try? BluetoothAddress(parsingLittleEndian: &reader)) ?? .zero
        return (SocketDescriptor(rawValue: result), address, addressType(socketType: type))
    }

    static func listen(_ descriptor: SocketDescriptor, backlog: Int32, adapter: BluetoothAddress) throws(KernelBluetoothError) {
        do {
            try descriptor.listen(backlog: backlog)
        } catch {
            throw .system(operation: .listenL2CAP(adapter: adapter), errno: error)
        }
    }

    /// The channel's MTU limit, or `nil` when the kernel will not say.
    static func maximumSDUSize(_ fd: Int32) -> Int? {
        (try? mtu(fd))?.maximumSDUSize
    }
}

extension KernelATTChannel {
    /// Connects to `peer` over the kernel's L2CAP LE socket on the ATT fixed channel.
    ///
    /// - Parameters:
    ///   - adapter: the local adapter's address (`.zero`: the kernel picks the route).
    ///   - security: `BT_SECURITY` set before connecting (`nil`: the kernel default, low).
    ///   - receiveMTU: the kernel's receive MTU for the channel, set before connecting; the kernel
    ///     drops SDUs larger than it, so it must be at least the ATT_MTU we offer (`nil`: default).
    ///   - timeout: bound on the whole connect; the pending connect is abandoned (socket closed,
    ///     which cancels the LE connection attempt) and `.system(…, ETIMEDOUT)` thrown.
    /// - Throws: `KernelBluetoothError`; task cancellation gives ECANCELED.
    public static func connect(
        to peer: BluetoothAddress, type: AddressType, adapter: BluetoothAddress = .zero,
        adapterAddressType: AddressType = .public, security: L2CAPSecurityLevel? = nil, receiveMTU: UInt16? = nil,
        timeout: Duration = .seconds(30), logger: Logger = .disabled
    ) async throws(KernelBluetoothError) -> KernelATTChannel {
        let operation = KernelOperation.connectL2CAP(peer: peer, type: type)
        let descriptor = try KernelL2CAP.openSocket(
            adapter: adapter, addressType: adapterAddressType, operation: .openL2CAP(adapter: adapter))
        let fd = descriptor.rawValue
        do throws(KernelBluetoothError) {
            if let security { try KernelL2CAP.setSecurity(fd, security) }
            if let receiveMTU { try KernelL2CAP.setReceiveMTU(fd, receiveMTU) }
            logger.debug("connecting to \(peer) (\(type)) on ATT CID 4")
            if try !KernelL2CAP.startConnect(fd, to: peer, type: type) {
                try await KernelL2CAP.awaitConnect(fd, operation: operation, timeout: timeout)
            }
        } catch {
            try? descriptor.close()
            throw error
        }
        logger.debug("connected to \(peer) (\(type))")
        return KernelATTChannel(
            adopting: descriptor, peer: peer, peerAddressType: type,
            maximumSDUSize: KernelL2CAP.maximumSDUSize(fd), logger: logger)
    }

    /// Listens for incoming LE connections on the ATT channel (the peripheral/server role).
    /// Only one listener per adapter: bluetoothd's GATT server holds it when running (EADDRINUSE).
    public static func listen(
        adapter: BluetoothAddress = .zero, adapterAddressType: AddressType = .public,
        security: L2CAPSecurityLevel? = nil, backlog: Int32 = 4, logger: Logger = .disabled
    ) throws(KernelBluetoothError) -> KernelATTListener {
        let descriptor = try KernelL2CAP.openSocket(
            adapter: adapter, addressType: adapterAddressType, operation: .listenL2CAP(adapter: adapter))
        do {
            if let security { try KernelL2CAP.setSecurity(descriptor.rawValue, security) }
            try KernelL2CAP.listen(descriptor, backlog: backlog, adapter: adapter)
        } catch {
            try? descriptor.close()
            throw error
        }
        return KernelATTListener(adopting: descriptor, logger: logger)
    }
}
